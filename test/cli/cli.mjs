// @ts-check
// The `flashedge` CLI against real `wrangler dev` coordinators: one open,
// one enforcing operator and node tokens. Every command runs as a child
// process, as a person runs it; a simulated node drives the jobs over HTTP
// (register, claim, upload, commit, fail) as the agent does. The servers
// come from the browser tests' launcher (test/browser/lib.mjs), stopped by
// pid whatever happens. It prints `N passed, N failed` and exits non-zero
// on any failure.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import YAML from "yaml";
import { client, ROOT, run, startCoordinator } from "../browser/lib.mjs";
import { sleep } from "../support/index.mjs";

const CLI = join(ROOT, "cli", "flashedge.mjs");
const FEDAVG_RUN = join(ROOT, "examples", "fedavg-run.json");
const KMEANS_RUN = join(ROOT, "examples", "kmeans-run.json");
const home = mkdtempSync(join(tmpdir(), "flashedge-cli-"));
const CONFIG = join(home, "flashedge", "config.json");

let passed = 0;
let failed = 0;

/** @param {string} message */
const log = (message) => process.stdout.write(`[cli-test] ${message}\n`);

/**
 * One named check; a failure is counted and reported, and the run goes on.
 * @param {string} name
 * @param {() => Promise<void>} fn
 */
async function check(name, fn) {
  try {
    await fn();
    passed += 1;
    log(`ok   ${name}`);
  } catch (error) {
    failed += 1;
    log(`FAIL ${name}\n${error instanceof Error ? error.message : error}`);
  }
}

/**
 * @typedef {{ code: number | null, stdout: string, stderr: string }} Result
 */

/**
 * Runs `flashedge ARGS` with its own config file and no inherited token.
 * @param {string[]} args
 * @param {{ token?: string, stdin?: string }} [options]
 * @returns {Promise<Result>}
 */
function cli(args, { token, stdin } = {}) {
  const { FLASHEDGE_TOKEN: _inherited, ...env } = process.env;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...env, FLASHEDGE_CONFIG: CONFIG, NO_COLOR: "1", ...(token ? { FLASHEDGE_TOKEN: token } : {}) },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(stdin ?? "");
  });
}

/**
 * @param {Result} r
 * @param {number} code
 */
function exits(r, code) {
  assert.equal(r.code, code, `exit ${r.code}, wanted ${code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
}

/** @param {string} text */
const json = (text) => JSON.parse(text);

/**
 * A job spec in YAML: `trials` hyperparameter trials, optionally needing GPUs.
 * @param {string} name
 * @param {number} trials
 * @param {{ gpus?: number, attempts?: number }} [options]
 */
function yamlJob(name, trials, { gpus = 0, attempts = 3 } = {}) {
  const file = join(home, `${name}.yaml`);
  writeFileSync(
    file,
    `# a job written by hand, as a person would
apiVersion: flashml.dev/v1alpha1
kind: Job
metadata:
  name: ${name}
spec:
  execution: { backend: leases }
  image: { repository: ghcr.io/zolli-labs/flashml-runner, tag: "0.4.1" }
  workload:
    type: hyperparameter_search
    parameters:
      module: flashml_workloads.sklearn_trial
      trials:
${Array.from({ length: trials }, (_, i) => `        - { C: ${i + 1} }`).join("\n")}
      lease_seconds: 60
${gpus ? `  resources: { gpuPerTask: ${gpus} }\n` : ""}  retryPolicy: { maxTaskAttempts: ${attempts} }
`,
  );
  return file;
}

/**
 * A simulated node takes `n` tasks of the job and commits (or fails) each.
 * @param {ReturnType<typeof client>} api
 * @param {string | null} token
 * @param {string} nodeId
 * @param {string} jobId
 * @param {number} n
 * @param {"complete" | "fail"} [outcome]
 */
async function work(api, token, nodeId, jobId, n, outcome = "complete") {
  for (let i = 0; i < n; i++) {
    const lease = await api.claim(token, nodeId, jobId);
    await sleep(150); // long enough for `watch` to see it running
    if (outcome === "complete") await api.complete(token, lease);
    else await api.fail(token, lease);
  }
}

/** @typedef {import("../../cli/runs.mjs").RunRecord} RunRecord */

/**
 * The run as `run-status --json` shows it once `ready` holds of it, asked
 * every 200 ms for up to 20 s (its Workflow submits each round a moment
 * after the start answers).
 * @param {string[]} at
 * @param {string} runId
 * @param {(run: RunRecord) => boolean} ready
 * @param {{ token?: string }} [options]
 * @returns {Promise<RunRecord>}
 */
async function runOnce(at, runId, ready, options) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const r = await cli([...at, "--json", "run-status", runId], options);
    exits(r, 0);
    const found = /** @type {RunRecord} */ (json(r.stdout));
    if (ready(found)) return found;
    if (Date.now() > deadline) throw new Error(`run ${runId} never got there: ${r.stdout}`);
    await sleep(200);
  }
}

/**
 * A run file, written as a person would, from an example with some fields changed.
 * @param {string} name
 * @param {string} example
 * @param {Record<string, unknown>} changes
 */
function runFile(name, example, changes) {
  const file = join(home, `${name}.json`);
  writeFileSync(file, JSON.stringify({ ...json(readFileSync(example, "utf8")), ...changes }, null, 2));
  return file;
}

/** A loopback server that records one request and answers it, to see the bytes the CLI sends. */
async function recorder() {
  /** @type {{ method?: string, url?: string, headers: import("node:http").IncomingHttpHeaders, body: string }[]} */
  const seen = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      const parsed = body ? JSON.parse(body) : {};
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ node_id: "n1", pools: parsed.pools ?? [] }));
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(undefined)));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return { url: `http://127.0.0.1:${address.port}`, seen, close: () => server.close() };
}

async function openCoordinator() {
  const server = await startCoordinator({});
  const pool = "cli-open";
  const api = client(server.url, pool);
  const at = ["--url", server.url, "--pool", pool];
  log(`open coordinator at ${server.url}, pool ${pool}`);

  await api.register(null, { node_id: "cpu-1" });
  let jobId = "";
  await check(
    "submit FILE (YAML) queues the job: stdout, captured, is its id alone (JOB=$(flashedge submit f)); stderr says it",
    async () => {
      const r = await cli([...at, "submit", yamlJob("search", 4)]);
      exits(r, 0);
      assert.match(r.stdout, /^[0-9a-f]{12}\n$/);
      jobId = r.stdout.trim();
      assert.match(r.stderr, new RegExp(`submitted job ${jobId} \\(search\\): 4 tasks: 4 PENDING`));
    },
  );
  await check("status shows the state and task counts", async () => {
    const r = await cli([...at, "status", jobId]);
    exits(r, 0);
    assert.match(r.stdout, new RegExp(`job ${jobId}  RUNNING  search`));
    assert.match(r.stdout, /4 tasks: 4 PENDING/);
  });
  await check("jobs lists it, as a table and as --json", async () => {
    const table = await cli([...at, "jobs"]);
    exits(table, 0);
    assert.match(table.stdout, new RegExp(`${jobId} .*search.*RUNNING.*0/4`));
    const list = await cli([...at, "jobs", "--json"]);
    exits(list, 0);
    assert.deepEqual(
      json(list.stdout).map((/** @type {{ job_id: string }} */ j) => j.job_id),
      [jobId],
    );
  });
  await check("tasks shows one row per task", async () => {
    const r = await cli([...at, "tasks", jobId]);
    exits(r, 0);
    for (const t of ["trial-000", "trial-001", "trial-002", "trial-003"])
      assert.match(r.stdout, new RegExp(`${t} .*PENDING.*0/3`));
  });
  await check("why renders the placement report as a table with its summary and waiting line", async () => {
    const r = await cli([...at, "why", jobId, "trial-001"]);
    exits(r, 0);
    assert.match(r.stdout, /task trial-001 of job [0-9a-f]{12}: PENDING/);
    assert.match(r.stdout, /node +│ online │ eligible │ gate │ reason/);
    assert.match(r.stdout, /cpu-1 +│ yes +│ yes/);
    assert.match(r.stdout, /^summary: 1\/1 nodes eligible/m);
    assert.match(r.stdout, /^waiting: /m);
  });

  let gpuJob = "";
  await check("why names the refusing gate and flags an unplaceable task", async () => {
    const submitted = await cli([...at, "--json", "submit", yamlJob("needs-gpu", 1, { gpus: 8 })]);
    exits(submitted, 0);
    gpuJob = json(submitted.stdout).job_id;
    const r = await cli([...at, "why", gpuJob, "trial-000"]);
    exits(r, 0);
    assert.match(r.stdout, /cpu-1 +│ yes +│ no +│ gpu +│ gpu: task needs 8 GPUs/);
    assert.match(r.stdout, /^unplaceable: /m);
  });
  await check("cancel cancels; watch on a cancelled job exits 2", async () => {
    const r = await cli([...at, "cancel", gpuJob]);
    exits(r, 0);
    assert.match(r.stdout, /CANCELLED/);
    exits(await cli([...at, "watch", gpuJob]), 2);
  });

  await check("watch shows progress until the job ends and exits 0; events --follow ends with it", async () => {
    const watching = cli([...at, "watch", jobId, "--interval", "0.2"]);
    const following = cli([...at, "events", jobId, "--follow", "--interval", "0.2"]);
    await sleep(1500); // both are polling before the work starts
    await work(api, null, "cpu-1", jobId, 4);
    const [w, f] = await Promise.all([watching, following]);
    exits(w, 0);
    assert.match(w.stdout, new RegExp(`job ${jobId} SUCCEEDED: 4 tasks: 4 COMPLETED`));
    assert.match(w.stderr, /0\/4 finished · RUNNING/);
    assert.match(w.stderr, /4\/4 finished · SUCCEEDED/);
    exits(f, 0);
    assert.equal((f.stdout.match(/TASK_COMMIT_ACCEPTED/g) ?? []).length, 4, f.stdout);
    assert.match(f.stdout, /JOB_SUCCEEDED/);
    const all = await cli([...at, "--json", "events", jobId]);
    exits(all, 0);
    const seqs = json(all.stdout).map((/** @type {{ seq: number }} */ e) => e.seq);
    assert.equal(f.stdout.trim().split("\n").length, seqs.length, "--follow printed each event once");
  });

  await check("nodes follows Link: rel=next through every page, and --limit stops early", async () => {
    const extra = Array.from({ length: 104 }, (_, i) => `bulk-${String(i).padStart(3, "0")}`);
    for (let i = 0; i < extra.length; i += 26) {
      await Promise.all(extra.slice(i, i + 26).map((node_id) => api.register(null, { node_id })));
    }
    const all = await cli([...at, "--json", "nodes"]);
    exits(all, 0);
    const ids = json(all.stdout).map((/** @type {{ node_id: string }} */ n) => n.node_id);
    assert.equal(ids.length, 105, "every page, more than the default 100");
    assert.equal(new Set(ids).size, 105);
    const some = await cli([...at, "--json", "nodes", "--limit", "3"]);
    exits(some, 0);
    assert.equal(json(some.stdout).length, 3);
    const table = await cli([...at, "nodes", "--limit", "2"]);
    exits(table, 0);
    assert.match(table.stdout, /bulk-000 .*│ online/);
  });

  await check("release lets a held-back node claim again", async () => {
    await api.register(null, { node_id: "flaky" });
    const submitted = await cli([...at, "--json", "submit", yamlJob("flaky-job", 6, { attempts: 4 })]);
    exits(submitted, 0);
    await work(api, null, "flaky", json(submitted.stdout).job_id, 5, "fail");
    const before = await cli([...at, "--json", "nodes"]);
    const held = json(before.stdout).find((/** @type {{ node_id: string }} */ n) => n.node_id === "flaky");
    assert.ok(held.held_until, `flaky is held back: ${JSON.stringify(held)}`);
    const r = await cli([...at, "release", "flaky"]);
    exits(r, 0);
    assert.match(r.stdout, /released flaky/);
    const after = await cli([...at, "--json", "nodes"]);
    const freed = json(after.stdout).find((/** @type {{ node_id: string }} */ n) => n.node_id === "flaky");
    assert.equal(freed.held_until, null);
    assert.equal(freed.consecutive_failures, 0);
  });

  await check("an unknown job or node is a 404 message and exit 1", async () => {
    const r = await cli([...at, "status", "000000000000"]);
    exits(r, 1);
    assert.match(r.stderr, /^flashedge: not found \(404\): no such job: 000000000000$/im);
    const n = await cli([...at, "release", "nobody"]);
    exits(n, 1);
    assert.match(n.stderr, /not found \(404\)/);
  });
  await check("codes on an open coordinator says nothing needs enrolling (exit 1)", async () => {
    const r = await cli([...at, "codes"]);
    exits(r, 1);
    assert.match(r.stderr, /answered 400/);
  });
  await check("pools on an open coordinator says reported pools already count (exit 1)", async () => {
    const r = await cli([...at, "pools", "cpu-1", "team-a"]);
    exits(r, 1);
    assert.match(r.stderr, /answered 400: this coordinator is open/);
  });

  await openRuns(server.url);
}

/**
 * Hosted runs on the open coordinator, in a pool of their own so the
 * job checks' pool sees no round jobs. No node works here: a run waits
 * on its first round, and these checks look at that and at how it ends
 * when cancelled, never at progress it did not make.
 * @param {string} url
 */
async function openRuns(url) {
  const at = ["--url", url, "--pool", "cli-runs"];
  let fedavg = "";
  /** @type {RunRecord["live_round"]} */
  let live = null;
  await check(
    "run FILE starts a federated-averaging run: captured stdout is its id alone, stderr says it is RUNNING",
    async () => {
      const r = await cli([...at, "run", FEDAVG_RUN]);
      exits(r, 0);
      assert.match(r.stdout, /^run-[0-9a-f]{12}\n$/);
      fedavg = r.stdout.trim();
      assert.match(r.stderr, new RegExp(`^started run ${fedavg} \\(federated_averaging, 4 rounds\\): RUNNING\n$`));
      const started = await runOnce(at, fedavg, (x) => x.live_round !== null);
      assert.equal(started.state, "RUNNING");
      assert.equal(started.rounds_completed, 0);
      assert.deepEqual(started.request.worker_params, json(readFileSync(FEDAVG_RUN, "utf8")).worker_params);
      live = started.live_round;
      assert.equal(live?.round, 0);
      assert.equal(live?.quorum, 2);
    },
  );
  await check("run-status shows the run, its live round's job and no aggregated round; --json after it", async () => {
    const r = await cli([...at, "run-status", fedavg]);
    exits(r, 0);
    assert.match(r.stdout, new RegExp(`^run ${fedavg}  RUNNING  federated_averaging$`, "m"));
    assert.match(r.stdout, new RegExp(`^0/4 rounds aggregated; round 0: job ${live?.job_id}, quorum 2$`, "m"));
    assert.match(r.stdout, /^created \S+$/m, "no operator in an open pool, not finished");
    assert.match(r.stdout, /^result: none$/m);
    assert.match(r.stdout, /^no round aggregated yet$/m);
    assert.doesNotMatch(r.stdout, /^reason:/m);
    const record = await cli([...at, "run-status", fedavg, "--json"]);
    exits(record, 0);
    assert.equal(json(record.stdout).run_id, fedavg);
    // The live round is an ordinary job, waiting with all three shards for a node.
    const round = await cli([...at, "status", live?.job_id ?? ""]);
    exits(round, 0);
    assert.match(round.stdout, /RUNNING {2}fedavg-r000/);
    assert.match(round.stdout, /3 tasks: 3 PENDING/);
  });

  let kmeans = "";
  await check("run - reads a K-means run as YAML from stdin; --json prints the started record", async () => {
    const yaml = `# the K-means example, written in YAML\n${YAML.stringify(json(readFileSync(KMEANS_RUN, "utf8")))}`;
    const r = await cli([...at, "--json", "run", "-"], { stdin: yaml });
    exits(r, 0);
    const record = /** @type {RunRecord} */ (json(r.stdout));
    kmeans = record.run_id;
    assert.equal(record.kind, "sharded_kmeans");
    assert.equal(record.state, "RUNNING");
    assert.equal(record.rounds, 10);
    assert.equal(record.request.tolerance, 0.001);
  });
  await check("runs lists every run as a table and as --json; --limit stops early", async () => {
    const r = await cli([...at, "runs"]);
    exits(r, 0);
    assert.match(r.stdout, /run +│ kind +│ state +│ rounds │ last loss \/ inertia │ created/);
    assert.match(r.stdout, new RegExp(`${fedavg} │ federated_averaging │ RUNNING │ 0/4 +│ - +│ \\S+`));
    assert.match(r.stdout, new RegExp(`${kmeans} │ sharded_kmeans +│ RUNNING │ 0/10 +│ - +│ \\S+`));
    const all = await cli([...at, "--json", "runs"]);
    exits(all, 0);
    assert.deepEqual(
      json(all.stdout)
        .map((/** @type {RunRecord} */ x) => x.run_id)
        .sort(),
      [fedavg, kmeans].sort(),
    );
    const one = await cli([...at, "--json", "runs", "--limit", "1"]);
    exits(one, 0);
    assert.equal(json(one.stdout).length, 1);
  });
  await check("cancel-run cancels the run and its live round's job; again, it answers as it ended", async () => {
    const r = await cli([...at, "cancel-run", fedavg]);
    exits(r, 0);
    assert.equal(r.stdout, `run ${fedavg} CANCELLED: 0/4 rounds aggregated\nreason: cancelled\nresult: none\n`);
    const status = await cli([...at, "run-status", fedavg]);
    assert.match(status.stdout, new RegExp(`^run ${fedavg}  CANCELLED  federated_averaging$`, "m"));
    assert.match(status.stdout, /^0\/4 rounds aggregated; no live round$/m);
    assert.match(status.stdout, /^created \S+, finished \S+$/m);
    const round = await cli([...at, "status", live?.job_id ?? ""]);
    assert.match(round.stdout, /CANCELLED {2}fedavg-r000/);
    const again = await cli([...at, "cancel-run", fedavg]);
    exits(again, 0);
    assert.equal(again.stdout, r.stdout);
    const unknown = await cli([...at, "cancel-run", "run-000000000000"]);
    exits(unknown, 1);
    assert.match(unknown.stderr, /^flashedge: not found \(404\): unknown run run-000000000000$/m);
    exits(await cli([...at, "run-status", "nonsense"]), 1);
  });
  await check("run --follow shows the rounds until the run ends; cancelled, it prints why and exits 2", async () => {
    const known = new Set([fedavg, kmeans]);
    const following = cli([...at, "run", FEDAVG_RUN, "--follow", "--interval", "0.2"]);
    /** @type {RunRecord | undefined} */
    let followed;
    for (let i = 0; i < 100 && !followed?.live_round; i++) {
      await sleep(200);
      const all = await cli([...at, "--json", "runs"]);
      followed = json(all.stdout).find((/** @type {RunRecord} */ x) => !known.has(x.run_id));
    }
    assert.ok(followed?.live_round, "the followed run submitted its first round");
    await sleep(600); // the follower has seen the live round
    exits(await cli([...at, "cancel-run", followed.run_id]), 0);
    const f = await following;
    exits(f, 2);
    assert.equal(
      f.stdout,
      `${followed.run_id}\nrun ${followed.run_id} CANCELLED: 0/4 rounds aggregated\nreason: cancelled\nresult: none\n`,
    );
    const job = followed.live_round.job_id;
    assert.match(f.stderr, new RegExp(`^0/4 rounds aggregated · RUNNING · round 0: job ${job}, quorum 2$`, "m"));
    assert.match(f.stderr, /^0\/4 rounds aggregated · CANCELLED · no live round$/m);
  });
  await check("a run the coordinator refuses prints its 422 detail naming the field, and exits 1", async () => {
    const quorum = await cli([...at, "run", runFile("no-quorum", FEDAVG_RUN, { min_participants: 4 })]);
    exits(quorum, 1);
    assert.match(
      quorum.stderr,
      /^flashedge: invalid request \(422\):\n {2}body\.min_participants: .*min_participants must not exceed num_shards/,
    );
    const { hidden: _dropped, ...params } = json(readFileSync(FEDAVG_RUN, "utf8")).worker_params;
    const missing = await cli([...at, "run", runFile("no-hidden", FEDAVG_RUN, { worker_params: params })]);
    exits(missing, 1);
    assert.match(missing.stderr, /invalid request \(422\):\n {2}.*missing required parameters: hidden/);
    const ragged = await cli([...at, "run", runFile("ragged", KMEANS_RUN, { centroids: [[0, 0], [1]] })]);
    exits(ragged, 1);
    assert.match(ragged.stderr, /body\.centroids\.1: every centroid must have 2 coordinates/);
    const listed = await cli([...at, "--json", "runs"]);
    assert.equal(json(listed.stdout).length, 3, "no refused run was started");
  });
  await check("a run file that is no mapping is a usage error (exit 2), sent nowhere", async () => {
    const list = join(home, "list.yaml");
    writeFileSync(list, "- kind: federated_averaging\n");
    const r = await cli([...at, "run", list]);
    exits(r, 2);
    assert.match(r.stderr, /must hold one run \(a mapping with kind: federated_averaging or sharded_kmeans\)/);
    exits(await cli([...at, "run", join(home, "missing.json")]), 2);
  });
}

async function wireChecks() {
  await check("pools sends PUT /nodes/{node}/pools {pools} with the bearer token, under the pool's base", async () => {
    const fake = await recorder();
    try {
      const r = await cli(["--url", fake.url, "--pool", "team-x", "pools", "n1", "team-a", "team-b"], {
        token: "tok-1",
      });
      exits(r, 0);
      assert.match(r.stdout, /n1 is in the pools: team-a, team-b/);
      const cleared = await cli(["--url", fake.url, "pools", "n1", "--clear"], { token: "tok-1" });
      exits(cleared, 0);
      assert.match(cleared.stdout, /n1 is in no team pool/);
      assert.equal(fake.seen.length, 2);
      const [first, second] = fake.seen;
      assert.equal(first?.method, "PUT");
      assert.equal(first?.url, "/pools/team-x/v1alpha1/nodes/n1/pools");
      assert.equal(first?.headers.authorization, "Bearer tok-1");
      assert.equal(first?.headers["content-type"], "application/json");
      assert.deepEqual(JSON.parse(first?.body ?? ""), { pools: ["team-a", "team-b"] });
      assert.equal(second?.url, "/v1alpha1/nodes/n1/pools");
      assert.deepEqual(JSON.parse(second?.body ?? ""), { pools: [] });
      assert.doesNotMatch(r.stdout + r.stderr, /tok-1/, "the token is never printed");
    } finally {
      fake.close();
    }
  });
  await check("no coordinator at the URL: a clear message and exit 1", async () => {
    const fake = await recorder();
    const url = fake.url;
    fake.close(); // now nothing listens there
    const r = await cli(["--url", url, "jobs"]);
    exits(r, 1);
    assert.match(r.stderr, new RegExp(`^flashedge: no coordinator at ${url} \\(.*ECONNREFUSED`));
  });
  await check("usage errors exit 2", async () => {
    exits(await cli(["frobnicate"]), 2);
    exits(await cli([]), 2);
    exits(await cli(["deny"]), 2);
    exits(await cli(["deny", "ABCD-EFGH", "--all"]), 2);
    exits(await cli(["jobs", "--limit", "zero"]), 2);
    exits(await cli(["submit", join(home, "missing.yaml")]), 2);
    const bad = join(home, "bad.yaml");
    writeFileSync(bad, "metadata: {name: x\n  spec: [");
    const r = await cli(["submit", bad]);
    exits(r, 2);
    assert.match(r.stderr, /is not valid YAML/);
    exits(await cli(["--pool", "Bad_Pool", "jobs"]), 2);
    exits(await cli(["--help"]), 0);
  });
}

async function securedCoordinator() {
  const operator = randomBytes(16).toString("hex");
  const nodeToken = randomBytes(16).toString("hex");
  const server = await startCoordinator({
    FLASHML_OPERATOR_TOKENS: `ops:${operator}`,
    FLASHML_NODE_TOKENS: `n1:${nodeToken}`,
  });
  const api = client(server.url, null);
  const at = ["--url", server.url];
  log(`secured coordinator at ${server.url}, pool local`);

  await check("no token: the 401 message and exit 1", async () => {
    const r = await cli([...at, "jobs"]);
    exits(r, 1);
    assert.match(r.stderr, /^flashedge: no or wrong token \(401\): set FLASHEDGE_TOKEN or run flashedge login/);
    exits(await cli([...at, "jobs"], { token: "wrong" }), 1);
  });
  await check("a node's token may not submit: the 403 message and exit 1", async () => {
    const r = await cli([...at, "submit", yamlJob("by-node", 1)], { token: nodeToken });
    exits(r, 1);
    assert.match(r.stderr, /^flashedge: refused \(403\): .*operator's token is needed/);
  });
  await check(
    "a node's token may not start or cancel a run: the 403 detail and exit 1, and nothing starts",
    async () => {
      const r = await cli([...at, "run", FEDAVG_RUN], { token: nodeToken });
      exits(r, 1);
      assert.match(
        r.stderr,
        /^flashedge: refused \(403\): an operator token is required for this route — an operator's token is needed/,
      );
      const listed = await cli([...at, "--json", "runs"], { token: operator });
      exits(listed, 0);
      assert.deepEqual(json(listed.stdout), []);
    },
  );
  await check("an operator's run records who started it, and cancel-run says who cancelled it", async () => {
    const r = await cli([...at, "run", KMEANS_RUN], { token: operator });
    exits(r, 0);
    const runId = r.stdout.trim();
    const started = await runOnce(at, runId, (x) => x.live_round !== null, { token: operator });
    assert.equal(started.started_by, "ops");
    const status = await cli([...at, "run-status", runId], { token: operator });
    assert.match(status.stdout, /^created \S+ by ops$/m);
    assert.match(status.stdout, /^0\/10 rounds aggregated; round 0: job [0-9a-f]{12}, quorum 3$/m);
    const byNode = await cli([...at, "cancel-run", runId], { token: nodeToken });
    exits(byNode, 1);
    assert.match(byNode.stderr, /refused \(403\)/);
    const cancelled = await cli([...at, "cancel-run", runId], { token: operator });
    exits(cancelled, 0);
    assert.match(
      cancelled.stdout,
      new RegExp(`^run ${runId} CANCELLED: 0/10 rounds aggregated\nreason: cancelled by ops\n`),
    );
  });
  await check("login refuses a wrong token and saves nothing", async () => {
    const r = await cli([...at, "login"], { stdin: "not-the-token\n" });
    exits(r, 1);
    assert.match(r.stderr, /401/);
    assert.throws(() => statSync(CONFIG));
  });
  await check("login saves the token from stdin in a 0600 config file, and never prints it", async () => {
    const r = await cli([...at, "login"], { stdin: `${operator}\n` });
    exits(r, 0);
    assert.equal(statSync(CONFIG).mode & 0o777, 0o600);
    assert.equal(statSync(join(home, "flashedge")).mode & 0o777, 0o700);
    assert.doesNotMatch(r.stdout + r.stderr, new RegExp(operator));
    assert.equal(json(readFileSync(CONFIG, "utf8")).tokens[new URL(server.url).origin], operator);
    const jobs = await cli(["jobs"]); // the config's coordinator and token, no flags at all
    exits(jobs, 0);
  });
  await check("a config file others can read is refused", async () => {
    chmodSync(CONFIG, 0o644);
    try {
      const r = await cli(["jobs"]);
      exits(r, 1);
      assert.match(r.stderr, /readable by others \(mode 0644\).*chmod 600/);
    } finally {
      chmodSync(CONFIG, 0o600);
    }
  });
  await check("the saved token is not sent to another coordinator", async () => {
    const fake = await recorder();
    try {
      await cli(["--url", fake.url, "pools", "n1", "a"]);
      assert.equal(fake.seen[0]?.headers.authorization, undefined);
    } finally {
      fake.close();
    }
  });

  await api.register(nodeToken, {});
  await check("pools assigns a node's team pools on a secured pool; an unknown node is a 404", async () => {
    const r = await cli(["pools", "n1", "team-a", "team-b"]);
    exits(r, 0);
    assert.match(r.stdout, /n1 is in the pools: team-a, team-b/);
    const cleared = await cli(["pools", "n1", "--clear"]);
    exits(cleared, 0);
    const unknown = await cli(["pools", "nobody", "team-a"]);
    exits(unknown, 1);
    assert.match(unknown.stderr, /not found \(404\)/);
    const byNode = await cli(["pools", "n1", "team-a"], { token: nodeToken });
    exits(byNode, 1);
    assert.match(byNode.stderr, /refused \(403\)/);
  });
  await check("watch exits 0 for a job that succeeds on a secured pool", async () => {
    const submitted = await cli(["--json", "submit", yamlJob("secure-ok", 2)]);
    exits(submitted, 0);
    const id = json(submitted.stdout).job_id;
    const watching = cli(["watch", id, "--interval", "0.2"]);
    await work(api, nodeToken, "n1", id, 2);
    const w = await watching;
    exits(w, 0);
    assert.match(w.stdout, /SUCCEEDED: 2 tasks: 2 COMPLETED/);
  });
  await check("watch exits 1 for a job that fails", async () => {
    const submitted = await cli(["--json", "submit", yamlJob("secure-fail", 1, { attempts: 1 })]);
    exits(submitted, 0);
    const id = json(submitted.stdout).job_id;
    const watching = cli(["watch", id, "--interval", "0.2"]);
    await work(api, nodeToken, "n1", id, 1, "fail");
    const w = await watching;
    exits(w, 1);
    assert.match(w.stdout, /FAILED: 1 task: 1 FAILED/);
  });
  await check("a node's token may not release a node (403)", async () => {
    const r = await cli(["release", "n1"], { token: nodeToken });
    exits(r, 1);
    assert.match(r.stderr, /refused \(403\)/);
  });

  const machine = (/** @type {string} */ id) => ({ node_id: id, hostname: `${id}.local`, platform: "linux-x86_64" });
  const first = await api.askForCode(machine("laptop-7"));
  const second = await api.askForCode(machine("laptop-8"));
  await api.askForCode(machine("laptop-9"));
  await check("codes lists the waiting machines", async () => {
    const r = await cli(["codes"]);
    exits(r, 0);
    assert.match(r.stdout, new RegExp(`${first.user_code} .*laptop-7 .*laptop-7.local .*linux-x86_64`));
    assert.match(r.stdout, new RegExp(`${second.user_code} .*laptop-8`));
    const list = await cli(["--json", "codes"]);
    assert.equal(json(list.stdout).length, 3);
  });
  await check("approve --owner lets the machine redeem a credential that works", async () => {
    const r = await cli(["approve", first.user_code, "--owner", "alice"]);
    exits(r, 0);
    assert.match(r.stdout, new RegExp(`approved ${first.user_code}: node laptop-7 \\(owner alice\\)`));
    const { token } = await api.redeem(first);
    await api.register(token, {});
    const nodes = await cli(["--json", "nodes"]);
    const laptop = json(nodes.stdout).find((/** @type {{ node_id: string }} */ n) => n.node_id === "laptop-7");
    assert.equal(laptop.owner, "alice");
    await check("revoke cuts the machine off: its next request is a 401", async () => {
      const revoked = await cli(["revoke", "laptop-7"]);
      exits(revoked, 0);
      assert.match(revoked.stdout, /revoked the credential of laptop-7/);
      await assert.rejects(api.register(token, {}), /401/);
      const again = await cli(["revoke", "laptop-7"]);
      exits(again, 1);
      assert.match(again.stderr, /not found \(404\)/);
    });
  });
  await check("deny CODE, then deny --all, empties the waiting list", async () => {
    const one = await cli(["deny", second.user_code]);
    exits(one, 0);
    assert.match(one.stdout, new RegExp(`denied ${second.user_code} \\(node laptop-8\\)`));
    const all = await cli(["deny", "--all"]);
    exits(all, 0);
    assert.match(all.stdout, /denied 1 waiting code\(s\)/);
    const none = await cli(["codes"]);
    exits(none, 0);
    assert.match(none.stdout, /no codes are waiting/);
    const unknown = await cli(["approve", "ZZZZ-ZZZZ"]);
    exits(unknown, 1);
    assert.match(unknown.stderr, /not found \(404\)/);
  });
}

await run(async () => {
  try {
    await wireChecks();
    await openCoordinator();
    await securedCoordinator();
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
  process.stdout.write(`${passed} passed, ${failed} failed\n`);
  if (failed > 0) throw new Error(`${failed} CLI check(s) failed`);
}, 360_000);
