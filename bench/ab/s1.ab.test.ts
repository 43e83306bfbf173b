// Issue 27's S = 1 bar, measured where machine noise cancels: today's claim
// and bind+commit against an earlier commit's (the one before sharding), both
// in this one workerd process, each on its own pool object seeded alike, timed
// batch by batch in alternation (bench/ab/worker.ts, bench/vitest.ab.config.ts).
// Run apart, the two sides' figures moved by more than the 5% bar between
// processes (BENCHMARKS.md section 13); here a round times one batch of each
// side within a second, so load that changes from round to round falls on
// both. The cycle is the in-object bench's (bench/in-object.bench.test.ts):
// BATCH claims, then their BATCH bind+commit pairs, each its own
// transactionSync, calling the functions the object's methods call. Prints
// one `BENCH {json}` line; bench/shards-s1.mjs collects it.

import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import * as baseArtifacts from "flashedge-base/pool/artifacts";
import * as baseCollection from "flashedge-base/pool/collection";
import * as baseLeases from "flashedge-base/pool/leases";
import * as baseTasks from "flashedge-base/pool/tasks";
import { it } from "vitest";
import * as nowArtifacts from "../../src/pool/artifacts/artifacts";
import * as nowCollection from "../../src/pool/artifacts/collection";
import { DEFAULT_PLACE } from "../../src/pool/jobs/jobs";
import * as nowTasks from "../../src/pool/jobs/tasks";
import * as nowLeases from "../../src/pool/leases/leases";
import type { PoolObject } from "../../src/pool/object";
import { JobSpecSchema } from "../../src/protocol/jobs";
import { jobSpec } from "../../test/fixtures/jobspec";
import { kindOf, mixedTask, registration, round, timeBatch } from "../in-workerd";

const settings = env as unknown as { BENCH_DEPTHS?: string; BENCH_ROUNDS?: string; BASE_POOL: typeof env.POOL };
const DEPTH = Number(settings.BENCH_DEPTHS || "10000");
const ROUNDS = Number(settings.BENCH_ROUNDS || "40");
/** Cycles per timed batch: at ~150 µs a claim, the clock's 1 ms step is 0.7% of a batch (at 250 it was 2.5%, a ratio's whole resolution). */
const BATCH = 1000;
const JOB_SIZE = 10_000;
const SHA = "0".repeat(64);
const SPEC = JobSpecSchema.parse(jobSpec({ type: "hyperparameter_search", parameters: {} }, {}, "bench"));

/** What one side's cycle calls: its commit's own functions. */
type Code = {
  claim: typeof nowLeases.claim;
  commit: typeof nowLeases.commit;
  bind: typeof nowArtifacts.bind;
  uploadStarted: typeof nowCollection.uploadStarted;
  addTasks: typeof nowTasks.addTasks;
};
const NOW: Code = { ...nowLeases, ...nowArtifacts, ...nowCollection, ...nowTasks };
const BASE: Code = { ...baseLeases, ...baseArtifacts, ...baseCollection, ...baseTasks };

type Side = { name: "now" | "base"; code: Code; stub: DurableObjectStub<PoolObject>; pool: string; next: number };

let uploads = 0;

/** A pool object of `ns` with the bench's nodes and DEPTH mixed tasks, seeded through its own submission path. */
async function seeded(name: Side["name"], code: Code, ns: typeof env.POOL): Promise<Side> {
  const pool = `ab-${name}-${crypto.randomUUID().slice(0, 8)}`;
  const stub = ns.get(ns.idFromName(pool));
  await stub.register(registration("cpu-node", 0));
  await stub.register(registration("gpu-node", 1));
  let next = 0;
  for (let j = 0; next < DEPTH; j++) {
    const jobId = `job${String(j).padStart(9, "0")}`;
    const n = Math.min(JOB_SIZE, DEPTH - next);
    const tasks = Array.from({ length: n }, (_, k) => mixedTask(jobId, next + k));
    await stub.submitJob(jobId, SPEC, tasks, pool, DEFAULT_PLACE);
    next += n;
  }
  return { name, code, stub, pool, next };
}

/** One batch of `nodeId`'s cycle on `side`: µs per claim and per bind+commit; the claimed tasks are replaced. */
function batch(side: Side, nodeId: string) {
  return runInDurableObject(side.stub, async (_o, state) => {
    const { sql } = state.storage;
    const { claim, commit, bind, uploadStarted, addTasks } = side.code;
    const leases: nowLeases.WireLease[] = [];
    const claimUs = timeBatch(BATCH, () => {
      const result = state.storage.transactionSync(() => claim(sql, Date.now(), nodeId, null));
      if (!result.ok) throw new Error(`claim by ${nodeId} in ${side.pool}: ${result.reason}`);
      leases.push(result.lease);
    });
    const commitUs = timeBatch(BATCH, (i) => {
      const lease = leases[i]!;
      const stored = { object: `pools/${side.pool}/objects/${++uploads}`, sha256: SHA, size_bytes: 2, etag: "e" };
      const key = `jobs/${lease.job_id}/${lease.task_id}/metrics.json`;
      const bound = state.storage.transactionSync(() => {
        uploadStarted(sql, Date.now(), stored.object);
        return bind(sql, Date.now(), key, stored, lease.node_id);
      });
      if (!bound.ok) throw new Error(`bind: ${bound.detail}`);
      const outcome = state.storage.transactionSync(() =>
        commit(sql, Date.now(), lease.lease_id, SHA, { object: stored.object, metrics: null }, null, lease.node_id),
      );
      if (outcome.status !== "accepted") throw new Error(`commit: ${outcome.status}`);
    });
    // Untimed: each claimed task is replaced at the back by one of its class, so the depth stays DEPTH.
    const topUp = leases.map((l) => mixedTask(l.job_id, side.next++, kindOf(l.payload)));
    const added = state.storage.transactionSync(() => addTasks(sql, Date.now(), topUp, { outputJson: false }));
    if (!added.ok) throw new Error("top-up refused");
    await scheduler.wait(1);
    return { claimUs, commitUs };
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

it("today's claim and bind+commit against the base's, interleaved in one process", async () => {
  const sides = [await seeded("now", NOW, env.POOL), await seeded("base", BASE, settings.BASE_POOL)] as const;
  // A warm-up round of each (JIT, page cache), not recorded.
  for (const side of sides) for (const node of ["cpu-node", "gpu-node"]) await batch(side, node);
  const rounds: Array<Record<"now" | "base", { cpu_claim_us: number; gpu_claim_us: number; commit_us: number }>> = [];
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? [sides[1], sides[0]] : [sides[0], sides[1]];
    const round_: Partial<(typeof rounds)[number]> = {};
    for (const side of order) {
      const cpu = await batch(side, "cpu-node");
      const gpu = await batch(side, "gpu-node");
      round_[side.name] = {
        cpu_claim_us: round(cpu.claimUs),
        gpu_claim_us: round(gpu.claimUs),
        commit_us: round((cpu.commitUs + gpu.commitUs) / 2),
      };
    }
    rounds.push(round_ as (typeof rounds)[number]);
  }
  const ratio = (k: "cpu_claim_us" | "gpu_claim_us" | "commit_us") =>
    Math.round(median(rounds.map((x) => x.now[k] / x.base[k])) * 1000) / 1000;
  /** The ratio of the two sides' totals over every round: the clock steps average out. */
  const totals = (k: "cpu_claim_us" | "gpu_claim_us" | "commit_us") => {
    const sum = (side: "now" | "base") => rounds.reduce((n, x) => n + x[side][k], 0);
    return Math.round((sum("now") / sum("base")) * 1000) / 1000;
  };
  const of = (side: "now" | "base", k: "cpu_claim_us" | "gpu_claim_us" | "commit_us") =>
    round(median(rounds.map((x) => x[side][k])));
  const keys = ["cpu_claim_us", "gpu_claim_us", "commit_us"] as const;
  const result = {
    bench: "s1-ab",
    depth: DEPTH,
    batch: BATCH,
    rounds: ROUNDS,
    median: {
      now: Object.fromEntries(keys.map((k) => [k, of("now", k)])),
      base: Object.fromEntries(keys.map((k) => [k, of("base", k)])),
    },
    // Which code each side ran, by the schema its own migrations left: the base's has fewer steps.
    schema_version: Object.fromEntries(
      await Promise.all(
        sides.map(async (side) => [
          side.name,
          await runInDurableObject(
            side.stub,
            (_o, state) =>
              state.storage.sql.exec<{ version: number }>("SELECT version FROM schema_version").one().version,
          ),
        ]),
      ),
    ),
    ratio: { cpu_claim: ratio("cpu_claim_us"), gpu_claim: ratio("gpu_claim_us"), commit: ratio("commit_us") },
    ratio_of_totals: {
      cpu_claim: totals("cpu_claim_us"),
      gpu_claim: totals("gpu_claim_us"),
      commit: totals("commit_us"),
    },
    per_round: rounds,
  };
  console.log(`BENCH ${JSON.stringify(result)}`);
});
