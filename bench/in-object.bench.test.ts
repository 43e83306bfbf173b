// In-object benchmark (issue 8, part 1): claim+commit cycles in one pool
// object at several queue depths, timed inside the Durable Object itself,
// without HTTP. The core cycle is what the object does for an agent: a claim
// transaction, the artifact bind of the upload, and the commit transaction,
// each its own transactionSync, calling the functions of src/pool/* as the
// object's methods do. The same cycle is then timed through the object's
// methods and through RPC, for what surrounds the transactions. A second
// scenario (issue 13) times the same cycle with 1,000 active jobs across 100
// tenants, where the scheduling policy has the most turns to keep.
//
// Clock: in workerd (local), Date.now()/performance.now() advance during
// synchronous code but only in 1 ms steps. So cycles are timed in batches
// long enough (tens of ms) for the step to be noise, and per-claim figures
// are batch means. Every result is printed as one `BENCH {json}` line; the
// Node driver (bench/in-object.mjs) collects them. Never run by `npm test`.

import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { it } from "vitest";
import { bind } from "../src/pool/artifacts/artifacts";
import { uploadStarted } from "../src/pool/artifacts/collection";
import { DEFAULT_PLACE } from "../src/pool/jobs/jobs";
import { addTasks } from "../src/pool/jobs/tasks";
import { claim, commit, renew, type TenantWeights, type WireLease } from "../src/pool/leases/leases";
import { heartbeatNode } from "../src/pool/nodes/registry";
import type { PoolObject } from "../src/pool/object";
import { JobSpecSchema } from "../src/protocol/jobs";
import { NodeHeartbeatSchema } from "../src/protocol/nodes";
import type { TaskSpec } from "../src/protocol/tasks";
import { jobSpec } from "../test/fixtures/jobspec";
import { alignToClockStep, kindOf, mixedTask, registration, round, timeBatch } from "./in-workerd";

// Bench-only bindings (bench/vitest.bench.config.ts), not in the generated Env.
const settings = env as unknown as { BENCH_QUICK?: string; BENCH_DEPTHS?: string; BENCH_PROFILE?: string };
/** bench/profile.mjs samples the CPU between these lines: the core cycles only. */
const PROFILING = Boolean(settings.BENCH_PROFILE);
const QUICK = settings.BENCH_QUICK === "1";
const DEPTHS = (settings.BENCH_DEPTHS || (QUICK ? "1000" : "1000,10000,100000")).split(",").map(Number);
/** Cycles per timed batch: long enough that the 1 ms clock step is under ~5%. */
const BATCH = QUICK ? 100 : 250;
/** Timed batches per depth and node kind. */
const BATCHES = QUICK ? 3 : 40;
/** ms per timed batch of idle claims, whose cost depends on the queue's shape. */
const IDLE_BATCH_MS = QUICK ? 20 : 50;
/** The other requests are cheaper (µs each): larger batches. */
const REQUEST_BATCH = QUICK ? 500 : 1000;
/** RPC cycles are ~1 ms each here: fewer, smaller batches (still ≥ 100 ms each). */
const RPC_BATCH = QUICK ? 50 : 100;
const RPC_BATCHES = QUICK ? 2 : 6;
/** Tasks per job, as a 10,000-task submission would make them. */
const JOB_SIZE = 10_000;
const SHA = "0".repeat(64);

// Parsed like a submission, so it carries every default a stored job has.
const SPEC = JobSpecSchema.parse(jobSpec({ type: "hyperparameter_search", parameters: {} }, {}, "bench"));

function report(result: Record<string, unknown>) {
  console.log(`BENCH ${JSON.stringify(result)}`);
}

/** Uploads of every pool in this process: each gets its own object name. */
let uploads = 0;

/** The stored object and key of a lease's output, as an upload leaves them. */
function upload(pool: string, lease: WireLease) {
  const object = `pools/${pool}/objects/${++uploads}`;
  const stored = { object, sha256: SHA, size_bytes: 2, etag: "e" };
  const key = `jobs/${lease.job_id}/${lease.task_id}/metrics.json`;
  return { key, stored };
}

/** Untimed, between batches: replaces the claimed tasks, then lets storage commit. */
type TopUp = (leases: WireLease[]) => Promise<void>;

/**
 * The core cycle: BATCH claims, then their BATCH bind+commit pairs, each its
 * own transactionSync, as the object's methods run them. Batch 0 warms up
 * (JIT, page cache) and is not recorded.
 */
async function coreCycles(
  storage: DurableObjectStorage,
  pool: string,
  nodeId: string,
  topUp: TopUp,
  weights?: TenantWeights,
) {
  const sql = PROFILING ? timedSql(storage.sql) : storage.sql;
  const claimUs: number[] = [];
  const commitUs: number[] = [];
  const cyclesPerS: number[] = [];
  let maxSingleClaimMs = 0;
  if (PROFILING) {
    console.log("PROFILE start");
    await scheduler.wait(1000);
  }
  for (let b = 0; b <= BATCHES; b++) {
    const leases: WireLease[] = [];
    const perClaim = timeBatch(BATCH, () => {
      const c0 = performance.now();
      const result = storage.transactionSync(() => claim(sql, Date.now(), nodeId, null, { weights }));
      const took = performance.now() - c0;
      if (b > 0 && took > maxSingleClaimMs) maxSingleClaimMs = took;
      if (!result.ok) throw new Error(`claim by ${nodeId} in ${pool}: ${result.reason}`);
      leases.push(result.lease);
    });
    const perCommit = timeBatch(BATCH, (i) => {
      const lease = leases[i]!;
      const { key, stored } = upload(pool, lease);
      // The upload is recorded before its bytes stream (beginUpload), then bound.
      const bound = storage.transactionSync(() => {
        uploadStarted(sql, Date.now(), stored.object);
        return bind(sql, Date.now(), key, stored, lease.node_id);
      });
      if (!bound.ok) throw new Error(`bind: ${bound.detail}`);
      const outcome = storage.transactionSync(() =>
        commit(sql, Date.now(), lease.lease_id, SHA, { object: stored.object, metrics: null }, null, lease.node_id),
      );
      if (outcome.status !== "accepted") throw new Error(`commit: ${outcome.status}`);
    });
    if (b > 0) {
      claimUs.push(round(perClaim));
      commitUs.push(round(perCommit));
      cyclesPerS.push(Math.round(1e6 / (perClaim + perCommit)));
    }
    await topUp(leases);
  }
  if (PROFILING) console.log(`PROFILE stop ${JSON.stringify(statementTimes.splice(0))}`);
  return {
    node: nodeId,
    cycles: BATCH * BATCHES,
    claim_us: claimUs,
    commit_us: commitUs,
    cycles_per_s: cyclesPerS,
    max_single_claim_ms: maxSingleClaimMs,
  };
}

/** Per statement, while profiling: its text, how often it ran and the µs its exec call took in all. */
const statementTimes: { query: string; n: number; us: number }[] = [];

/**
 * The statements' own time, for bench/profile.mjs: each exec call timed
 * (one-row statements run whole in it; a cursor read later is not counted).
 */
function timedSql(sql: SqlStorage): SqlStorage {
  const byQuery = new Map<string, { query: string; n: number; us: number }>();
  return {
    exec(query: string, ...bindings: unknown[]) {
      const t0 = performance.now();
      const cursor = sql.exec(query, ...bindings);
      let entry = byQuery.get(query);
      if (!entry) {
        entry = { query: query.replace(/\s+/g, " "), n: 0, us: 0 };
        byQuery.set(query, entry);
        statementTimes.push(entry);
      }
      entry.n++;
      entry.us += (performance.now() - t0) * 1000;
      return cursor;
    },
  } as SqlStorage;
}

/** Adds `tasks` in one transaction, as a top-up does, then lets storage commit. */
async function addUntimed(storage: DurableObjectStorage, tasks: TaskSpec[]) {
  const added = storage.transactionSync(() => addTasks(storage.sql, Date.now(), tasks, { outputJson: false }));
  if (!added.ok) throw new Error("top-up refused");
  await scheduler.wait(1);
}

/**
 * Mean µs per call of `op`, calling it until at least `ms` have passed: for
 * a cost that may be µs or ms, so no batch size fits both.
 */
function timeFor(ms: number, op: () => void): number {
  const t0 = alignToClockStep();
  let n = 0;
  let t = t0;
  while (t - t0 < ms) {
    op();
    n++;
    t = performance.now();
  }
  return ((t - t0) * 1000) / n;
}

/** µs per claim of a node that can take nothing pending (204), batch means. */
async function idleClaims(storage: DurableObjectStorage, weights?: TenantWeights) {
  const us: number[] = [];
  for (let b = 0; b <= BATCHES; b++) {
    const perClaim = timeFor(IDLE_BATCH_MS, () => {
      const r = storage.transactionSync(() => claim(storage.sql, Date.now(), "idle-node", null, { weights }));
      if (r.ok) throw new Error("the idle node got work");
    });
    if (b > 0) us.push(round(perClaim));
    await scheduler.wait(1);
  }
  return us;
}

/** The nodes every scenario has: a CPU node, a one-GPU node, and one that can take nothing in the mix. */
async function registerNodes(stub: DurableObjectStub<PoolObject>) {
  await stub.register(registration("cpu-node", 0));
  await stub.register(registration("gpu-node", 1));
  // Module tasks only, module_capable false: the cost of an idle poll that answers 204.
  await stub.register({ ...registration("idle-node", 0), module_capable: false });
}

it("claim+commit cycles inside one pool object, by queue depth", async () => {
  for (const depth of DEPTHS) {
    const pool = `bench-${depth}-${crypto.randomUUID().slice(0, 8)}`;
    const stub = env.POOL.get(env.POOL.idFromName(pool));
    await registerNodes(stub);

    // Seed through the object's own submission path (job record and tasks,
    // one transaction per 10,000-task job), as POST /jobs does.
    const seedStart = Date.now();
    let next = 0;
    const jobs: string[] = [];
    while (next < depth) {
      const jobId = `job${String(jobs.length).padStart(9, "0")}`;
      jobs.push(jobId);
      const n = Math.min(JOB_SIZE, depth - next);
      await stub.submitJob(
        jobId,
        SPEC,
        Array.from({ length: n }, (_, k) => mixedTask(jobId, next + k)),
        pool,
        DEFAULT_PLACE,
      );
      next += n;
    }
    const seedMs = Date.now() - seedStart;

    const measured = await runInDurableObject(stub, async (instance, state) => {
      const sql = state.storage.sql;
      const topUpJob = jobs[jobs.length - 1]!;
      const pending = () => sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM tasks WHERE state = 'PENDING'").one().n;
      // Each claimed task is replaced by a new task of its class at the
      // back, so the depth and every class's count stay where they were.
      const topUp: TopUp = (leases) =>
        addUntimed(
          state.storage,
          leases.map((l) => mixedTask(topUpJob, next++, kindOf(l.payload))),
        );
      const cycles = (nodeId: string) => coreCycles(state.storage, pool, nodeId, topUp);

      /**
       * The same cycle through the object's own methods (claim, bindArtifact,
       * completeLease), awaited one by one as separate requests would be: adds
       * the alarm upkeep after each claim and commit and a storage commit per
       * call. Timed in batches across the awaits.
       */
      const methodCycles = async (nodeId: string) => {
        const cyclesPerS: number[] = [];
        for (let b = 0; b <= BATCHES; b++) {
          const leases: WireLease[] = [];
          const t0 = alignToClockStep();
          for (let i = 0; i < BATCH; i++) {
            const result = await instance.claim(nodeId, null);
            if (!result.ok) throw new Error(`claim: ${result.reason}`);
            const { key, stored } = upload(pool, result.lease);
            await instance.beginUpload(key, stored.object, nodeId);
            const bound = await instance.bindArtifact(key, stored, nodeId);
            if (!bound.ok) throw new Error(`bind: ${bound.detail}`);
            const outcome = await instance.completeLease(result.lease.lease_id, SHA, null, nodeId);
            if (outcome.status !== "accepted") throw new Error(`commit: ${outcome.status}`);
            leases.push(result.lease);
          }
          const elapsed = performance.now() - t0;
          if (b > 0) cyclesPerS.push(Math.round((BATCH * 1000) / elapsed));
          await topUp(leases);
        }
        return { node: nodeId, cycles: BATCH * BATCHES, cycles_per_s: cyclesPerS };
      };

      /** Per-call µs of the other requests an agent sends, in batches. */
      const requests = async () => {
        const held = state.storage.transactionSync(() => claim(sql, Date.now(), "cpu-node", null));
        if (!held.ok) throw new Error("no lease to renew");
        const leaseId = held.lease.lease_id;
        const heartbeat = NodeHeartbeatSchema.parse({ node_id: "cpu-node" });
        const samples: Record<string, number[]> = { renew: [], node_heartbeat: [], idle_claim: [] };
        for (let b = 0; b <= BATCHES; b++) {
          const renewUs = timeBatch(REQUEST_BATCH, () => {
            const r = state.storage.transactionSync(() => renew(sql, Date.now(), leaseId, "cpu-node"));
            if (!r.ok) throw new Error("renew refused");
          });
          const nodeUs = timeBatch(REQUEST_BATCH, () => {
            if (!state.storage.transactionSync(() => heartbeatNode(sql, Date.now(), "cpu-node", heartbeat)).ok)
              throw new Error("heartbeat refused");
          });
          const idleUs = timeBatch(REQUEST_BATCH, () => {
            const r = state.storage.transactionSync(() => claim(sql, Date.now(), "idle-node", null));
            if (r.ok) throw new Error("the idle node got work");
          });
          if (b > 0) {
            samples.renew!.push(round(renewUs));
            samples.node_heartbeat!.push(round(nodeUs));
            samples.idle_claim!.push(round(idleUs));
          }
          await scheduler.wait(1);
        }
        return samples;
      };

      const before = pending();
      const cpu = await cycles("cpu-node");
      const gpu = await cycles("gpu-node");
      const methods = await methodCycles("cpu-node");
      const other = await requests();
      const classes = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM classes").one().n;
      return { pending_before: before, pending_after: pending(), classes, cpu, gpu, methods, requests: other };
    });
    const rpc = await rpcCycles(stub, pool, jobs[jobs.length - 1]!, () => next++);
    report({
      bench: "in-object",
      depth,
      seed_ms: seedMs,
      batch: BATCH,
      batches: BATCHES,
      quick: QUICK,
      ...measured,
      rpc,
    });
  }
});

/**
 * The cycle as the Worker drives it: four RPCs (claim, beginUpload,
 * bindArtifact, completeLease) from outside the object, with 1 and with 8 callers at once,
 * R2 and HTTP left out. The object serializes them, so the rate here is the
 * object's own ceiling per request in this runtime, RPC dispatch included.
 */
async function rpcCycles(stub: DurableObjectStub<PoolObject>, pool: string, topUpJob: string, nextIndex: () => number) {
  const out: Record<string, number[]> = {};
  let uploads = 0;
  for (const callers of [1, 8]) {
    const rates: number[] = [];
    for (let b = 0; b <= RPC_BATCHES; b++) {
      const claimed: WireLease[] = [];
      let budget = RPC_BATCH;
      const loop = async (nodeId: string) => {
        while (budget-- > 0) {
          const result = await stub.claim(nodeId, null);
          if (!result.ok) throw new Error(`rpc claim: ${result.reason}`);
          const object = `pools/${pool}/objects/rpc-${++uploads}`;
          const stored = { object, sha256: SHA, size_bytes: 2, etag: "e" };
          const key = `jobs/${result.lease.job_id}/${result.lease.task_id}/metrics.json`;
          await stub.beginUpload(key, object, nodeId);
          const bound = await stub.bindArtifact(key, stored, nodeId);
          if (!bound.ok) throw new Error("rpc bind refused");
          const outcome = await stub.completeLease(result.lease.lease_id, SHA, null, nodeId);
          if (outcome.status !== "accepted") throw new Error(`rpc commit: ${outcome.status}`);
          claimed.push(result.lease as WireLease);
        }
      };
      const t0 = alignToClockStep();
      await Promise.all(Array.from({ length: callers }, () => loop("cpu-node")));
      const elapsed = performance.now() - t0;
      if (b > 0) rates.push(Math.round((RPC_BATCH * 1000) / elapsed));
      // Topped up inside the object, outside the timed window: the object has no task-insert RPC.
      const tasks = claimed.map((l) => mixedTask(topUpJob, nextIndex(), kindOf(l.payload)));
      const added = await runInDurableObject(stub, (_o, state) =>
        state.storage.transactionSync(() => addTasks(state.storage.sql, Date.now(), tasks, { outputJson: false })),
      );
      if (!added.ok) throw new Error("rpc top-up refused");
    }
    out[`callers_${callers}`] = rates;
  }
  return out;
}

/**
 * What a claim does grow with: the number of requirement classes. 10,000
 * plain tasks, plus N classes (one task each, team pools the claiming node is
 * not in) that are either all queued ahead of the plain tasks — the worst
 * case: the gate must refuse each before the answer — or have nothing
 * pending any more (history: costs one index seek each, no gate).
 */
it.skipIf(QUICK)("claim cost by number of requirement classes", async () => {
  for (const extra of [0, 100, 1000]) {
    for (const pendingAhead of extra === 0 ? [true] : [true, false]) {
      const stub = env.POOL.get(
        env.POOL.idFromName(`classes-${extra}-${pendingAhead}-${crypto.randomUUID().slice(0, 8)}`),
      );
      await stub.register(registration("cpu-node", 0));
      const samples = await runInDurableObject(stub, async (_instance, state) => {
        const sql = state.storage.sql;
        const confined = Array.from({ length: extra }, (_, i) => {
          const t = mixedTask("confined", i, "plain");
          return { ...t, payload: { ...t.payload, pool: `team-${i}` } };
        });
        state.storage.transactionSync(() => {
          addTasks(sql, Date.now(), confined, { outputJson: false });
          if (!pendingAhead) sql.exec("UPDATE tasks SET state = 'CANCELLED' WHERE job_id = 'confined'");
          addTasks(
            sql,
            Date.now(),
            Array.from({ length: 10_000 }, (_, i) => mixedTask("plain", i, "plain")),
            { outputJson: false },
          );
        });
        await scheduler.wait(1);
        const us: number[] = [];
        for (let b = 0; b <= 8; b++) {
          const perClaim = timeBatch(100, () => {
            const r = state.storage.transactionSync(() => claim(sql, Date.now(), "cpu-node", null));
            if (!r.ok) throw new Error("claim found nothing");
          });
          if (b > 0) us.push(round(perClaim));
          await scheduler.wait(1);
        }
        return us;
      });
      report({ bench: "classes", classes: extra + 1, pending_ahead: pendingAhead, claim_us: samples });
    }
  }
});

/** Issue 13's scenario: 100 tenants with 10 jobs each, every job with pending tasks. */
const TENANTS = 100;
const JOBS_PER_TENANT = 10;
/** Pending tasks per job (the mix, 7 plain / 2 GPU / 1 local): 10,000 in all. */
const TASKS_PER_JOB = 10;
/** A tenth of the tenants weigh 2, the rest 1: the weights take part in every claim's turns. */
const WEIGHTS: TenantWeights = new Map(Array.from({ length: 10 }, (_, t) => [tenantName(t), 2]));

function tenantName(t: number): string {
  return `tenant-${String(t).padStart(2, "0")}`;
}

/**
 * Queues of the scenario. Three priorities: job k of each tenant at level
 * k mod 3 (100, 0, -100), so every tenant has jobs at each. With the top
 * one GPU-only, those jobs hold only `gpus: 1` tasks, which the CPU node
 * cannot take: its claims pass over every job at the top priority.
 */
const QUEUES = [
  { queue: "one priority", levels: [0], gpuOnTop: false },
  { queue: "three priorities", levels: [100, 0, -100], gpuOnTop: false },
  { queue: "three priorities, the top one GPU-only", levels: [100, 0, -100], gpuOnTop: true },
];

/**
 * The claim where the policy has the most turns to keep: 1,000 active jobs
 * across 100 tenants. Each claimed task is replaced by one of its class in
 * the job it came from, so every job stays active and the queue keeps its
 * shape. Runs unchanged on a checkout from before the policy
 * (bench/in-object.mjs --base): the place and the weights are then ignored
 * and the claim is the FIFO one.
 */
it("claim+commit cycles with 1,000 active jobs across 100 tenants", async () => {
  for (const { queue, levels, gpuOnTop } of QUICK ? QUEUES.slice(0, 1) : QUEUES) {
    const pool = `tenants-${crypto.randomUUID().slice(0, 8)}`;
    const stub = env.POOL.get(env.POOL.idFromName(pool));
    await registerNodes(stub);

    // Job by job through the object's submission path, each tenant's jobs
    // interleaved with the others' as independent submitters would send them.
    const seedStart = Date.now();
    const tenantOf = new Map<string, string>();
    let next = 0;
    for (let k = 0; k < JOBS_PER_TENANT; k++) {
      const priority = levels[k % levels.length]!;
      const kind = gpuOnTop && priority === levels[0] ? "gpu" : undefined;
      for (let t = 0; t < TENANTS; t++) {
        const tenant = tenantName(t);
        const jobId = `${tenant}-job-${k}`;
        tenantOf.set(jobId, tenant);
        const tasks = Array.from({ length: TASKS_PER_JOB }, (_, i) => mixedTask(jobId, next + i, kind));
        next += TASKS_PER_JOB;
        const submitted = await stub.submitJob(jobId, SPEC, tasks, pool, { ...DEFAULT_PLACE, priority, tenant });
        if (!submitted.ok) throw new Error(`submit ${jobId}: ${submitted.reason}`);
      }
    }
    const seedMs = Date.now() - seedStart;

    const measured = await runInDurableObject(stub, async (_instance, state) => {
      const sql = state.storage.sql;
      // Plain SQL over tasks, so the same figures come from a checkout without job_queues.
      const queue = () =>
        sql
          .exec<{ pending: number; jobs: number }>(
            "SELECT COUNT(*) AS pending, COUNT(DISTINCT job_id) AS jobs FROM tasks WHERE state = 'PENDING'",
          )
          .one();
      const tenantsPerBatch: number[] = [];
      const topUp: TopUp = (leases) => {
        tenantsPerBatch.push(new Set(leases.map((l) => tenantOf.get(l.job_id))).size);
        return addUntimed(
          state.storage,
          leases.map((l) => mixedTask(l.job_id, next++, kindOf(l.payload))),
        );
      };
      const before = queue();
      const cpu = await coreCycles(state.storage, pool, "cpu-node", topUp, WEIGHTS);
      const gpu = await coreCycles(state.storage, pool, "gpu-node", topUp, WEIGHTS);
      const idle = await idleClaims(state.storage, WEIGHTS);
      const after = queue();
      return {
        pending_before: before.pending,
        active_jobs_before: before.jobs,
        pending_after: after.pending,
        active_jobs_after: after.jobs,
        tenants_per_batch: tenantsPerBatch,
        cpu,
        gpu,
        idle_claim_us: idle,
      };
    });
    report({
      bench: "tenants",
      queue,
      levels: levels.length,
      tenants: TENANTS,
      jobs: TENANTS * JOBS_PER_TENANT,
      tasks_per_job: TASKS_PER_JOB,
      seed_ms: seedMs,
      batch: BATCH,
      batches: BATCHES,
      idle_batch_ms: IDLE_BATCH_MS,
      quick: QUICK,
      ...measured,
    });
  }
});
