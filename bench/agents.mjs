// @ts-check
// Capacity with the real agent's loop (issue 16): N simulated agents that
// behave exactly as the Python agent's ExecutorLoop does, against `wrangler
// dev` on 127.0.0.1, once per claim hold (FLASHML_CLAIM_WAIT_SECONDS).
//
//   node bench/agents.mjs [--holds 0,10,12.5] [--idle-nodes 200] [--busy-nodes 50]
//                         [--seconds 60] [--task-seconds 6] [--lease-seconds 9]
//                         [--samples 20] [--quick]
//
// The agent's loop: between tasks, a node heartbeat when 5 s have passed
// since the last, then a claim; on 204 a 1 s sleep before the next claim.
// While a task runs, only attempt heartbeats (every lease_seconds / 3); at the
// end one PUT per output file and a commit. Requests time out after 15 s.
//
// Per hold it measures:
// - idle: requests per second per node with no work in the pool;
// - dispatch: submit → first claim (POST /jobs sent → an idle agent holds
//   the lease), and requeue → next claim (a fail answered → another agent
//   holds the task), with the idle fleet waiting;
// - busy: requests per second per node while every node runs tasks;
// - workerd's CPU time over each window (Worker, pool object and local R2
//   together): an upper bound on the pool object's busy fraction.
// Every loop is bounded in count and time; the server is stopped at the end.
// Writes bench/results/agents.json.

import {
  BENCH,
  coordinator,
  ok,
  registration,
  runAgent,
  runTask,
  sleep,
  startWrangler,
  stopAll,
} from "../test/support/index.mjs";
import { flag, groupCpuSeconds, machine, median, option, percentile, round, today, writeResult } from "./lib.mjs";

/** @import { Client, Lease } from "../test/support/index.mjs" */

const QUICK = flag("quick");
const HOLDS = option("holds", QUICK ? "0,12.5" : "0,10,12.5")
  .split(",")
  .map(Number);
const IDLE_NODES = Number(option("idle-nodes", QUICK ? "20" : "200"));
const BUSY_NODES = Number(option("busy-nodes", QUICK ? "10" : "50"));
const SECONDS = Number(option("seconds", QUICK ? "15" : "60"));
const TASK_SECONDS = Number(option("task-seconds", "6"));
const LEASE_SECONDS = Number(option("lease-seconds", "9"));
const SAMPLES = Number(option("samples", QUICK ? "5" : "20"));

// ExecutorLoop's defaults.
const NODE_HEARTBEAT_S = 5;
const EMPTY_SLEEP_S = 1;
const CLIENT_TIMEOUT_S = 15;

/**
 * The requests one run sent, by kind, and what went wrong.
 * @typedef {{ sent: Record<string, number>, timeouts: number, errors: string[], emptyClaimMs: number[] }} Tally
 */

/** @returns {Tally} */
const newTally = () => ({ sent: {}, timeouts: 0, errors: [], emptyClaimMs: [] });

/**
 * The tally's name for a request.
 * @param {string} method
 * @param {string} path
 */
function kindOf(method, path) {
  if (path === "/nodes/register") return "register";
  if (path === "/leases/claim") return "claim";
  if (path.startsWith("/nodes/")) return "node_heartbeat";
  if (method === "PUT") return "upload";
  if (path.endsWith("/complete")) return "commit";
  if (path.endsWith("/fail")) return "fail";
  return "attempt_heartbeat";
}

/**
 * One node's client: every call counted in the current tally; an error or
 * a timeout is tallied and answers status 0 (no answer), as the agent
 * carries on after one.
 * @param {string} url
 * @param {string} pool
 * @param {() => Tally} tally
 * @returns {Client}
 */
function tallied(url, pool, tally) {
  return coordinator(url, {
    pool,
    timeoutMs: CLIENT_TIMEOUT_S * 1000,
    around: async (method, path, call) => {
      const kind = kindOf(method, path);
      tally().sent[kind] = (tally().sent[kind] ?? 0) + 1;
      const sentAt = Date.now();
      try {
        const answer = await call();
        if (answer.status >= 500) tally().errors.push(`${kind} ${answer.status} ${answer.text}`);
        if (kind === "claim" && answer.status === 204) tally().emptyClaimMs.push(Date.now() - sentAt);
        return answer;
      } catch (e) {
        if (e instanceof Error && e.name === "TimeoutError") tally().timeouts++;
        else tally().errors.push(`${kind}: ${String(e)}`);
        return { status: 0, text: "" };
      }
    },
  });
}

/**
 * One agent, as ExecutorLoop runs: `onLease` decides what it does with a task.
 * @param {{ client: Client, nodeId: string, stopAt: () => number, startAfterMs: number,
 *           onLease: (lease: Lease, client: Client) => Promise<void> }} agent
 */
function agent({ client, nodeId, stopAt, startAfterMs, onLease }) {
  return runAgent({
    client,
    nodeId,
    registration: registration(nodeId, {
      capabilities: { cpu_cores: 8, gpus: [], os: "linux", architecture: "amd64" },
    }),
    done: () => Date.now() >= stopAt(),
    startAfterMs,
    nodeHeartbeatMs: NODE_HEARTBEAT_S * 1000,
    idleMs: () => EMPTY_SLEEP_S * 1000,
    onLease: (lease) => onLease(lease, client),
  });
}

/**
 * Runs a task for `seconds` as the agent does: attempt heartbeats every
 * lease_seconds / 3, then one upload and a commit.
 * @param {Lease} lease
 * @param {Client} client
 * @param {number} seconds
 */
async function work(lease, client, seconds) {
  await runTask(client, lease, {
    workMs: seconds * 1000,
    heartbeatMs: (LEASE_SECONDS / 3) * 1000,
    key: `jobs/${lease.job_id}/${lease.task_id}/metrics.json`,
    output: JSON.stringify({ task: lease.task_id, loss: 0.1 }),
  });
}

/** @param {number} tasks @param {string} name */
function jobSpec(tasks, name) {
  return {
    apiVersion: "flashml.dev/v1alpha1",
    kind: "Job",
    metadata: { name },
    spec: {
      execution: { backend: "leases" },
      image: { repository: "ghcr.io/flashml/runner", tag: "0.4.1" },
      workload: {
        type: "hyperparameter_search",
        parameters: { trials: Array.from({ length: tasks }, (_, i) => ({ i })), lease_seconds: LEASE_SECONDS },
      },
    },
  };
}

/**
 * Measures one hold: idle cost, dispatch latency, busy cost.
 * @param {number} hold seconds
 */
async function measure(hold) {
  const server = await startWrangler({ vars: { ...BENCH, FLASHML_CLAIM_WAIT_SECONDS: String(hold) } });
  try {
    const pool = `agents-${String(hold).replace(".", "-")}-${Date.now().toString(36)}`;
    const operator = coordinator(server.url, { pool });
    /** @type {Tally} */
    let tally = newTally();
    let stopAt = Number.POSITIVE_INFINITY;
    /** When a task (by task id) was made claimable, and when an agent got it. */
    const offered = new Map();
    /** @type {number[]} */
    const dispatchMs = [];
    /** @type {number[]} */
    const requeueMs = [];
    let busySeconds = 0;
    /** @type {Set<string>} */
    const toFail = new Set();

    /** @type {(lease: Lease, client: Client) => Promise<void>} */
    const onLease = async (lease, client) => {
      const at = offered.get(lease.task_id);
      if (at !== undefined) {
        offered.delete(lease.task_id);
        (at.kind === "submit" ? dispatchMs : requeueMs).push(Date.now() - at.t);
      }
      if (toFail.delete(lease.task_id)) {
        // Fail it: the time from the fail to the task's next claim is the
        // requeue latency (a held claim may get it before the fail answers).
        offered.set(lease.task_id, { kind: "requeue", t: Date.now() });
        await client.fail(lease.lease_id, "probe");
        return;
      }
      await work(lease, client, busySeconds);
    };

    // A real fleet is not in step: agents start spread evenly over one loop
    // (the longest hold plus the sleep), so requests are not counted in bursts.
    const spreadMs = (Math.max(...HOLDS) + EMPTY_SLEEP_S) * 1000;
    const nodes = Array.from({ length: IDLE_NODES }, (_, i) => `idle-${String(i).padStart(4, "0")}`);
    const fleet = nodes.map((nodeId, i) =>
      agent({
        client: tallied(server.url, pool, () => tally),
        nodeId,
        stopAt: () => stopAt,
        startAfterMs: (i * spreadMs) / nodes.length,
        onLease,
      }),
    );

    // Idle: every node waiting, no work anywhere.
    await sleep(spreadMs + 2000); // everyone registered and in its loop
    tally = newTally();
    let cpu0 = groupCpuSeconds(server.pid);
    let t0 = Date.now();
    await sleep(SECONDS * 1000);
    const idleWindow = (Date.now() - t0) / 1000;
    const idle = summarize(tally, idleWindow, IDLE_NODES, groupCpuSeconds(server.pid) - cpu0);

    // Dispatch: one-task jobs to the waiting fleet; half are failed once to time the requeue.
    for (let i = 0; i < SAMPLES; i++) {
      if (i % 2 === 1) toFail.add("trial-000");
      const sentAt = Date.now();
      ok(await operator.submit(jobSpec(1, `probe-${i}`)), "submit");
      offered.set("trial-000", { kind: "submit", t: sentAt });
      const until = Date.now() + 20_000;
      while ((offered.size > 0 || toFail.size > 0) && Date.now() < until) await sleep(10);
      offered.clear();
      toFail.clear();
      await sleep(200 + (i % 5) * 150); // let the fleet settle into different phases of its loop
    }

    // Busy: BUSY_NODES of the fleet run tasks back to back; the rest are stopped.
    stopAt = Date.now();
    await Promise.all(fleet);
    busySeconds = TASK_SECONDS;
    stopAt = Number.POSITIVE_INFINITY;
    const busyNodes = Array.from({ length: BUSY_NODES }, (_, i) => `busy-${String(i).padStart(4, "0")}`);
    const tasks = Math.ceil(((BUSY_NODES * (SECONDS + TASK_SECONDS + 20)) / TASK_SECONDS) * 1.2);
    ok(await operator.submit(jobSpec(tasks, "busy")), "submit");
    const busyFleet = busyNodes.map((nodeId, i) =>
      agent({
        client: tallied(server.url, pool, () => tally),
        nodeId,
        stopAt: () => stopAt,
        startAfterMs: (i * TASK_SECONDS * 1000) / busyNodes.length,
        onLease,
      }),
    );
    await sleep(TASK_SECONDS * 1000 + 5000);
    tally = newTally();
    cpu0 = groupCpuSeconds(server.pid);
    t0 = Date.now();
    await sleep(SECONDS * 1000);
    const busyWindow = (Date.now() - t0) / 1000;
    const busy = summarize(tally, busyWindow, BUSY_NODES, groupCpuSeconds(server.pid) - cpu0);
    stopAt = Date.now();
    await Promise.all(busyFleet);
    return {
      hold_s: hold,
      idle,
      busy,
      dispatch: latency(dispatchMs),
      requeue: latency(requeueMs),
    };
  } finally {
    await server.stop();
  }
}

/**
 * @param {Tally} tally
 * @param {number} seconds
 * @param {number} nodes
 * @param {number} cpuSeconds
 */
function summarize(tally, seconds, nodes, cpuSeconds) {
  const total = Object.values(tally.sent).reduce((a, b) => a + b, 0);
  return {
    nodes,
    seconds: round(seconds, 1),
    requests: total,
    by_kind: { ...tally.sent },
    // How long a claim that got nothing took to answer: the hold, as the agent saw it.
    empty_claim_p50_ms: median(tally.emptyClaimMs),
    per_node_per_s: round(total / nodes / seconds, 3),
    workerd_cpu_fraction: round(cpuSeconds / seconds, 3),
    timeouts: tally.timeouts,
    errors: tally.errors.slice(0, 5),
    error_count: tally.errors.length,
  };
}

/** @param {number[]} ms */
function latency(ms) {
  return {
    samples: ms.length,
    p50_ms: median(ms),
    p95_ms: percentile(ms, 95),
    max_ms: ms.length ? Math.max(...ms) : null,
  };
}

async function main() {
  const runs = [];
  for (const hold of HOLDS) {
    console.log(`hold ${hold} s: ${IDLE_NODES} idle nodes, then ${BUSY_NODES} busy nodes, ${SECONDS} s each …`);
    const run = await measure(hold);
    console.log(
      `  idle ${run.idle.per_node_per_s} req/s/node (workerd CPU ${run.idle.workerd_cpu_fraction}), ` +
        `busy ${run.busy.per_node_per_s} req/s/node (workerd CPU ${run.busy.workerd_cpu_fraction}), ` +
        `submit→claim p50 ${run.dispatch.p50_ms} ms, requeue→claim p50 ${run.requeue.p50_ms} ms; ` +
        `${run.idle.timeouts + run.busy.timeouts} client timeouts, ${run.idle.error_count + run.busy.error_count} errors`,
    );
    runs.push(run);
  }
  const result = {
    date: today(),
    machine: machine(),
    command: `node bench/agents.mjs ${process.argv.slice(2).join(" ")}`.trim(),
    agent: { node_heartbeat_s: NODE_HEARTBEAT_S, empty_sleep_s: EMPTY_SLEEP_S, client_timeout_s: CLIENT_TIMEOUT_S },
    task_seconds: TASK_SECONDS,
    lease_seconds: LEASE_SECONDS,
    runs,
  };
  // Any 5xx or client timeout fails the run (CI runs it --quick); the figures themselves are for BENCHMARKS.md.
  const errors = runs.flatMap((r) => [
    ...r.idle.errors,
    ...r.busy.errors,
    ...(r.idle.timeouts + r.busy.timeouts > 0 ? [`hold ${r.hold_s} s: client timeouts`] : []),
  ]);
  if (!QUICK) console.log(`wrote ${writeResult("agents", result)}`);
  if (errors.length > 0) {
    console.error(`errors:\n${errors.join("\n")}`);
    process.exitCode = 1;
  }
}

try {
  await main();
} finally {
  await stopAll();
}
