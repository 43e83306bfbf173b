// Over-HTTP benchmarks (issue 8, parts 2–4) against `wrangler dev` on
// 127.0.0.1: the whole stack a real agent talks to — Worker, RPC to the pool
// object, SQLite, local R2 — on this machine, client included.
//
//   node bench/http.mjs [--runs 3] [--nodes 1,8,32] [--cycles 900] [--expiry-samples 8]
//                       [--auth-nodes 1,8] [--auth-cycles 400] [--auth-runs 5] [--auth-only]
//
// 2. N concurrent simulated nodes loop claim → attempt heartbeat → artifact
//    upload → complete, with a 1,000- and a 10,000-task queue.
// 3. Submission: the time to accept one 10,000-task job (one POST /jobs).
// 4. Failure detection: a 2 s lease nobody renews or polls; GET .../tasks
//    (which never sweeps) every 20 ms until the alarm has requeued it.
// 5. Open vs enforcing: the lease routes (claim, attempt heartbeat, upload,
//    complete, fail) against an open coordinator and one with node and
//    operator tokens configured, each its own fresh wrangler dev, measured
//    in alternating order. `--auth-only` runs just this part.
//
// Starts its own wrangler dev (lib.mjs: fresh --persist-to directory, free
// port), stops it by its process group at the end or on error, and removes
// the directory. Every loop is bounded. Writes bench/results/http.json (2–4)
// and bench/results/http-auth.json (5).
// @ts-check

import { randomBytes } from "node:crypto";
import os from "node:os";
import { BENCH, coordinator, sha256, sleep, startWrangler, stopAll } from "../test/support/index.mjs";
import { flag, machine, median, option, percentile, round, spread, today, writeResult } from "./lib.mjs";

/** @import { Answer } from "../test/support/index.mjs" */

const RUNS = Number(option("runs", "3"));
const NODE_COUNTS = option("nodes", "1,8,32").split(",").map(Number);
const CYCLES = Number(option("cycles", "900"));
const EXPIRY_SAMPLES = Number(option("expiry-samples", "8"));
/** The expiry samples' lease: the shortest the coordinator accepts (MIN_LEASE_SECONDS). */
const EXPIRY_LEASE_SECONDS = 5;
const DEPTHS = [1000, 10000];
const AUTH_ONLY = flag("auth-only");
const AUTH_NODES = option("auth-nodes", "1,8").split(",").map(Number);
const AUTH_CYCLES = Number(option("auth-cycles", "400"));
const AUTH_RUNS = Number(option("auth-runs", "5"));

/** @typedef {import("./lib.mjs").Machine} Machine */
/** @typedef {import("./lib.mjs").Spread} Spread */

// -- the agent's requests ----------------------------------------------------

/** The fields of a Lease the loops read. @typedef {{ lease_id: string, job_id: string, task_id: string, deadline: string }} Lease */
/** The fields of a task row the expiry sample reads. @typedef {{ state: string, attempts: number }} TaskRow */

/**
 * Bearer tokens to send: the operator's for submitting and reading, each
 * node's for its own requests. Without them (open mode) no Authorization
 * header is sent at all.
 * @typedef {{ operator: string, nodes: Record<string, string> }} Credentials
 */

/**
 * The bench's view of the coordinator: test/support's client per pool and
 * caller, every answer checked against the statuses the loop expects, and
 * no client timeout (each request is timed).
 * @param {string} base
 * @param {Credentials | null} [credentials]
 */
function client(base, credentials = null) {
  /** @type {Map<string, import("../test/support/client.mjs").Client>} */
  const clients = new Map();
  /**
   * The pool's client as a node (a node id) or the operator (null).
   * @param {string} pool
   * @param {string | null} nodeId
   */
  const as = (pool, nodeId) => {
    const name = `${pool}\n${nodeId}`;
    let c = clients.get(name);
    if (c === undefined) {
      /** @type {string | null} */
      let token = null;
      if (credentials !== null) {
        const t = nodeId === null ? credentials.operator : credentials.nodes[nodeId];
        if (t === undefined) throw new Error(`no token for ${nodeId}`);
        token = t;
      }
      c = coordinator(base, { pool, token, timeoutMs: null });
      clients.set(name, c);
    }
    return c;
  };
  /**
   * @param {Answer} answer
   * @param {number[]} statuses
   * @param {string} what
   */
  const expect = (answer, statuses, what) => {
    if (!statuses.includes(answer.status)) throw new Error(`${what}: HTTP ${answer.status} ${answer.text}`);
    return answer;
  };

  return {
    /**
     * @param {string} pool
     * @param {string} nodeId
     */
    async register(pool, nodeId) {
      const body = {
        node_id: nodeId,
        kubernetes_node: "",
        hostname: `${nodeId}.bench`,
        capabilities: { cpu_cores: 4 },
      };
      expect(await as(pool, nodeId).register(body), [200], "register");
    },
    /**
     * Submits a hyperparameter_search job of `trials` tasks; returns its id and the request's duration.
     * @param {string} pool
     * @param {number} trials
     * @param {Record<string, unknown>} [parameters]
     */
    async submit(pool, trials, parameters = {}) {
      const spec = {
        apiVersion: "flashml.dev/v1alpha1",
        kind: "Job",
        metadata: { name: "bench" },
        spec: {
          execution: { backend: "leases" },
          image: { repository: "r", tag: "1" },
          workload: {
            type: "hyperparameter_search",
            parameters: { trials: Array.from({ length: trials }, (_, i) => ({ C: i % 100, seed: i })), ...parameters },
          },
        },
      };
      const t0 = performance.now();
      const answer = expect(await as(pool, null).submit(spec), [201], "submit");
      const record = /** @type {{ job_id: string }} */ (JSON.parse(answer.text));
      return { jobId: record.job_id, ms: performance.now() - t0, record };
    },
    /**
     * @param {string} pool
     * @param {string} nodeId
     * @returns {Promise<Lease | null>}
     */
    async claim(pool, nodeId) {
      const answer = expect(await as(pool, nodeId).claim(nodeId), [200, 204], "claim");
      return answer.status === 204 ? null : /** @type {Lease} */ (JSON.parse(answer.text));
    },
    /**
     * The attempt heartbeat, as the lease's holder.
     * @param {string} pool
     * @param {string} leaseId
     * @param {string} nodeId
     */
    async heartbeat(pool, leaseId, nodeId) {
      expect(await as(pool, nodeId).heartbeat(leaseId), [200], "heartbeat");
    },
    /**
     * @param {string} pool
     * @param {string} nodeId
     */
    async nodeHeartbeat(pool, nodeId) {
      expect(
        await as(pool, nodeId).nodeHeartbeat(nodeId, { node_id: nodeId, status: "online" }),
        [200],
        "node heartbeat",
      );
    },
    /**
     * @param {string} pool
     * @param {string} key
     * @param {string} text
     * @param {string} nodeId the lease holder writing its task's output
     */
    async upload(pool, key, text, nodeId) {
      expect(await as(pool, nodeId).upload(key, text), [200], "upload");
    },
    /**
     * @param {string} pool
     * @param {string} leaseId
     * @param {string} outputSha256
     * @param {string} nodeId
     * @returns {Promise<{ accepted?: boolean }>}
     */
    async complete(pool, leaseId, outputSha256, nodeId) {
      const answer = await as(pool, nodeId).complete(leaseId, { output_sha256: outputSha256 });
      return JSON.parse(expect(answer, [200], "complete").text);
    },
    /**
     * Gives up the attempt (requeued while attempts remain).
     * @param {string} pool
     * @param {string} leaseId
     * @param {string} reason
     * @param {string} nodeId
     */
    async fail(pool, leaseId, reason, nodeId) {
      expect(await as(pool, nodeId).fail(leaseId, reason), [200], "fail");
    },
    /**
     * @param {string} pool
     * @param {string} jobId
     * @returns {Promise<TaskRow[]>}
     */
    async tasks(pool, jobId) {
      return JSON.parse(expect(await as(pool, null).tasks(jobId), [200], "tasks").text);
    },
    async healthz() {
      const r = await fetch(`${base}/healthz`);
      await r.text();
      if (r.status !== 200) throw new Error(`healthz: HTTP ${r.status}`);
    },
    /**
     * The status of a request as the node `nodeId` (null: with no token at
     * all) — for checking that a server enforces what it should.
     * @param {string} pool
     * @param {string} path under the pool's v1alpha1
     * @param {unknown} body
     * @param {string | null} nodeId
     */
    async statusOf(pool, path, body, nodeId) {
      const c = nodeId === null ? coordinator(base, { pool, timeoutMs: null }) : as(pool, nodeId);
      return (await c.send("POST", path, body === undefined ? {} : { body })).status;
    },
  };
}

/** @typedef {ReturnType<typeof client>} Client */

/** @param {number} count */
const nodeIds = (count) => Array.from({ length: count }, (_, i) => `node-${i}`);

/**
 * @template {string} Name
 * @param {Record<Name, number[]>} rtt
 * @param {Name} name
 * @param {number} q
 */
const rttPercentile = (rtt, name, q) => round(percentile(rtt[name], q), 2);

// -- 2. agent loops ------------------------------------------------------------

/**
 * N nodes share a budget of `cycles` claim → heartbeat → upload → complete loops.
 * @param {Client} api
 * @param {string} pool
 * @param {number} nodes
 * @param {number} cycles
 */
async function agentRun(api, pool, nodes, cycles) {
  const ids = nodeIds(nodes);
  await Promise.all(ids.map((id) => api.register(pool, id)));
  let budget = cycles;
  /** @type {Record<"claim" | "heartbeat" | "upload" | "complete", number[]>} */
  const rtt = { claim: [], heartbeat: [], upload: [], complete: [] };
  /**
   * @template T
   * @param {keyof typeof rtt} name
   * @param {() => Promise<T>} f
   */
  const timed = async (name, f) => {
    const t0 = performance.now();
    const value = await f();
    rtt[name].push(performance.now() - t0);
    return value;
  };
  let accepted = 0;
  /** @param {string} nodeId */
  const loop = async (nodeId) => {
    while (budget > 0) {
      budget--;
      const lease = await timed("claim", () => api.claim(pool, nodeId));
      if (lease === null) throw new Error(`${nodeId} found the queue empty`);
      await timed("heartbeat", () => api.heartbeat(pool, lease.lease_id, nodeId));
      const output = JSON.stringify({ accuracy: 0.9, task: lease.task_id });
      await timed("upload", () =>
        api.upload(pool, `jobs/${lease.job_id}/${lease.task_id}/metrics.json`, output, nodeId),
      );
      const verdict = await timed("complete", () => api.complete(pool, lease.lease_id, sha256(output), nodeId));
      if (verdict.accepted !== true) throw new Error(`commit of ${lease.task_id} refused: ${JSON.stringify(verdict)}`);
      accepted++;
    }
  };
  const t0 = performance.now();
  await Promise.all(ids.map(loop));
  const seconds = (performance.now() - t0) / 1000;
  /**
   * @param {keyof typeof rtt} name
   * @param {number} q
   */
  const p = (name, q) => rttPercentile(rtt, name, q);
  return {
    claims_per_s: round(accepted / seconds, 1),
    requests_per_s: round((4 * accepted) / seconds, 1),
    claim_ms_p50: p("claim", 50),
    claim_ms_p99: p("claim", 99),
    heartbeat_ms_p50: p("heartbeat", 50),
    upload_ms_p50: p("upload", 50),
    complete_ms_p50: p("complete", 50),
    cycles: accepted,
  };
}

// -- 4. failure detection ----------------------------------------------------

/**
 * @param {Client} api
 * @param {number} index
 * @returns {Promise<{ after_deadline_ms: number | null, poll_ms_p50: number, attempts?: number }>}
 */
async function expirySample(api, index) {
  const pool = `expiry-${index}-${Date.now().toString(36)}`;
  await api.register(pool, "lost-node");
  const { jobId } = await api.submit(pool, 1, { lease_seconds: EXPIRY_LEASE_SECONDS });
  const lease = await api.claim(pool, "lost-node");
  if (lease === null) throw new Error("expiry: nothing to claim");
  const deadline = Date.parse(lease.deadline);
  /** @type {number[]} */
  const polls = [];
  const giveUp = deadline + 10_000;
  while (Date.now() < giveUp) {
    const t0 = performance.now();
    // A one-task job: one row.
    const row = /** @type {TaskRow} */ ((await api.tasks(pool, jobId))[0]);
    polls.push(performance.now() - t0);
    if (row.state === "PENDING") {
      return { after_deadline_ms: Date.now() - deadline, poll_ms_p50: round(median(polls), 2), attempts: row.attempts };
    }
    await sleep(20);
  }
  return { after_deadline_ms: null, poll_ms_p50: round(median(polls), 2) };
}

// -- 5. open vs enforcing ------------------------------------------------------

/** Nodes of the warm-up loop on each server before part 5 measures. */
const AUTH_WARM_NODES = 4;

/** The lease routes timed in part 5, in the order a node sends them. */
const LEASE_ROUTES = /** @type {const} */ (["claim", "heartbeat", "upload", "complete", "fail"]);
/** @typedef {(typeof LEASE_ROUTES)[number]} LeaseRoute */

/**
 * N nodes share a budget of `cycles` leases: each is claimed and heartbeaten,
 * then alternately given up (fail, so the task is requeued) or uploaded and
 * completed. Every request must succeed as the lease's holder.
 * @param {Client} api
 * @param {string} pool
 * @param {number} nodes
 * @param {number} cycles
 */
async function leaseRun(api, pool, nodes, cycles) {
  const ids = nodeIds(nodes);
  await Promise.all(ids.map((id) => api.register(pool, id)));
  let budget = cycles;
  /** @type {Record<LeaseRoute, number[]>} */
  const rtt = { claim: [], heartbeat: [], upload: [], complete: [], fail: [] };
  /**
   * @template T
   * @param {LeaseRoute} name
   * @param {() => Promise<T>} f
   */
  const timed = async (name, f) => {
    const t0 = performance.now();
    const value = await f();
    rtt[name].push(performance.now() - t0);
    return value;
  };
  let requests = 0;
  /**
   * @param {string} nodeId
   * @param {number} index
   */
  const loop = async (nodeId, index) => {
    let gaveUp = index % 2 === 1; // half the nodes start by completing, half by failing
    while (budget > 0) {
      budget--;
      const lease = await timed("claim", () => api.claim(pool, nodeId));
      if (lease === null) throw new Error(`${nodeId} found the queue empty`);
      await timed("heartbeat", () => api.heartbeat(pool, lease.lease_id, nodeId));
      gaveUp = !gaveUp;
      if (gaveUp) {
        await timed("fail", () => api.fail(pool, lease.lease_id, "bench: giving up", nodeId));
        requests += 3;
        continue;
      }
      const output = JSON.stringify({ accuracy: 0.9, task: lease.task_id, lease: lease.lease_id });
      await timed("upload", () =>
        api.upload(pool, `jobs/${lease.job_id}/${lease.task_id}/metrics.json`, output, nodeId),
      );
      const verdict = await timed("complete", () => api.complete(pool, lease.lease_id, sha256(output), nodeId));
      if (verdict.accepted !== true) throw new Error(`commit of ${lease.task_id} refused: ${JSON.stringify(verdict)}`);
      requests += 4;
    }
  };
  const t0 = performance.now();
  await Promise.all(ids.map(loop));
  const seconds = (performance.now() - t0) / 1000;
  return {
    requests_per_s: round(requests / seconds, 1),
    cycles_per_s: round(cycles / seconds, 1),
    ms_p50: byRoute((r) => rttPercentile(rtt, r, 50)),
    ms_p99: byRoute((r) => rttPercentile(rtt, r, 99)),
    samples: byRoute((r) => rtt[r].length),
  };
}

/**
 * @param {(route: LeaseRoute) => number} f
 * @returns {Record<LeaseRoute, number>}
 */
function byRoute(f) {
  return /** @type {Record<LeaseRoute, number>} */ (Object.fromEntries(LEASE_ROUTES.map((r) => [r, f(r)])));
}

/** @typedef {Awaited<ReturnType<typeof leaseRun>>} LeaseRun */

/**
 * The other server's run measured next to run `i`.
 * @param {LeaseRun[]} runs
 * @param {number} i
 */
const paired = (runs, i) => /** @type {LeaseRun} */ (runs[i]);

/**
 * Fails unless the server refuses what an enforcing coordinator refuses (a
 * request with no token; a heartbeat from a node that does not hold the
 * lease) — or, when open, accepts them.
 * @param {Client} api
 * @param {"open" | "enforcing"} mode
 */
async function checkMode(api, mode) {
  const pool = `auth-check-${mode}-${Date.now().toString(36)}`;
  await api.submit(pool, 2);
  await api.register(pool, "node-0");
  await api.register(pool, "node-1");
  const lease = await api.claim(pool, "node-0");
  if (lease === null) throw new Error(`${mode}: nothing to claim`);
  const anonymous = await api.statusOf(pool, "/leases/claim", { node_id: "node-1" }, null);
  const other = await api.statusOf(pool, `/attempts/${lease.lease_id}/heartbeat`, undefined, "node-1");
  const expected = mode === "enforcing" ? [401, 403] : [200, 200];
  if (anonymous !== expected[0] || other !== expected[1]) {
    throw new Error(
      `${mode} coordinator answered ${anonymous} to a claim without a token and ${other} to another node's ` +
        `heartbeat; expected ${expected.join(" and ")}`,
    );
  }
}

/**
 * @typedef {object} AuthRow one node count: both modes' medians over runs, and enforcing/open
 * @property {number} nodes
 * @property {number} cycles_per_run
 * @property {Record<"open" | "enforcing", AuthModeSummary>} modes
 * @property {Record<LeaseRoute, number>} ratio_p50 enforcing p50 / open p50 per route: within each run (the
 *   two servers back to back), then the median over runs
 * @property {number} ratio_requests_per_s enforcing requests/s / open requests/s, the same way
 */
/**
 * @typedef {object} AuthModeSummary
 * @property {number} requests_per_s
 * @property {Spread} requests_noise
 * @property {Record<LeaseRoute, number>} ms_p50
 * @property {Record<LeaseRoute, number>} ms_p99
 * @property {LeaseRun[]} runs
 */
/**
 * bench/results/http-auth.json.
 * @typedef {object} AuthResult
 * @property {string} command
 * @property {string} date
 * @property {Machine} machine
 * @property {number} runs
 * @property {LeaseRoute[]} routes
 * @property {AuthRow[]} rows
 * @property {number} wall_s
 */

/** @returns {Promise<AuthResult>} */
async function authComparison() {
  const started = Date.now();
  const host = machine();
  // Tokens for every node any loop uses: the warm-up's, the checks' two, each row's.
  const ids = nodeIds(Math.max(AUTH_WARM_NODES, 2, ...AUTH_NODES));
  /** @param {string} name */
  const token = (name) => `bench-${name}-${randomBytes(12).toString("hex")}`;
  /** @type {Credentials} */
  const credentials = { operator: token("operator"), nodes: Object.fromEntries(ids.map((id) => [id, token(id)])) };
  // One after the other: a server that fails to start is then the only one to clean up.
  const open = await startWrangler({ vars: BENCH });
  const enforcing = await startWrangler({
    vars: {
      ...BENCH,
      FLASHML_NODE_TOKENS: Object.entries(credentials.nodes)
        .map(([id, t]) => `${id}:${t}`)
        .join(","),
      FLASHML_OPERATOR_TOKENS: `bench:${credentials.operator}`,
    },
  });
  console.log(
    `open: wrangler dev on ${open.url} (pid ${open.pid}); enforcing: ${enforcing.url} (pid ${enforcing.pid})`,
  );
  try {
    const apis = { open: client(open.url), enforcing: client(enforcing.url, credentials) };
    /** @type {("open" | "enforcing")[]} */
    const modes = ["open", "enforcing"];
    for (const mode of modes) {
      await checkMode(apis[mode], mode);
      // Warm up: the first requests compile the Worker and start objects.
      const warm = `warm-${mode}-${Date.now().toString(36)}`;
      await apis[mode].submit(warm, 400);
      await leaseRun(apis[mode], warm, AUTH_WARM_NODES, 200);
    }
    /** @type {AuthRow[]} */
    const rows = [];
    for (const nodes of AUTH_NODES) {
      /** @type {Record<"open" | "enforcing", LeaseRun[]>} */
      const runs = { open: [], enforcing: [] };
      for (let run = 0; run < AUTH_RUNS; run++) {
        // Alternating which mode goes first, so drift in the machine's load hits both alike.
        for (const mode of run % 2 === 0 ? modes : [...modes].reverse()) {
          const pool = `auth-${mode}-${nodes}-${run}-${Date.now().toString(36)}`;
          await apis[mode].submit(pool, Math.max(1000, AUTH_CYCLES + nodes));
          runs[mode].push(await leaseRun(apis[mode], pool, nodes, AUTH_CYCLES));
        }
      }
      /** @param {LeaseRun[]} list @returns {AuthModeSummary} */
      const summarize = (list) => {
        const rates = list.map((r) => r.requests_per_s);
        /** @param {"ms_p50" | "ms_p99"} key */
        const perRoute = (key) => byRoute((route) => round(median(list.map((r) => r[key][route])), 2));
        return {
          requests_per_s: round(median(rates), 1),
          requests_noise: spread(rates),
          ms_p50: perRoute("ms_p50"),
          ms_p99: perRoute("ms_p99"),
          runs: list,
        };
      };
      const o = summarize(runs.open);
      const e = summarize(runs.enforcing);
      /** @type {AuthRow} */
      const row = {
        nodes,
        cycles_per_run: AUTH_CYCLES,
        modes: { open: o, enforcing: e },
        // Paired within a run, so load that shifts between runs cancels out.
        ratio_p50: byRoute((route) =>
          round(median(runs.open.map((r, i) => paired(runs.enforcing, i).ms_p50[route] / r.ms_p50[route])), 3),
        ),
        ratio_requests_per_s: round(
          median(runs.open.map((r, i) => paired(runs.enforcing, i).requests_per_s / r.requests_per_s)),
          3,
        ),
      };
      rows.push(row);
      console.log(
        `${nodes} nodes: open ${o.requests_per_s} req/s, enforcing ${e.requests_per_s} req/s ` +
          `(×${row.ratio_requests_per_s}); p50 enforcing/open ${LEASE_ROUTES.map((r) => `${r} ×${row.ratio_p50[r]}`).join(", ")}`,
      );
    }
    return {
      command: `node bench/http.mjs --auth-only --auth-runs ${AUTH_RUNS} --auth-nodes ${AUTH_NODES.join(",")} --auth-cycles ${AUTH_CYCLES}`,
      date: today(),
      machine: { ...host, load_at_end: round(/** @type {number} */ (os.loadavg()[0]), 2) },
      runs: AUTH_RUNS,
      routes: [...LEASE_ROUTES],
      rows,
      wall_s: Math.round((Date.now() - started) / 1000),
    };
  } finally {
    await Promise.all([open.stop(), enforcing.stop()]);
  }
}

// -- 2–4 -----------------------------------------------------------------------

/**
 * One row of table 2: a node count and a depth, medians over runs.
 * @typedef {{ depth: number, nodes: number, cycles_per_run: number, claims_per_s: number, claims_noise: Spread,
 *   requests_per_s: number, claim_ms_p50: number, claim_ms_p99: number, heartbeat_ms_p50: number,
 *   upload_ms_p50: number, complete_ms_p50: number, runs: Awaited<ReturnType<typeof agentRun>>[] }} AgentRow
 */
/**
 * bench/results/http.json.
 * @typedef {object} HttpResult
 * @property {string} command
 * @property {string} date
 * @property {Machine} machine
 * @property {number} runs
 * @property {{ healthz_p50: number, healthz_p99: number, node_heartbeat_p50: number, node_heartbeat_p99: number }} baseline_ms
 * @property {AgentRow[]} agents
 * @property {{ median: number, samples: number[], noise: Spread }} submission_10k_ms
 * @property {{ lease_seconds: number, poll_interval_ms: number, samples: Awaited<ReturnType<typeof expirySample>>[],
 *   median_ms: number | null, max_ms: number | null, all_under_1s: boolean }} expiry
 * @property {number} wall_s
 */

/** @returns {Promise<HttpResult>} */
async function requestCosts() {
  const started = Date.now();
  const host = machine();
  const server = await startWrangler({ vars: BENCH });
  console.log(`wrangler dev on ${server.url} (pid ${server.pid})`);
  /** @type {HttpResult} */
  let result;
  try {
    const api = client(server.url);
    // Warm up: the first requests compile the Worker and start objects.
    const warm = `warm-${Date.now().toString(36)}`;
    await api.submit(warm, 200);
    await agentRun(api, warm, 4, 150);

    // Baselines: the Worker alone, and the cheapest pool request.
    /** @type {{ healthz: number[], node_heartbeat: number[] }} */
    const baseline = { healthz: [], node_heartbeat: [] };
    await api.register(warm, "hb-node");
    for (let i = 0; i < 300; i++) {
      let t0 = performance.now();
      await api.healthz();
      baseline.healthz.push(performance.now() - t0);
      t0 = performance.now();
      await api.nodeHeartbeat(warm, "hb-node");
      baseline.node_heartbeat.push(performance.now() - t0);
    }

    // Depths alternate inside each run, so load from elsewhere on the machine
    // hits both alike.
    /** @type {AgentRow[]} */
    const agents = [];
    /** @type {number[]} */
    const submissions = [];
    for (const nodes of NODE_COUNTS) {
      /** @type {Map<number, Awaited<ReturnType<typeof agentRun>>[]>} */
      const runsByDepth = new Map(DEPTHS.map((d) => [d, []]));
      for (let run = 0; run < RUNS; run++) {
        for (const depth of DEPTHS) {
          const pool = `agents-${depth}-${nodes}-${run}-${Date.now().toString(36)}`;
          const submitted = await api.submit(pool, depth);
          if (depth === 10000) submissions.push(submitted.ms);
          runsByDepth.get(depth)?.push(await agentRun(api, pool, nodes, Math.min(CYCLES, depth - nodes)));
        }
      }
      for (const [depth, runs] of runsByDepth) {
        const claimsPerS = runs.map((r) => r.claims_per_s);
        /** @type {AgentRow} */
        const row = {
          depth,
          nodes,
          cycles_per_run: Number(runs[0]?.cycles),
          claims_per_s: round(median(claimsPerS), 1),
          claims_noise: spread(claimsPerS),
          requests_per_s: round(median(runs.map((r) => r.requests_per_s)), 1),
          claim_ms_p50: round(median(runs.map((r) => r.claim_ms_p50)), 2),
          claim_ms_p99: round(median(runs.map((r) => r.claim_ms_p99)), 2),
          heartbeat_ms_p50: round(median(runs.map((r) => r.heartbeat_ms_p50)), 2),
          upload_ms_p50: round(median(runs.map((r) => r.upload_ms_p50)), 2),
          complete_ms_p50: round(median(runs.map((r) => r.complete_ms_p50)), 2),
          runs,
        };
        agents.push(row);
        console.log(
          `${depth} pending, ${nodes} nodes: ${row.claims_per_s} claims/s (runs ${claimsPerS.join(", ")}), claim p50 ${row.claim_ms_p50} ms p99 ${row.claim_ms_p99} ms`,
        );
      }
    }
    agents.sort((a, b) => a.depth - b.depth || a.nodes - b.nodes);

    const expiry = [];
    for (let i = 0; i < EXPIRY_SAMPLES; i += 4) {
      const group = Array.from({ length: Math.min(4, EXPIRY_SAMPLES - i) }, (_, k) => expirySample(api, i + k));
      expiry.push(...(await Promise.all(group)));
    }
    const detected = expiry.map((s) => s.after_deadline_ms).filter((x) => x !== null);
    console.log(`expiry: requeued ${detected.join(", ")} ms after the deadline`);
    console.log(`submission of 10,000 tasks: ${submissions.map((x) => Math.round(x)).join(", ")} ms`);

    result = {
      command: `node bench/http.mjs --runs ${RUNS} --nodes ${NODE_COUNTS.join(",")} --cycles ${CYCLES} --expiry-samples ${EXPIRY_SAMPLES}`,
      date: today(),
      machine: { ...host, load_at_end: round(/** @type {number} */ (os.loadavg()[0]), 2) },
      runs: RUNS,
      baseline_ms: {
        healthz_p50: round(median(baseline.healthz), 2),
        healthz_p99: round(percentile(baseline.healthz, 99), 2),
        node_heartbeat_p50: round(median(baseline.node_heartbeat), 2),
        node_heartbeat_p99: round(percentile(baseline.node_heartbeat, 99), 2),
      },
      agents,
      submission_10k_ms: {
        median: Math.round(Number(median(submissions))),
        samples: submissions.map(Math.round),
        noise: spread(submissions.map(Math.round)),
      },
      expiry: {
        lease_seconds: EXPIRY_LEASE_SECONDS,
        poll_interval_ms: 20,
        samples: expiry,
        median_ms: median(detected),
        max_ms: detected.length ? Math.max(...detected) : null,
        all_under_1s: detected.length === expiry.length && detected.every((x) => x < 1000),
      },
      wall_s: 0,
    };
  } finally {
    await server.stop();
  }
  result.wall_s = Math.round((Date.now() - started) / 1000);
  return result;
}

// -- main --------------------------------------------------------------------

const stopOnSignal = () => void stopAll().then(() => process.exit(130));
process.once("SIGINT", stopOnSignal);
process.once("SIGTERM", stopOnSignal);

try {
  if (!AUTH_ONLY) console.log(`wrote ${writeResult("http", await requestCosts())}`);
  console.log(`wrote ${writeResult("http-auth", await authComparison())}`);
} finally {
  await stopAll();
}
