// What a node may not see of a replicated task before its verdict (SPEC §14
// "Against adversaries"): another replica's outputs (a copier would commit
// them), and anything telling whether another replica of its task exists or
// will be issued (a dodger would be honest only then). Operators, and open
// coordinators (which serve no replicated jobs), see everything. Every read
// a node credential can make asks here, so no surface forgets the seal.

import type { TaskCounts } from "../rules/job-state";

/**
 * Whose view a read is served in: a node's id (sealed), or null for a
 * caller that sees everything (an operator; anyone on an open coordinator).
 */
export type Viewer = string | null;

/** SQL over a task row `t`: a replicated task with no verdict yet, whose replicas are sealed. */
export const SEALED_TASK = "(t.replicas > 1 AND t.state IN ('PENDING', 'LEASED'))";

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
 * Per job, its replicated tasks still PENDING (wanting another replica)
 * while one is out: a node is shown them as LEASED, as a task run alone
 * would be. Costs the pool's live leases, never its history.
 */
export function sealedPendingByJob(sql: SqlStorage): Map<string, number> {
  const rows = sql
    .exec<{ job_id: string; n: number }>(
      `SELECT t.job_id, COUNT(DISTINCT t.seq) AS n FROM leases l JOIN tasks t ON t.seq = l.task_seq
       WHERE l.status = 'live' AND l.replica > 0 AND t.state = 'PENDING' GROUP BY t.job_id`,
    )
    .toArray();
  return new Map(rows.map((r) => [r.job_id, r.n]));
}

/**
 * The same per requirement class: a node's demand figures count a
 * replicated task with a replica out as taken, as a task run alone would be.
 */
export function sealedPendingByClass(sql: SqlStorage): Map<number, number> {
  const rows = sql
    .exec<{ class_id: number; n: number }>(
      `SELECT t.class_id, COUNT(DISTINCT t.seq) AS n FROM leases l JOIN tasks t ON t.seq = l.task_seq
       WHERE l.status = 'live' AND l.replica > 0 AND t.state = 'PENDING' GROUP BY t.class_id`,
    )
    .toArray();
  return new Map(rows.map((r) => [r.class_id, r.n]));
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
