#!/usr/bin/env node
// @ts-check
// Browser test of the dashboard (docs/protocol.md §11), outside `npm test` because it
// needs Debian's chromium and two `wrangler dev` servers (about 30 s).
// Run: `npm run test:browser` (node test/browser/dashboard.mjs).
//
// Drives headless /usr/bin/chromium with playwright-core against real
// coordinators on 127.0.0.1 and checks what an operator sees: the token
// prompt when auth is enforced, a registered node and a running job, the
// page updating when a task completes, a stuck task flagged and explained,
// enrolled machines with who approved, denied and revoked them, a
// replicated task's replicas and verdicts and each node's validity record,
// hosted runs (a running one, then cancelled; one whose rounds a node ran,
// charted round by round; none, and a failed request for them), and
// attacker-chosen node ids, labels, hostnames and error details rendered as
// text — no injected script runs and the page's CSP is never violated. Writes
// a screenshot (DASHBOARD_SCREENSHOT, default /tmp/flashedge-dashboard.png),
// one of the secured pool with a replicated task explained beside it
// (…-replicas.png), and one of the runs panel (…-runs.png).
//
// Every server it starts is stopped by pid, whatever happens; every wait is
// bounded (the harness and helpers shared with enrol.mjs are in lib.mjs).

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { coordinator, sha256 } from "../support/index.mjs";
import {
  client,
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

const SCREENSHOT = process.env.DASHBOARD_SCREENSHOT || "/tmp/flashedge-dashboard.png";
const TOTAL_TIMEOUT_MS = 240_000;

// Attacker-controlled strings. Node ids come from token names when auth is
// enforced, so these two are token names too (no ':' or ',' in them).
const EVIL_NODE = "<script>window.__pwned=1</script>";
const EVIL_NODE_2 = "<img src=x onerror=window.__pwned=2>";
const EVIL_LABEL = '"><svg onload=window.__pwned=3>';
// Chosen by a machine asking to enrol, before anyone has approved it.
const EVIL_HOSTNAME = "<img src=x onerror=window.__pwned=4>";

// Machines asking to enrol (docs/protocol.md §9): one approved, one denied, one approved and then revoked.
const LAPTOP_1 = { node_id: "laptop-1", hostname: EVIL_HOSTNAME, platform: "linux-x86_64" };
const LAPTOP_2 = { node_id: "laptop-2", hostname: "laptop-2.local", platform: "darwin-arm64" };
const LAPTOP_3 = { node_id: "laptop-3", hostname: "laptop-3.local", platform: "linux-aarch64" };

const TOKENS = {
  FLASHML_NODE_TOKENS: `worker-1:tok-w1,${EVIL_NODE}:tok-evil,${EVIL_NODE_2}:tok-evil2,rep-a:tok-rep-a,rep-b:tok-rep-b,rep-c:tok-rep-c,runner:tok-runner`,
  FLASHML_OPERATOR_TOKENS: "ops:tok-ops",
};

// A hosted run's worker parameters (docs/protocol.md §17): the reference's fedavg_worker's.
const WORKER_PARAMS = {
  local_steps: 2,
  lr: 0.1,
  batch_size: 4,
  seed: 7,
  in_dim: 2,
  hidden: 2,
  out_dim: 1,
  dataset_size: 32,
};

/**
 * @typedef {import("./lib.mjs").Browser} Browser
 * @typedef {import("./lib.mjs").Server} Server
 * @typedef {import("./lib.mjs").Job} Job
 * @typedef {import("./lib.mjs").PageGlobals} PageGlobals
 * @typedef {{
 *   run_id: string,
 *   state: string,
 *   reason: string | null,
 *   rounds_completed: number,
 *   live_round: { round: number, job_id: string } | null,
 *   history: Array<{ round: number, mean_loss?: number }>,
 * }} Run
 */

async function main() {
  const chromium = await loadChromium();

  log("starting two coordinators (auth enforced, and open)");
  const [secured, open] = await Promise.all([
    startCoordinator(TOKENS),
    startCoordinator({ FLASHML_NODE_TOKENS: "", FLASHML_OPERATOR_TOKENS: "" }),
  ]);

  const browser = await launch(chromium);

  await enforcedDashboard(browser, secured);
  await hostedRuns(browser, secured);
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

  log("enrolled machines are shown with who approved, denied and revoked them");
  assert.equal(await page.locator("#enrolment-sub a").getAttribute("href"), `/pools/${pool}/enrol`);
  await waitForText(page, "#credentials", "No enrolled machines.");
  await enrol(api, LAPTOP_1);
  const denied = await api.askForCode(LAPTOP_2);
  assert.deepEqual(await api.decide("tok-ops", "deny", denied), { denied: true, node_id: LAPTOP_2.node_id });
  await enrol(api, LAPTOP_3);
  assert.deepEqual(await api.revoke("tok-ops", LAPTOP_3.node_id), { node_id: LAPTOP_3.node_id, revoked: true });
  await waitForText(page, "#credentials", "revoked by ops");
  await waitForText(page, "#requests", "denied");
  const row = (/** @type {string} */ selector) => page.locator(`${selector} td`).allTextContents();
  const active = await row(`#credentials tr[data-node="${LAPTOP_1.node_id}"]`);
  assert.deepEqual(
    active.slice(0, 5),
    [LAPTOP_1.node_id, LAPTOP_1.node_id, EVIL_HOSTNAME, LAPTOP_1.platform, "ops"],
    "an enrolled machine, its owner (by default itself), its hostname verbatim, and who approved it",
  );
  assert.match(active[6] ?? "", /^active since \d/);
  const revoked = await row(`#credentials tr[data-node="${LAPTOP_3.node_id}"]`);
  assert.equal(revoked[4], "ops");
  assert.match(revoked[6] ?? "", /^revoked by ops \d/);
  assert.deepEqual(
    await Promise.all((await page.locator("#credentials tbody tr").all()).map((r) => r.getAttribute("data-node"))),
    [LAPTOP_1.node_id, LAPTOP_3.node_id],
    "active credentials first",
  );
  const refused = await row(`#requests tr[data-node="${LAPTOP_2.node_id}"]`);
  assert.deepEqual(refused.slice(0, 3), [LAPTOP_2.node_id, LAPTOP_2.hostname, LAPTOP_2.platform]);
  assert.deepEqual(refused.slice(4, 6), ["denied", "ops"], "the denied request, and who denied it");
  assert.equal(
    (await row(`#requests tr[data-node="${LAPTOP_1.node_id}"]`))[1],
    EVIL_HOSTNAME,
    "the request's hostname verbatim",
  );
  assert.equal(await page.locator("#requests tbody tr").count(), 3, "every request of the last day");
  await waitForText(page, "#overview", "1 revoked");
  assert.ok(((await page.locator("#overview").textContent()) ?? "").includes("enrolled machines"));
  assert.equal(
    await page.locator("#enrolment-section img, #enrolment-section script").count(),
    0,
    "no element was made from a hostname",
  );

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

  await verifiedResults(page, api, `${server.url}/pools/${pool}`);

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
  // A node whose last 5 attempts failed is held back (docs/protocol.md §13).
  await api.register(null, { node_id: "flaky", hostname: "flaky.local" });
  const flakyJob = await api.submit(null, searchJob("flaky-job", 5));
  for (let i = 0; i < 5; i++) await api.fail(null, await api.claim(null, "flaky", flakyJob.job_id));
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = await watch(page);
  // The runs are refused at first, with a hostile detail: the runs panel says so, the others draw.
  const runsUrl = /\/v1alpha1\/runs\?/;
  await page.route(runsUrl, (route) =>
    route.fulfill({ status: 503, contentType: "application/json", body: JSON.stringify({ detail: EVIL_HOSTNAME }) }),
  );
  await page.goto(`${server.url}/`, { timeout: STEP_TIMEOUT_MS });
  log("open mode: the root page shows the pool 'local' without asking for a token");
  await waitForText(page, "#nodes", EVIL_NODE);
  await waitForText(page, "#jobs", "open-job");
  assert.equal(await page.locator("#auth").isHidden(), true);

  log("open mode: a failed request for the runs is shown in their panel; a pool with none says so");
  await waitForText(page, "#runs .error", `could not list runs: ${EVIL_HOSTNAME}`);
  assert.equal(await page.locator("#runs img").count(), 0, "no element was made from an error's detail");
  await page.unroute(runsUrl);
  await waitForText(page, "#runs", "No runs yet. Start one with POST /v1alpha1/runs.");

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
  assert.equal(await page.locator("#enrolment-sub a").getAttribute("href"), "/enrol");
  assert.equal(await page.locator("#credentials").textContent(), "No enrolled machines.");
  assert.equal(await page.locator("#requests").textContent(), "No enrolment requests in the last day.");

  assert.deepEqual(
    await pageState(page),
    { pwned: undefined, violations: [] },
    "no injected script ran and the CSP was never violated",
  );
  assert.deepEqual(errors, [], "no uncaught errors and no CSP reports in the console");
  await context.close();
}

/**
 * Hosted runs (docs/protocol.md §17), as the operator sees them in a pool of
 * their own: a run started through the API shows RUNNING with none of its
 * rounds done and its live round's job; cancelled through the API, it shows
 * CANCELLED with who cancelled it. A run whose two rounds a node ran (one
 * shard, quorum 1) charts its mean loss as a polyline with one point per
 * round, the values beside it as text.
 * @param {Browser} browser
 * @param {Server} server
 */
async function hostedRuns(browser, server) {
  log("hosted runs: a running run, then cancelled; a finished run's loss per round");
  const pool = `runs-${randomUUID().slice(0, 8)}`;
  const ops = coordinator(server.url, { pool, token: "tok-ops", timeoutMs: STEP_TIMEOUT_MS });
  const api = client(server.url, pool);

  const long = await startRun(ops, {
    kind: "federated_averaging",
    rounds: 3,
    num_shards: 2,
    min_participants: 2,
    worker_params: WORKER_PARAMS,
    labels: { note: EVIL_LABEL },
  });
  const live = (await runWhen(ops, long.run_id, (r) => r.live_round !== null)).live_round;
  assert.ok(live, "the run's first round is submitted");

  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  const errors = await watch(page);
  await page.goto(`${server.url}/pools/${pool}/`, { timeout: STEP_TIMEOUT_MS });
  await page.locator("#auth").waitFor({ state: "visible", timeout: STEP_TIMEOUT_MS });
  await page.fill("#token", "tok-ops");
  await page.press("#token", "Enter");

  const longRow = page.locator(`#runs tr[data-run="${long.run_id}"]`);
  await waitFor(
    page,
    () => longRow.locator("td.live").textContent(),
    (t) => typeof t === "string" && t.includes(live.job_id),
    "the live round's job in the run's row",
  );
  assert.equal(await longRow.locator(".badge").textContent(), "RUNNING");
  assert.equal(await longRow.locator(".progress-label").textContent(), "0/3 rounds");
  assert.equal(await longRow.locator("td.live div").first().textContent(), "round 0 · quorum 2");
  assert.match((await longRow.locator("td:first-child").textContent()) ?? "", /federated_averaging · started by ops/);
  assert.equal(await longRow.locator(".chip").textContent(), `note=${EVIL_LABEL}`, "a run's label is shown as text");
  assert.equal(await longRow.locator("td.trend").textContent(), "no round aggregated yet");

  const cancelled = await ops.send("POST", `/runs/${long.run_id}/cancel`);
  assert.equal(cancelled.status, 200, cancelled.text);
  assert.deepEqual((({ state, reason }) => ({ state, reason }))(/** @type {Run} */ (JSON.parse(cancelled.text))), {
    state: "CANCELLED",
    reason: "cancelled by ops",
  });
  await page.reload();
  await waitFor(
    page,
    () => longRow.locator(".badge").textContent(),
    (t) => t === "CANCELLED",
    "the run shown CANCELLED",
  );
  assert.equal(await longRow.locator(".reason").textContent(), "cancelled by ops", "who cancelled it");
  assert.equal(await longRow.locator(".progress-label").textContent(), "0/3 rounds");
  assert.equal(await longRow.locator("td.live").textContent(), "—", "a run that ended has no live round");

  // One shard, quorum 1: each round is one task, which one node runs and commits.
  await api.register("tok-runner", { hostname: "runner.local" });
  const short = await startRun(ops, {
    kind: "federated_averaging",
    rounds: 2,
    num_shards: 1,
    min_participants: 1,
    worker_params: WORKER_PARAMS,
  });
  const losses = [0.9, 0.4];
  for (const [round, loss] of losses.entries()) {
    const job = (await runWhen(ops, short.run_id, (r) => r.live_round?.round === round)).live_round;
    assert.ok(job);
    await commitRound(server.url, pool, await api.claim("tok-runner", "runner", job.job_id), loss);
  }
  const done = await runWhen(ops, short.run_id, (r) => r.state !== "RUNNING");
  assert.equal(done.state, "SUCCEEDED", done.reason ?? "");
  assert.deepEqual(
    done.history.map((h) => h.mean_loss),
    losses,
  );

  const shortRow = page.locator(`#runs tr[data-run="${short.run_id}"]`);
  await waitFor(
    page,
    () => shortRow.locator(".badge").textContent(),
    (t) => t === "SUCCEEDED",
    "the finished run shown SUCCEEDED",
  );
  assert.equal(await shortRow.locator(".progress-label").textContent(), "2/2 rounds");
  const points = ((await shortRow.locator("svg.chart polyline").getAttribute("points")) ?? "").split(" ");
  assert.equal(points.length, losses.length, `one point per round: ${points.join(" ")}`);
  assert.deepEqual(points, ["4,4", "156,36"], "round 0's higher loss drawn top left, round 1's bottom right");
  assert.equal(await shortRow.locator(".values").textContent(), "mean loss: r0 0.9 · r1 0.4", "the values as text");
  assert.deepEqual(
    await page.locator("#runs tbody tr").evaluateAll((rows) => rows.map((row) => row.getAttribute("data-run"))),
    [short.run_id, long.run_id],
    "newest run first",
  );
  assert.equal(await page.locator("#runs svg").count(), 1, "only a run with aggregated rounds has a chart");
  assert.equal(await page.locator("#runs script, #runs img").count(), 0, "no element was made from data");
  // A pool with more runs than a page: the server links a next page, and the panel says what it shows.
  await page.route(/\/v1alpha1\/runs\?/, async (route) => {
    const response = await route.fetch();
    const headers = { ...response.headers(), link: `<${route.request().url()}&cursor=x>; rel="next"` };
    await route.fulfill({ response, headers });
  });
  await waitForText(
    page,
    "#runs .more",
    `… the first 2 runs of the pool are shown (GET /pools/${pool}/v1alpha1/runs lists all)`,
  );
  const shot = SCREENSHOT.replace(/(\.png)?$/, "-runs.png");
  await page.locator("#runs-section").screenshot({ path: shot });
  log(`screenshot: ${shot}`);
  await page.unrouteAll();

  assert.deepEqual(
    await pageState(page),
    { pwned: undefined, violations: [] },
    "no injected script ran and the CSP was never violated",
  );
  assert.deepEqual(errors, [], "no uncaught errors in the page");
  await context.close();
}

/**
 * Verified results (docs/protocol.md §14), to an operator (replicated jobs need tokens):
 * a replica's lease says which replica it is and explains its task (the
 * replicas, the node that may not run another one, what the task waits
 * for); once a quorum agrees, each node's validity record, the outvoted
 * node flagged.
 * @param {import("./lib.mjs").Page} page
 * @param {ReturnType<typeof client>} api
 * @param {string} url
 */
async function verifiedResults(page, api, url) {
  log("a replicated task's replicas, verdicts and the nodes' validity records, as the operator sees them");
  for (const id of ["rep-a", "rep-b", "rep-c"]) await api.register(`tok-${id}`, { hostname: `${id}.local` });
  const job = await api.submit("tok-ops", searchJob("verified-job", 1, { labels: { "flashml.dev/replicas": "2" } }));

  const a = await api.claim("tok-rep-a", "rep-a", job.job_id);
  await explainLease(page, "replica 1");
  await waitForText(page, "#explain .replicas", "2 wanted · 2 must agree");
  assert.deepEqual(await replicaRows(page), [["1", "rep-a", "live", "—", "—"]]);
  assert.equal(
    await page.locator('#explain .placements tr:has(td:text-is("rep-a")) td:nth-child(3)').textContent(),
    "replica",
    "the node holding replica 1 is refused by the replica rule",
  );
  // Other jobs of this pool are ahead of it too: the waiting line names them first.
  assert.match(
    (await page.locator("#explain .waiting").textContent()) ?? "",
    /^In the queue: waits for .*a node that has not run a replica of it \(rep-a holds or ran one\)/,
  );

  // rep-a and rep-b disagree: a third replica is wanted, on rep-c.
  const honest = await commitReplica(url, "tok-rep-a", a, { accuracy: 0.71 });
  const cheat = await commitReplica(url, "tok-rep-b", await api.claim("tok-rep-b", "rep-b", job.job_id), {
    accuracy: 0.99,
  });
  const c = await api.claim("tok-rep-c", "rep-c", job.job_id);
  await explainLease(page, "replica 3");
  await waitForText(page, "#explain .replicas", "3 wanted · 2 must agree");
  assert.deepEqual(await replicaRows(page), [
    ["1", "rep-a", "completed", honest.slice(0, 12), "pending"],
    ["2", "rep-b", "completed", cheat.slice(0, 12), "pending"],
    ["3", "rep-c", "live", "—", "—"],
  ]);

  await commitReplica(url, "tok-rep-c", c, { accuracy: 0.71 });
  const record = (/** @type {string} */ node) => page.locator(`#nodes tr[data-node="${node}"] td.validity`);
  await waitFor(
    page,
    () => record("rep-b").textContent(),
    (t) => t === "⚠ 0 valid · 1 invalid",
    "rep-b's invalid result",
  );
  assert.equal(await record("rep-b").getAttribute("class"), "validity bad", "the outvoted node is flagged");
  assert.equal(await record("rep-a").textContent(), "1 valid · 0 invalid");
  assert.equal(await record("rep-c").textContent(), "1 valid · 0 invalid");
  assert.equal(await record("worker-1").textContent(), "—", "a node with no judged result has no record");
  const shot = SCREENSHOT.replace(/(\.png)?$/, "-replicas.png");
  await page.screenshot({ path: shot, fullPage: true });
  log(`screenshot: ${shot}`);
}

/**
 * Opens the placement panel from the live lease showing `replica`.
 * @param {import("./lib.mjs").Page} page
 * @param {string} replica
 */
async function explainLease(page, replica) {
  const row = page.locator("#leases tbody tr", { hasText: replica });
  await row.waitFor({ timeout: STEP_TIMEOUT_MS });
  await row.locator("button").click();
}

/**
 * The explain panel's replica rows: replica, node, state, sha256 prefix, verdict.
 * @param {import("./lib.mjs").Page} page
 */
function replicaRows(page) {
  return page
    .locator("#explain .replicas tbody tr")
    .evaluateAll((rows) => rows.map((row) => Array.from(row.children, (cell) => cell.textContent ?? "")));
}

/**
 * A replica's agent: writes `metrics` under the prefix its lease names and commits them, with its
 * node's token; answers their sha256.
 * @param {string} url  the pool's base URL
 * @param {string} token
 * @param {import("./lib.mjs").Lease} lease
 * @param {unknown} metrics
 */
async function commitReplica(url, token, lease, metrics) {
  const prefix = /** @type {{ payload: { output_prefix: string } }} */ (/** @type {unknown} */ (lease)).payload
    .output_prefix;
  const bytes = JSON.stringify(metrics);
  const agent = coordinator(url, { token, timeoutMs: STEP_TIMEOUT_MS });
  const put = await agent.upload(`${prefix}metrics.json`, bytes);
  assert.equal(put.status, 200, `the replica's metrics are stored under ${prefix}`);
  const sha = sha256(bytes);
  const r = await agent.complete(lease.lease_id, { output_sha256: sha });
  assert.deepEqual(JSON.parse(r.text), { accepted: true });
  return sha;
}

// ---- helpers ---------------------------------------------------------------

/**
 * Starts a hosted run as the operator `ops`; answers its record.
 * @param {ReturnType<typeof coordinator>} ops
 * @param {Record<string, unknown>} body
 * @returns {Promise<Run>}
 */
async function startRun(ops, body) {
  const r = await ops.send("POST", "/runs", { body });
  assert.equal(r.status, 201, `POST /runs: ${r.text}`);
  return JSON.parse(r.text);
}

/**
 * The run once `ready` holds of it, asked every 200 ms up to STEP_TIMEOUT_MS.
 * @param {ReturnType<typeof coordinator>} ops
 * @param {string} runId
 * @param {(run: Run) => boolean} ready
 * @returns {Promise<Run>}
 */
async function runWhen(ops, runId, ready) {
  const until = Date.now() + STEP_TIMEOUT_MS;
  /** @type {Run | undefined} */
  let run;
  while (Date.now() < until) {
    const r = await ops.send("GET", `/runs/${runId}`);
    assert.equal(r.status, 200, `GET /runs/${runId}: ${r.text}`);
    run = /** @type {Run} */ (JSON.parse(r.text));
    if (ready(run)) return run;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`timed out waiting for run ${runId} (last seen: ${JSON.stringify(run)})`);
}

/**
 * What a fedavg_worker commits for its shard of a round: its delta.json,
 * then its metrics.json (`{samples, loss}`) and the commit of the metrics'
 * sha256, with the runner's token.
 * @param {string} url
 * @param {string} pool
 * @param {import("./lib.mjs").Lease} lease
 * @param {number} loss
 */
async function commitRound(url, pool, lease, loss) {
  const agent = coordinator(url, { pool, token: "tok-runner", timeoutMs: STEP_TIMEOUT_MS });
  const prefix = `jobs/${lease.job_id}/${lease.task_id}`;
  const delta = { w: { shape: [2], data: [0.1, -0.2] }, b: { shape: [], data: [0.05] } };
  assert.equal((await agent.upload(`${prefix}/delta.json`, JSON.stringify(delta))).status, 200);
  const metrics = JSON.stringify({ samples: 8, loss });
  assert.equal((await agent.upload(`${prefix}/metrics.json`, metrics)).status, 200);
  const r = await agent.complete(lease.lease_id, { output_sha256: sha256(metrics) });
  assert.deepEqual(JSON.parse(r.text), { accepted: true }, `the round's commit: ${r.text}`);
}

/**
 * A machine enrolled end to end: it asks, the operator approves, it redeems its node token.
 * @param {ReturnType<typeof client>} api
 * @param {import("./lib.mjs").Machine} machine
 */
async function enrol(api, machine) {
  const grant = await api.askForCode(machine);
  await api.decide("tok-ops", "approve", grant);
  const issued = await api.redeem(grant);
  assert.equal(issued.node_id, machine.node_id);
  assert.equal(typeof issued.token, "string", "the approved machine gets a node token");
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

await run(main, TOTAL_TIMEOUT_MS);
