// Longevity benchmark (issue 12): one pool object driven through a long
// history of finished tasks, its hot paths timed as the history grows, then
// the history archived. History is made by the pool's own code, in workerd:
// jobs of 10,000 tasks submitted through the object's submitJob, each task
// claimed, its output upload recorded and bound, and committed, each step
// its own transactionSync calling src/pool/* as the object's methods do (the
// in-object bench's cycle, without HTTP or R2 bytes). Every job finishes
// SUCCEEDED and is history. Throughout, 25 backlog jobs keep LIVE GPU tasks
// pending that the (GPU-less) node can never take: live state every claim
// passes over.
//
// At each mark (0, and the BENCH_MARKS counts of finished tasks) it records
// the SQLite size, then times, with that history in place: claim and commit
// (batch means over a job of its own, which then finishes and joins the
// history), the dashboard summary and metrics (the object's own methods).
// Then every finished job is dated past retention and archived by the
// pool's archiving code to local R2, and the same figures are taken again. Prints one `BENCH {json}` line; bench/longevity.mjs
// drives it. Never run by `npm test`.

import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { it } from "vitest";
import { archiveObjects, finishArchive, startArchive } from "../src/pool/alarm/archive";
import { bind } from "../src/pool/artifacts/artifacts";
import { uploadStarted } from "../src/pool/artifacts/collection";
import { DEFAULT_PLACE } from "../src/pool/jobs/jobs";
import { claim, commit, type WireLease } from "../src/pool/leases/leases";
import { JobSpecSchema } from "../src/protocol/jobs";
import { jobSpec } from "../test/fixtures/jobspec";
import { alignToClockStep, registration, round, trialTask } from "./in-workerd";

const settings = env as unknown as { BENCH_MARKS?: string };
const MARKS = (settings.BENCH_MARKS || "100000,500000,1000000").split(",").map(Number);
const JOB_SIZE = 10_000;
const LIVE = 1_000;
const BACKLOG_JOBS = 25;
const BATCH = 200;
const BATCHES = 5;
const READS = 200;
const SHA = "0".repeat(64);
const SPEC = JobSpecSchema.parse(jobSpec({ type: "hyperparameter_search", parameters: {} }, {}, "longevity"));

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

it("a pool's hot paths and storage across a million finished tasks, then after retention", async () => {
  const pool = `longevity-${crypto.randomUUID().slice(0, 8)}`;
  const stub = env.POOL.get(env.POOL.idFromName(pool));
  await stub.register(registration("n1", 0));
  let jobs = 0;
  const newJobId = () => `job${String(jobs++).padStart(9, "0")}`;
  // The backlog is BACKLOG_JOBS jobs, enough to fill the dashboard's job list
  // (25) from the start: a full list at 0 and at 1M, so the figures differ by
  // history only.
  for (let j = 0; j < BACKLOG_JOBS; j++) {
    const backlog = newJobId();
    const n = LIVE / BACKLOG_JOBS;
    await stub.submitJob(
      backlog,
      SPEC,
      Array.from({ length: n }, (_, i) => trialTask(backlog, i, 1)),
      pool,
      DEFAULT_PLACE,
    );
  }
  let uploads = 0;
  let finished = 0;

  /** One claim → record upload → bind → commit cycle; `jobId` null claims as an agent does (the first task it may take). */
  const cycle = (state: DurableObjectState, jobId: string | null, timed?: { claim: number; commit: number }) => {
    const sql = state.storage.sql;
    const t0 = timed ? performance.now() : 0;
    const claimed = state.storage.transactionSync(() => claim(sql, Date.now(), "n1", jobId));
    const t1 = timed ? performance.now() : 0;
    if (!claimed.ok) throw new Error(`claim: ${claimed.reason}`);
    const lease: WireLease = claimed.lease;
    const stored = { object: `pools/${pool}/objects/${++uploads}`, sha256: SHA, size_bytes: 2, etag: "e" };
    const key = `jobs/${lease.job_id}/${lease.task_id}/metrics.json`;
    const bound = state.storage.transactionSync(() => {
      uploadStarted(sql, Date.now(), stored.object);
      return bind(sql, Date.now(), key, stored, "n1");
    });
    if (!bound.ok) throw new Error(`bind: ${bound.detail}`);
    const outcome = state.storage.transactionSync(() =>
      commit(sql, Date.now(), lease.lease_id, SHA, { object: stored.object, metrics: null }, null, "n1"),
    );
    if (outcome.status !== "accepted") throw new Error(`commit: ${outcome.status}`);
    if (timed) {
      timed.claim += t1 - t0;
      timed.commit += performance.now() - t1;
    }
    return lease;
  };

  /** The figures at the current history; the timed job then joins it. */
  const measure = async () => {
    const timedJob = newJobId();
    const size = BATCH * (BATCHES + 1);
    const storageBytes = await runInDurableObject(stub, (_i, state) => state.storage.sql.databaseSize);
    const history = finished;
    await stub.submitJob(
      timedJob,
      SPEC,
      Array.from({ length: size }, (_, i) => trialTask(timedJob, i)),
      pool,
      DEFAULT_PLACE,
    );
    finished += size;
    return runInDurableObject(stub, async (instance, state) => {
      const claimUs: number[] = [];
      const commitUs: number[] = [];
      for (let b = 0; b <= BATCHES; b++) {
        const timed = { claim: 0, commit: 0 };
        alignToClockStep();
        for (let i = 0; i < BATCH; i++) cycle(state, null, timed);
        if (b > 0) {
          claimUs.push(round((timed.claim * 1000) / BATCH));
          commitUs.push(round((timed.commit * 1000) / BATCH));
        }
        await scheduler.wait(1);
      }
      const perCall = (op: () => unknown) => {
        const t0 = alignToClockStep();
        for (let i = 0; i < READS; i++) op();
        return round(((performance.now() - t0) * 1000) / READS);
      };
      const dashboardUs = [
        perCall(() => instance.dashboard(pool, 25, null)),
        perCall(() => instance.dashboard(pool, 25, null)),
      ];
      const metricsUs = [perCall(() => instance.metrics(null)), perCall(() => instance.metrics(null))];
      return {
        finished_tasks: history,
        storage_bytes: storageBytes,
        claim_us: median(claimUs),
        commit_us: median(commitUs),
        dashboard_us: Math.min(...dashboardUs),
        metrics_us: Math.min(...metricsUs),
      };
    });
  };

  const points = [await measure()];
  const driveStart = Date.now();
  for (const mark of MARKS) {
    while (finished < mark) {
      const jobId = newJobId();
      const n = Math.min(JOB_SIZE, mark - finished);
      await stub.submitJob(
        jobId,
        SPEC,
        Array.from({ length: n }, (_, i) => trialTask(jobId, i)),
        pool,
        DEFAULT_PLACE,
      );
      for (let done = 0; done < n; ) {
        const chunk = Math.min(2_000, n - done);
        await runInDurableObject(stub, (_i, state) => {
          for (let k = 0; k < chunk; k++) cycle(state, jobId);
        });
        done += chunk;
      }
      finished += n;
    }
    points.push(await measure());
  }
  const driveMs = Date.now() - driveStart;

  // Retention: every history job dated past it, then archived by the pool's
  // own archiving code (the alarm's steps, timed here), into local R2.
  const archived = await runInDurableObject(stub, async (_i, state) => {
    const sql = state.storage.sql;
    sql.exec("UPDATE jobs SET finished_ms = 1 WHERE finished_ms IS NOT NULL");
    const started = Date.now();
    let count = 0;
    let objects = 0;
    let bytes = 0;
    const deleteMs: number[] = [];
    for (;;) {
      const jobId = state.storage.transactionSync(() => startArchive(sql, Date.now(), 0));
      if (jobId === null) break;
      for (const object of archiveObjects(sql, pool, jobId)) {
        await env.ARTIFACTS.put(object.key, object.body);
        objects++;
        bytes += object.body.length;
      }
      const t0 = performance.now();
      state.storage.transactionSync(() => finishArchive(sql, Date.now(), jobId));
      deleteMs.push(performance.now() - t0);
      count++;
    }
    return {
      jobs: count,
      ms: Date.now() - started,
      objects,
      bytes,
      max_delete_ms: Math.round(Math.max(...deleteMs)),
      median_delete_ms: Math.round(median(deleteMs)),
    };
  });
  const afterRetention = await measure();

  console.log(
    `BENCH ${JSON.stringify({
      bench: "longevity",
      job_size: JOB_SIZE,
      live_pending: LIVE,
      batch: BATCH,
      batches: BATCHES,
      drive_ms: driveMs,
      points,
      archive: archived,
      after_retention: afterRetention,
    })}`,
  );
});
