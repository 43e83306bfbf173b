// The task queue: inserting batches, interning requirement classes, and the
// per-job task view. Queue order is the insertion sequence and never changes.

import type { TaskSpec } from "../../protocol/tasks";
import { requirementClass, requirementOf } from "../../rules/placement";
import { type Replication, SINGLE_REPLICA } from "../../rules/verification";
import { emit } from "../ledger/events";

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
  for (const t of tasks) {
    const key = requirementClass(t.payload);
    let classId = classIds.get(key);
    if (classId === undefined) {
      classId = internClass(sql, key, t.payload);
      classIds.set(key, classId);
    }
    sql.exec(
      `INSERT INTO tasks (job_id, task_id, class_id, payload, commit_key, max_attempts, lease_seconds, output_json,
                          max_worker_losses, replicas, quorum, tolerance, tolerance_abs, wanted)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      t.job_id,
      t.task_id,
      classId,
      JSON.stringify(t.payload),
      t.commit_key,
      t.max_attempts,
      t.lease_seconds,
      options.outputJson ? 1 : 0,
      t.max_worker_losses,
      replicas,
      quorum,
      tolerance,
      toleranceAbs,
      replicas,
    );
    emit(sql, now, {
      jobId: t.job_id,
      type: "TASK_CREATED",
      message: `task ${t.task_id} created`,
      data: { task_id: t.task_id },
    });
  }
  return { ok: true, added: tasks.length };
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
