// @ts-check
// What the browser tests (dashboard.mjs, enrol.mjs) share: headless Debian
// chromium through playwright-core, `wrangler dev` coordinators on free
// loopback ports with fresh state, the page-side watch for uncaught errors
// and CSP refusals, bounded waits, the HTTP calls an agent and an operator
// make (test/support's launcher and client), and the run harness that stops
// every server by pid, whatever happens, within a total time limit.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { coordinator, sha256, startWrangler } from "../support/index.mjs";

export { ROOT } from "../support/index.mjs";
/** @import { Answer, Wrangler } from "../support/index.mjs" */
export const CHROMIUM = "/usr/bin/chromium";
export const STEP_TIMEOUT_MS = 20_000;

/**
 * @typedef {import("playwright-core").Browser} Browser
 * @typedef {import("playwright-core").BrowserType} BrowserType
 * @typedef {import("playwright-core").Page} Page
 * @typedef {Wrangler} Server
 * @typedef {{ job_id: string }} Job
 * @typedef {{ lease_id: string, job_id: string, task_id: string }} Lease
 * @typedef {{ node_id: string, hostname: string, platform: string }} Machine
 * @typedef {{ device_code: string, user_code: string }} Grant
 * The globals the page-side checks read and write: the test's own markers,
 * and the few browser globals it inspects (these files are checked with
 * Node's types, not the DOM's).
 * @typedef {{
 *   __pwned?: unknown,
 *   __violations: string[],
 *   sessionStorage: { length: number, setItem(key: string, value: string): void },
 *   localStorage: { length: number },
 *   document: {
 *     cookie: string,
 *     addEventListener(type: "securitypolicyviolation", listener: (e: { violatedDirective: string, blockedURI: string }) => void): void,
 *   },
 * }} PageGlobals
 */

/** @type {Server[]} */
const servers = [];
/** @type {Array<() => unknown>} */
const cleanups = [];

/** @param {string} message */
export function log(message) {
  process.stdout.write(`[browser-test] ${message}\n`);
}

/**
 * Debian's chromium, driven by playwright-core; fails with how to install whichever is missing.
 * @returns {Promise<BrowserType>}
 */
export async function loadChromium() {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} not found: install Debian's chromium (apt-get install -y chromium)`);
  }
  try {
    return (await import("playwright-core")).chromium;
  } catch {
    throw new Error("playwright-core is not installed: npm install -D playwright-core");
  }
}

/**
 * A headless browser, closed by the harness whatever happens.
 * @param {BrowserType} chromium
 * @returns {Promise<Browser>}
 */
export async function launch(chromium) {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout: STEP_TIMEOUT_MS,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-quic",
      "--no-first-run",
    ],
  });
  cleanups.push(() => browser.close());
  return browser;
}

/**
 * Collects the page's uncaught errors and CSP refusals, from before its first script runs.
 * @param {Page} page
 */
export async function watch(page) {
  /** @type {string[]} */
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  // The console also reports what a CSP refused ("Refused to execute inline script …").
  page.on("console", (m) => {
    if (m.type() === "error" && /Content Security Policy/i.test(m.text())) errors.push(m.text());
  });
  // Init scripts are serialized into the page: everything they use is defined inside.
  await page.addInitScript(() => {
    const win = /** @type {PageGlobals} */ (/** @type {unknown} */ (globalThis));
    win.__violations = [];
    win.document.addEventListener("securitypolicyviolation", (e) =>
      win.__violations.push(`${e.violatedDirective} ${e.blockedURI}`),
    );
  });
  return errors;
}

/**
 * Whether an injected script ran, and what the CSP refused, as the page saw it.
 * @param {Page} page
 */
export function pageState(page) {
  return page.evaluate(() => {
    const win = /** @type {PageGlobals} */ (/** @type {unknown} */ (globalThis));
    return { pwned: win.__pwned, violations: win.__violations };
  });
}

/**
 * Polls `read` until `ok` holds, or fails after STEP_TIMEOUT_MS.
 * @template T
 * @param {Page} page
 * @param {() => Promise<T>} read
 * @param {(value: T) => boolean} ok
 * @param {string} what
 * @returns {Promise<T>}
 */
export async function waitFor(page, read, ok, what) {
  const until = Date.now() + STEP_TIMEOUT_MS;
  /** @type {T | undefined} */
  let last;
  while (Date.now() < until) {
    last = await read();
    if (ok(last)) return last;
    await page.waitForTimeout(200);
  }
  throw new Error(`timed out waiting for ${what} (last seen: ${JSON.stringify(last)})`);
}

/**
 * @param {Page} page
 * @param {string} selector
 * @param {string} text
 */
export function waitForText(page, selector, text) {
  return waitFor(
    page,
    () => page.locator(selector).textContent(),
    (t) => typeof t === "string" && t.includes(text),
    `${JSON.stringify(text)} in ${selector}`,
  );
}

/**
 * The HTTP calls an agent and an operator make, nothing else: test/support's
 * client, each call with the caller's token and failing on any status ≥ 300.
 * @param {string} url
 * @param {string | null} pool
 */
export function client(url, pool) {
  const api = coordinator(url, { pool, timeoutMs: STEP_TIMEOUT_MS });
  /**
   * @param {Promise<Answer>} call
   * @param {string} what
   * @returns {Promise<unknown>} the JSON answer
   */
  async function expect(call, what) {
    const r = await call;
    if (r.status >= 300) throw new Error(`${what}: ${r.status} ${r.text}`);
    return r.text ? JSON.parse(r.text) : null;
  }
  /** @param {string | null} token */
  const as = (token) => ({ token });
  return {
    /** @type {(token: string | null, spec: unknown) => Promise<Job>} */
    submit: async (token, spec) =>
      /** @type {Job} */ (await expect(api.send("POST", "/jobs", { body: spec, token }), "POST /jobs")),
    /** @type {(token: string | null, extra: Record<string, unknown>, gpus?: number) => Promise<unknown>} */
    register: (token, extra, gpus = 0) =>
      expect(
        api.send("POST", "/nodes/register", {
          token,
          body: {
            node_id: extra.node_id ?? "ignored-when-enforcing",
            kubernetes_node: "",
            hostname: "node.local",
            capabilities: {
              cpu_cores: 4,
              gpus: Array.from({ length: gpus }, (_, index) => ({ index, name: "NVIDIA L4" })),
            },
            ...extra,
          },
        }),
        "POST /nodes/register",
      ),
    /** @type {(token: string | null, nodeId?: string, jobId?: string) => Promise<Lease>} */
    claim: async (token, nodeId = "ignored-when-enforcing", jobId) => {
      const lease = await expect(
        api.send("POST", "/leases/claim", { token, body: { node_id: nodeId, job_id: jobId } }),
        "POST /leases/claim",
      );
      if (!lease) throw new Error("nothing to claim");
      return /** @type {Lease} */ (lease);
    },
    /** @type {(token: string | null, lease: Lease) => Promise<unknown>} */
    fail: (token, lease) =>
      expect(api.fail(lease.lease_id, "it broke", as(token)), `POST /attempts/${lease.lease_id}/fail`),
    /** @type {(token: string | null, lease: Lease) => Promise<void>} */
    complete: async (token, lease) => {
      const bytes = JSON.stringify({ accuracy: 0.9 });
      const key = `jobs/${lease.job_id}/${lease.task_id}/metrics.json`;
      await expect(api.upload(key, bytes, as(token)), `PUT /artifacts/${key}`);
      const answer = await expect(
        api.complete(lease.lease_id, { output_sha256: sha256(bytes) }, as(token)),
        `POST /attempts/${lease.lease_id}/complete`,
      );
      assert.deepEqual(answer, { accepted: true });
    },
    /** What `flashnode login` asks first, with no credential (docs/protocol.md §9). */
    /** @type {(machine: Machine) => Promise<Grant>} */
    askForCode: async (machine) =>
      /** @type {Grant} */ (
        await expect(api.send("POST", "/device/code", { body: machine, token: null }), "POST /device/code")
      ),
    /** @type {(grant: Grant) => Promise<{ token: string, node_id: string }>} */
    redeem: async (grant) =>
      /** @type {{ token: string, node_id: string }} */ (
        await expect(
          api.send("POST", "/device/token", { body: { device_code: grant.device_code }, token: null }),
          "POST /device/token",
        )
      ),
    /** @type {(token: string, verdict: "approve" | "deny", grant: Grant) => Promise<unknown>} */
    decide: (token, verdict, grant) =>
      expect(
        api.send("POST", `/device/${verdict}`, { body: { user_code: grant.user_code }, token }),
        `POST /device/${verdict}`,
      ),
    /** @type {(token: string, nodeId: string) => Promise<unknown>} */
    revoke: (token, nodeId) =>
      expect(
        api.send("DELETE", `/nodes/${encodeURIComponent(nodeId)}/credential`, { token }),
        `DELETE /nodes/${nodeId}/credential`,
      ),
  };
}

/**
 * `wrangler dev` on a free loopback port with fresh state and exactly these
 * settings; resolves when /healthz answers. The harness stops it.
 * @param {Record<string, string>} vars
 * @returns {Promise<Server>}
 */
export async function startCoordinator(vars) {
  const server = await startWrangler({ vars });
  servers.push(server);
  return server;
}

async function cleanup() {
  for (const fn of cleanups.reverse())
    await Promise.resolve()
      .then(fn)
      .catch(() => {});
  await Promise.all(servers.map((s) => s.stop()));
}

/**
 * Runs a browser test: fails it after `totalTimeoutMs`, and on success,
 * failure, timeout or Ctrl-C closes the browser and stops every server it
 * started (printing their output when it fails).
 * @param {() => Promise<void>} main
 * @param {number} totalTimeoutMs
 */
export async function run(main, totalTimeoutMs) {
  const timer = setTimeout(async () => {
    process.stderr.write(`[browser-test] FAILED: timed out after ${totalTimeoutMs / 1000} s\n`);
    await cleanup();
    process.exit(1);
  }, totalTimeoutMs);

  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.once(signal, async () => {
      await cleanup();
      process.exit(130);
    });
  }

  try {
    await main();
    await cleanup();
    clearTimeout(timer);
  } catch (error) {
    process.stderr.write(`[browser-test] FAILED: ${error instanceof Error ? error.stack : error}\n`);
    for (const server of servers) process.stderr.write(`--- wrangler output (${server.url}) ---\n${server.output()}\n`);
    await cleanup();
    clearTimeout(timer);
    process.exit(1);
  }
}
