// History must not cost a pool (docs/protocol.md §12): counters instead of scans, and
// renewals that update their lease instead of growing the ledger.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { POOL_COUNTS_SQL } from "../../../src/pool/jobs/jobs";
import { POLICY_SQL } from "../../../src/pool/scheduling/scheduling";
import { migrate } from "../../../src/pool/schema/schema";
import { LOAD_SQL } from "../../../src/pool/shards/digest";
import type { Lease } from "../../../src/protocol/tasks";
import { trialsJob } from "../../fixtures/jobspec";
import { call, claim, freshPool, json, register, sha256, stub, submitJob, upload } from "../helpers";
import { violations } from "../invariants";
import { rewindSchema } from "./schema-history";

async function commit(pool: string, lease: Lease) {
  const output = '{"loss": 0.5}';
  await upload(pool, `jobs/${lease.job_id}/${lease.task_id}/metrics.json`, output);
  return call(pool, "POST", `/attempts/${lease.lease_id}/complete`, { output_sha256: await sha256(output) });
}

/** SQLite's plan for `statement`, one line per step ("SEARCH …", "SCAN …"). */
function queryPlan(sql: SqlStorage, statement: string, ...args: unknown[]): string {
  return sql
    .exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${statement}`, ...args)
    .toArray()
    .map((r) => r.detail)
    .join("\n");
}

/** A pool with finished, cancelled, requeued, exhausted and running work. */
async function busyPool() {
  const pool = freshPool();
  await register(pool, "n1");
  const done = await submitJob(pool, trialsJob(3));
  for (let i = 0; i < 3; i++)
    expect(await json(await commit(pool, await json<Lease>(await claim(pool, "n1"))))).toEqual({ accepted: true });
  const cancelled = await submitJob(pool, trialsJob(2));
  await claim(pool, "n1");
  expect((await call(pool, "POST", `/jobs/${cancelled.job_id}/cancel`)).status).toBe(200);
  const requeued = await submitJob(pool, trialsJob(1));
  const lost = await json<Lease>(await claim(pool, "n1"));
  await call(pool, "POST", `/attempts/${lost.lease_id}/fail`, { reason: "boom" });
  const exhausted = await submitJob(pool, trialsJob(1, {}, { retryPolicy: { maxTaskAttempts: 1 } }));
  const broken = await json<Lease>(await claim(pool, "n1", exhausted.job_id));
  await call(pool, "POST", `/attempts/${broken.lease_id}/fail`, { reason: "boom" });
  const running = await submitJob(pool, trialsJob(4, { lease_seconds: 600 }));
  expect((await claim(pool, "n1", running.job_id)).status).toBe(200);
  return { pool, jobs: { done, cancelled, requeued, exhausted, running } };
}

describe("counters, not scans", () => {
  it("task and job counters always equal a recount of the tables", async () => {
    const { pool } = await busyPool();
    expect(await violations(pool)).toEqual([]);
  });

  it("the dashboard and metrics read the counters", async () => {
    const { pool } = await busyPool();
    const dashboard = await json<{ counts: { tasks: Record<string, number>; jobs: Record<string, number> } }>(
      await call(pool, "GET", "/dashboard"),
    );
    expect(dashboard.counts.tasks).toEqual({ PENDING: 4, LEASED: 1, COMPLETED: 3, FAILED: 1, CANCELLED: 2, total: 11 });
    expect(dashboard.counts.jobs).toMatchObject({ RUNNING: 2, SUCCEEDED: 1, FAILED: 1, CANCELLED: 1 });
    const metrics = await (await call(pool, "GET", "/metrics")).text();
    expect(metrics).toMatch(/^flashedge_tasks\{pool="[^"]+",state="COMPLETED"\} 3$/m);
    expect(metrics).toMatch(/^flashedge_tasks\{pool="[^"]+",state="CANCELLED"\} 2$/m);
  });

  it("a pool from before the counters has them backfilled on upgrade", async () => {
    const { pool } = await busyPool();
    await runInDurableObject(stub(pool), (_o, state) => {
      rewindSchema(state.storage.sql, 4);
      state.storage.transactionSync(() => migrate(state.storage.sql));
    });
    expect(await violations(pool)).toEqual([]);
  });

  // Schema step 28 moved the counts by state into columns (docs/protocol.md §16): a job's into its queue row,
  // the pool's into one row. A pool counted by the rows before it reads the same counts after, and keeps them.
  it("a pool counted by state rows has the same counts after step 28, and keeps them as it works", async () => {
    const { pool, jobs } = await busyPool();
    const counts = async () => ({
      dashboard: (await json<{ counts: unknown }>(await call(pool, "GET", "/dashboard"))).counts,
      job: (await json<{ task_counts: unknown }>(await call(pool, "GET", `/jobs/${jobs.running.job_id}`))).task_counts,
    });
    const before = await counts();
    await runInDurableObject(stub(pool), (_o, state) => {
      rewindSchema(state.storage.sql, 27);
      expect(state.storage.sql.exec("SELECT COUNT(*) AS n FROM job_task_counts").one().n).toBeGreaterThan(0);
      state.storage.transactionSync(() => migrate(state.storage.sql));
    });
    expect(await counts()).toEqual(before);
    expect(await violations(pool)).toEqual([]);
    const lease = await json<Lease>(await claim(pool, "n1", jobs.running.job_id));
    expect(await json(await commit(pool, lease))).toEqual({ accepted: true });
    expect((await counts()).job).toEqual({ PENDING: 2, LEASED: 1, COMPLETED: 1, FAILED: 0, CANCELLED: 0 });
    expect(await violations(pool)).toEqual([]);
  });

  // Schema step 40: the pool's count row holds the finished jobs' tasks; a running job's are read from its queue
  // row (docs/protocol.md §16). A busy pool from before it shows the same counts, a claim and a commit of a running
  // job leave the row alone, and the job's counts join it when it finishes.
  it("a busy pool shows the same counts after step 40, and a running job's counts join the pool's row when it finishes", async () => {
    const { pool, jobs } = await busyPool();
    const dashboard = async () =>
      (await json<{ counts: Record<string, unknown> }>(await call(pool, "GET", "/dashboard"))).counts;
    const before = await dashboard();
    const row = () =>
      runInDurableObject(stub(pool), (_o, state) => state.storage.sql.exec("SELECT * FROM pool_task_counts").one());
    await runInDurableObject(stub(pool), (_o, state) => {
      rewindSchema(state.storage.sql, 39);
      state.storage.transactionSync(() => migrate(state.storage.sql));
    });
    expect(await dashboard()).toEqual(before);
    expect(await violations(pool)).toEqual([]);
    // The finished jobs' 3 completed, 2 cancelled and 1 failed; the requeued job's pending task is a running job's.
    const finished = { one: 1, pending: 0, leased: 0, completed: 3, failed: 1, cancelled: 2 };
    expect(await row()).toEqual(finished);
    const first = await json<Lease>(await claim(pool, "n1", jobs.running.job_id));
    expect(await json(await commit(pool, first))).toEqual({ accepted: true });
    expect(await row()).toEqual(finished);
    expect(await violations(pool)).toEqual([]);
    // Cancelled, the running job finishes: its counts (3 cancelled, 1 completed) move into the row.
    await call(pool, "POST", `/jobs/${jobs.running.job_id}/cancel`);
    expect(await row()).toEqual({ ...finished, completed: 4, cancelled: 5 });
    // The pool's counts: the row and the one job still running (the requeued one's pending task).
    expect((await dashboard()).tasks).toEqual({
      PENDING: 1,
      LEASED: 0,
      COMPLETED: 4,
      FAILED: 1,
      CANCELLED: 5,
      total: 11,
    });
    expect(await violations(pool)).toEqual([]);
  });

  // Step 40's reads stay off history: the pool's counts read the running jobs (jobs_live_first), its pending work
  // the queued jobs (job_queues_next), never every job nor task.
  it("the pool's counts seek the running and the queued jobs: no table is scanned", async () => {
    const { pool } = await busyPool();
    const plans = await runInDurableObject(stub(pool), (_o, state) => {
      const plan = (statement: string, ...args: unknown[]) => queryPlan(state.storage.sql, statement, ...args);
      return {
        counts: plan(POOL_COUNTS_SQL.counts),
        pending: plan(POOL_COUNTS_SQL.pending),
        anyPending: plan(POOL_COUNTS_SQL.anyPending),
        load: plan(LOAD_SQL, Date.now()),
      };
    });
    expect(plans.counts).toMatch(/SEARCH j USING (COVERING )?INDEX jobs_live_first/);
    expect(plans.counts).toMatch(/SEARCH q USING INDEX sqlite_autoindex_job_queues_1/);
    expect(plans.pending).toMatch(/job_queues USING INDEX job_queues_next/);
    expect(plans.anyPending).toMatch(/job_queues USING (COVERING )?INDEX job_queues_next/);
    expect(plans.load).toMatch(/SEARCH jobs USING (COVERING )?INDEX jobs_live_first/);
    // Nothing is read whole: the only scans are the one-row pool_task_counts (p) and sums (r), and the partial
    // job_queues_next, which holds the queued jobs alone.
    for (const p of Object.values(plans))
      expect(p).not.toMatch(/SCAN (j|q|jobs|tasks)\b|SCAN job_queues\b(?! USING (COVERING )?INDEX job_queues_next)/);
  });

  // Schema step 33: the queue indexes read a flag written when a count crosses 0 (docs/protocol.md §16). A busy
  // pool from before it has its queued rows flagged, claims by them, and keeps the flags as its queues empty.
  it("a busy pool has its queues flagged by step 33, claims by the flags, and keeps them as queues fill and empty", async () => {
    const { pool, jobs } = await busyPool();
    await runInDurableObject(stub(pool), (_o, state) => {
      rewindSchema(state.storage.sql, 32);
      state.storage.transactionSync(() => migrate(state.storage.sql));
    });
    expect(await violations(pool)).toEqual([]);
    for (;;) {
      const r = await claim(pool, "n1", jobs.running.job_id);
      if (r.status === 204) break;
      expect(await json(await commit(pool, await json<Lease>(r)))).toEqual({ accepted: true });
      expect(await violations(pool)).toEqual([]);
    }
    const queued = await runInDurableObject(stub(pool), (_o, state) =>
      state.storage.sql.exec("SELECT queued, pending FROM job_queues WHERE job_id = ?", jobs.running.job_id).one(),
    );
    expect(queued).toEqual({ queued: 0, pending: 0 });
  });

  // Schema step 35: a class counts its queued jobs, not its pending tasks (docs/protocol.md §16); the demand sums
  // the jobs' counts. A busy pool from before it is counted over, and a claim that leaves its job queued writes no
  // row of the class.
  it("a busy pool's classes count their queued jobs after step 35, and the demand still counts their tasks", async () => {
    const { pool, jobs } = await busyPool();
    const classes = (sql: SqlStorage) => sql.exec("SELECT queued_jobs, queued FROM classes").toArray();
    const before = await runInDurableObject(stub(pool), (_o, state) => {
      rewindSchema(state.storage.sql, 34);
      state.storage.transactionSync(() => migrate(state.storage.sql));
      return classes(state.storage.sql);
    });
    // The requeued job's task and the running job's three, all of one class.
    expect(before).toEqual([{ queued_jobs: 2, queued: 1 }]);
    expect(await violations(pool)).toEqual([]);
    const pending = async () =>
      (await json<{ demand: { classes: Array<{ pending: number }> } }>(await call(pool, "GET", "/nodes/summary")))
        .demand.classes[0]?.pending;
    expect(await pending()).toBe(4);
    expect((await claim(pool, "n1", jobs.running.job_id)).status).toBe(200);
    expect(await pending()).toBe(3);
    expect(await runInDurableObject(stub(pool), (_o, state) => classes(state.storage.sql))).toEqual(before);
    expect((await claim(pool, "n1", jobs.requeued.job_id)).status).toBe(200);
    expect(await runInDurableObject(stub(pool), (_o, state) => classes(state.storage.sql))).toEqual([
      { queued_jobs: 1, queued: 1 },
    ]);
    expect(await violations(pool)).toEqual([]);
  });

  it("the claim's statements seek indexes: tenants, jobs and tasks are never scanned", async () => {
    const { pool } = await busyPool();
    const plans = await runInDurableObject(stub(pool), (_o, state) => {
      const plan = (statement: string, ...args: unknown[]) => queryPlan(state.storage.sql, statement, ...args);
      return {
        level: plan(POLICY_SQL.level, "[1]", 1),
        firstJob: plan(POLICY_SQL.firstJob, 0, "[1]", "n1", "owner"),
        jobs: plan(POLICY_SQL.jobs, 0, "[1]", "n1", "owner", 1),
        tenantJobs: plan(POLICY_SQL.tenantJobs, 0, "[1]", "n1", "owner", "default", 0),
        head: plan(POLICY_SQL.head, "job", "[1]", "n1", "owner"),
        pendingClasses: plan(POLICY_SQL.pendingClasses),
        classes: plan(POLICY_SQL.classes, "owner", "job"),
        freshTasks: plan(POLICY_SQL.freshTasks, "job", 1, 0),
        freshTasksBefore: plan(POLICY_SQL.freshTasksBefore, "job", 1, 0, 10),
        replicatingTasks: plan(POLICY_SQL.replicatingTasks, "job", 1, 0),
        replicatingTasksBefore: plan(POLICY_SQL.replicatingTasksBefore, "job", 1, 0, 10),
        failed: plan(POLICY_SQL.failed, 1, "n1"),
        ranReplica: plan(POLICY_SQL.ranReplica, 1, "owner", "n1"),
        others: plan(POLICY_SQL.others, 0, "n1", 1, 0, 0),
      };
    });
    // A priority is one seek per accepted class, never a walk over the levels above.
    expect(plans.level).toMatch(/SEARCH c USING (COVERING )?INDEX queue_classes_level \(class_id=\? AND priority<\?\)/);
    // A priority's jobs in claim order, through the indexes in their order, each job's head by a seek per class.
    for (const jobs of [plans.firstJob, plans.jobs]) {
      expect(jobs).toContain("INDEX tenant_shares_next (priority=?)");
      expect(jobs).toContain("INDEX job_queues_next (priority=? AND tenant=?)");
    }
    // One tenant's jobs, whose turn it is pool-wide (docs/sharding.md §7.2): the same index, from that tenant on.
    expect(plans.tenantJobs).toContain("INDEX job_queues_next (priority=? AND tenant=?)");
    for (const head of [plans.firstJob, plans.jobs, plans.tenantJobs, plans.head]) {
      // Fresh and replicating heads by a seek each per class; an owner's count of the latter by one more.
      expect(head).toMatch(/SEARCH t USING (COVERING )?INDEX tasks_fresh_job \(job_id=\? AND class_id=\?\)/);
      expect(head).toMatch(/SEARCH t USING (COVERING )?INDEX tasks_replicating_job \(job_id=\? AND class_id=\?\)/);
      expect(head).toMatch(/SEARCH o USING PRIMARY KEY \(job_id=\? AND class_id=\? AND owner=\?\)/);
      expect(head).toMatch(/SEARCH f USING PRIMARY KEY \(task_seq=\? AND node_id=\?\)/);
      // A replica an owner holds or ran: a seek of the task's leases.
      expect(head).toMatch(/SEARCH l USING INDEX leases_task \(task_seq=\?\)/);
    }
    // Each page continues after the last row read: a range of the index, in its order.
    for (const [name, index] of [
      ["freshTasks", "tasks_fresh_job"],
      ["replicatingTasks", "tasks_replicating_job"],
    ] as const) {
      expect(plans[name]).toMatch(
        new RegExp(`SEARCH tasks USING (COVERING )?INDEX ${index} \\(job_id=\\? AND class_id=\\? AND seq>\\?\\)`),
      );
      expect(plans[`${name}Before`]).toMatch(
        new RegExp(
          `SEARCH tasks USING (COVERING )?INDEX ${index} \\(job_id=\\? AND class_id=\\? AND seq>\\? AND seq<\\?\\)`,
        ),
      );
    }
    expect(plans.failed).toMatch(/SEARCH task_failures USING PRIMARY KEY \(task_seq=\? AND node_id=\?\)/);
    expect(plans.ranReplica).toMatch(/SEARCH leases USING INDEX leases_task \(task_seq=\?\)/);
    expect(plans.pendingClasses).toMatch(/(SCAN|SEARCH) classes USING (COVERING )?INDEX classes_queued/);
    expect(plans.classes).toMatch(/SEARCH c USING PRIMARY KEY \(job_id=\?\)/);
    expect(plans.classes).toMatch(/SEARCH o USING PRIMARY KEY \(job_id=\? AND class_id=\? AND owner=\?\)/);
    expect(plans.others).toMatch(/SEARCH n USING INTEGER PRIMARY KEY \(rowid>\?\)/);
    // An operator's team-pool assignment (docs/protocol.md §9) is one primary-key seek per node.
    expect(plans.others).toMatch(/SEARCH ap USING INDEX sqlite_autoindex_node_pools_1 \(node_id=\?\) LEFT-JOIN/);
    // An idle node: its live leases are a seek of the partial index, never a walk over the lease history.
    expect(plans.others).toMatch(/SEARCH l USING (COVERING )?INDEX leases_live_node \(node_id=\?\)/);
    // No statement scans a table or sorts (the pending classes are read whole, through their partial index;
    // the accepted class ids and a page of jobs are read as they come).
    for (const [name, plan] of Object.entries(plans)) {
      if (name === "pendingClasses") continue;
      const scans = plan.split("\n").filter((line) => /SCAN|TEMP B-TREE/.test(line));
      expect(
        scans.filter(
          (line) => !/SCAN (json_each VIRTUAL TABLE|a VIRTUAL TABLE|\(subquery-\d+\)|CONSTANT ROW)/.test(line),
        ),
        name,
      ).toEqual([]);
    }
  });
});

describe("storage is visible", () => {
  it("metrics and the dashboard report the object's SQLite size against its 10 GB limit", async () => {
    const { pool } = await busyPool();
    const size = await runInDurableObject(stub(pool), (_o, state) => state.storage.sql.databaseSize);
    expect(size).toBeGreaterThan(0);
    const metrics = await (await call(pool, "GET", "/metrics")).text();
    const reported = Number(/^flashedge_storage_bytes\{pool="[^"]+"\} (\d+)$/m.exec(metrics)?.[1]);
    expect(reported).toBeGreaterThan(0);
    expect(reported).toBeLessThanOrEqual(size * 2);
    const dashboard = await json<{ storage: { bytes: number; limit_bytes: number; warning: boolean } }>(
      await call(pool, "GET", "/dashboard"),
    );
    expect(dashboard.storage).toMatchObject({ limit_bytes: 10_000_000_000, warning: false });
    expect(dashboard.storage.bytes).toBeGreaterThan(0);
  });
});

describe("heartbeats cost no history", () => {
  it("a hundred renewals add no ledger row: the lease counts them", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const job = await submitJob(pool, trialsJob(1, { lease_seconds: 600 }));
    const lease = await json<Lease>(await claim(pool, "n1"));
    const ledgerSize = () =>
      runInDurableObject(
        stub(pool),
        (_o, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM events").one().n,
      );
    const before = await ledgerSize();
    for (let i = 0; i < 100; i++)
      expect((await call(pool, "POST", `/attempts/${lease.lease_id}/heartbeat`)).status).toBe(200);
    expect(await ledgerSize()).toBe(before);
    const row = await runInDurableObject(stub(pool), (_o, state) =>
      state.storage.sql
        .exec<{ renewals: number; renewed_ms: number }>(
          "SELECT renewals, renewed_ms FROM leases WHERE lease_id = ?",
          lease.lease_id,
        )
        .one(),
    );
    expect(row.renewals).toBe(100);
    expect(row.renewed_ms).toBeGreaterThan(0);
    // Still counted for metrics, and the job's events read as before.
    expect(await (await call(pool, "GET", "/metrics")).text()).toMatch(
      /^flashedge_events_total\{pool="[^"]+",type="LEASE_RENEWED"\} 100$/m,
    );
    const events = await json<Array<{ type: string }>>(await call(pool, "GET", `/jobs/${job.job_id}/events`));
    expect(events.map((e) => e.type)).toEqual(["JOB_ACCEPTED", "BACKEND_SELECTED", "TASK_CREATED", "LEASE_CLAIMED"]);
    expect(await violations(pool)).toEqual([]);
  });
});

// docs/protocol.md §16: a renewal writes its lease's row only. The tally hears of it when the lease ends
// (schema step 25's trigger), the metric adds the live leases' renewals, and the sweep finds a lease by
// when to look at it (check_ms), moved to its renewed deadline when it gets there.
describe("a renewal writes one row", () => {
  const renewed = async (pool: string) =>
    Number(
      /^flashedge_events_total\{pool="[^"]+",type="LEASE_RENEWED"\} (\d+)$/m.exec(
        await (await call(pool, "GET", "/metrics")).text(),
      )?.[1] ?? 0,
    );

  it("is counted once whether its lease is live or ended, and across schema step 25", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitJob(pool, trialsJob(2, { lease_seconds: 600 }));
    const first = await json<Lease>(await claim(pool, "n1"));
    for (let i = 0; i < 3; i++) await call(pool, "POST", `/attempts/${first.lease_id}/heartbeat`);
    expect(await renewed(pool)).toBe(3);
    await call(pool, "POST", `/attempts/${first.lease_id}/fail`, { reason: "x" });
    expect(await renewed(pool)).toBe(3);
    // A pool from before step 25 tallied each renewal as it came: a lease live across the upgrade is not counted twice.
    const second = await json<Lease>(await claim(pool, "n1"));
    await runInDurableObject(stub(pool), (_o, state) => {
      const sql = state.storage.sql;
      rewindSchema(sql, 24);
      sql.exec("UPDATE leases SET renewals = 2 WHERE lease_id = ?", second.lease_id);
      sql.exec("UPDATE event_counts SET n = n + 2 WHERE type = 'LEASE_RENEWED'");
      state.storage.transactionSync(() => migrate(sql));
    });
    expect(await renewed(pool)).toBe(5);
    await call(pool, "POST", `/attempts/${second.lease_id}/heartbeat`);
    await call(pool, "POST", `/attempts/${second.lease_id}/fail`, { reason: "x" });
    expect(await renewed(pool)).toBe(6);
    expect(await violations(pool)).toEqual([]);
  });

  it("a lease renewed past its first deadline lives to its new one, looked at again then", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitJob(pool, trialsJob(1, { lease_seconds: 600 }));
    const lease = await json<Lease>(await claim(pool, "n1"));
    const row = () =>
      runInDurableObject(stub(pool), (_o, state) =>
        state.storage.sql
          .exec<{ status: string; deadline_ms: number; check_ms: number }>(
            "SELECT status, deadline_ms, check_ms FROM leases WHERE lease_id = ?",
            lease.lease_id,
          )
          .one(),
      );
    const issued = await row();
    expect(issued.check_ms).toBe(issued.deadline_ms);
    expect((await call(pool, "POST", `/attempts/${lease.lease_id}/heartbeat`)).status).toBe(200);
    const renewedRow = await row();
    expect(renewedRow.check_ms).toBe(issued.check_ms); // the renewal moved only its deadline
    expect(renewedRow.deadline_ms).toBeGreaterThan(issued.deadline_ms);
    // Its first deadline passes: the sweep finds it renewed, keeps it, and looks again at its new deadline.
    await runInDurableObject(stub(pool), (_o, state) =>
      state.storage.sql.exec("UPDATE leases SET check_ms = ? WHERE lease_id = ?", Date.now() - 1, lease.lease_id),
    );
    expect((await claim(pool, "n1")).status).toBe(204); // a claim sweeps
    const kept = await row();
    expect(kept).toEqual({ status: "live", deadline_ms: renewedRow.deadline_ms, check_ms: renewedRow.deadline_ms });
    // Its node is online by it to the new deadline: written then, not at each renewal.
    const liveUntil = await runInDurableObject(
      stub(pool),
      (_o, state) =>
        state.storage.sql.exec<{ t: number }>("SELECT live_until_ms AS t FROM nodes WHERE node_id = 'n1'").one().t,
    );
    expect(liveUntil).toBeGreaterThanOrEqual(renewedRow.deadline_ms);
    expect((await call(pool, "POST", `/attempts/${lease.lease_id}/heartbeat`)).status).toBe(200);
    expect(await violations(pool)).toEqual([]);
  });
});
