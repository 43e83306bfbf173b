// What a node may not see of a replicated task before its verdict (docs/protocol.md §14
// "Against adversaries"): another replica's outputs (a copier would commit
// them), and anything telling whether another replica of its task exists or
// will be issued (a dodger would be honest only then). Operators, and open
// coordinators (which serve no replicated jobs), see everything. Every read
// a node credential can make asks here, so no surface forgets the seal.

import type { TaskCounts } from "../../rules/job-state";
import { OPEN_STATES_SQL } from "../../rules/task-states";

/**
 * Whose view a read is served in: a node's id (sealed), or null for a
 * caller that sees everything (an operator; anyone on an open coordinator).
 */
export type Viewer = string | null;

/** SQL over a task row `t`: a replicated task with no verdict yet, whose replicas are sealed. */
export const SEALED_TASK = `(t.replicas > 1 AND t.state IN ${OPEN_STATES_SQL})`;

/** SQL over an event row `e`: the event is about a task still sealed. */
export const SEALED_EVENT = `(e.sealed_task IS NOT NULL
  AND EXISTS (SELECT 1 FROM tasks t WHERE t.seq = e.sealed_task AND ${SEALED_TASK}))`;

/** The task an event about (job, task) is sealed with: a replicated task's seq, else null. */
export function sealedTaskOf(sql: SqlStorage, jobId: string, taskId: unknown): number | null {
  if (typeof taskId !== "string") return null;
  const row = sql
    .exec<{ seq: number }>("SELECT seq FROM tasks WHERE job_id = ? AND task_id = ? AND replicas > 1", jobId, taskId)
    .toArray()[0];
  return row?.seq ?? null;
}

/**
 * The replicated tasks still PENDING (wanting another replica) while one
 * is out, counted per job or per requirement class, as `viewer` must see
 * them taken (LEASED), as a task run alone would be; none for a viewer who
 * sees everything. Costs the pool's live leases, never its history.
 */
export function sealedPending(sql: SqlStorage, viewer: Viewer, by: "job_id"): Map<string, number>;
export function sealedPending(sql: SqlStorage, viewer: Viewer, by: "class_id"): Map<number, number>;
export function sealedPending(
  sql: SqlStorage,
  viewer: Viewer,
  by: "job_id" | "class_id",
): Map<string | number, number> {
  if (viewer === null) return new Map();
  const rows = sql
    .exec<{ k: string | number; n: number }>(
      `SELECT t.${by} AS k, COUNT(DISTINCT t.seq) AS n FROM leases l JOIN tasks t ON t.seq = l.task_seq
       WHERE l.status = 'live' AND l.replica > 0 AND t.state = 'PENDING' GROUP BY t.${by}`,
    )
    .toArray();
  return new Map(rows.map((r) => [r.k, r.n]));
}

/** Task counts as a node sees them: `moved` pending tasks with a replica out count as leased. */
export function asSeenByNodes(counts: TaskCounts, moved: number): TaskCounts {
  return moved === 0 ? counts : { ...counts, PENDING: counts.PENDING - moved, LEASED: counts.LEASED + moved };
}

/** The (job, task, replica) whose outputs a key lies under, or null for a key outside every replica's prefix. */
export function replicaOfKey(key: string): { jobId: string; taskId: string; replica: number } | null {
  const match = /^jobs\/([^/]+)\/([^/]+)\/r([1-9]\d{0,3})\//.exec(key);
  return match ? { jobId: match[1]!, taskId: match[2]!, replica: Number(match[3]) } : null;
}

/** Whether `key` is a replica's output that `viewer` may not read yet: not its own replica, before the verdict. */
export function sealedFrom(sql: SqlStorage, key: string, viewer: Viewer): boolean {
  if (viewer === null) return false;
  const owner = replicaOfKey(key);
  if (owner === null) return false;
  return (
    sql
      .exec(
        `SELECT 1 FROM tasks t WHERE t.job_id = ? AND t.task_id = ? AND ${SEALED_TASK}
           AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.task_seq = t.seq AND l.replica = ? AND l.node_id = ?)`,
        owner.jobId,
        owner.taskId,
        owner.replica,
        viewer,
      )
      .toArray().length > 0
  );
}
