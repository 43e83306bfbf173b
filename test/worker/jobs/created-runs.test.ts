// A submission's TASK_CREATED events as runs of tasks (src/pool/ledger/created.ts,
// schema step 41, docs/protocol.md §16): one row per run of a job's tasks, not
// two rows a task, and the ledger reads byte for byte as event rows did:
// whole, paged from inside a run, interleaved with another job's run, on the
// dashboard, and for a pool whose TASK_CREATED rows were appended before the step.

import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ledgerAfter } from "../../../src/pool/ledger/created";
import type { Lease } from "../../../src/protocol/tasks";
import {
  call,
  claim,
  freshPool,
  insertTasks,
  jobStub,
  json,
  register,
  shardOfJob,
  submitJob,
  task,
  trialsJob,
} from "../helpers";
import { violations } from "../invariants";
import { rewindSchema } from "../schema/schema-history";

type Event = { seq: number; type: string; message: string; data: Record<string, unknown>; timestamp: string };

const ledgerOf = async (pool: string, jobId: string, query = "") =>
  json<Event[]>(await call(pool, "GET", `/jobs/${jobId}/events${query}`));

/** The job's object's rows: its event rows by type, and its runs. */
const rowsOf = (pool: string, jobId: string) =>
  runInDurableObject(jobStub(pool, jobId), (_o, state) => ({
    events: state.storage.sql
      .exec<{ type: string }>("SELECT type FROM events WHERE job_id = ? ORDER BY seq", jobId)
      .toArray()
      .map((e) => e.type),
    runs: state.storage.sql
      .exec<{ count: number }>("SELECT count FROM tasks_created WHERE job_id = ? ORDER BY first_seq", jobId)
      .toArray()
      .map((r) => r.count),
  }));

describe("a submission's TASK_CREATED events", () => {
  it("are one row per run of tasks, and read whole and paged as event rows did", async () => {
    const pool = freshPool();
    const job = await submitJob(pool, trialsJob(5));
    expect(await rowsOf(pool, job.job_id)).toEqual({ events: ["JOB_ACCEPTED", "BACKEND_SELECTED"], runs: [5] });

    await register(pool, "n1");
    const lease = await json<Lease>(await claim(pool, "n1"));
    const whole = await ledgerOf(pool, job.job_id);
    expect(whole.map((e) => e.type)).toEqual([
      "JOB_ACCEPTED",
      "BACKEND_SELECTED",
      ...Array(5).fill("TASK_CREATED"),
      "LEASE_CLAIMED",
    ]);
    const created = whole.slice(2, 7);
    expect(created.map((e) => [e.message, e.data])).toEqual(
      [0, 1, 2, 3, 4].map((i) => [`task trial-00${i} created`, { task_id: `trial-00${i}` }]),
    );
    // One submission, one instant; seqs one after another, then the claim's.
    expect(new Set(created.map((e) => e.timestamp)).size).toBe(1);
    const seqs = whole.map((e) => e.seq);
    expect(seqs.slice(1, 7)).toEqual([0, 1, 2, 3, 4, 5].map((i) => seqs[1]! + i));
    expect(whole[7]!.data).toMatchObject({ task_id: lease.task_id, lease_id: lease.lease_id });

    // Paged from inside the run, across its end, and past the end.
    expect(await ledgerOf(pool, job.job_id, `?after=${seqs[3]}&limit=2`)).toEqual(whole.slice(4, 6));
    expect(await ledgerOf(pool, job.job_id, `?after=${seqs[5]}&limit=5`)).toEqual(whole.slice(6));
    expect(await ledgerOf(pool, job.job_id, `?after=${seqs[7]}`)).toEqual([]);
    expect(await violations(pool)).toEqual([]);
  });

  it("of two jobs inserted in one statement are a run each side of the other's, and each job reads its own", async () => {
    const pool = freshPool();
    // Two jobs of the same object, their tasks interleaved in one insert.
    const a = "aaaaaaaaaaaa";
    let b = "bbbbbbbbbbbb";
    for (let i = 0; shardOfJob(pool, b) !== shardOfJob(pool, a); i++) b = `b${i.toString(16).padStart(11, "0")}`;
    await insertTasks(pool, [task(a, "a1"), task(a, "a2"), task(b, "b1"), task(a, "a3")]);
    expect(await rowsOf(pool, a)).toEqual({ events: [], runs: [2, 1] });
    expect(await rowsOf(pool, b)).toEqual({ events: [], runs: [1] });
    const ledger = (jobId: string) =>
      runInDurableObject(jobStub(pool, jobId), (_o, state) =>
        ledgerAfter(state.storage.sql, jobId, 0, 100).map((e): [number, string] => [e.seq, e.message]),
      );
    const [ofA, ofB] = [await ledger(a), await ledger(b)];
    expect(ofA.map(([, m]) => m)).toEqual(["task a1 created", "task a2 created", "task a3 created"]);
    expect(ofB.map(([, m]) => m)).toEqual(["task b1 created"]);
    const first = ofA[0]![0];
    expect([...ofA.map(([s]) => s), ...ofB.map(([s]) => s)]).toEqual([first, first + 1, first + 3, first + 2]);
  });

  it("show on the dashboard newest first, among the other events", async () => {
    const pool = freshPool();
    const first = await submitJob(pool, trialsJob(2));
    await register(pool, "n1");
    await claim(pool, "n1");
    await submitJob(pool, trialsJob(3));
    const dashboard = await json<{ events: { items: Array<{ seq: number; type: string; job_id: string }> } }>(
      await call(pool, "GET", "/dashboard"),
    );
    const items = dashboard.events.items;
    // A job's events newest first (at several shards each shard's seqs are its own, merged by time).
    const ofFirst = items.filter((e) => e.job_id === first.job_id);
    expect(ofFirst.map((e) => e.type)).toEqual([
      "LEASE_CLAIMED",
      "TASK_CREATED",
      "TASK_CREATED",
      "BACKEND_SELECTED",
      "JOB_ACCEPTED",
    ]);
    const seqs = ofFirst.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((x, y) => y - x));
    expect(items.filter((e) => e.type === "TASK_CREATED")).toHaveLength(5);
  });

  it("appended as event rows before schema step 41 read as they did, and a new submission's follow them", async () => {
    const pool = freshPool();
    const job = await submitJob(pool, trialsJob(3));
    const before = await ledgerOf(pool, job.job_id);
    // Back to step 40: the runs become event rows (the step's down), as a pool of that age holds them.
    const rewound = await runInDurableObject(jobStub(pool, job.job_id), (_o, state) => {
      state.storage.transactionSync(() => rewindSchema(state.storage.sql, 40));
      return state.storage.sql.exec("SELECT name FROM sqlite_master WHERE name = 'tasks_created'").toArray().length;
    });
    expect(rewound).toBe(0);
    await abortAllDurableObjects();
    // The object upgrades at its start: the old rows stay rows, and read byte for byte as the runs did.
    expect(await ledgerOf(pool, job.job_id)).toEqual(before);
    expect(await rowsOf(pool, job.job_id)).toEqual({
      events: ["JOB_ACCEPTED", "BACKEND_SELECTED", "TASK_CREATED", "TASK_CREATED", "TASK_CREATED"],
      runs: [],
    });
    // A job on the same object: its events are a run again, numbered after the old rows.
    let next = await submitJob(pool, trialsJob(2));
    while (shardOfJob(pool, next.job_id) !== shardOfJob(pool, job.job_id)) next = await submitJob(pool, trialsJob(2));
    const after = await ledgerOf(pool, next.job_id);
    expect(after.map((e) => e.type)).toEqual(["JOB_ACCEPTED", "BACKEND_SELECTED", "TASK_CREATED", "TASK_CREATED"]);
    expect(await rowsOf(pool, next.job_id)).toEqual({ events: ["JOB_ACCEPTED", "BACKEND_SELECTED"], runs: [2] });
    expect(after[0]!.seq).toBeGreaterThan(before.at(-1)!.seq);
    expect(await violations(pool)).toEqual([]);
  });
});
