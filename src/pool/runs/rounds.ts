// A hosted run's round jobs inside the pool's transactions (docs/protocol.md
// §17): the accepted commit that meets a round's quorum freezes its
// participants in the same transaction, and a round job that ends short of
// it says how. Either marks the round untold, and after the change the run
// is told (src/pool/runs/tell.ts). A leaf: it never awaits.

/** The open round's quorum of the job aliased `j`, as the column `round_quorum`: null for a job that is no open round. */
export const ROUND_QUORUM_SQL = `(SELECT r.quorum FROM run_rounds r
  WHERE r.job_id = j.job_id AND r.frozen IS NULL AND r.ended IS NULL) AS round_quorum`;

/**
 * Whether the job's accepted commits, `completed` of them, just met its
 * round's quorum (`quorum`, read with the job as ROUND_QUORUM_SQL): if so the
 * participants are frozen, every COMPLETED task in task-id order, and the
 * caller cancels the rest of the job (no volunteer trains for a round that
 * is over). False for any other job.
 */
export function quorumMet(sql: SqlStorage, jobId: string, completed: number, quorum: number | null): boolean {
  if (quorum === null || completed < quorum) return false;
  const ids = sql
    .exec<{ task_id: string }>(
      "SELECT task_id FROM tasks WHERE job_id = ? AND state = 'COMPLETED' ORDER BY task_id",
      jobId,
    )
    .toArray()
    .map((t) => t.task_id);
  sql.exec("UPDATE run_rounds SET frozen = ?, told = 0 WHERE job_id = ?", JSON.stringify(ids), jobId);
  return true;
}

/** A round job ended `state` (FAILED, CANCELLED) before its quorum: the round is over, short. */
export function roundEnded(sql: SqlStorage, jobId: string, state: string): void {
  sql.exec(
    "UPDATE run_rounds SET ended = ?, told = 0 WHERE job_id = ? AND frozen IS NULL AND ended IS NULL",
    state,
    jobId,
  );
}
