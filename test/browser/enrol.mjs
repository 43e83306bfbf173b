#!/usr/bin/env node
// @ts-check
// Browser test of the enrolment page (docs/protocol.md §9, "Enrolled machines"), outside
// `npm test` because it needs Debian's chromium and a `wrangler dev` server
// (about 20 s). Run: `npm run test:browser` (node test/browser/enrol.mjs).
//
// Plays `flashnode login` over HTTP against a real coordinator on 127.0.0.1
// (auth enforced) and the operator in headless /usr/bin/chromium: the agent
// asks for a code and polls; the operator opens the link it was given, signs
// in with an operator token (a wrong token and a node token are refused),
// sees the machine and approves it; the agent's next poll gets a node token
// exactly once, and that token acts as that node in that pool only. A second
// machine, with a hostile hostname, is looked up by a code typed loosely and
// denied; it never gets a token. A token refused mid-decision sends the
// operator back to sign in; a code decided elsewhere answers "no pending
// request". The page is served under its own hash-based CSP, renders every
// string as text, runs no injected script and never violates its CSP.
// Writes a screenshot (ENROL_SCREENSHOT, default /tmp/flashedge-enrol.png).
//
// Every server it starts is stopped by pid, whatever happens; every wait is
// bounded (the harness and helpers are in lib.mjs).

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  launch,
  loadChromium,
  log,
  pageState,
  run,
  STEP_TIMEOUT_MS,
  startCoordinator,
  waitFor,
  waitForText,
  watch,
} from "./lib.mjs";

const SCREENSHOT = process.env.ENROL_SCREENSHOT || "/tmp/flashedge-enrol.png";
const TOTAL_TIMEOUT_MS = 180_000;

const POOL = "team-a";
const OPERATOR = "tok-ops";
const NODE_TOKEN = "tok-w1";
// The page keeps the token under the dashboard's sessionStorage key.
const TOKEN_KEY = "flashedge.dashboard.token";
const NOT_FOUND = "No pending request with this code (it may have expired, been decided, or never existed).";
// Chosen by whoever asks for a code: the page must show it as text.
const EVIL_HOSTNAME = "<img src=x onerror=window.__pwned=1>";

const LAPTOP_7 = { node_id: "laptop-7", hostname: "laptop-7.local", platform: "linux-x86_64" };
const LAPTOP_8 = { node_id: "laptop-8", hostname: EVIL_HOSTNAME, platform: "darwin-arm64" };
const LAPTOP_9 = { node_id: "laptop-9", hostname: "laptop-9.local", platform: "linux-aarch64" };
const DESK_1 = { node_id: "desk-1", hostname: "desk-1.local", platform: "windows-x86_64" };

/**
 * @typedef {import("./lib.mjs").Browser} Browser
 * @typedef {import("./lib.mjs").Page} Page
 * @typedef {import("./lib.mjs").Server} Server
 * @typedef {import("./lib.mjs").PageGlobals} PageGlobals
 * @typedef {{ status: number, body: unknown, headers: Headers, text: string }} Answer
 * @typedef {{
 *   device_code: string, user_code: string, verification_uri: string,
 *   verification_uri_complete: string, interval: number, expires_in: number, expires_at: string,
 * }} Grant
 * @typedef {{
 *   user_code: string, node_id: string, hostname: string, platform: string,
 *   requested_at: string, requested_from: string | null, expires_at: string,
 * }} Pending
 */

async function main() {
  const chromium = await loadChromium();
  log("starting a coordinator (auth enforced)");
  const server = await startCoordinator({
    FLASHML_NODE_TOKENS: `worker-1:${NODE_TOKEN}`,
    FLASHML_OPERATOR_TOKENS: `ops:${OPERATOR}`,
  });
  const browser = await launch(chromium);
  await servedPage(server);
  await enrolment(browser, server);
  log("all checks passed");
}

/**
 * The page is served without a credential, for a pool or the pool `local`,
 * under a CSP admitting exactly its own inline script and style.
 * @param {Server} server
 */
async function servedPage(server) {
  log("the page is served with its own hash-based CSP, for a pool and for the pool 'local'");
  const pooled = await call(server, null, "GET", `/pools/${POOL}/enrol`);
  const local = await call(server, null, "GET", "/enrol");
  for (const answer of [pooled, local]) {
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get("content-type"), "text/html; charset=utf-8");
    assert.equal(answer.headers.get("x-content-type-options"), "nosniff");
    assert.equal(answer.headers.get("x-frame-options"), "DENY");
    assert.equal(answer.headers.get("referrer-policy"), "no-referrer");
    assert.equal(answer.headers.get("cache-control"), "no-store");
    const csp = answer.headers.get("content-security-policy") ?? "";
    const script = /<script>([\s\S]*?)<\/script>/.exec(answer.text)?.[1] ?? "";
    const style = /<style>([\s\S]*?)<\/style>/.exec(answer.text)?.[1] ?? "";
    assert.ok(script.length > 0 && style.length > 0, "the page inlines its script and style");
    const sha = (/** @type {string} */ text) => `'sha256-${createHash("sha256").update(text).digest("base64")}'`;
    for (const directive of [
      "default-src 'none'",
      `script-src ${sha(script)}`,
      `style-src ${sha(style)}`,
      "connect-src 'self'",
      "form-action 'none'",
      "frame-ancestors 'none'",
    ]) {
      assert.ok(csp.split("; ").includes(directive), `the CSP has ${directive}: ${csp}`);
    }
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/, "no inline code by default, no remote origin");
  }
  assert.equal(local.text, pooled.text, "one page for every pool: it reads its pool from its path");
  const bad = await call(server, null, "GET", "/pools/Not_A_Pool/enrol");
  assert.equal(bad.status, 404);
  assert.match(JSON.stringify(bad.body), /invalid pool name/, "an invalid pool is the dashboard's 404");
}

/**
 * The whole flow: the agent's half over HTTP, the operator's in the browser.
 * @param {Browser} browser
 * @param {Server} server
 */
async function enrolment(browser, server) {
  log("the agent asks for a code and is told to wait");
  const grant = await askForCode(server, POOL, LAPTOP_7);
  const link = new URL(grant.verification_uri_complete);
  assert.equal(link.origin, server.url, "the link is absolute, on this coordinator");
  assert.equal(link.pathname, `/pools/${POOL}/enrol`, "the link is the pool's enrolment page");
  assert.equal(link.searchParams.get("code"), grant.user_code, "the link carries the code");
  assert.equal(new URL(grant.verification_uri).pathname, `/pools/${POOL}/enrol`);
  assertPending(await redeem(server, POOL, grant), "before approval");
  const listed = await pendingEntry(server, POOL, grant.user_code);
  assert.ok(listed, "the operator's API lists the request");
  assert.equal(listed.node_id, LAPTOP_7.node_id);

  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  const page = await context.newPage();
  const errors = await watch(page);
  const response = await page.goto(grant.verification_uri_complete, { timeout: STEP_TIMEOUT_MS });
  assert.equal(response?.status(), 200);
  assert.equal(await page.inputValue("#code"), grant.user_code, "the code is prefilled from ?code=");
  assert.equal(await page.locator("#pool-name").textContent(), POOL);

  log("the page asks for a token, refuses a wrong one and a node's, and keeps an operator's in this tab");
  await page.locator("#auth").waitFor({ state: "visible", timeout: STEP_TIMEOUT_MS });
  assert.equal(await page.locator("#machine").isHidden(), true, "nothing is shown before signing in");
  await signIn(page, "tok-wrong");
  await waitForText(page, "#auth-error", "That token was refused.");
  await signIn(page, NODE_TOKEN);
  await waitForText(page, "#auth-error", "only an operator token");
  assert.deepEqual(await storage(page), { session: 0, local: 0, cookie: "" }, "a refused token is not kept");
  await signIn(page, OPERATOR);
  await page.locator("#auth").waitFor({ state: "hidden", timeout: STEP_TIMEOUT_MS });
  assert.deepEqual(await storage(page), { session: 1, local: 0, cookie: "" }, "the token is kept in this tab only");

  log("the page shows the machine that asked");
  await page.locator("#machine").waitFor({ state: "visible", timeout: STEP_TIMEOUT_MS });
  assert.deepEqual(await machine(page), {
    node: LAPTOP_7.node_id,
    hostname: LAPTOP_7.hostname,
    platform: LAPTOP_7.platform,
    from: listed.requested_from ?? "unknown",
  });
  assert.ok(
    ((await page.locator("#m-requested-at").textContent()) ?? "").startsWith(listed.requested_at),
    "the time it asked, as the server wrote it",
  );
  assert.ok(((await page.locator("#m-expires-at").textContent()) ?? "").startsWith(listed.expires_at));

  log("approving it gives the agent a node token, exactly once");
  await page.click("#approve");
  await waitForText(page, "#outcome", `Approved: ${LAPTOP_7.node_id} can now finish flashnode login.`);
  assert.equal(await page.locator("#approve").isDisabled(), true, "a decided request cannot be decided again");
  const redeemed = await redeem(server, POOL, grant);
  assert.equal(redeemed.status, 200, `the approved code redeems: ${redeemed.text}`);
  const body = /** @type {{ token?: unknown, node_id?: unknown }} */ (redeemed.body);
  assert.equal(body.node_id, LAPTOP_7.node_id);
  assert.ok(typeof body.token === "string" && body.token.length >= 16, "a token comes with it");
  const token = body.token;
  assertPending(await redeem(server, POOL, grant), "once redeemed");
  assert.equal(await pendingEntry(server, POOL, grant.user_code), null, "an approved request is no longer pending");

  log("the enrolled token acts as that node, in that pool only");
  const registered = await call(server, POOL, "POST", "/nodes/register", registration("someone-else"), token);
  assert.equal(registered.status, 200, registered.text);
  assert.deepEqual(registered.body, { node_id: LAPTOP_7.node_id, status: "registered" });
  const beat = (/** @type {string} */ nodeId) =>
    call(server, POOL, "POST", `/nodes/${nodeId}/heartbeat`, { node_id: nodeId }, token);
  assert.equal((await beat(LAPTOP_7.node_id)).status, 200, "it heartbeats its own node");
  assert.equal((await beat("worker-1")).status, 403, "it is not another node");
  const listing = await call(server, POOL, "GET", "/nodes", undefined, token);
  assert.equal(listing.status, 200);
  assert.ok(
    /** @type {Array<{ node_id: string }>} */ (listing.body).some((n) => n.node_id === LAPTOP_7.node_id),
    "the node is registered in the pool",
  );
  assert.equal((await call(server, "team-b", "GET", "/nodes", undefined, token)).status, 401, "not in another pool");

  log("the decided code is no longer pending");
  await page.click("#look-up");
  await waitForText(page, "#lookup-message", NOT_FOUND);
  assert.equal(await page.locator("#machine").isHidden(), true);

  log("a second machine, with a hostile hostname, is looked up by a code typed loosely, and denied");
  const second = await askForCode(server, POOL, LAPTOP_8);
  await page.fill("#code", ` ${second.user_code.toLowerCase().replaceAll("-", " ")} `);
  await page.click("#look-up");
  await waitFor(
    page,
    () => page.locator("#m-node").textContent(),
    (t) => t === LAPTOP_8.node_id,
    "the second machine",
  );
  assert.equal(await page.locator("#machine").isVisible(), true);
  assert.equal(await page.inputValue("#code"), second.user_code, "the code is shown as the server spells it");
  const shown = await machine(page);
  assert.equal(shown.hostname, EVIL_HOSTNAME, "the hostname is shown verbatim, as text");
  assert.equal(shown.platform, LAPTOP_8.platform);
  assert.equal(await page.locator("#machine img, main img, main script").count(), 0, "no element was made from data");
  await page.screenshot({ path: SCREENSHOT, fullPage: true });
  log(`screenshot: ${SCREENSHOT}`);
  await page.click("#deny");
  await waitForText(page, "#outcome", "Denied.");
  assertPending(await redeem(server, POOL, second), "after denial");
  await page.waitForTimeout(1000);
  assertPending(await redeem(server, POOL, second), "after denial, later");
  assert.equal(await pendingEntry(server, POOL, second.user_code), null, "a denied request is no longer pending");

  log("a token refused mid-decision sends the operator back to sign in");
  const third = await askForCode(server, POOL, LAPTOP_9);
  await page.fill("#code", third.user_code);
  await page.click("#look-up");
  await waitForText(page, "#m-node", LAPTOP_9.node_id);
  await page.evaluate(
    ({ key, value }) => {
      const win = /** @type {PageGlobals} */ (/** @type {unknown} */ (globalThis));
      win.sessionStorage.setItem(key, value);
    },
    { key: TOKEN_KEY, value: NODE_TOKEN },
  );
  await page.click("#approve");
  await page.locator("#auth").waitFor({ state: "visible", timeout: STEP_TIMEOUT_MS });
  await waitForText(page, "#auth-error", "only an operator token");
  assert.equal((await storage(page)).session, 0, "the refused token is forgotten");
  assert.equal(await page.locator("#machine").isHidden(), true);
  assertPending(await redeem(server, POOL, third), "after a refused approval");
  await signIn(page, OPERATOR);
  await page.locator("#machine").waitFor({ state: "visible", timeout: STEP_TIMEOUT_MS });
  assert.equal(await page.locator("#m-node").textContent(), LAPTOP_9.node_id, "signing in again shows it again");

  log("a code decided elsewhere answers 'no pending request'");
  const elsewhere = await call(server, POOL, "POST", "/device/deny", { user_code: third.user_code }, OPERATOR);
  assert.equal(elsewhere.status, 200, elsewhere.text);
  assert.equal(/** @type {{ denied?: unknown }} */ (elsewhere.body).denied, true);
  await page.click("#approve");
  await waitForText(page, "#outcome", NOT_FOUND);
  assertPending(await redeem(server, POOL, third), "after denial elsewhere");

  log("the pool 'local' is enrolled at /enrol, with the sign-in of this tab");
  const desk = await askForCode(server, null, DESK_1);
  await page.goto(`${server.url}/enrol?code=${encodeURIComponent(desk.user_code)}`, { timeout: STEP_TIMEOUT_MS });
  await page.locator("#machine").waitFor({ state: "visible", timeout: STEP_TIMEOUT_MS });
  assert.equal(await page.locator("#m-node").textContent(), DESK_1.node_id);
  assert.equal(await page.locator("#pool-name").textContent(), "local");
  await page.click("#deny");
  await waitForText(page, "#outcome", "Denied.");
  assertPending(await redeem(server, null, desk), "in the pool 'local', after denial");

  log("a new tab asks again; Forget token forgets it");
  const other = await browser.newContext();
  const fresh = await other.newPage();
  await fresh.goto(grant.verification_uri_complete, { timeout: STEP_TIMEOUT_MS });
  await fresh.locator("#auth").waitFor({ state: "visible", timeout: STEP_TIMEOUT_MS });
  await other.close();
  await page.click("#forget-token");
  await page.locator("#auth").waitFor({ state: "visible", timeout: STEP_TIMEOUT_MS });
  assert.equal((await storage(page)).session, 0);

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
 * @param {Page} page
 * @param {string} token
 */
async function signIn(page, token) {
  await page.fill("#token", token);
  await page.press("#token", "Enter");
}

/**
 * What this page's origin stores, as the page sees it.
 * @param {Page} page
 */
function storage(page) {
  return page.evaluate(() => {
    const win = /** @type {PageGlobals} */ (/** @type {unknown} */ (globalThis));
    return {
      session: Object.keys(win.sessionStorage).length,
      local: Object.keys(win.localStorage).length,
      cookie: win.document.cookie,
    };
  });
}

/**
 * The machine panel's text.
 * @param {Page} page
 */
async function machine(page) {
  const text = (/** @type {string} */ id) => page.locator(id).textContent();
  return {
    node: await text("#m-node"),
    hostname: await text("#m-hostname"),
    platform: await text("#m-platform"),
    from: await text("#m-requested-from"),
  };
}

/**
 * One call to the coordinator: under that pool's API, or (`pool` null) at
 * `path` as is. Answers the status, headers and body whatever the status.
 * @param {Server} server
 * @param {string | null} pool null for a path outside any pool's API
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 * @param {string} [token]
 * @returns {Promise<Answer>}
 */
async function call(server, pool, method, path, body, token) {
  /** @type {Record<string, string>} */
  const headers = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const r = await fetch(server.url + (pool ? `/pools/${pool}/v1alpha1` : "") + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(STEP_TIMEOUT_MS),
  });
  const text = await r.text();
  /** @type {unknown} */
  let parsed = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON (the page itself)
  }
  return { status: r.status, body: parsed, headers: r.headers, text };
}

/**
 * The API root of a pool (null: the pool `local`, at /v1alpha1).
 * @param {string | null} pool
 */
function apiPath(pool) {
  return pool ? `/pools/${pool}/v1alpha1` : "/v1alpha1";
}

/**
 * What `flashnode login` does first: asks for a code, with no credential.
 * @param {Server} server
 * @param {string | null} pool
 * @param {{ node_id: string, hostname: string, platform: string }} asking the machine asking
 * @returns {Promise<Grant>}
 */
async function askForCode(server, pool, asking) {
  const answer = await call(server, null, "POST", `${apiPath(pool)}/device/code`, asking);
  assert.equal(answer.status, 200, `POST device/code: ${answer.status} ${answer.text}`);
  const grant = /** @type {Grant} */ (answer.body);
  for (const field of ["device_code", "user_code", "verification_uri", "verification_uri_complete", "expires_at"]) {
    assert.equal(typeof grant[/** @type {keyof Grant} */ (field)], "string", `the grant has ${field}`);
  }
  assert.ok(grant.user_code.length > 0 && grant.user_code.length <= 16, "the user code is short");
  assert.ok(grant.device_code.length >= 20 && grant.device_code !== grant.user_code, "the device code is long");
  assert.ok(Number.isInteger(grant.interval) && grant.interval > 0, "a polling interval");
  assert.ok(Number.isInteger(grant.expires_in) && grant.expires_in > 0, "a lifetime");
  return grant;
}

/**
 * What `flashnode login` polls with.
 * @param {Server} server
 * @param {string | null} pool
 * @param {Grant} grant
 */
function redeem(server, pool, grant) {
  return call(server, null, "POST", `${apiPath(pool)}/device/token`, { device_code: grant.device_code });
}

/**
 * @param {Answer} answer
 * @param {string} when
 */
function assertPending(answer, when) {
  assert.equal(answer.status, 400, `the token call ${when}: ${answer.status} ${answer.text}`);
  const body = /** @type {{ error?: unknown, interval?: unknown }} */ (answer.body);
  assert.equal(body.error, "authorization_pending", `the token call ${when}: ${answer.text}`);
  assert.equal(typeof body.interval, "number", `the token call ${when} names an interval`);
}

/**
 * The pool's pending request with this code, as the operator's API lists it.
 * @param {Server} server
 * @param {string} pool
 * @param {string} userCode
 * @returns {Promise<Pending | null>}
 */
async function pendingEntry(server, pool, userCode) {
  const answer = await call(server, pool, "GET", "/device/pending", undefined, OPERATOR);
  assert.equal(answer.status, 200, `GET device/pending: ${answer.status} ${answer.text}`);
  assert.ok(Array.isArray(answer.body), "device/pending is a list");
  return /** @type {Pending[]} */ (answer.body).find((e) => e.user_code === userCode) ?? null;
}

/**
 * A node registration as an agent POSTs it (test/fixtures/registration.ts).
 * @param {string} nodeId
 */
function registration(nodeId) {
  return {
    node_id: nodeId,
    kubernetes_node: "",
    hostname: `${nodeId}.local`,
    capabilities: { cpu_cores: 8, memory_bytes: 16e9, gpus: [], os: "linux", architecture: "amd64" },
  };
}

await run(main, TOTAL_TIMEOUT_MS);
