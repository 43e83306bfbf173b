// In-object benchmark of docs/protocol.md §14 "Cost" (issue 24): a claim costs the same
// whatever the number of pending tasks the claiming node already ran a
// replica of. Two pools, the same plain job to claim from: in one the node
// ran no replica of anything; in the other it ran replica 1 of 4,000 tasks
// of a replicated job that still want their second replica, and that job,
// at a higher priority, comes first on every claim. Each claim is its own
// transactionSync calling `claim` of src/pool/leases/leases.ts, timed in batches as
// in bench/in-object.bench.test.ts. Runs unchanged on a checkout from before
// the owner counts (the figures then show the walk). Printed as `BENCH {json}` lines; never run by `npm test`.

import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { it } from "vitest";
import { addTasks } from "../src/pool/jobs/tasks";
import { claim } from "../src/pool/leases/leases";
import { alignToClockStep, registration, round, trialTask } from "./in-workerd";

const settings = env as unknown as { BENCH_QUICK?: string };
const QUICK = settings.BENCH_QUICK === "1";
/** Pending tasks the node ran a replica of, as docs/protocol.md §14's bar names them. */
const RAN = 4000;
const BATCH = 100;
const BATCHES = QUICK ? 5 : 20;
/** Plain tasks: enough for two rounds of timed claims. */
const PLAIN = 2 * BATCH * (BATCHES + 1) + 100;

type Pool = DurableObjectStub;

/** A pool with a CPU node, a plain job to claim from, and `replicated` tasks of a job with that many replicas. */
async function pool(name: string, replicated: number, replicas: number) {
  const stub = env.POOL.get(env.POOL.idFromName(`${name}-${crypto.randomUUID().slice(0, 8)}`));
  for (const node of ["cpu-node", "other-node"]) await stub.register(registration(node, 0));
  await runInDurableObject(stub, (_o, state) => {
    const sql = state.storage.sql;
    state.storage.transactionSync(() => {
      if (replicated > 0) {
        // Above the plain job's priority: every claim looks at it first (docs/protocol.md §13).
        sql.exec("INSERT INTO job_queues (job_id, priority) VALUES ('replicated', 1)");
        // Leases long enough to outlast the seeding, which on a checkout without the counts is quadratic.
        const tasks = Array.from({ length: replicated }, (_, i) => ({
          ...trialTask("replicated", i),
          lease_seconds: 3600,
        }));
        addTasks(sql, Date.now(), tasks, {
          outputJson: true,
          replication: { replicas, quorum: 2, tolerance: 0, toleranceAbs: 0 },
        });
      }
      addTasks(
        sql,
        Date.now(),
        Array.from({ length: PLAIN }, (_, i) => trialTask("plain", i)),
        { outputJson: false },
      );
    });
  });
  return stub;
}

/** `nodeId` claims replicas of the replicated job's first `n` tasks (untimed), restricted to that job. */
async function takeReplicas(stub: Pool, nodeId: string, n: number) {
  await runInDurableObject(stub, async (_o, state) => {
    for (let i = 0; i < n; i++) {
      const r = state.storage.transactionSync(() => claim(state.storage.sql, Date.now(), nodeId, "replicated"));
      if (!r.ok) throw new Error(`${nodeId} found no replica to take: ${r.reason}`);
      if (i % 500 === 499) await scheduler.wait(1);
    }
  });
}

/** µs per claim by the CPU node, batch means; batch 0 warms up. Every claim must lease a plain task. */
async function timedClaims(stub: Pool) {
  return runInDurableObject(stub, async (_o, state) => {
    const us: number[] = [];
    for (let b = 0; b <= BATCHES; b++) {
      const t0 = alignToClockStep();
      for (let i = 0; i < BATCH; i++) {
        const r = state.storage.transactionSync(() => claim(state.storage.sql, Date.now(), "cpu-node", null));
        if (!r.ok || r.lease.job_id !== "plain") throw new Error(`claim: ${r.ok ? r.lease.job_id : r.reason}`);
      }
      if (b > 0) us.push(round(((performance.now() - t0) * 1000) / BATCH));
      await scheduler.wait(1);
    }
    return us;
  });
}

it("a claim with 4,000 pending tasks the node ran a replica of, and with none", async () => {
  const none = await pool("ran-none", 0, 2);
  const ran = await pool("ran-4000", RAN, 2);
  const seedStart = Date.now();
  await takeReplicas(ran, "cpu-node", RAN);
  const seedMs = Date.now() - seedStart;
  // Alternating, so load that changes during the run weighs on both.
  const samples: { none: number[]; ran: number[] } = { none: [], ran: [] };
  for (let round = 0; round < 2; round++) {
    samples.none.push(...(await timedClaims(none)));
    samples.ran.push(...(await timedClaims(ran)));
  }
  const pendingRan = await runInDurableObject(
    ran,
    (_o, state) =>
      state.storage.sql
        .exec<{ n: number }>(
          `SELECT COUNT(*) AS n FROM tasks t WHERE t.state = 'PENDING' AND t.job_id = 'replicated'
             AND EXISTS (SELECT 1 FROM leases l WHERE l.task_seq = t.seq AND l.node_id = 'cpu-node' AND l.replica > 0)`,
        )
        .one().n,
  );

  console.log(
    `BENCH ${JSON.stringify({
      bench: "replicas",
      ran: RAN,
      pending_ran: pendingRan,
      seed_ms: seedMs,
      batch: BATCH,
      batches: BATCHES * 2,
      none_claim_us: samples.none,
      ran_claim_us: samples.ran,
    })}`,
  );
});
