// The task queue: inserting batches, interning requirement classes, and the
// per-job task view. Queue order is the insertion sequence and never changes.

import type { TaskSpec } from "../../protocol/tasks";
import { requirementClass, requirementOf } from "../../rules/placement";
import { type Replication, SINGLE_REPLICA } from "../../rules/verification";
import { emitTasksCreated } from "../ledger/created";
import { chunks } from "../ledger/events";
import { taskSeqs } from "../ledger/sequence";

export type TaskRow = {
  seq: number;
  job_id: string;
  task_id: string;
  class_id: number;
  payload: string;
  commit_key: string;
  max_attempts: number;
  lease_seconds: number;
  output_json: number;
  state: string;
  attempts_used: number;
  lease_id: string | null;
  accepted_object: string | null;
  worker_losses: number;
  max_worker_losses: number;
  /** Verified results (docs/protocol.md §14): the job's replication, and the replicas wanted out or done now. */
  replicas: number;
  quorum: number;
  tolerance: number;
  tolerance_abs: number;
  wanted: number;
};

export type AddTasksResult = { ok: true; added: number } | { ok: false; reason: "duplicate"; duplicates: string[] };

/**
 * Queues a batch in the caller's transaction. A batch that repeats a
 * (job_id, task_id) — within itself or against the queue — is refused whole.
 */
export function addTasks(
  sql: SqlStorage,
  now: number,
  tasks: readonly TaskSpec[],
  options: { outputJson: boolean; replication?: Replication },
): AddTasksResult {
  // Replicas use no attempts (docs/protocol.md §14): max_attempts is kept as submitted.
  const { replicas, quorum, tolerance, toleranceAbs } = options.replication ?? SINGLE_REPLICA;
  const seen = new Set<string>();
  const duplicates: string[] = [];
  for (const t of tasks) {
    const id = `${t.job_id}/${t.task_id}`;
    const exists = sql.exec("SELECT 1 FROM tasks WHERE job_id = ? AND task_id = ?", t.job_id, t.task_id).toArray();
    if (seen.has(id) || exists.length > 0) duplicates.push(id);
    seen.add(id);
  }
  if (duplicates.length > 0) return { ok: false, reason: "duplicate", duplicates };
  const classIds = new Map<string, number>();
  const classOf = (t: TaskSpec) => {
    const key = requirementClass(t.payload);
    const classId = classIds.get(key) ?? internClass(sql, key, t.payload);
    classIds.set(key, classId);
    return classId;
  };
  // A statement per chunk of rows, not per row: fewer statements, each bounded in size.
  const classes = tasks.map(classOf);
  const rows = tasks.map((t, i) => [
    t.job_id,
    t.task_id,
    classes[i],
    JSON.stringify(t.payload),
    t.commit_key,
    t.max_attempts,
    t.lease_seconds,
    t.max_worker_losses,
  ]);
  // Their seqs follow one another from a block reserved ahead (src/pool/ledger/sequence.ts).
  const firstTask = taskSeqs(sql).take(sql, tasks.length);
  let inserted = 0;
  for (const chunk of chunks(rows)) {
    sql.exec(
      `INSERT INTO tasks (seq, job_id, task_id, class_id, payload, commit_key, max_attempts, lease_seconds, output_json,
                          max_worker_losses, replicas, quorum, tolerance, tolerance_abs, wanted)
       SELECT ?7 + key, value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, ?2,
              value ->> 7, ?3, ?4, ?5, ?6, ?3
       FROM json_each(?1) ORDER BY key`,
      chunk.json,
      options.outputJson ? 1 : 0,
      replicas,
      quorum,
      tolerance,
      toleranceAbs,
      firstTask + inserted,
    );
    inserted += chunk.rows;
  }
  countAdded(
    sql,
    tasks.map((t, i) => [t.job_id, classes[i]!]),
  );
  emitTasksCreated(sql, now, tasks, firstTask);
  return { ok: true, added: tasks.length };
}

/**
 * The counts the queue keeps, for a batch of new PENDING tasks (job, class):
 * pending per job (its queue row: the pool's and the job's counts, the
 * claim's seeks) and per (job, class) (the claim's seeks; a class counts its
 * queued jobs by trigger, schema step 35). The pool's row counts the tasks
 * of jobs not running (schema step 40): not a submission's. A statement
 * per counter row, not per task: schema step 26 took this from the insert
 * triggers, which wrote each counter once per task. The job's first
 * pending task activates its queue, as one at a time did (job_queues'
 * triggers).
 */
function countAdded(sql: SqlStorage, added: ReadonlyArray<readonly [string, number]>): void {
  if (added.length === 0) return;
  const perJob = new Map<string, number>();
  const perJobClass = new Map<string, [string, number, number]>();
  for (const [jobId, classId] of added) {
    perJob.set(jobId, (perJob.get(jobId) ?? 0) + 1);
    const key = `${classId}/${jobId}`;
    const entry = perJobClass.get(key) ?? [jobId, classId, 0];
    entry[2]++;
    perJobClass.set(key, entry);
  }
  for (const [jobId, n] of perJob) {
    // The pool's row counts tasks of no running job (schema step 40): never a submission's, whose job row
    // comes first; only tasks queued with no job row at all (the tests' insertTasks) are counted there.
    sql.exec(
      `UPDATE pool_task_counts SET pending = pending + ?2
       WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE job_id = ?1 AND terminal_state IS NULL)`,
      jobId,
      n,
    );
    sql.exec(
      "INSERT INTO job_queues (job_id, pending) VALUES (?1, ?2) ON CONFLICT (job_id) DO UPDATE SET pending = pending + ?2",
      jobId,
      n,
    );
  }
  for (const [jobId, classId, n] of perJobClass.values())
    sql.exec(
      `INSERT INTO queue_classes (job_id, class_id, priority, pending)
       VALUES (?1, ?2, (SELECT priority FROM job_queues WHERE job_id = ?1), ?3)
       ON CONFLICT (job_id, class_id) DO UPDATE SET pending = pending + ?3`,
      jobId,
      classId,
      n,
    );
}

function internClass(sql: SqlStorage, key: string, payload: unknown): number {
  const found = sql.exec<{ class_id: number }>("SELECT class_id FROM classes WHERE class_key = ?", key).toArray()[0];
  if (found) return found.class_id;
  return sql
    .exec<{ class_id: number }>(
      "INSERT INTO classes (class_key, requirement) VALUES (?, ?) RETURNING class_id",
      key,
      JSON.stringify(requirementOf(payload)),
    )
    .one().class_id;
}

export function findTask(sql: SqlStorage, jobId: string, taskId: string): TaskRow | undefined {
  return sql.exec<TaskRow>("SELECT * FROM tasks WHERE job_id = ? AND task_id = ?", jobId, taskId).toArray()[0];
}
