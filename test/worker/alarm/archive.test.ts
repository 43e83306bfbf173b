// Retention and archive (docs/protocol.md §12): a job finished longer than the retention
// leaves SQLite for R2 and reads exactly as before. Time is moved by dating
// the job's finish back, then running the pool's own alarm.

import { createExecutionContext, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import app from "../../../src/index";
import { archiveObjects, startArchive } from "../../../src/pool/alarm/archive";
import { DEFAULT_PLACE } from "../../../src/pool/jobs/jobs";
import { eventTally, writeTally } from "../../../src/pool/ledger/tally";
import { archivePrefix } from "../../../src/protocol/archive";
import type { Lease } from "../../../src/protocol/tasks";
import { DEFAULT_JOB_RETENTION_SECONDS } from "../../../src/rules/retention";
import {
  call,
  claim,
  freshPool,
  json,
  register,
  registration,
  sha256,
  stub,
  submitJob,
  trialsJob,
  upload,
} from "../helpers";

const RETENTION_MS = DEFAULT_JOB_RETENTION_SECONDS * 1000; // vitest.config.ts sets none

/** Dates every finished job of the pool back past the retention, as if a week had gone by. */
function age(pool: string) {
  return runInDurableObject(stub(pool), (_o, state) => {
    state.storage.sql.exec("UPDATE jobs SET finished_ms = ? WHERE finished_ms IS NOT NULL", Date.now() - RETENTION_MS);
  });
}

/** Rows of the pool carrying `jobId`, per table (artifacts by key). */
function rowsOf(pool: string, jobId: string) {
  return runInDurableObject(stub(pool), (_o, state) => {
    const count = (sql: string, ...args: unknown[]) =>
      state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${sql}`, ...args).one().n;
    return {
      jobs: count("jobs WHERE job_id = ?", jobId),
      tasks: count("tasks WHERE job_id = ?", jobId),
      leases: count("leases l JOIN tasks t ON t.seq = l.task_seq WHERE t.job_id = ?", jobId),
      events: count("events WHERE job_id = ?", jobId),
      artifacts: count("artifacts WHERE key LIKE ?", `jobs/${jobId}/%`),
      manifests: count("checkpoint_manifests WHERE job_id = ?", jobId),
      parts: count("checkpoint_parts WHERE job_id = ?", jobId),
      counts: count("job_queues WHERE job_id = ?", jobId),
    };
  });
}

const NONE = { jobs: 0, tasks: 0, leases: 0, events: 0, artifacts: 0, manifests: 0, parts: 0, counts: 0 };

type Snapshot = Record<string, { status: number; body: string; headers?: Record<string, string | null> }>;

/**
 * Every read of a job a client can make, as status and exact bytes. Reads
 * only: a write would re-arm the alarm, which then archives on its own.
 */
async function reads(pool: string, jobId: string, taskIds: string[], keys: string[]): Promise<Snapshot> {
  const out: Snapshot = {};
  const get = async (name: string, path: string) => {
    const r = await call(pool, "GET", path);
    out[name] = { status: r.status, body: new TextDecoder().decode(await r.arrayBuffer()) };
    return r;
  };
  await get("job", `/jobs/${jobId}`);
  await get("tasks", `/jobs/${jobId}/tasks`);
  await get("events", `/jobs/${jobId}/events`);
  await get("events page", `/jobs/${jobId}/events?after=2&limit=3`);
  await get("events tail", `/jobs/${jobId}/events?after=4`);
  await get("events past end", `/jobs/${jobId}/events?after=999999999`);
  await get("logs", `/jobs/${jobId}/logs`);
  await get("artifacts", `/jobs/${jobId}/artifacts`);
  // Paged like the live list (docs/protocol.md §12): the same pages, the same Link.
  for (let url: string | null = `/jobs/${jobId}/artifacts?limit=1`, n = 0; url !== null && n < 5; n++) {
    const r = await get(`artifacts page ${n}`, url);
    const link = r.headers.get("link");
    out[`artifacts page ${n}`]!.headers = { link };
    url =
      link === null
        ? null
        : new URL(/^<([^>]+)>/.exec(link)![1]!).pathname.replace(/^.*\/v1alpha1/, "") +
          new URL(/^<([^>]+)>/.exec(link)![1]!).search;
  }
  for (const key of keys) {
    const r = await get(`artifact ${key}`, `/artifacts/${key}`);
    out[`artifact ${key}`]!.headers = {
      length: r.headers.get("content-length"),
      etag: r.headers.get("etag"),
      sha256: r.headers.get("x-flashml-sha256"),
    };
  }
  for (const t of [...taskIds, "no-such-task"]) {
    const ck = `/jobs/${jobId}/tasks/${t}/checkpoints`;
    await get(`latest ${t}`, `${ck}/latest`);
    await get(`latest ${t} ws=2`, `${ck}/latest?world_size=2`);
    await get(`lost-work ${t}`, `${ck}/lost-work?failed_at_step=9`);
  }
  return out;
}

const part = (key: string, content: string) => ({ key, sha256: content.repeat(64).slice(0, 64), size_bytes: 1 });

/**
 * A FAILED job with history in every table: trial-000 checkpointed twice
 * (one quarantined) and committed with its output, trial-001 failed for good.
 */
async function finishedJob(pool: string) {
  await register(pool, "n1");
  const job = await submitJob(pool, trialsJob(2, {}, { retryPolicy: { maxTaskAttempts: 1 } }));
  const first = await json<Lease>(await claim(pool, "n1"));
  const ck = `/jobs/${job.job_id}/tasks/${first.task_id}/checkpoints`;
  for (const step of [1, 2]) {
    const p = part(`jobs/${job.job_id}/${first.task_id}/ckpt/${step}/model.bin`, String(step));
    expect((await call(pool, "POST", `${ck}/parts`, { attempt_id: "a1", step, part: p })).status).toBe(200);
    const committed = await call(pool, "POST", `${ck}/commit`, {
      attempt_id: "a1",
      step,
      expected_parts: [p],
      storage_prefix: `jobs/${job.job_id}/${first.task_id}/ckpt/${step}/`,
    });
    expect(committed.status).toBe(200);
    if (step === 2) {
      const { manifest_id } = await json<{ manifest_id: string }>(committed);
      const q = await call(pool, "POST", `${ck}/${manifest_id}/quarantine`, { reason: "bad restore" });
      expect(q.status).toBe(200);
    }
  }
  const key = `jobs/${job.job_id}/${first.task_id}/metrics.json`;
  const log = `jobs/${job.job_id}/${first.task_id}/log.txt`;
  expect((await upload(pool, log, "step 1\nstep 2\n")).status).toBe(200);
  expect((await upload(pool, key, '{"loss": 0.5}')).status).toBe(200);
  const done = await call(pool, "POST", `/attempts/${first.lease_id}/complete`, {
    output_sha256: await sha256('{"loss": 0.5}'),
  });
  expect(done.status).toBe(200);
  const second = await json<Lease>(await claim(pool, "n1"));
  expect((await call(pool, "POST", `/attempts/${second.lease_id}/fail`, { reason: "oom" })).status).toBe(200);
  const record = await json<{ state: string }>(await call(pool, "GET", `/jobs/${job.job_id}`));
  expect(record.state).toBe("FAILED");
  return { jobId: job.job_id, taskIds: [first.task_id, second.task_id], keys: [log, key], leases: [first, second] };
}

describe("retention and archive", () => {
  it("an archived job leaves SQLite and reads byte for byte as before, from R2", async () => {
    const pool = freshPool();
    const { jobId, taskIds, keys, leases } = await finishedJob(pool);
    await runDurableObjectAlarm(stub(pool)); // inside retention: kept
    expect((await rowsOf(pool, jobId)).tasks).toBe(2);

    await age(pool);
    const before = await reads(pool, jobId, taskIds, keys);
    // Two artifacts at one a page: a Link from the first page to the second, none from the last.
    expect([before["artifacts page 0"]!.headers!.link !== null, before["artifacts page 1"]!.headers!.link]).toEqual([
      true,
      null,
    ]);
    expect(before.job!.status).toBe(200);
    expect(before["latest trial-000"]!.status).toBe(200);
    await runDurableObjectAlarm(stub(pool));
    expect(await rowsOf(pool, jobId)).toEqual(NONE);
    const archived = await env.ARTIFACTS.list({ prefix: archivePrefix(pool, jobId) });
    expect(archived.objects.map((o) => o.key.slice(archivePrefix(pool, jobId).length)).sort()).toEqual([
      "artifacts/000000.json",
      "checkpoint_parts/000000.json",
      "checkpoints/000000.json",
      "events/000000.json",
      "job.json",
      "leases/000000.json",
      "tasks/000000.json",
    ]);

    const leasesPage = await env.ARTIFACTS.get(`${archivePrefix(pool, jobId)}leases/000000.json`);
    const archivedLeases = (await leasesPage!.json()) as Array<{ lease_id: string; task_id: string; status: string }>;
    expect(archivedLeases.map((l) => [l.lease_id, l.task_id, l.status])).toEqual(
      leases.map((l, i) => [l.lease_id, l.task_id, i === 0 ? "completed" : "failed"]),
    );

    expect(await reads(pool, jobId, taskIds, keys)).toEqual(before);
    // Cancelling a finished job changes nothing and answers it: so for an archived one.
    const cancelled = await call(pool, "POST", `/jobs/${jobId}/cancel`);
    expect({ status: cancelled.status, body: await cancelled.text() }).toEqual(before.job);
  });

  it("an archived job leaves the job list; an unknown job is still 404", async () => {
    const pool = freshPool();
    const { jobId } = await finishedJob(pool);
    const live = await submitJob(pool, trialsJob(1));
    await age(pool);
    await runDurableObjectAlarm(stub(pool));
    const listed = await json<Array<{ job_id: string }>>(await call(pool, "GET", "/jobs"));
    expect(listed.map((j) => j.job_id)).toEqual([live.job_id]);
    for (const path of ["/jobs/0123456789ab", "/jobs/0123456789ab/events", "/jobs/0123456789ab/tasks"]) {
      expect((await call(pool, "GET", path)).status).toBe(404);
    }
    expect((await call(pool, "GET", `/jobs/${jobId}`)).status).toBe(200);
  });

  it("forgets an archived job's lease ids and refuses writes to it, changing nothing", async () => {
    const pool = freshPool();
    const { jobId, taskIds, keys, leases } = await finishedJob(pool);
    await age(pool);
    await runDurableObjectAlarm(stub(pool));
    const after = await reads(pool, jobId, taskIds, keys);

    const unknown = async (path: string, body: unknown) => {
      const r = await call(pool, "POST", path, body);
      return { status: r.status, body: (await r.text()).replaceAll(/ls-[0-9a-f]{12}/g, "ls-?") };
    };
    for (const lease of leases) {
      for (const [action, body] of [
        ["heartbeat", {}],
        ["complete", { output_sha256: "0".repeat(64) }],
        ["fail", { reason: "late" }],
      ] as const) {
        expect(await unknown(`/attempts/${lease.lease_id}/${action}`, body)).toEqual(
          await unknown(`/attempts/ls-000000000000/${action}`, body),
        );
      }
    }

    const put = await upload(pool, keys[0]!, "overwrite");
    expect(put.status).toBe(409);
    expect(await put.text()).toContain("archived");
    expect((await upload(pool, `jobs/${jobId}/trial-001/metrics.json`, "{}")).status).toBe(409);
    const ck = `/jobs/${jobId}/tasks/${taskIds[0]}/checkpoints`;
    const p = part(`jobs/${jobId}/${taskIds[0]}/ckpt/3/model.bin`, "3");
    expect((await call(pool, "POST", `${ck}/parts`, { attempt_id: "a1", step: 3, part: p })).status).toBe(409);
    const latest = await json<{ manifest_id: string }>(await call(pool, "GET", `${ck}/latest`));
    expect((await call(pool, "POST", `${ck}/${latest.manifest_id}/quarantine`, { reason: "x" })).status).toBe(409);
    expect((await call(pool, "POST", `${ck}/${latest.manifest_id}/verify`)).status).toBe(409);

    expect(await rowsOf(pool, jobId)).toEqual(NONE);
    expect(await reads(pool, jobId, taskIds, keys)).toEqual(after);
  });

  it("never mints an archived job's id again", async () => {
    const pool = freshPool();
    const { jobId } = await finishedJob(pool);
    await age(pool);
    await runDurableObjectAlarm(stub(pool));
    const again = await stub(pool).submitJob(jobId, trialsJob(1) as never, [], pool, DEFAULT_PLACE);
    expect(again).toEqual({ ok: false, reason: "job_id_taken" });
  });

  it("a crash between the archive write and the delete loses nothing: the next run archives again, identically", async () => {
    const pool = freshPool();
    const { jobId, taskIds, keys, leases } = await finishedJob(pool);
    await age(pool);
    const before = await reads(pool, jobId, taskIds, keys);

    // A run that wrote every object, then died before its delete.
    const written = await runInDurableObject(stub(pool), async (_o, state) => {
      const sql = state.storage.sql;
      expect(state.storage.transactionSync(() => startArchive(sql, Date.now(), RETENTION_MS))).toBe(jobId);
      const objects = [...archiveObjects(sql, pool, jobId)];
      for (const o of objects) await env.ARTIFACTS.put(o.key, o.body);
      return objects;
    });

    // Marked, not yet deleted: it reads the same from SQLite, but is already
    // read-only and its leases are forgotten.
    expect((await rowsOf(pool, jobId)).tasks).toBe(2);
    expect(await reads(pool, jobId, taskIds, keys)).toEqual(before);
    expect((await upload(pool, keys[0]!, "overwrite")).status).toBe(409);
    const late = await call(pool, "POST", `/attempts/${leases[0]!.lease_id}/complete`, {
      output_sha256: "0".repeat(64),
    });
    expect(late.status).toBe(
      (
        await call(pool, "POST", "/attempts/ls-000000000000/complete", {
          output_sha256: "0".repeat(64),
        })
      ).status,
    );

    await runDurableObjectAlarm(stub(pool));
    expect(await rowsOf(pool, jobId)).toEqual(NONE);
    for (const o of written) expect(await (await env.ARTIFACTS.get(o.key))!.text()).toBe(o.body);
    expect(await reads(pool, jobId, taskIds, keys)).toEqual(before);
  });

  it("a ledger and task list longer than an archive page read whole, paged and streamed as before", async () => {
    const pool = freshPool();
    const job = await submitJob(pool, trialsJob(1500));
    expect((await call(pool, "POST", `/jobs/${job.job_id}/cancel`)).status).toBe(200);
    const paths = [
      `/jobs/${job.job_id}/events`,
      `/jobs/${job.job_id}/events?after=990&limit=20`,
      `/jobs/${job.job_id}/events?after=1000&limit=1000`,
      `/jobs/${job.job_id}/events?after=1499`,
      `/jobs/${job.job_id}/tasks`,
      `/jobs/${job.job_id}`,
    ];
    await age(pool);
    const before = await Promise.all(paths.map(async (p) => (await call(pool, "GET", p)).text()));
    expect(JSON.parse(before[0]!)).toHaveLength(1502);
    const size = () => runInDurableObject(stub(pool), (_o, state) => state.storage.sql.databaseSize);
    const full = await size();
    await runDurableObjectAlarm(stub(pool));
    expect((await rowsOf(pool, job.job_id)).events).toBe(0);
    // The SQLite file itself shrinks: by at least two thirds of what the job's rows took over an empty
    // schema (the schema's own pages, one or more per table, index and trigger, stay).
    const empty = await runInDurableObject(stub(freshPool()), (_o, state) => state.storage.sql.databaseSize);
    expect((await size()) - empty).toBeLessThan((full - empty) / 3);
    const after = await Promise.all(paths.map(async (p) => (await call(pool, "GET", p)).text()));
    expect(after).toEqual(before);
  });

  it("arms the alarm for the oldest finished job's retention, and archives due jobs in one run", async () => {
    // No node: a node's request arms the alarm for its liveness (src/pool/nodes/liveness.ts) first.
    const pool = freshPool();
    const a = await submitJob(pool, trialsJob(1));
    const b = await submitJob(pool, trialsJob(1));
    for (const job of [a, b]) expect((await call(pool, "POST", `/jobs/${job.job_id}/cancel`)).status).toBe(200);
    // The events' tally is due first (src/pool/ledger/tally.ts): written down, the next change arms for retention.
    await runInDurableObject(stub(pool), (_o, state) =>
      state.storage.transactionSync(() => writeTally(state.storage.sql)),
    );
    expect((await call(pool, "POST", `/jobs/${a.job_id}/cancel`)).status).toBe(200);
    const finished = await runInDurableObject(stub(pool), async (_o, state) => ({
      alarm: await state.storage.getAlarm(),
      oldest: state.storage.sql.exec<{ t: number }>("SELECT MIN(finished_ms) AS t FROM jobs").one().t,
    }));
    expect(finished.alarm).toBe(finished.oldest + RETENTION_MS);

    await age(pool);
    await runDurableObjectAlarm(stub(pool));
    for (const job of [a, b]) expect((await rowsOf(pool, job.job_id)).jobs).toBe(0);
    // Nothing left to archive: the alarm is cleared but for the tally still to write.
    const left = await runInDurableObject(stub(pool), async (_o, state) => ({
      alarm: await state.storage.getAlarm(),
      tally: eventTally(state.storage.sql).due(),
    }));
    expect(left.alarm).toBe(left.tally);
  });

  it("an unreadable retention setting refuses every request and changes nothing", async () => {
    const pool = freshPool();
    const r = await app.fetch(
      new Request(`http://flashedge.test/pools/${pool}/v1alpha1/nodes/register`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(registration("n1")),
      }),
      { ...env, FLASHML_JOB_RETENTION_SECONDS: "a week" },
      createExecutionContext(),
    );
    expect(r.status).toBe(503);
    expect(await r.json()).toEqual({
      detail:
        "coordinator refuses to serve: FLASHML_JOB_RETENTION_SECONDS must be a number of seconds from 0 to 3153600000 (100 years)",
    });
    expect((await call(pool, "GET", "/nodes")).status).toBe(200);
    expect(await json(await call(pool, "GET", "/nodes"))).toEqual([]);
  });

  it("deleting a job's tasks seeks its leases by index (the foreign key check), never scans the lease history", async () => {
    const pool = freshPool();
    const plan = await runInDurableObject(stub(pool), (_o, state) =>
      state.storage.sql
        .exec<{ detail: string }>(
          "EXPLAIN QUERY PLAN DELETE FROM leases WHERE task_seq IN (SELECT seq FROM tasks WHERE job_id = 'j')",
        )
        .toArray()
        .map((r) => r.detail)
        .join("\n"),
    );
    expect(plan).toMatch(/SEARCH leases USING (COVERING )?INDEX leases_task/);
  });
});
