// @ts-check
// The sharding bench (issue 27, docs/sharding.md §15.4): one `wrangler dev`
// per shard count S with FLASHML_POOL_SHARDS `*=S`, the agent loop of
// bench/agents.mjs (test/support runAgent), and each object's load read
// from the pool's own counters (GET /metrics: flashedge_requests_served_total
// and flashedge_object_busy_seconds_total per shard, and the summary's
// requests by kind).
//
//   node bench/shards.mjs [--shards 1,4,16] [--idle-nodes 500] [--mixed-idle 500] [--busy-nodes N]
//                         [--seconds 60] [--task-seconds 6] [--lease-seconds 9] [--hold 12.5]
//                         [--samples 20] [--burst 1000] [--quick]
//
// Per S, in one pool: an idle fleet (its window, then submit → first claim
// with it waiting), then the busy fleet on GPU tasks only it can take, beside
// `mixed-idle` of the idle nodes (the mixed window), then the busy fleet alone.
// The busy fleet is 12 nodes a shard (at least 50) unless --busy-nodes says:
// with 50 over 16 shards, about 3 a shard, one shard drew 8 by chance and
// the busy window's spread measured the hash, not the pool.
// In a second pool: one node whose home (shard 0) is empty claims work that
// waits on another shard, unheld (claim RTT) and held (submit → lease). In a
// third (S > 1): a placement burst of one-task jobs from 16 submitters.
// Each window's object requests are counter deltas less what the bench's own
// two metrics reads cost (measured at the start, in an empty pool). Every
// loop is bounded; every server is stopped at the end. Each node lives at its
// home, jump(node_id, S), so with a fleet this small the max/mean figures
// carry chance: each window reports how its own fleet is homed
// (flashedge_nodes_homed{shard}) beside them.
// Writes bench/results/shards.json (bench/render.mjs renders section 13), but
// not with --quick (S = 1 and 4, 40 nodes, 15 s windows: about 3 minutes), which CI runs.

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

/** @import { Answer, Client, Lease } from "../test/support/index.mjs" */

const QUICK = flag("quick");
const SHARDS = option("shards", QUICK ? "1,4" : "1,4,16")
  .split(",")
  .map(Number);
const IDLE_NODES = Number(option("idle-nodes", QUICK ? "30" : "500"));
const MIXED_IDLE = Math.min(IDLE_NODES, Number(option("mixed-idle", String(IDLE_NODES))));
const BUSY_OPTION = option("busy-nodes", QUICK ? "10" : "");
/** The busy fleet's size at S = `s`. @param {number} s */
const busyNodesAt = (s) => (BUSY_OPTION ? Number(BUSY_OPTION) : Math.max(50, 12 * s));
const SECONDS = Number(option("seconds", QUICK ? "15" : "60"));
const TASK_SECONDS = Number(option("task-seconds", "6"));
const LEASE_SECONDS = Number(option("lease-seconds", "9"));
const HOLD_S = Number(option("hold", "12.5"));
const SAMPLES = Number(option("samples", QUICK ? "5" : "20"));
const BURST = Number(option("burst", QUICK ? "200" : "1000"));
const SUBMITTERS = 16;

// ExecutorLoop's defaults, as bench/agents.mjs.
const NODE_HEARTBEAT_S = 5;
const EMPTY_SLEEP_S = 1;
const CLIENT_TIMEOUT_S = 15;

/** What the busy nodes have and the idle ones lack, so only they take the busy work. */
const GPU = { index: 0, name: "NVIDIA A10G", memory_total_mb: 22731 };

// -- the pool's counters ------------------------------------------------------

/**
 * One read of a pool's counters: per shard (index k; a one-shard pool's
 * series carry no shard label) and the summary's, null at S = 1.
 * @typedef {{ shards: Array<{ requests: number, busy_s: number, homed: number | null }>, claims: number,
 *   summary: { tick: number, on_demand: number, poke: number, other: number, busy_s: number } | null }} Counters
 */

/**
 * @param {string} url
 * @param {string} pool
 * @param {number} s
 * @returns {Promise<Counters>}
 */
async function counters(url, pool, s) {
  const r = await fetch(`${url}/pools/${pool}/v1alpha1/metrics`, { signal: AbortSignal.timeout(30_000) });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`metrics ${r.status}: ${text.slice(0, 200)}`);
  /** @param {string} name @param {string} labels */
  const value = (name, labels) => {
    const line = text.split("\n").find((l) => l.startsWith(`${name}{pool="${pool}"${labels}} `));
    if (line === undefined) throw new Error(`metrics: no ${name}{${labels}}`);
    return Number(line.slice(line.lastIndexOf(" ") + 1));
  };
  /** @param {number} k */
  const shardLabel = (k) => (s === 1 ? "" : `,shard="${k}"`);
  return {
    shards: Array.from({ length: s }, (_, k) => ({
      requests: value("flashedge_requests_served_total", shardLabel(k)),
      busy_s: value("flashedge_object_busy_seconds_total", shardLabel(k)),
      homed: s === 1 ? null : value("flashedge_nodes_homed", shardLabel(k)),
    })),
    claims: value("flashedge_claims_total", ""),
    summary:
      s === 1
        ? null
        : {
            tick: value("flashedge_summary_requests_total", ',kind="tick"'),
            on_demand: value("flashedge_summary_requests_total", ',kind="on_demand"'),
            poke: value("flashedge_summary_requests_total", ',kind="poke"'),
            other: value("flashedge_summary_requests_total", ',kind="other"'),
            busy_s: value("flashedge_summary_busy_seconds_total", ""),
          },
  };
}

/**
 * What one metrics read costs each shard and the summary, in requests:
 * the least of a few deltas between reads back to back in an empty pool
 * (a tick may land between two; the least has none).
 * @param {string} url @param {string} pool @param {number} s
 */
async function readCost(url, pool, s) {
  let last = await counters(url, pool, s);
  /** @type {number[][]} */
  const perShard = Array.from({ length: s }, () => []);
  /** @type {number[]} */
  const summary = [];
  for (let i = 0; i < 4; i++) {
    const next = await counters(url, pool, s);
    for (const [k, shard] of next.shards.entries()) perShard[k]?.push(shard.requests - (last.shards[k]?.requests ?? 0));
    if (next.summary && last.summary) summary.push(next.summary.other - last.summary.other);
    last = next;
  }
  return { shards: perShard.map((d) => Math.min(...d)), summary: summary.length ? Math.min(...summary) : 0 };
}

/** @typedef {Awaited<ReturnType<typeof readCost>>} ReadCost */

/**
 * One window's load per object, from two reads `seconds` apart, less the one read's worth the pair costs.
 * @param {Counters} a @param {Counters} b @param {ReadCost} cost @param {number} seconds @param {number} nodes
 */
function load(a, b, cost, seconds, nodes) {
  // An object idle for some seconds is evicted here and its counters start again: as Prometheus reads a
  // counter that went down, all of the new count is the increase. Then less the read's own cost, never below 0.
  /** @param {number} x @param {number} y */
  const increase = (x, y) => (y < x ? y : y - x);
  const shards = b.shards.map((shard, k) => {
    const before = a.shards[k] ?? { requests: 0, busy_s: 0 };
    const requests = Math.max(0, increase(before.requests, shard.requests) - (cost.shards[k] ?? 0));
    return {
      requests,
      requests_per_s: round(requests / seconds, 2),
      busy_fraction: round(increase(before.busy_s, shard.busy_s) / seconds, 4),
    };
  });
  const rates = shards.map((x) => x.requests / seconds);
  const total = rates.reduce((x, y) => x + y, 0);
  const mean = total / rates.length;
  const sa = a.summary;
  const sb = b.summary;
  const summary =
    sa && sb
      ? {
          ticks_per_s: round((sb.tick - sa.tick) / seconds, 2),
          on_demand_per_s: round((sb.on_demand - sa.on_demand) / seconds, 2),
          pokes_per_s: round((sb.poke - sa.poke) / seconds, 2),
          other_per_s: round((sb.other - sa.other - cost.summary) / seconds, 2),
          requests_per_s: round(
            (sb.tick +
              sb.on_demand +
              sb.poke +
              sb.other -
              (sa.tick + sa.on_demand + sa.poke + sa.other) -
              cost.summary) /
              seconds,
            2,
          ),
          busy_fraction: round((sb.busy_s - sa.busy_s) / seconds, 4),
        }
      : null;
  // A shard of a pool of shards ticks (an alarm, its exchange with Σ) at most twice a second whatever its nodes do.
  const ticks = summary ? summary.ticks_per_s : 0;
  return {
    shards,
    shard_requests_per_s: round(total, 2),
    per_node_per_s: round(total / nodes, 4),
    per_node_less_ticks_per_s: round((total - ticks) / nodes, 4),
    max_over_mean: mean > 0 ? round(Math.max(...rates) / mean, 2) : null,
    claims_per_s: round((b.claims - a.claims) / seconds, 2),
    summary,
  };
}

// -- the fleet ----------------------------------------------------------------

/**
 * The requests a window's agents sent, by kind, and what went wrong.
 * @typedef {{ sent: Record<string, number>, timeouts: number, errors: string[], devProxy: number }} Tally
 */

/** @returns {Tally} */
const newTally = () => ({ sent: {}, timeouts: 0, errors: [], devProxy: 0 });

/**
 * wrangler dev's own proxy answers this 503 when its hop to the Worker
 * fails (cloudflare/workers-sdk#14641: a steady 5 s cadence meets its 5 s
 * keep-alive; the Worker never restarted). It is not the coordinator's
 * answer, and a deployed pool has no such hop: counted apart, not an error.
 */
const DEV_PROXY_503 = "Your worker restarted mid-request";

/** @param {string} method @param {string} path */
function kindOf(method, path) {
  if (path === "/nodes/register") return "register";
  if (path === "/leases/claim") return "claim";
  if (path.startsWith("/nodes/")) return "node_heartbeat";
  if (method === "PUT") return "upload";
  if (path.endsWith("/complete")) return "commit";
  if (path.endsWith("/fail")) return "fail";
  if (path === "/jobs") return "submit";
  return "attempt_heartbeat";
}

/**
 * A node's client, as bench/agents.mjs: every call tallied; an error or a timeout answers status 0.
 * @param {string} url @param {string} pool @param {() => Tally} tally
 * @returns {Client}
 */
function tallied(url, pool, tally) {
  return coordinator(url, {
    pool,
    timeoutMs: CLIENT_TIMEOUT_S * 1000,
    around: async (method, path, call) => {
      const kind = kindOf(method, path);
      tally().sent[kind] = (tally().sent[kind] ?? 0) + 1;
      try {
        const answer = await call();
        if (answer.status === 503 && answer.text.startsWith(DEV_PROXY_503)) tally().devProxy++;
        else if (answer.status >= 500) tally().errors.push(`${kind} ${answer.status} ${answer.text.slice(0, 200)}`);
        return answer;
      } catch (e) {
        if (e instanceof Error && e.name === "TimeoutError") tally().timeouts++;
        else tally().errors.push(`${kind}: ${String(e)}`);
        return { status: 0, text: "" };
      }
    },
  });
}

/** @param {Tally} tally @param {number} seconds @param {number} nodes */
function clientSide(tally, seconds, nodes) {
  const total = Object.values(tally.sent).reduce((a, b) => a + b, 0);
  return {
    requests: total,
    by_kind: { ...tally.sent },
    per_node_per_s: round(total / nodes / seconds, 4),
    timeouts: tally.timeouts,
    errors: tally.errors.slice(0, 5),
    error_count: tally.errors.length,
    dev_proxy_503: tally.devProxy,
  };
}

/**
 * A one-task job (`gpu`: its task needs a GPU), or `tasks` tasks.
 * @param {string} name @param {{ tasks?: number, gpu?: boolean }} [o]
 */
function jobSpec(name, { tasks = 1, gpu = false } = {}) {
  return {
    apiVersion: "flashml.dev/v1alpha1",
    kind: "Job",
    metadata: { name },
    spec: {
      execution: { backend: "leases" },
      image: { repository: "ghcr.io/flashml/runner", tag: "0.4.1" },
      ...(gpu ? { resources: { gpuPerTask: 1 } } : {}),
      workload: {
        type: "hyperparameter_search",
        parameters: { trials: Array.from({ length: tasks }, (_, i) => ({ i })), lease_seconds: LEASE_SECONDS },
      },
    },
  };
}

/**
 * The shard a 12-hex job id names (src/rules/shard-ids.ts: 8 random hex, the shard, a tag); 0 at S = 1.
 * @param {string} jobId @param {number} s
 */
function shardOfJob(jobId, s) {
  return s === 1 ? 0 : Number.parseInt(jobId.slice(8, 10), 16);
}

/** @param {Client} client @param {unknown} spec @returns {Promise<string>} the job id */
async function submit(client, spec) {
  const job = /** @type {{ job_id: string }} */ (ok(await client.submit(/** @type {any} */ (spec)), "submit"));
  return job.job_id;
}

/**
 * A fleet of agents, each with its own stop: `stop(n)` stops the first n still running.
 * @param {{ url: string, pool: string, tally: () => Tally, names: string[], gpu: boolean, spreadMs: number,
 *   onLease: (lease: Lease, client: Client) => Promise<void> }} o
 */
function fleet(o) {
  const stopped = o.names.map(() => false);
  const gone = new AbortController();
  const done = Promise.all(
    o.names.map((nodeId, i) => {
      const client = tallied(o.url, o.pool, o.tally);
      return runAgent({
        client,
        nodeId,
        registration: registration(nodeId, {
          capabilities: { cpu_cores: 8, gpus: o.gpu ? [GPU] : [], os: "linux", architecture: "amd64" },
        }),
        done: () => stopped[i] === true,
        signal: gone.signal,
        startAfterMs: (i * o.spreadMs) / o.names.length,
        nodeHeartbeatMs: NODE_HEARTBEAT_S * 1000,
        idleMs: () => EMPTY_SLEEP_S * 1000,
        onLease: (lease) => o.onLease(lease, client),
      });
    }),
  );
  return {
    /** @param {number} [n] */
    stop: (n = stopped.length) => {
      for (let i = 0; i < n; i++) stopped[i] = true;
    },
    /** Stops them all and hangs up the claims they hold (the coordinator answers them into the void). */
    end: () => {
      stopped.fill(true);
      gone.abort();
      return done;
    },
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

// -- one shard count ----------------------------------------------------------

/**
 * A window of `SECONDS`: the counters and the group's CPU before and after.
 * @param {{ url: string, pid: number }} server @param {string} pool @param {number} s @param {ReadCost} cost
 * @param {number} nodes @param {{ tally: Tally }} box
 */
async function measureWindow(server, pool, s, cost, nodes, box) {
  const before = await counters(server.url, pool, s);
  box.tally = newTally();
  const cpu0 = groupCpuSeconds(server.pid);
  const t0 = Date.now();
  await sleep(SECONDS * 1000);
  const seconds = (Date.now() - t0) / 1000;
  const cpu = groupCpuSeconds(server.pid) - cpu0;
  const after = await counters(server.url, pool, s);
  return {
    nodes,
    seconds: round(seconds, 1),
    ...load(before, after, cost, seconds, nodes),
    workerd_cpu_fraction: round(cpu / seconds, 3),
    client: clientSide(box.tally, seconds, nodes),
    /** Registered nodes per home shard at the window's end (S > 1). */
    registered: after.shards.map((x) => x.homed),
  };
}

/**
 * How a window's own fleet is homed: nodes per shard (`registered` at its
 * end less `others`, the homes of registered nodes not in it) and their
 * max/mean, the spread that jump hash alone gives the window's load.
 * @param {Array<number | null>} registered @param {Array<number | null>} others
 */
function homes(registered, others) {
  if (registered.some((x) => x === null)) return { homes: null, homes_max_over_mean: null };
  const per = registered.map((x, k) => Number(x) - Number(others[k] ?? 0));
  const mean = per.reduce((x, y) => x + y, 0) / per.length;
  return { homes: per, homes_max_over_mean: mean > 0 ? round(Math.max(...per) / mean, 2) : null };
}

/** The fleets' windows and submit → first claim, in one pool. @param {{ url: string, pid: number }} server @param {number} s */
async function fleets(server, s) {
  const pool = `shards-${s}-fleet-${Date.now().toString(36)}`;
  const cost = await readCost(server.url, pool, s);
  const box = { tally: newTally() };
  const operator = coordinator(server.url, { pool });
  // The dispatch probe in flight: when its submission was sent, and when an agent got the lease. Its
  // lease may come before the submission's 201 (a held claim is answered inside it), so any lease of
  // the idle fleet while a probe is out is the probe's: there is no other work it can take.
  /** @type {{ t: number, ms: number | null, jobId: string | null } | null} */
  let probe = null;
  /** @type {Array<{ ms: number, shard: number }>} */
  const dispatch = [];

  // Idle: every node waiting, no work its kind can take.
  const idleNames = Array.from({ length: IDLE_NODES }, (_, i) => `idle-${String(i).padStart(4, "0")}`);
  const spreadMs = (HOLD_S + EMPTY_SLEEP_S) * 1000;
  const idleFleet = fleet({
    url: server.url,
    pool,
    tally: () => box.tally,
    names: idleNames,
    gpu: false,
    spreadMs,
    onLease: async (lease, client) => {
      if (probe !== null && probe.ms === null) {
        probe.ms = Date.now() - probe.t;
        probe.jobId = lease.job_id;
      }
      await runTask(client, lease, { key: `jobs/${lease.job_id}/${lease.task_id}/metrics.json` });
    },
  });
  await sleep(spreadMs + 2000);
  const idle = await measureWindow(server, pool, s, cost, IDLE_NODES, box);
  progress("idle window done");

  // Submit → first claim, with the idle fleet waiting.
  for (let i = 0; i < SAMPLES; i++) {
    const sent = { t: Date.now(), ms: null, jobId: null };
    probe = sent;
    const jobId = await submit(operator, jobSpec(`probe-${i}`));
    const until = Date.now() + 20_000;
    while (sent.ms === null && Date.now() < until) await sleep(10);
    probe = null;
    if (sent.ms !== null && sent.jobId === jobId) dispatch.push({ ms: sent.ms, shard: shardOfJob(jobId, s) });
    await sleep(200 + (i % 5) * 150); // the fleet in different phases of its loop
  }

  // Busy nodes on GPU tasks (only they have a GPU), beside MIXED_IDLE of the idle ones.
  idleFleet.stop(IDLE_NODES - MIXED_IDLE);
  const windows = 2 * SECONDS + TASK_SECONDS + 20;
  const busyNodes = busyNodesAt(s);
  const tasks = Math.ceil(((busyNodes * windows) / TASK_SECONDS) * 1.2);
  // In 8·S jobs, so that placement spreads them as it spreads a pool's many jobs (a job is wholly in one
  // shard): with 2·S, one shard in two got half as many jobs, its nodes ran out of work at home and the
  // other shards served them.
  const busyJobs = 8 * s;
  /** @type {number[]} */
  const busyShards = [];
  for (let j = 0; j < busyJobs; j++) {
    const jobId = await submit(operator, jobSpec(`busy-${j}`, { tasks: Math.ceil(tasks / busyJobs), gpu: true }));
    busyShards.push(shardOfJob(jobId, s));
  }
  const busyFleet = fleet({
    url: server.url,
    pool,
    tally: () => box.tally,
    names: Array.from({ length: busyNodes }, (_, i) => `busy-${String(i).padStart(4, "0")}`),
    gpu: true,
    spreadMs: TASK_SECONDS * 1000,
    onLease: async (lease, client) => {
      await runTask(client, lease, {
        workMs: TASK_SECONDS * 1000,
        heartbeatMs: (LEASE_SECONDS / 3) * 1000,
        key: `jobs/${lease.job_id}/${lease.task_id}/metrics.json`,
        output: JSON.stringify({ task: lease.task_id, loss: 0.1 }),
      });
    },
  });
  await sleep(TASK_SECONDS * 1000 + (QUICK ? 2000 : 5000));
  progress("busy fleet started");
  const mixed = await measureWindow(server, pool, s, cost, MIXED_IDLE + busyNodes, box);
  // The idle nodes stop; a claim they hold was counted when it came in, so the next window starts now.
  idleFleet.stop();
  await sleep(1000);
  const busy = await measureWindow(server, pool, s, cost, busyNodes, box);
  await Promise.all([idleFleet.end(), busyFleet.end()]);
  const cross = dispatch.filter((d) => d.shard !== 0).map((d) => d.ms);
  return {
    pool,
    read_cost: cost,
    busy_job_shards: busyShards,
    idle: { ...idle, ...homes(idle.registered, []) },
    mixed: {
      ...mixed,
      // The stopped idle nodes are still registered, and which of them are homed where is not read.
      ...(MIXED_IDLE === IDLE_NODES ? homes(mixed.registered, []) : { homes: null, homes_max_over_mean: null }),
      idle_nodes: MIXED_IDLE,
      busy_nodes: busyNodes,
    },
    busy: { ...busy, ...homes(busy.registered, idle.registered) },
    dispatch: { all: latency(dispatch.map((d) => d.ms)), other_shard: latency(cross) },
  };
}

/**
 * Cross-shard latency: one node, home at shard 0, which holds no other
 * work. Unheld: a one-task job on another shard (one placed on shard 0 is
 * cancelled and submitted again), then a second later the claim, timed.
 * Held: the claim waits, then a job is submitted, timed from the submit to
 * the lease; where placement puts it, so a job on shard 0 is a local wake,
 * kept apart. At S = 1 every sample is local: today's figures.
 * @param {{ url: string }} server @param {number} s
 */
async function crossShard(server, s) {
  const pool = `shards-${s}-latency-${Date.now().toString(36)}`;
  const operator = coordinator(server.url, { pool });
  const node = coordinator(server.url, { pool, timeoutMs: CLIENT_TIMEOUT_S * 1000 });
  // Homed at shard 0 at every S up to 256: jump("probe-0145", 256) is 0, and jump hash keeps it there below.
  const nodeId = "probe-0145";
  ok(await node.register(registration(nodeId, { capabilities: { cpu_cores: 8, gpus: [] } })), "register");
  /** @param {Answer} answer  a claim's: its task run and committed, so the next sample starts empty */
  const finish = async (answer) => {
    if (answer.status !== 200) return;
    const lease = /** @type {Lease} */ (JSON.parse(answer.text));
    await runTask(node, lease, { key: `jobs/${lease.job_id}/${lease.task_id}/metrics.json` });
  };
  /** @type {number[]} */
  const unheld = [];
  /** @type {number[]} */
  const heldOther = [];
  /** @type {number[]} */
  const heldLocal = [];
  let misses = 0;
  for (let tries = 0; unheld.length < SAMPLES && tries < 4 * SAMPLES; tries++) {
    const jobId = await submit(operator, jobSpec(`unheld-${tries}`));
    if (s > 1 && shardOfJob(jobId, s) === 0) {
      ok(await operator.send("POST", `/jobs/${jobId}/cancel`), "cancel");
      continue;
    }
    await sleep(1000);
    const t = Date.now();
    const answer = await node.claim(nodeId);
    if (answer.status === 200) unheld.push(Date.now() - t);
    else misses++;
    await finish(answer);
  }
  for (let tries = 0; heldOther.length < SAMPLES && tries < 4 * SAMPLES; tries++) {
    const claim = node.claim(nodeId);
    await sleep(1000);
    const t = Date.now();
    const jobId = await submit(operator, jobSpec(`held-${tries}`));
    let answer = await claim;
    const woke = Date.now() - t;
    if (answer.status === 200) (s > 1 && shardOfJob(jobId, s) === 0 ? heldLocal : heldOther).push(woke);
    else {
      misses++;
      answer = await node.claim(nodeId);
    }
    await finish(answer);
    if (s === 1 && heldOther.length >= SAMPLES) break;
  }
  return {
    unheld_claim: latency(unheld),
    held_wake: latency(heldOther),
    held_wake_same_shard: latency(heldLocal),
    misses,
  };
}

/**
 * The placement burst (docs/sharding.md §7.4): BURST one-task jobs from SUBMITTERS at once; the most on one shard
 * against 1.25 × N/S + 2.
 * @param {{ url: string }} server @param {number} s
 */
async function burst(server, s) {
  const pool = `shards-${s}-burst-${Date.now().toString(36)}`;
  const operator = coordinator(server.url, { pool, timeoutMs: 60_000 });
  const perShard = Array.from({ length: s }, () => 0);
  let next = 0;
  const t0 = Date.now();
  await Promise.all(
    Array.from({ length: SUBMITTERS }, async () => {
      while (next < BURST) {
        const i = next++;
        const jobId = await submit(operator, jobSpec(`burst-${i}`));
        perShard[shardOfJob(jobId, s)] = (perShard[shardOfJob(jobId, s)] ?? 0) + 1;
      }
    }),
  );
  const bound = 1.25 * (BURST / s) + 2;
  return {
    jobs: BURST,
    submitters: SUBMITTERS,
    seconds: round((Date.now() - t0) / 1000, 1),
    per_shard: perShard,
    max: Math.max(...perShard),
    bound: round(bound, 1),
    within: Math.max(...perShard) <= bound,
  };
}

const T0 = Date.now();
/** Progress on stderr, with the seconds since the bench began. @param {string} what */
const progress = (what) => console.error(`  [${round((Date.now() - T0) / 1000, 0)} s] ${what}`);

/** @param {number} s */
async function measure(s) {
  const vars = { ...BENCH, FLASHML_CLAIM_WAIT_SECONDS: String(HOLD_S), FLASHML_POOL_SHARDS: `*=${s}` };
  const server = await startWrangler({ vars });
  progress(`S = ${s}: wrangler dev up`);
  try {
    const measured = await fleets(server, s);
    progress("fleets done");
    const cross = await crossShard(server, s);
    progress("cross-shard latency done");
    const placement = s > 1 && BURST > 0 ? await burst(server, s) : null;
    return { shards: s, ...measured, cross_shard: cross, placement };
  } finally {
    await server.stop();
  }
}

/** @param {string} what @param {ReturnType<typeof load> & { client: ReturnType<typeof clientSide>, homes_max_over_mean: number | null }} w */
function line(what, w) {
  const summary = w.summary
    ? `, Σ ${w.summary.requests_per_s}/s (ticks ${w.summary.ticks_per_s}, on-demand ${w.summary.on_demand_per_s}, pokes ${w.summary.pokes_per_s})`
    : "";
  return (
    `  ${what}: shards ${w.shards.map((x) => x.requests_per_s).join(" / ")} req/s (max/mean ${w.max_over_mean}; homes ${w.homes_max_over_mean ?? "—"}), ` +
    `${w.per_node_per_s} req/s/node (client ${w.client.per_node_per_s}), claims ${w.claims_per_s}/s, ` +
    `busy ${w.shards.map((x) => x.busy_fraction).join(" / ")}${summary}`
  );
}

async function main() {
  const runs = [];
  for (const s of SHARDS) {
    console.log(
      `S = ${s}: ${IDLE_NODES} idle nodes, then ${MIXED_IDLE} idle + ${busyNodesAt(s)} busy, then ${busyNodesAt(s)} busy, ${SECONDS} s each …`,
    );
    const run = await measure(s);
    console.log(line("idle", run.idle));
    console.log(line("mixed", run.mixed));
    console.log(line("busy", run.busy));
    console.log(
      `  submit→claim p50/p95 ${run.dispatch.all.p50_ms}/${run.dispatch.all.p95_ms} ms (other shard: ${run.dispatch.other_shard.p50_ms}/${run.dispatch.other_shard.p95_ms}, n=${run.dispatch.other_shard.samples}); ` +
        `home empty: unheld claim ${run.cross_shard.unheld_claim.p50_ms}/${run.cross_shard.unheld_claim.p95_ms} ms, ` +
        `held wake ${run.cross_shard.held_wake.p50_ms}/${run.cross_shard.held_wake.p95_ms} ms (${run.cross_shard.misses} misses)` +
        (run.placement ? `; burst max ${run.placement.max} per shard (bound ${run.placement.bound})` : ""),
    );
    runs.push(run);
  }
  const result = {
    date: today(),
    machine: machine(),
    command: `node bench/shards.mjs ${process.argv.slice(2).join(" ")}`.trim(),
    quick: QUICK,
    agent: { node_heartbeat_s: NODE_HEARTBEAT_S, empty_sleep_s: EMPTY_SLEEP_S, client_timeout_s: CLIENT_TIMEOUT_S },
    hold_s: HOLD_S,
    task_seconds: TASK_SECONDS,
    lease_seconds: LEASE_SECONDS,
    runs,
  };
  result.machine.load_at_end = round(/** @type {number} */ ((await import("node:os")).loadavg()[0]), 2);
  // As bench/agents.mjs: a --quick run (CI's) checks that the bench runs and prints; only a full run is BENCHMARKS.md's.
  if (!QUICK) console.log(`wrote ${writeResult("shards", result)}`);
  const errors = runs.flatMap((r) =>
    [r.idle, r.mixed, r.busy].flatMap((w) => [
      ...w.client.errors,
      ...(w.client.timeouts > 0 ? [`S = ${r.shards}: ${w.client.timeouts} client timeouts`] : []),
    ]),
  );
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
