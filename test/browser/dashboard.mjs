#!/usr/bin/env node
// @ts-check
// Browser test of the dashboard (SPEC §11), outside `npm test` because it
// needs Debian's chromium and two `wrangler dev` servers (about 30 s).
// Run: `npm run test:browser` (node test/browser/dashboard.mjs).
//
// Drives headless /usr/bin/chromium with playwright-core against real
// coordinators on 127.0.0.1 and checks what an operator sees: the token
// prompt when auth is enforced, a registered node and a running job, the
// page updating when a task completes, a stuck task flagged and explained,
// and attacker-chosen node ids and labels rendered as text — no injected
// script runs and the page's CSP is never violated. Writes a screenshot
// (DASHBOARD_SCREENSHOT, default /tmp/flashedge-dashboard.png).
//
// Every server it starts is stopped by pid, whatever happens; every wait is
// bounded.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const CHROMIUM = "/usr/bin/chromium";
const SCREENSHOT = process.env.DASHBOARD_SCREENSHOT || "/tmp/flashedge-dashboard.png";
const TOTAL_TIMEOUT_MS = 240_000;
const STEP_TIMEOUT_MS = 20_000;

// Attacker-controlled strings. Node ids come from token names when auth is
// enforced, so these two are token names too (no ':' or ',' in them).
const EVIL_NODE = "<script>window.__pwned=1</script>";
const EVIL_NODE_2 = "<img src=x onerror=window.__pwned=2>";
const EVIL_LABEL = '"><svg onload=window.__pwned=3>';

const TOKENS = {
  FLASHML_NODE_TOKENS: `worker-1:tok-w1,${EVIL_NODE}:tok-evil,${EVIL_NODE_2}:tok-evil2`,
  FLASHML_OPERATOR_TOKENS: "ops:tok-ops",
};

/**
 * @typedef {import("playwright-core").Browser} Browser
 * @typedef {import("playwright-core").Page} Page
 * @typedef {{ url: string, child: import("node:child_process").ChildProcess, persist: string, output: () => string }} Server
 * @typedef {{ job_id: string }} Job
 * @typedef {{ lease_id: string, job_id: string, task_id: string }} Lease
 * The globals the page-side checks read and write: the test's own markers,
 * and the few browser globals it inspects (this file is checked with Node's
 * types, not the DOM's).
 * @typedef {{
 *   __pwned?: unknown,
 *   __violations: string[],
 *   sessionStorage: { length: number },
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
function log(message) {
  process.stdout.write(`[browser-test] ${message}\n`);
}

async function main() {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} not found: install Debian's chromium (apt-get install -y chromium)`);
  }
  let chromium;
  try {
    ({ chromium } = await import("playwright-core"));
  } catch {
    throw new Error("playwright-core is not installed: npm install -D playwright-core");
  }

  log("starting two coordinators (auth enforced, and open)");
  const [secured, open] = await Promise.all([
    startCoordinator(TOKENS),
    startCoordinator({ FLASHML_NODE_TOKENS: "", FLASHML_OPERATOR_TOKENS: "" }),
  ]);

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

  await enforcedDashboard(browser, secured);
  await openDashboard(browser, open);
  log("all checks passed");
}

/**
 * Auth enforced: the token prompt, live updates, a stuck task, hostile strings.
 * @param {Browser} browser
 * @param {Server} server
 */
async function enforcedDashboard(browser, server) {
  const pool = `browser-${randomUUID().slice(0, 8)}`;
  const api = client(server.url, pool);

  /** @type {Job} */
  const job = await api.submit("tok-ops", searchJob("browser-job", 2, { labels: { note: EVIL_LABEL } }));
  /** @type {Job} */
  const stuckJob = await api.submit("tok-ops", searchJob("needs-four-gpus", 1, { resources: { gpuPerTask: 4 } }));
  await api.register("tok-w1", { hostname: "worker-1.local", labels: { rack: EVIL_LABEL } }, 1);
  await api.register("tok-evil", { hostname: EVIL_NODE, local_datasets: [EVIL_LABEL] });
  await api.register("tok-evil2", {});
  const first = await api.claim("tok-w1");
  assert.equal(first.job_id, job.job_id, "worker-1 leases a task of browser-job");

  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 } });
  const page = await context.newPage();
  const errors = await watch(page);

  const response = await page.goto(`${server.url}/pools/${pool}/`, { timeout: STEP_TIMEOUT_MS });
  assert.ok(response, "the page answered");
  const csp = response.headers()["content-security-policy"] ?? "";
  assert.match(csp, /script-src 'sha256-[^']+'/, "the page is served with a hash-based script-src");
  assert.doesNotMatch(
    csp,
    /unsafe-inline|unsafe-eval|https?:/,
    "the CSP allows no inline code by default and no remote origin",
  );

  log("the page asks for a token when auth is enforced");
  await page.locator("#auth").waitFor({ state: "visible", timeout: STEP_TIMEOUT_MS });
  await page.fill("#token", "tok-wrong");
  await page.press("#token", "Enter");
  await waitForText(page, "#auth-error", "That token was refused.");
  await page.fill("#token", "tok-ops");
  await page.press("#token", "Enter");
  await page.locator("#auth").waitFor({ state: "hidden", timeout: STEP_TIMEOUT_MS });
  const stored = await page.evaluate(() => {
    const win = /** @type {PageGlobals} */ (/** @type {unknown} */ (globalThis));
    return {
      session: Object.keys(win.sessionStorage).length,
      local: Object.keys(win.localStorage).length,
      cookie: win.document.cookie,
    };
  });
  assert.deepEqual(stored, { session: 1, local: 0, cookie: "" }, "the token is kept in this tab only");

  log("the page shows the registered nodes and the running job");
  await waitForText(page, "#nodes", "worker-1");
  await waitForText(page, "#nodes", EVIL_NODE);
  await waitForText(page, "#nodes", EVIL_NODE_2);
  const jobRow = page.locator(`#jobs tr[data-job="${job.job_id}"]`);
  await jobRow.waitFor({ timeout: STEP_TIMEOUT_MS });
  assert.equal(await jobRow.locator(".badge").first().textContent(), "RUNNING");
  assert.equal(await jobRow.locator(".progress-label").textContent(), "0/2 completed");
  await waitForText(page, "#leases", first.task_id);

  log("hostile strings render as text and run nothing");
  const nodeIds = await page.locator("#nodes tr[data-node] td:first-child .mono").allTextContents();
  assert.ok(
    nodeIds.includes(EVIL_NODE) && nodeIds.includes(EVIL_NODE_2),
    `node ids shown verbatim: ${JSON.stringify(nodeIds)}`,
  );
  assert.equal(
    await page.locator("#nodes script, #nodes img, #jobs svg, #events script").count(),
    0,
    "no element was made from data",
  );
  assert.ok(
    ((await page.locator("#jobs").textContent()) ?? "").includes(`note=${EVIL_LABEL}`),
    "a job label is shown as text",
  );

  log("the page updates when a task completes");
  await api.complete("tok-w1", first);
  await waitFor(
    page,
    () => jobRow.locator(".progress-label").textContent(),
    (t) => t === "1/2 completed",
    "progress 1/2 completed",
  );
  await waitForText(page, "#events", "TASK_COMMIT_ACCEPTED");

  log("a task no online node can take is flagged, and explained on request");
  const stuckRow = page.locator(`#jobs tr[data-job="${stuckJob.job_id}"]`);
  await waitFor(
    page,
    () => stuckRow.getAttribute("class"),
    (c) => c === "flagged",
    "the stuck job is flagged",
  );
  await waitForText(page, "#stuck", "task needs 4 GPUs");
  await stuckRow.locator("button").click();
  await waitForText(page, "#explain", "No registered node can take this task.");
  const gates = await page.locator("#explain tbody tr td:nth-child(3)").allTextContents();
  assert.deepEqual(gates, ["gpu", "gpu", "gpu"], "every node is refused by the gpu gate");

  // The second claim makes a live lease held by the hostile node, for the screenshot.
  await api.claim("tok-evil");
  await waitFor(
    page,
    () => page.locator("#leases tbody tr").count(),
    (n) => n === 1,
    "one live lease",
  );
  await page.screenshot({ path: SCREENSHOT, fullPage: true });
  log(`screenshot: ${SCREENSHOT}`);

  log("a reload keeps the token; a new tab asks again");
  await page.reload();
  await waitForText(page, "#nodes", "worker-1");
  assert.equal(await page.locator("#auth").isHidden(), true);
  const other = await browser.newContext();
  const fresh = await other.newPage();
  await fresh.goto(`${server.url}/pools/${pool}/`);
  await fresh.locator("#auth").waitFor({ state: "visible", timeout: STEP_TIMEOUT_MS });
  await other.close();

  const state = await pageState(page);
  assert.deepEqual(
    state,
    { pwned: undefined, violations: [] },
    "no injected script ran and the CSP was never violated",
  );
  assert.deepEqual(errors, [], "no uncaught errors in the page");
  await context.close();
}

/**
 * Open mode: no prompt, data straight away, at the root URL (the pool "local").
 * @param {Browser} browser
 * @param {Server} server
 */
async function openDashboard(browser, server) {
  const api = client(server.url, null);
  await api.register(null, { node_id: EVIL_NODE, hostname: "open.local" });
  const openJob = await api.submit(
    null,
    searchJob("open-job", 3, { labels: { "flashml.dev/priority": "5", "flashml.dev/tenant": "team-a" } }),
  );
  // A node whose last 5 attempts failed is held back (SPEC §13).
  await api.register(null, { node_id: "flaky", hostname: "flaky.local" });
  const flakyJob = await api.submit(null, searchJob("flaky-job", 5));
  for (let i = 0; i < 5; i++) await api.fail(null, await api.claim(null, "flaky", flakyJob.job_id));
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = await watch(page);
  await page.goto(`${server.url}/`, { timeout: STEP_TIMEOUT_MS });
  log("open mode: the root page shows the pool 'local' without asking for a token");
  await waitForText(page, "#nodes", EVIL_NODE);
  await waitForText(page, "#jobs", "open-job");
  assert.equal(await page.locator("#auth").isHidden(), true);

  log("open mode: a job's priority and tenant, and a held-back node, are shown");
  const openRow = page.locator(`#jobs tr[data-job="${openJob.job_id}"]`);
  assert.deepEqual(
    [await openRow.locator("td.priority").textContent(), await openRow.locator("td.tenant").textContent()],
    ["5", "team-a"],
  );
  const flakyRow = page.locator('#nodes tr[data-node="flaky"]');
  assert.match((await flakyRow.locator(".badge.held").textContent()) ?? "", /^held back until \d/);
  assert.equal(await flakyRow.locator("td.failures").textContent(), "5");
  assert.equal(await page.locator('#nodes tr[data-node="flaky"].flagged').count(), 1, "the held node's row is flagged");
  await waitForText(page, "#nodes-sub", "1 held back");
  assert.equal(await page.locator("#pool-name").textContent(), "local");
  assert.deepEqual(
    await pageState(page),
    { pwned: undefined, violations: [] },
    "no injected script ran and the CSP was never violated",
  );
  assert.deepEqual(errors, [], "no uncaught errors and no CSP reports in the console");
  await context.close();
}

// ---- helpers ---------------------------------------------------------------

/**
 * Collects the page's uncaught errors and CSP refusals, from before its first script runs.
 * @param {Page} page
 */
async function watch(page) {
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
function pageState(page) {
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
async function waitFor(page, read, ok, what) {
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
function waitForText(page, selector, text) {
  return waitFor(
    page,
    () => page.locator(selector).textContent(),
    (t) => typeof t === "string" && t.includes(text),
    `${JSON.stringify(text)} in ${selector}`,
  );
}

/**
 * @param {string} name
 * @param {number} trials
 * @param {{ labels?: Record<string, string>, [field: string]: unknown }} [spec]
 */
function searchJob(name, trials, spec = {}) {
  const { labels, ...rest } = spec;
  return {
    apiVersion: "flashml.dev/v1alpha1",
    kind: "Job",
    metadata: { name, labels: labels ?? {} },
    spec: {
      execution: { backend: "leases" },
      image: { repository: "ghcr.io/flashml/runner", tag: "0.4.1" },
      workload: {
        type: "hyperparameter_search",
        parameters: { trials: Array.from({ length: trials }, (_, i) => ({ c: i })) },
      },
      ...rest,
    },
  };
}

/**
 * The HTTP calls an agent and an operator make, nothing else.
 * @param {string} url
 * @param {string | null} pool
 */
function client(url, pool) {
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
async function startCoordinator(vars) {
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

const timer = setTimeout(async () => {
  process.stderr.write(`[browser-test] FAILED: timed out after ${TOTAL_TIMEOUT_MS / 1000} s\n`);
  await cleanup();
  process.exit(1);
}, TOTAL_TIMEOUT_MS);

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
