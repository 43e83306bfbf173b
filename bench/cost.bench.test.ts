// Cost benchmark (issue 42, SPEC §16): what the agent's requests cost in the
// units Cloudflare bills, counted on the real Worker and pool objects in
// workerd, at each shard count of BENCH_COST_SHARDS. It prices nothing and
// composes nothing: it prints one `BENCH {json}` record per shard count of
// raw measurements, each the counts of some work with the number of units
// it did and the seconds it took, and bench/cost.mjs composes the workloads
// and prices them. Never run by `npm test`; its driver is bench/cost.mjs.
//
// Counted exactly, per pool: by the pool's objects themselves (GET /metrics:
// SQLite rows read and written, R2 operations by class, and the calls each
// object served, alarms and calls between objects included, with the pool
// summary's) and by this harness (the HTTP requests the agents send, the
// RPC calls the Worker makes on the objects — counted at the stubs of the
// env it passes the Worker — and the Worker's own R2 calls). Every read of
// the metrics costs the objects something too; each is measured and taken
// out. What a pool does by itself (at S > 1 the shards' ticks with the pool
// summary) is measured in pools of its own, over wall time and per tick.

import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { it } from "vitest";
import app from "../src/index";
import type { Lease } from "../src/protocol/tasks";
import { QUORUM_LABEL, REPLICAS_LABEL } from "../src/rules/verification";
import { trialsJob } from "../test/fixtures/jobspec";
import { registration } from "../test/fixtures/registration";

const settings = env as unknown as Record<string, string | undefined>;
const QUICK = settings.BENCH_QUICK === "1";
const SHARDS = (settings.BENCH_COST_SHARDS || "1,4").split(",").map(Number);

/** The busy agents: one-minute tasks on one-minute leases (--quick: 6 s, time compressed 10×), two cycles, the second measured. */
const BUSY_AGENTS = QUICK ? 8 : 40;
const TASK_SECONDS = QUICK ? 6 : 60;
const LEASE_SECONDS = TASK_SECONDS;
/** The agent renews its attempt every third of its lease: a one-minute task sends two attempt heartbeats. */
const ATTEMPT_HEARTBEAT_MS = (LEASE_SECONDS / 3) * 1000;
/** The jobs the busy agents take from: their submission is measured too, per task. */
const JOBS = 4;
const TASKS_PER_JOB = 100;
/** After the commits, before the next cycle: what the answers left to do (outbox, alarms) lands here. */
const SETTLE_MS = 1000;

/** The idle agents' loop (flashnode's ExecutorLoop): a node heartbeat once 5 s have passed, a claim held by the pool, 1 s asleep after a 204. */
const NODE_HEARTBEAT_MS = 5000;
/** How long the pool holds a claim with nothing to take (wrangler.toml's FLASHML_CLAIM_WAIT_SECONDS). */
const HOLD_MS = Number(settings.FLASHML_CLAIM_WAIT_SECONDS ?? "12.5") * 1000;
const EMPTY_SLEEP_MS = 1000;
/**
 * Two fleets of idle agents, measured at once: the difference is the agents', the rest the pool's background.
 * Both large enough (5 agents a shard or more) that every shard holds claims all the time: both pay the same background.
 */
const IDLE_FLEETS = (shards: number) => (QUICK ? [5, 15] : [10, 30]).map((n) => Math.max(n, n * shards));
/** About one loop (a 12.5 s hold and the 1 s sleep) to start the fleet spread over it, then the measured window. */
const IDLE_WARM_MS = 14_000;
const IDLE_WINDOW_MS = QUICK ? 27_000 : 81_000;

/** A pool with work pending on every shard and leases live, and no requests: its background. */
const QUIET_WINDOW_MS = QUICK ? 15_000 : 60_000;
/**
 * A pool at rest (nodes, nothing pending, nothing held, no lease): its background, once what the registrations
 * left to do (a liveness write deferred up to a minute, a shard's busy ticks) is done.
 */
const REST_AFTER_MS = QUICK ? 6_000 : 65_000;
const REST_WINDOW_MS = QUICK ? 10_000 : 30_000;
/**
 * An object with no call for a while is evicted, and its counters (in memory) start again at 0: a
 * window without requests reads the metrics this often, which keeps the objects in memory as a
 * pool with traffic is. Those reads' cost is taken out with every other read's.
 */
const KEEP_ALIVE_MS = 4_000;

/**
 * A job of replicas 3 (its quorum the default, all 3) on a fleet too new to be trusted alone (fewer than 10
 * valid results each), so every task runs all its replicas.
 */
const REPLICAS = 3;
const QUORUM = 3;
const REPLICATED_TASKS = QUICK ? 6 : 30;
const REPLICA_NODES = QUICK ? 6 : 12;

/** A job run to its end, then archived: what archiving costs per task, and the storage a finished task holds. */
const ARCHIVE_TASKS = QUICK ? 20 : 100;
const ARCHIVE_NODES = 10;
/** How long to wait for an archive (retention is 10 s in bench/vitest.cost.config.ts). */
const ARCHIVE_WAIT_MS = 60_000;

/**
 * Requests in a pool of their own (node heartbeat, empty claim): this many of each, counted to their answers
 * (a liveness write the pool defers is not in them).
 */
const ALONE = 10;

const OPERATOR_TOKEN = "tok-ops";
const tokenOf = (nodeId: string) => `tok-${nodeId}`;

// ---------------------------------------------------------------------------------------------------
// Counts

const KEYS = [
  "worker_requests", // harness: HTTP requests the agents sent
  "worker_calls", // harness: RPC calls the Worker made on the pool's objects (at the stubs)
  "object_calls", // metrics: calls the pool's objects served (requests, alarms, calls between objects; the summary's too)
  "rows_written", // metrics: SQLite rows written, every object of the pool
  "rows_read", // metrics: SQLite rows read
  "r2_a", // metrics: R2 class A operations the objects counted (when exported)
  "r2_b", // metrics: R2 class B operations
  "worker_r2_a", // harness: the Worker's own R2 class A calls (put, list, multipart)
  "worker_r2_b", // harness: the Worker's own R2 class B calls (get, head)
  "ticks", // metrics: the shards' ticks with the pool summary (at S > 1 the background: an alarm and an exchange each)
] as const;
type Key = (typeof KEYS)[number];
type Counts = Record<Key, number>;

const zero = (): Counts => Object.fromEntries(KEYS.map((k) => [k, 0])) as Counts;
const minus = (a: Counts, b: Counts): Counts => Object.fromEntries(KEYS.map((k) => [k, a[k] - b[k]])) as Counts;
const plus = (a: Counts, b: Counts): Counts => Object.fromEntries(KEYS.map((k) => [k, a[k] + b[k]])) as Counts;
const times = (a: Counts, f: number): Counts => Object.fromEntries(KEYS.map((k) => [k, a[k] * f])) as Counts;

/** What the harness counts itself, per pool. */
type Tally = Pick<Counts, "worker_requests" | "worker_calls" | "worker_r2_a" | "worker_r2_b">;

/** A pool under measurement: its name, shards, the env its requests run with, and what one metrics read costs it. */
type Site = {
  pool: string;
  shards: number;
  env: Env;
  tally: Tally;
  /** One metrics read: what it cost the pool (the background over it included), and the seconds it took. */
  perRead: { counts: Counts; seconds: number };
  last: Snapshot | null;
};

/**
 * Some work's counts (the metrics reads around it taken out), how many units
 * of it they are (requests, tasks, agents), the wall seconds it took, and
 * the `reads` metrics reads of `read_seconds` each taken out: the driver
 * takes out the ticks left in the counts, and reads a rate over the seconds
 * outside those reads (whose calibrated cost held the background over them).
 */
type Measurement = { units: number; seconds: number; counts: Counts; reads: number; read_seconds: number };

type Snapshot = {
  at: number;
  counts: Counts;
  storageBytes: number;
  tasks: number;
  shardsPending: number;
  r2Exported: boolean;
};

// ---------------------------------------------------------------------------------------------------
// The env the Worker runs with: the same bindings, its stub calls and R2 calls counted

type Callable = (...args: unknown[]) => unknown;

/** The stubs of `namespace`, each RPC call on one counted (a pipelined `stub.peer().x()` counts once). */
function countedNamespace<T extends object>(namespace: T, tally: Tally): T {
  const stub = (s: object) =>
    new Proxy(s, {
      get(target, prop) {
        const value: unknown = Reflect.get(target, prop);
        if (typeof prop === "symbol" || typeof value !== "function") return value;
        return (...args: unknown[]) => {
          tally.worker_calls += 1;
          return Reflect.apply(value as Callable, target, args);
        };
      },
    });
  const wrap = (ns: object): object =>
    new Proxy(ns, {
      get(target, prop) {
        const value: unknown = Reflect.get(target, prop);
        if (typeof value !== "function") return value;
        const call = (...args: unknown[]) => Reflect.apply(value as Callable, target, args);
        if (prop === "get" || prop === "getByName") return (...args: unknown[]) => stub(call(...args) as object);
        if (prop === "jurisdiction") return (...args: unknown[]) => wrap(call(...args) as object);
        return call;
      },
    });
  return wrap(namespace) as T;
}

const R2_CLASS_A = new Set(["put", "list", "createMultipartUpload"]);
const R2_CLASS_B = new Set(["get", "head"]);

/** The bucket, with the Worker's own operations counted by billing class (deletes are free). */
function countedBucket(bucket: R2Bucket, tally: Tally): R2Bucket {
  return new Proxy(bucket, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop);
      if (typeof prop === "symbol" || typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (R2_CLASS_A.has(prop)) tally.worker_r2_a += 1;
        if (R2_CLASS_B.has(prop)) tally.worker_r2_b += 1;
        return Reflect.apply(value as Callable, target, args);
      };
    },
  });
}

function site(shards: number, kind: string, vars: Record<string, string> = {}): Site {
  const tally: Tally = { worker_requests: 0, worker_calls: 0, worker_r2_a: 0, worker_r2_b: 0 };
  const counted = {
    ...env,
    ...vars,
    POOL: countedNamespace(env.POOL, tally),
    SUMMARY: countedNamespace(env.SUMMARY, tally),
    ARTIFACTS: countedBucket(env.ARTIFACTS, tally),
  } as Env;
  return {
    pool: `cost-s${shards}-${kind}-${crypto.randomUUID().slice(0, 6)}`,
    shards,
    env: counted,
    tally,
    perRead: { counts: zero(), seconds: 0 },
    last: null,
  };
}

/** One request of an agent (or a driver) through the real Worker, waited for to its last `waitUntil`. */
async function send(
  s: Site,
  method: string,
  path: string,
  body?: unknown,
  token?: string,
): Promise<{ status: number; text: string }> {
  s.tally.worker_requests += 1;
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  let payload: BodyInit | undefined;
  // The Worker is called directly, not through the runtime's fetch: an upload's Content-Length is set here.
  if (body instanceof Uint8Array) {
    payload = body;
    headers["content-length"] = String(body.byteLength);
  } else if (body !== undefined) {
    headers["content-type"] = "application/json";
    payload = JSON.stringify(body);
  }
  const ctx = createExecutionContext();
  const response = await app.fetch(
    new Request(`http://flashedge.test/pools/${s.pool}/v1alpha1${path}`, { method, headers, body: payload }),
    s.env,
    ctx,
  );
  const text = await response.text();
  await waitOnExecutionContext(ctx);
  return { status: response.status, text };
}

async function expectStatus(answer: Promise<{ status: number; text: string }>, status: number, what: string) {
  const a = await answer;
  if (a.status !== status) throw new Error(`${what}: ${a.status} ${a.text.slice(0, 300)}`);
  return a.text;
}

// ---------------------------------------------------------------------------------------------------
// The pool's own counts, from GET /metrics (read open: the Worker of the tests' bindings, not counted)

function labelsOf(text: string): Record<string, string> {
  return Object.fromEntries([...text.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
}

async function snapshot(s: Site): Promise<Snapshot> {
  const r = await exports.default.fetch(new Request(`http://flashedge.test/pools/${s.pool}/v1alpha1/metrics`));
  const text = await r.text();
  if (r.status !== 200) throw new Error(`metrics: ${r.status} ${text.slice(0, 300)}`);
  const counts: Counts = { ...zero(), ...s.tally };
  let storageBytes = 0;
  let tasks = 0;
  let r2Exported = false;
  const pending = new Map<string, number>();
  for (const line of text.split("\n")) {
    const m = /^([a-z0-9_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const [, name, labelText, valueText] = m;
    const labels = labelsOf(labelText ?? "");
    if (labels.pool !== undefined && labels.pool !== s.pool) continue;
    const value = Number(valueText);
    switch (name) {
      case "flashedge_sql_rows_written_total":
        counts.rows_written += value;
        break;
      case "flashedge_sql_rows_read_total":
        counts.rows_read += value;
        break;
      case "flashedge_r2_operations_total":
        r2Exported = true;
        if (labels.class === "A") counts.r2_a += value;
        if (labels.class === "B") counts.r2_b += value;
        break;
      case "flashedge_requests_served_total":
        counts.object_calls += value;
        break;
      case "flashedge_summary_requests_total":
        counts.object_calls += value;
        if (labels.kind === "tick") counts.ticks += value;
        break;
      case "flashedge_storage_bytes":
        storageBytes += value;
        break;
      case "flashedge_tasks":
        tasks += value;
        break;
      case "flashedge_pending_tasks_by_class": {
        const shard = labels.shard ?? "0";
        pending.set(shard, (pending.get(shard) ?? 0) + value);
        break;
      }
    }
  }
  const shardsPending = [...pending.values()].filter((n) => n > 0).length;
  const now = { at: Date.now(), counts, storageBytes, tasks, shardsPending, r2Exported };
  // A counter that went back means an object restarted and its in-memory counts started again: nothing measured across it holds.
  const back = (["object_calls", "rows_written", "rows_read", "r2_a", "r2_b"] as const).filter(
    (k) => s.last !== null && counts[k] < s.last.counts[k],
  );
  if (back.length > 0) throw new Error(`${s.pool}: an object restarted (${back.join(", ")} went back)`);
  s.last = now;
  return now;
}

/** What one metrics read costs the pool: per count, the median of three reads in a row (the background between them included). */
async function calibrate(s: Site): Promise<void> {
  const reads = [await snapshot(s)];
  for (let i = 0; i < 3; i++) reads.push(await snapshot(s));
  const steps = reads.slice(1).map((r, i) => minus(r.counts, reads[i]!.counts));
  s.perRead = {
    counts: Object.fromEntries(KEYS.map((k) => [k, steps.map((d) => d[k]).sort((a, b) => a - b)[1]!])) as Counts,
    seconds: (reads[3]!.at - reads[0]!.at) / 3000,
  };
}

/** `units` of work from `from` to `to`: their counts with the metrics reads taken out (`inner` between them, and one for the pair). */
function span(s: Site, units: number, from: Snapshot, to: Snapshot, inner = 0): Measurement {
  return {
    units,
    seconds: (to.at - from.at) / 1000,
    counts: minus(minus(to.counts, from.counts), times(s.perRead.counts, inner + 1)),
    reads: inner + 1,
    read_seconds: s.perRead.seconds,
  };
}

/** Two windows of the same work as one. */
function merged(a: Measurement, b: Measurement): Measurement {
  return {
    units: a.units + b.units,
    seconds: a.seconds + b.seconds,
    counts: plus(a.counts, b.counts),
    reads: a.reads + b.reads,
    read_seconds: b.read_seconds,
  };
}

/** `work`'s counts; it answers how many metrics reads it made itself (a wait's), if any. */
async function measure(s: Site, units: number, work: () => Promise<unknown>): Promise<Measurement> {
  const before = await snapshot(s);
  const reads = await work();
  return span(s, units, before, await snapshot(s), typeof reads === "number" ? reads : 0);
}

/** Waits `ms` with the pool's objects kept in memory (KEEP_ALIVE_MS): answers the metrics reads it made. */
async function wait(s: Site, ms: number): Promise<number> {
  const end = Date.now() + ms;
  let reads = 0;
  while (end - Date.now() > KEEP_ALIVE_MS) {
    await sleep(KEEP_ALIVE_MS);
    await snapshot(s);
    reads += 1;
  }
  await sleep(end - Date.now());
  return reads;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
const ids = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(3, "0")}`);

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

function outputKey(lease: Lease): string {
  const prefix = lease.payload.output_prefix;
  return `${typeof prefix === "string" ? prefix : `jobs/${lease.job_id}/${lease.task_id}/`}metrics.json`;
}

const heartbeat = (nodeId: string) => ({ node_id: nodeId, status: "online" });

async function register(s: Site, nodeIds: string[], token = (_: string): string | undefined => undefined) {
  await Promise.all(
    nodeIds.map((n) => expectStatus(send(s, "POST", "/nodes/register", registration(n), token(n)), 200, "register")),
  );
}

/**
 * Uploads a task's output and commits it, as the agent does: whether the commit was accepted, or the upload
 * refused because the task already has its verdict (a replica its quorum did without; the agent stops there).
 */
async function finish(
  s: Site,
  lease: Lease,
  output: string,
  token?: string,
): Promise<"accepted" | "rejected" | "too late"> {
  const bytes = new TextEncoder().encode(output);
  const upload = await send(s, "PUT", `/artifacts/${outputKey(lease)}`, bytes, token);
  if (upload.status === 409) return "too late";
  if (upload.status !== 200) throw new Error(`upload: ${upload.status} ${upload.text.slice(0, 300)}`);
  const body = { output_sha256: await sha256(output) };
  const answer = await expectStatus(
    send(s, "POST", `/attempts/${lease.lease_id}/complete`, body, token),
    200,
    "commit",
  );
  return (JSON.parse(answer) as { accepted?: boolean }).accepted === true ? "accepted" : "rejected";
}

/** Waits until the pool holds no task rows (its finished jobs archived); the polls' reads are counted in `reads`. */
async function archived(s: Site): Promise<{ last: Snapshot; reads: number }> {
  const deadline = Date.now() + ARCHIVE_WAIT_MS;
  let reads = 0;
  for (;;) {
    await sleep(1000);
    const now = await snapshot(s);
    if (now.tasks === 0) {
      // One more second: the archive's last transaction and re-arm have landed.
      await sleep(1000);
      return { last: await snapshot(s), reads: reads + 1 };
    }
    reads += 1;
    if (Date.now() > deadline) throw new Error(`${s.pool}: job not archived within ${ARCHIVE_WAIT_MS} ms`);
  }
}

// ---------------------------------------------------------------------------------------------------
// Workload 1: busy agents, one-minute tasks, measured kind by kind at the agent's own cadence

const BUSY_KINDS = ["node_heartbeat", "claim", "attempt_heartbeat", "upload", "commit"] as const;
type BusyKind = (typeof BUSY_KINDS)[number];

async function busy(shards: number) {
  const s = site(shards, "busy");
  const nodes = ids("busy", BUSY_AGENTS);
  await register(s, nodes);
  await calibrate(s);
  const submit = await measure(s, JOBS * TASKS_PER_JOB, async () => {
    for (let j = 0; j < JOBS; j++)
      await expectStatus(
        send(s, "POST", "/jobs", trialsJob(TASKS_PER_JOB, { lease_seconds: LEASE_SECONDS })),
        201,
        "submit",
      );
  });

  const kinds = Object.fromEntries(
    BUSY_KINDS.map((k) => [k, { units: 0, seconds: 0, counts: zero(), reads: 0, read_seconds: 0 }]),
  ) as unknown as Record<BusyKind, Measurement>;
  let afterAnswers: Measurement = { units: 0, seconds: 0, counts: zero(), reads: 0, read_seconds: 0 };
  let last = await snapshot(s);
  let first = last;
  let reads = 0;
  let measuring = false;
  const phase = async (kind: BusyKind, work: (nodeId: string) => Promise<unknown>) => {
    await Promise.all(nodes.map(work));
    const now = await snapshot(s);
    if (measuring) {
      kinds[kind] = merged(kinds[kind], span(s, nodes.length, last, now));
      reads += 1;
    }
    last = now;
  };
  const pause = async (ms: number) => {
    const inner = await wait(s, ms);
    const now = await snapshot(s);
    if (measuring) {
      // Per task: every pause of a cycle belongs to each of its tasks.
      afterAnswers = merged(afterAnswers, { ...span(s, 0, last, now, inner), units: 0 });
      reads += 1 + inner;
    }
    last = now;
  };

  const leases = new Map<string, Lease>();
  for (const cycle of [1, 2]) {
    measuring = cycle === 2;
    if (measuring) {
      first = last;
      reads = 0;
    }
    const started = Date.now();
    await phase("node_heartbeat", (n) =>
      expectStatus(send(s, "POST", `/nodes/${n}/heartbeat`, heartbeat(n)), 200, "node heartbeat"),
    );
    await phase("claim", async (n) => {
      const text = await expectStatus(send(s, "POST", "/leases/claim", { node_id: n }), 200, "claim");
      leases.set(n, JSON.parse(text) as Lease);
    });
    for (let beat = 1; beat * ATTEMPT_HEARTBEAT_MS < TASK_SECONDS * 1000; beat++) {
      await pause(started + beat * ATTEMPT_HEARTBEAT_MS - Date.now());
      await phase("attempt_heartbeat", (n) =>
        expectStatus(send(s, "POST", `/attempts/${leases.get(n)!.lease_id}/heartbeat`), 200, "attempt heartbeat"),
      );
    }
    await pause(started + TASK_SECONDS * 1000 - Date.now());
    await phase("upload", async (n) => {
      const lease = leases.get(n)!;
      const bytes = new TextEncoder().encode(JSON.stringify({ task: lease.task_id, loss: 0.1 }));
      await expectStatus(send(s, "PUT", `/artifacts/${outputKey(lease)}`, bytes), 200, "upload");
    });
    await phase("commit", async (n) => {
      const lease = leases.get(n)!;
      const digest = await sha256(JSON.stringify({ task: lease.task_id, loss: 0.1 }));
      const answer = await expectStatus(
        send(s, "POST", `/attempts/${lease.lease_id}/complete`, { output_sha256: digest }),
        200,
        "commit",
      );
      if (!(JSON.parse(answer) as { accepted?: boolean }).accepted) throw new Error(`commit not accepted: ${answer}`);
    });
    await pause(SETTLE_MS);
  }
  const lifecycle = span(s, BUSY_AGENTS, first, last, reads - 1);
  return {
    agents: BUSY_AGENTS,
    task_seconds: TASK_SECONDS,
    lease_seconds: LEASE_SECONDS,
    jobs: JOBS,
    tasks_per_job: TASKS_PER_JOB,
    submit,
    kinds,
    after_answers: { ...afterAnswers, units: BUSY_AGENTS },
    lifecycle,
    r2_exported: last.r2Exported,
    metrics_read: s.perRead,
  };
}

// ---------------------------------------------------------------------------------------------------
// The background of a busy pool: work pending on every shard, leases live, no requests

async function quiet(shards: number) {
  const s = site(shards, "quiet");
  const nodes = ids("quiet", 2);
  await register(s, nodes);
  for (let j = 0; j < 4 * shards + 4; j++) {
    await expectStatus(send(s, "POST", "/jobs", trialsJob(10, { lease_seconds: 600 })), 201, "submit");
    if (j >= shards - 1 && (await snapshot(s)).shardsPending === shards) break;
  }
  const pendingShards = (await snapshot(s)).shardsPending;
  for (const n of nodes) await expectStatus(send(s, "POST", "/leases/claim", { node_id: n }), 200, "claim");
  // Past the 5 s a change keeps a shard's ticks busy: what remains is what pending work and live leases cost.
  await wait(s, 6000);
  await calibrate(s);
  const window = await measure(s, 1, () => wait(s, QUIET_WINDOW_MS));
  return { pending_shards: pendingShards, live_leases: nodes.length, window, metrics_read: s.perRead };
}

// ---------------------------------------------------------------------------------------------------
// Workload 2: idle agents holding claims, two fleets at once over real time

async function idleFleet(shards: number, agents: number) {
  const s = site(shards, `idle${agents}`);
  const nodes = ids("idle", agents);
  await register(s, nodes);
  await calibrate(s);
  const loopMs = HOLD_MS + EMPTY_SLEEP_MS;
  const t0 = Date.now() + 200;
  const windowStart = t0 + IDLE_WARM_MS;
  const windowEnd = windowStart + IDLE_WINDOW_MS;
  let claims = 0;
  const agent = async (nodeId: string, startAt: number) => {
    await sleep(startAt - Date.now());
    let lastHeartbeat = Number.NEGATIVE_INFINITY;
    while (Date.now() < windowEnd) {
      if (Date.now() - lastHeartbeat >= NODE_HEARTBEAT_MS) {
        await expectStatus(send(s, "POST", `/nodes/${nodeId}/heartbeat`, heartbeat(nodeId)), 200, "node heartbeat");
        lastHeartbeat = Date.now();
      }
      await expectStatus(send(s, "POST", "/leases/claim", { node_id: nodeId }), 204, "idle claim");
      claims += 1;
      await sleep(EMPTY_SLEEP_MS);
    }
  };
  const running = Promise.all(nodes.map((n, i) => agent(n, t0 + (i * loopMs) / agents)));
  await sleep(windowStart - Date.now());
  const before = await snapshot(s);
  const claimsBefore = claims;
  await sleep(windowEnd - Date.now());
  const after = await snapshot(s);
  const claimsInWindow = claims - claimsBefore;
  await running;
  return {
    agents,
    window: span(s, agents, before, after),
    claims_answered: claimsInWindow,
    metrics_read: s.perRead,
  };
}

// ---------------------------------------------------------------------------------------------------
// Requests alone, in a pool of their own: a node heartbeat, and a claim with nothing to take answered at once

async function alone(shards: number) {
  const s = site(shards, "alone", { FLASHML_CLAIM_WAIT_SECONDS: "0" });
  const nodes = ids("alone", ALONE);
  await register(s, nodes);
  await sleep(1000);
  await calibrate(s);
  const nodeHeartbeat = await measure(s, ALONE, () =>
    Promise.all(
      nodes.map((n) => expectStatus(send(s, "POST", `/nodes/${n}/heartbeat`, heartbeat(n)), 200, "node heartbeat")),
    ),
  );
  const emptyClaim = await measure(s, ALONE, () =>
    Promise.all(nodes.map((n) => expectStatus(send(s, "POST", "/leases/claim", { node_id: n }), 204, "empty claim"))),
  );
  return { node_heartbeat: nodeHeartbeat, empty_claim: emptyClaim, rest: await rest(shards), metrics_read: s.perRead };
}

/** A pool at rest: nodes registered, nothing pending, held or leased, and no request past the 5 s a change keeps ticks busy. */
async function rest(shards: number) {
  const s = site(shards, "rest");
  await register(s, ids("rest", ALONE));
  await wait(s, REST_AFTER_MS);
  await calibrate(s);
  return measure(s, 1, () => wait(s, REST_WINDOW_MS));
}

// ---------------------------------------------------------------------------------------------------
// A job run to its end (lockstep rounds: every node claims, every lease uploads and commits), then archived

async function runToEnd(
  s: Site,
  nodes: string[],
  output: (lease: Lease) => string,
  token?: (nodeId: string) => string,
) {
  let leases = 0;
  let empty = 0;
  let rejected = 0;
  let late = 0;
  for (;;) {
    const round = await Promise.all(
      nodes.map(async (n) => {
        const answer = await send(s, "POST", "/leases/claim", { node_id: n }, token?.(n));
        if (answer.status === 204) return null;
        if (answer.status !== 200) throw new Error(`claim: ${answer.status} ${answer.text.slice(0, 300)}`);
        return JSON.parse(answer.text) as Lease;
      }),
    );
    const out = round.filter((l): l is Lease => l !== null);
    empty += round.length - out.length;
    leases += out.length;
    if (out.length === 0) return { leases, empty_claims: empty, rejected_commits: rejected, uploads_too_late: late };
    const ends = await Promise.all(out.map((lease) => finish(s, lease, output(lease), token?.(lease.node_id))));
    rejected += ends.filter((e) => e === "rejected").length;
    late += ends.filter((e) => e === "too late").length;
  }
}

async function archive(shards: number) {
  const s = site(shards, "archive", { FLASHML_CLAIM_WAIT_SECONDS: "0" });
  const nodes = ids("arch", ARCHIVE_NODES);
  await register(s, nodes);
  await calibrate(s);
  const before = await snapshot(s);
  await expectStatus(send(s, "POST", "/jobs", trialsJob(ARCHIVE_TASKS, { lease_seconds: 60 })), 201, "submit");
  const run = await runToEnd(s, nodes, (lease) => JSON.stringify({ task: lease.task_id, loss: 0.1 }));
  if (run.rejected_commits + run.uploads_too_late > 0)
    throw new Error(`${s.pool}: a plain job's commit was not accepted`);
  const done = await snapshot(s);
  const end = await archived(s);
  return {
    tasks: ARCHIVE_TASKS,
    ...run,
    storage_bytes_per_task: (done.storageBytes - before.storageBytes) / ARCHIVE_TASKS,
    archive: span(s, ARCHIVE_TASKS, done, end.last, end.reads),
    metrics_read: s.perRead,
  };
}

// ---------------------------------------------------------------------------------------------------
// Workload 3: a job of replicas 3 (quorum 3), run by a fleet not yet trusted alone (tokens: replication needs identities)

async function replicated(shards: number) {
  const nodes = ids("rep", REPLICA_NODES);
  const s = site(shards, "replicated", {
    FLASHML_CLAIM_WAIT_SECONDS: "0",
    FLASHML_NODE_TOKENS: nodes.map((n) => `${n}:${tokenOf(n)}`).join(","),
    FLASHML_OPERATOR_TOKENS: `ops:${OPERATOR_TOKEN}`,
  });
  await register(s, nodes, tokenOf);
  await calibrate(s);
  // What the driver's own empty claims cost (every node's last claim, and those a replica rule answered 204): taken out.
  const emptyClaim = await measure(s, nodes.length, () =>
    Promise.all(
      nodes.map((n) => expectStatus(send(s, "POST", "/leases/claim", { node_id: n }, tokenOf(n)), 204, "empty claim")),
    ),
  );
  const spec = trialsJob(REPLICATED_TASKS, { lease_seconds: 60 });
  const labelled = {
    ...spec,
    metadata: { ...spec.metadata, labels: { [REPLICAS_LABEL]: String(REPLICAS), [QUORUM_LABEL]: String(QUORUM) } },
  };
  let jobId = "";
  const before = await snapshot(s);
  const submit = await measure(s, REPLICATED_TASKS, async () => {
    const text = await expectStatus(send(s, "POST", "/jobs", labelled, OPERATOR_TOKEN), 201, "submit");
    jobId = (JSON.parse(text) as { job_id: string }).job_id;
  });
  // Every replica returns the task's true object: the verdicts agree.
  let ended = { leases: 0, empty_claims: 0, rejected_commits: 0, uploads_too_late: 0 };
  const run = await measure(s, REPLICATED_TASKS, async () => {
    ended = await runToEnd(s, nodes, (lease) => JSON.stringify({ task: lease.task_id, accuracy: 0.5 }), tokenOf);
  });
  const done = await snapshot(s);
  const job = JSON.parse(
    await expectStatus(send(s, "GET", `/jobs/${jobId}`, undefined, OPERATOR_TOKEN), 200, "job"),
  ) as { state: string };
  const startArchive = await snapshot(s);
  const end = await archived(s);
  return {
    tasks: REPLICATED_TASKS,
    nodes: REPLICA_NODES,
    replicas: REPLICAS,
    quorum: QUORUM,
    job_state: job.state,
    ...ended,
    empty_claim: emptyClaim,
    submit,
    run,
    storage_bytes_per_task: (done.storageBytes - before.storageBytes) / REPLICATED_TASKS,
    archive: span(s, REPLICATED_TASKS, startArchive, end.last, end.reads),
    metrics_read: s.perRead,
  };
}

// ---------------------------------------------------------------------------------------------------

it.skipIf(!settings.BENCH_COST)("what the agent's requests cost, per shard count", async () => {
  await Promise.all(
    SHARDS.map(async (shards) => {
      const [busyRun, quietRun, idleRuns, aloneRun, archiveRun, replicatedRun] = await Promise.all([
        busy(shards),
        quiet(shards),
        Promise.all(IDLE_FLEETS(shards).map((agents) => idleFleet(shards, agents))),
        alone(shards),
        archive(shards),
        replicated(shards),
      ]);
      console.log(
        `BENCH ${JSON.stringify({
          shards,
          quick: QUICK,
          r2_exported: busyRun.r2_exported,
          busy: busyRun,
          quiet: quietRun,
          idle: {
            hold_seconds: HOLD_MS / 1000,
            node_heartbeat_seconds: NODE_HEARTBEAT_MS / 1000,
            empty_sleep_seconds: EMPTY_SLEEP_MS / 1000,
            fleets: idleRuns,
          },
          alone: aloneRun,
          archive: archiveRun,
          replicated: replicatedRun,
        })}`,
      );
    }),
  );
});
