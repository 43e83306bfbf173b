// In-object benchmark (issue 8, part 1): claim+commit cycles in one pool
// object at several queue depths, timed inside the Durable Object itself,
// without HTTP. The core cycle is what the object does for an agent: a claim
// transaction, the artifact bind of the upload, and the commit transaction,
// each its own transactionSync, calling the functions of src/pool/* as the
// object's methods do. The same cycle is then timed through the object's
// methods and through RPC, for what surrounds the transactions.
//
// Clock: in workerd (local), Date.now()/performance.now() advance during
// synchronous code but only in 1 ms steps. So cycles are timed in batches
// long enough (tens of ms) for the step to be noise, and per-claim figures
// are batch means. Every result is printed as one `BENCH {json}` line; the
// Node driver (bench/in-object.mjs) collects them. Never run by `npm test`.

import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { it } from "vitest";
import { bind } from "../src/pool/artifacts";
import { uploadStarted } from "../src/pool/collection";
import { DEFAULT_PLACE } from "../src/pool/jobs";
import { claim, commit, renew, type WireLease } from "../src/pool/leases";
import { heartbeatNode } from "../src/pool/nodes";
import type { PoolObject } from "../src/pool/object";
import { addTasks } from "../src/pool/tasks";
import { JobSpecSchema } from "../src/protocol/jobs";
import { NodeHeartbeatSchema } from "../src/protocol/nodes";
import type { TaskSpec } from "../src/protocol/tasks";
import { jobSpec } from "../test/fixtures/jobspec";
import { alignToClockStep, registration, round } from "./in-workerd";

// Bench-only bindings (bench/vitest.bench.config.ts), not in the generated Env.
const settings = env as unknown as { BENCH_QUICK?: string; BENCH_DEPTHS?: string };
const QUICK = settings.BENCH_QUICK === "1";
const DEPTHS = (settings.BENCH_DEPTHS || (QUICK ? "1000" : "1000,10000,100000")).split(",").map(Number);
/** Cycles per timed batch: long enough that the 1 ms clock step is under ~5%. */
const BATCH = QUICK ? 100 : 250;
/** Timed batches per depth and node kind. */
const BATCHES = QUICK ? 3 : 40;
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

type Kind = "plain" | "gpu" | "local";
const KIND_OF_SLOT: readonly Kind[] = [
  "plain",
  "plain",
  "plain",
  "plain",
  "plain",
  "plain",
  "plain",
  "gpu",
  "gpu",
  "local",
];

function kindOf(payload: Record<string, unknown>): Kind {
  return payload.gpus === 1 ? "gpu" : payload.local_inputs ? "local" : "plain";
}

/** The mix: 70% plain, 20% `gpus: 1`, 10% `local_inputs: ["ds-a"]`, interleaved. */
function mixedTask(jobId: string, i: number, kind: Kind = KIND_OF_SLOT[i % 10]!): TaskSpec {
  const taskId = `trial-${String(i).padStart(6, "0")}`;
  const payload: Record<string, unknown> = {
    module: "flashml_workloads.sklearn_trial",
    params: { C: (i % 97) / 10, kernel: "rbf", seed: i },
    inputs: {},
    output_prefix: `jobs/${jobId}/${taskId}/`,
    task_id: taskId,
    image: "r:1",
    isolation: { tier: "standard", allowFallback: false },
  };
  if (kind === "gpu") payload.gpus = 1;
  if (kind === "local") payload.local_inputs = ["ds-a"];
  return {
    schema_version: "v1alpha1",
    task_id: taskId,
    job_id: jobId,
    payload: payload as TaskSpec["payload"],
    commit_key: `jobs/${jobId}/${taskId}/metrics.json`,
    max_attempts: 3,
    lease_seconds: 60,
    max_worker_losses: 0,
  };
}

function report(result: Record<string, unknown>) {
  console.log(`BENCH ${JSON.stringify(result)}`);
}

/** Mean µs per call of `op` over `n` calls, timed as one batch. */
function timeBatch(n: number, op: (i: number) => void): number {
  const t0 = alignToClockStep();
  for (let i = 0; i < n; i++) op(i);
  return ((performance.now() - t0) * 1000) / n;
}

it("claim+commit cycles inside one pool object, by queue depth", async () => {
  for (const depth of DEPTHS) {
    const pool = `bench-${depth}-${crypto.randomUUID().slice(0, 8)}`;
    const stub = env.POOL.get(env.POOL.idFromName(pool));
    await stub.register(registration("cpu-node", 0));
    await stub.register(registration("gpu-node", 1));
    // Can take nothing in the mix (module tasks, module_capable false): the
    // cost of an idle poll that answers 204.
    await stub.register({ ...registration("idle-node", 0), module_capable: false });

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
      let uploads = 0;
      const pending = () => sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM tasks WHERE state = 'PENDING'").one().n;
      const upload = (lease: WireLease) => {
        const object = `pools/${pool}/objects/${++uploads}`;
        const stored = { object, sha256: SHA, size_bytes: 2, etag: "e" };
        const key = `jobs/${lease.job_id}/${lease.task_id}/metrics.json`;
        return { key, stored };
      };
      // Untimed: each claimed task is replaced by a new task of its class at
      // the back, so the depth and every class's count stay where they were;
      // then storage commits before the next batch.
      const topUp = async (leases: WireLease[]) => {
        const tasks = leases.map((l) => mixedTask(topUpJob, next++, kindOf(l.payload)));
        const added = state.storage.transactionSync(() => addTasks(sql, Date.now(), tasks, { outputJson: false }));
        if (!added.ok) throw new Error("top-up refused");
        await scheduler.wait(1);
      };

      /**
       * The core cycle: BATCH claims, then their BATCH bind+commit pairs, each
       * its own transactionSync, as the object's methods run them. Batch 0
       * warms up (JIT, page cache) and is not recorded.
       */
      const cycles = async (nodeId: string) => {
        const claimUs: number[] = [];
        const commitUs: number[] = [];
        const cyclesPerS: number[] = [];
        let maxSingleClaimMs = 0;
        for (let b = 0; b <= BATCHES; b++) {
          const leases: WireLease[] = [];
          const perClaim = timeBatch(BATCH, () => {
            const c0 = performance.now();
            const result = state.storage.transactionSync(() => claim(sql, Date.now(), nodeId, null));
            const took = performance.now() - c0;
            if (b > 0 && took > maxSingleClaimMs) maxSingleClaimMs = took;
            if (!result.ok) throw new Error(`claim by ${nodeId} at depth ${depth}: ${result.reason}`);
            leases.push(result.lease);
          });
          const perCommit = timeBatch(BATCH, (i) => {
            const lease = leases[i]!;
            const { key, stored } = upload(lease);
            // The upload is recorded before its bytes stream (beginUpload), then bound.
            const bound = state.storage.transactionSync(() => {
              uploadStarted(sql, Date.now(), stored.object);
              return bind(sql, Date.now(), key, stored, lease.node_id);
            });
            if (!bound.ok) throw new Error(`bind: ${bound.detail}`);
            const outcome = state.storage.transactionSync(() =>
              commit(sql, Date.now(), lease.lease_id, SHA, stored.object, null, lease.node_id),
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
        return {
          node: nodeId,
          cycles: BATCH * BATCHES,
          claim_us: claimUs,
          commit_us: commitUs,
          cycles_per_s: cyclesPerS,
          max_single_claim_ms: maxSingleClaimMs,
        };
      };

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
            const { key, stored } = upload(result.lease);
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
