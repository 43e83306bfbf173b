// A submission's TASK_CREATED events (docs/protocol.md §16). Each tells only
// its task's id, which the task's row holds, and a submission appends one per
// task: as event rows that was two rows written a task (the row and its job
// index) and one more deleted at archive. So a run of one job's tasks,
// inserted in a row with consecutive seqs, is one row of `tasks_created`
// (schema step 41): where its event seqs start, where its task seqs start,
// how many, and when. It is written in the submission's transaction, like the
// rows it stands for, and archived and deleted with its job. A read makes
// each event from its task's row, the message and data an event row held,
// and merges them with the ledger's other rows by seq. Events appended before
// step 41 stay rows of `events` and read as they did.

import type { EventRow } from "./events";
import { eventSeqs } from "./sequence";
import { eventTally } from "./tally";

type Run = { first_seq: number; job_id: string; first_task: number; count: number; ts_ms: number };

/** The TASK_CREATED event of task `taskId`, as emit() would have appended it. */
function createdEvent(seq: number, jobId: string, tsMs: number, taskId: string): EventRow {
  return {
    seq,
    job_id: jobId,
    type: "TASK_CREATED",
    ts_ms: tsMs,
    message: `task ${taskId} created`,
    data: JSON.stringify({ task_id: taskId }),
  };
}

/**
 * A submission's TASK_CREATED events, one per task in the tasks' order, as
 * emit() would append them one by one: `tasks` were just inserted in this
 * order with seqs `firstTask` on. One row per run of a job's tasks, and one
 * count (the caller holds the transaction). Never sealed: that event tells
 * nothing of a replicated task.
 */
export function emitTasksCreated(
  sql: SqlStorage,
  now: number,
  tasks: ReadonlyArray<{ job_id: string }>,
  firstTask: number,
): void {
  if (tasks.length === 0) return;
  const firstSeq = eventSeqs(sql).take(sql, tasks.length);
  for (let start = 0; start < tasks.length; ) {
    const jobId = tasks[start]!.job_id;
    let end = start + 1;
    while (end < tasks.length && tasks[end]!.job_id === jobId) end++;
    sql.exec(
      "INSERT INTO tasks_created (first_seq, job_id, first_task, count, ts_ms) VALUES (?, ?, ?, ?, ?)",
      firstSeq + start,
      jobId,
      firstTask + start,
      end - start,
      now,
    );
    start = end;
  }
  eventTally(sql).add("TASK_CREATED", tasks.length, now);
}

/** The events of a run from its `from`-th on, at most `limit`, in order (`desc`: from its `from`-th back). */
function eventsOf(sql: SqlStorage, run: Run, from: number, limit: number, desc = false): EventRow[] {
  const [low, high] = desc
    ? [run.first_task, run.first_task + from]
    : [run.first_task + from, run.first_task + run.count - 1];
  return sql
    .exec<{ seq: number; task_id: string }>(
      `SELECT seq, task_id FROM tasks WHERE seq BETWEEN ? AND ? ORDER BY seq ${desc ? "DESC" : ""} LIMIT ?`,
      low,
      high,
      limit,
    )
    .toArray()
    .map((t) => createdEvent(run.first_seq + (t.seq - run.first_task), run.job_id, run.ts_ms, t.task_id));
}

/** Job `jobId`'s TASK_CREATED events of runs after seq `after`, at most `limit`, in order. */
export function createdAfter(sql: SqlStorage, jobId: string, after: number, limit: number): EventRow[] {
  // The run holding `after`, if any, and those after it: each at least one event, so `limit` of them at most.
  const runs = sql
    .exec<Run>(
      `SELECT * FROM tasks_created WHERE job_id = ?1
         AND first_seq >= COALESCE((SELECT MAX(first_seq) FROM tasks_created WHERE job_id = ?1 AND first_seq <= ?2), 0)
       ORDER BY first_seq LIMIT ?3`,
      jobId,
      after,
      limit,
    )
    .toArray();
  const out: EventRow[] = [];
  for (const run of runs) {
    const from = Math.max(0, after + 1 - run.first_seq);
    if (from >= run.count) continue;
    if (out.length >= limit) break;
    out.push(...eventsOf(sql, run, from, limit - out.length));
  }
  return out;
}

/**
 * Job `jobId`'s ledger after seq `after`, at most `limit` events in order:
 * its event rows (`where`, on alias `e`, narrows them) merged with its runs'
 * TASK_CREATED events.
 */
export function ledgerAfter(sql: SqlStorage, jobId: string, after: number, limit: number, where = ""): EventRow[] {
  const rows = sql
    .exec<EventRow>(
      `SELECT e.* FROM events e WHERE e.job_id = ? AND e.seq > ? ${where} ORDER BY e.seq LIMIT ?`,
      jobId,
      after,
      limit,
    )
    .toArray();
  return mergeBySeq(rows, createdAfter(sql, jobId, after, limit), limit);
}

/** The pool's newest TASK_CREATED events of runs, at most `limit`, newest first. */
export function newestCreated(sql: SqlStorage, limit: number): EventRow[] {
  const runs = sql.exec<Run>("SELECT * FROM tasks_created ORDER BY first_seq DESC LIMIT ?", limit).toArray();
  const out: EventRow[] = [];
  for (const run of runs) {
    if (out.length >= limit) break;
    out.push(...eventsOf(sql, run, run.count - 1, limit - out.length, true));
  }
  return out;
}

/** The ledger's last seq, its runs' events included (0: none yet). */
export const LAST_SEQ_SQL = `MAX(COALESCE((SELECT MAX(seq) FROM events), 0),
  COALESCE((SELECT first_seq + count - 1 FROM tasks_created ORDER BY first_seq DESC LIMIT 1), 0))`;

/** Merges two lists each ordered by seq (`desc`: newest first) into one, at most `limit` long. */
export function mergeBySeq(a: EventRow[], b: EventRow[], limit: number, desc = false): EventRow[] {
  if (b.length === 0) return a.slice(0, limit);
  const sign = desc ? -1 : 1;
  return [...a, ...b].sort((x, y) => sign * (x.seq - y.seq)).slice(0, limit);
}
