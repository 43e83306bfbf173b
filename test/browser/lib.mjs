// @ts-check
// What the browser tests (dashboard.mjs, enrol.mjs) share: headless Debian
// chromium through playwright-core, `wrangler dev` coordinators on free
// loopback ports with fresh state, the page-side watch for uncaught errors
// and CSP refusals, bounded waits, the HTTP calls an agent and an operator
// make, and the run harness that stops every server by pid, whatever
// happens, within a total time limit.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const CHROMIUM = "/usr/bin/chromium";
export const STEP_TIMEOUT_MS = 20_000;

/**
 * @typedef {import("playwright-core").Browser} Browser
 * @typedef {import("playwright-core").BrowserType} BrowserType
 * @typedef {import("playwright-core").Page} Page
 * @typedef {{ url: string, child: import("node:child_process").ChildProcess, persist: string, output: () => string }} Server
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
 * The HTTP calls an agent and an operator make, nothing else.
 * @param {string} url
 * @param {string | null} pool
 */
export function client(url, pool) {
  const base = pool ? `${url}/pools/${pool}/v1alpha1` : `${url}/v1alpha1`;
  /**
   * @param {string | null} token
   * @param {string} method
   * @param {string} path
   * @param {unknown} [body]
   * @param {string} [raw]
   * @returns {Promise<unknown>} the JSON answer
   */
  async function send(token, method, path, body, raw) {
    /** @type {Record<string, string>} */
    const headers = token ? { authorization: `Bearer ${token}` } : {};
    /** @type {string | undefined} */
    let payload;
    if (raw !== undefined) payload = raw;
    else if (body !== undefined) {
      headers["content-type"] = "application/json";
      payload = JSON.stringify(body);
    }
    const r = await fetch(base + path, {
      method,
      headers,
      body: payload,
      signal: AbortSignal.timeout(STEP_TIMEOUT_MS),
    });
    const text = await r.text();
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${text}`);
    return text ? JSON.parse(text) : null;
  }
  return {
    /** @type {(token: string | null, spec: unknown) => Promise<Job>} */
    submit: async (token, spec) => /** @type {Job} */ (await send(token, "POST", "/jobs", spec)),
    /** @type {(token: string | null, extra: Record<string, unknown>, gpus?: number) => Promise<unknown>} */
    register: (token, extra, gpus = 0) =>
      send(token, "POST", "/nodes/register", {
        node_id: extra.node_id ?? "ignored-when-enforcing",
        kubernetes_node: "",
        hostname: "node.local",
        capabilities: {
          cpu_cores: 4,
          gpus: Array.from({ length: gpus }, (_, index) => ({ index, name: "NVIDIA L4" })),
        },
        ...extra,
      }),
    /** @type {(token: string | null, nodeId?: string, jobId?: string) => Promise<Lease>} */
    claim: async (token, nodeId = "ignored-when-enforcing", jobId) => {
      const lease = await send(token, "POST", "/leases/claim", { node_id: nodeId, job_id: jobId });
      if (!lease) throw new Error("nothing to claim");
      return /** @type {Lease} */ (lease);
    },
    /** @type {(token: string | null, lease: Lease) => Promise<unknown>} */
    fail: (token, lease) => send(token, "POST", `/attempts/${lease.lease_id}/fail`, { reason: "it broke" }),
    /** @type {(token: string | null, lease: Lease) => Promise<void>} */
    complete: async (token, lease) => {
      const bytes = JSON.stringify({ accuracy: 0.9 });
      await send(token, "PUT", `/artifacts/jobs/${lease.job_id}/${lease.task_id}/metrics.json`, undefined, bytes);
      const sha = createHash("sha256").update(bytes).digest("hex");
      const answer = await send(token, "POST", `/attempts/${lease.lease_id}/complete`, { output_sha256: sha });
      assert.deepEqual(answer, { accepted: true });
    },
    /** What `flashnode login` asks first, with no credential (SPEC §9). */
    /** @type {(machine: Machine) => Promise<Grant>} */
    askForCode: async (machine) => /** @type {Grant} */ (await send(null, "POST", "/device/code", machine)),
    /** @type {(grant: Grant) => Promise<{ token: string, node_id: string }>} */
    redeem: async (grant) =>
      /** @type {{ token: string, node_id: string }} */ (
        await send(null, "POST", "/device/token", { device_code: grant.device_code })
      ),
    /** @type {(token: string, verdict: "approve" | "deny", grant: Grant) => Promise<unknown>} */
    decide: (token, verdict, grant) => send(token, "POST", `/device/${verdict}`, { user_code: grant.user_code }),
    /** @type {(token: string, nodeId: string) => Promise<unknown>} */
    revoke: (token, nodeId) => send(token, "DELETE", `/nodes/${encodeURIComponent(nodeId)}/credential`),
  };
}

/** @returns {Promise<number>} */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      if (address === null || typeof address === "string") return reject(new Error("no TCP port"));
      server.close(() => resolve(address.port));
    });
  });
}

/**
 * `wrangler dev` on a free loopback port with fresh state; resolves when /healthz answers.
 * @param {Record<string, string>} vars
 * @returns {Promise<Server>}
 */
export async function startCoordinator(vars) {
  const port = await freePort();
  const inspector = await freePort();
  const persist = mkdtempSync(join(tmpdir(), "flashedge-browser-"));
  const args = [
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--inspector-port",
    String(inspector),
    "--persist-to",
    persist,
    "--show-interactive-dev-session=false",
    "--log-level",
    "warn",
  ];
  for (const [key, value] of Object.entries(vars)) args.push("--var", `${key}:${value}`);
  const child = spawn(join(ROOT, "node_modules", ".bin", "wrangler"), args, {
    cwd: ROOT,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1", NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true, // its own process group, so workerd goes with it
  });
  let output = "";
  child.stdout.on("data", (d) => (output = (output + d).slice(-4000)));
  child.stderr.on("data", (d) => (output = (output + d).slice(-4000)));
  const server = { url: `http://127.0.0.1:${port}`, child, persist, output: () => output };
  servers.push(server);
  const until = Date.now() + 90_000;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited with ${child.exitCode}:\n${output}`);
    try {
      const r = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(2000) });
      if (r.ok) return server;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  throw new Error(`wrangler dev did not answer /healthz within 90 s:\n${output}`);
}

/** @param {Server} server */
async function stopServer(server) {
  const { child } = server;
  const pid = child.pid; // undefined if it never started
  if (pid !== undefined && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    try {
      process.kill(-pid, "SIGTERM");
    } catch {
      // already gone
    }
    const killed = await Promise.race([
      exited.then(() => true),
      new Promise((resolve) => setTimeout(() => resolve(false), 5000)),
    ]);
    if (!killed) {
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  }
  rmSync(server.persist, { recursive: true, force: true });
}

async function cleanup() {
  for (const fn of cleanups.reverse())
    await Promise.resolve()
      .then(fn)
      .catch(() => {});
  await Promise.all(servers.map(stopServer));
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
