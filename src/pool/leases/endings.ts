// How a live lease ends without a commit: its deadline passes (the sweep),
// its holder gives up, or its node can no longer commit. The task requeues
// or is exhausted (docs/protocol.md §13). Every function runs inside the caller's
// transaction and never awaits.

import { mayRetry } from "../../rules/scheduling";
import { settleJob } from "../jobs/jobs";
import { emit } from "../ledger/events";
import { writeSeen } from "../nodes/liveness";
import { nodeOutcome } from "../nodes/outcomes";
import { holdsUntil, lostLease, settleLiveness } from "../nodes/registry";
import { attemptFailed } from "../scheduling/scheduling";
import { abandonReplicas, endedReplicas } from "../verification/verification";
import { findLease, type Joined } from "./rows";

/**
 * Expires every live lease whose deadline has passed, and looks again at its
 * new deadline at one renewed since (docs/protocol.md §16); answers how many
 * expired. First writes down the rows of nodes gone silent.
 */
export function sweep(sql: SqlStorage, now: number): number {
  settleLiveness(sql, now);
  const due = sql
    .exec<{ lease_id: string; node_id: string; deadline_ms: number }>(
      "SELECT lease_id, node_id, deadline_ms FROM leases WHERE status = 'live' AND check_ms <= ?",
      now,
    )
    .toArray();
  let expired = 0;
  for (const lease of due) {
    if (lease.deadline_ms > now) {
      // Renewed since it was last looked at: look again at its deadline, to which its node is online.
      sql.exec("UPDATE leases SET check_ms = deadline_ms WHERE lease_id = ?", lease.lease_id);
      holdsUntil(sql, lease.node_id, lease.deadline_ms);
      continue;
    }
    const row = findLease(sql, lease.lease_id)!;
    endAttempt(sql, now, row, "expired", "LEASE_EXPIRED", `lease ${lease.lease_id} expired`);
    expired++;
  }
  return expired;
}

/** What emit() needs to seal a lease's events with its task (docs/protocol.md §14). */
export function taskOf(row: Joined): { seq: number; replicas: number } {
  return { seq: row.task_seq, replicas: row.replicas };
}

/**
 * Ends a live attempt; the task requeues while it may retry, else fails
 * (docs/protocol.md §13). An expiry of a task that retries worker loss counts as a
 * worker loss, not an attempt. Either way the node failed the task: its
 * retry goes elsewhere, and the node's run of failures grows.
 */
export function endAttempt(
  sql: SqlStorage,
  now: number,
  row: Joined,
  leaseStatus: "expired" | "failed",
  type: "LEASE_EXPIRED" | "TASK_ATTEMPT_FAILED",
  message: string,
): void {
  const ids = { task_id: row.task_id, node_id: row.node_id, lease_id: row.lease_id };
  writeSeen(sql, [row.node_id]); // the end tells a foreign node's home its last request here (schema step 20)
  sql.exec("UPDATE leases SET status = ? WHERE lease_id = ?", leaseStatus, row.lease_id);
  if (leaseStatus === "expired") lostLease(sql, row.node_id);
  emit(sql, now, { jobId: row.job_id, type, message, data: ids, task: taskOf(row) });
  attemptFailed(sql, now, row.node_id, row.task_seq);
  if (row.replica > 0) {
    // Abandoning a replica is not free (docs/protocol.md §14); and the task's attempts
    // are its failed replicas, whatever other replicas are still out.
    nodeOutcome(sql, now, row.node_id, { outcome: "abandoned" });
    row = { ...row, attempts_used: endedReplicas(sql, row.task_seq) };
    sql.exec("UPDATE tasks SET attempts_used = ? WHERE seq = ?", row.attempts_used, row.task_seq);
  }
  const lost = leaseStatus === "expired" && row.max_worker_losses > 0;
  const losses = row.worker_losses + (lost ? 1 : 0);
  if (lost) {
    sql.exec("UPDATE tasks SET worker_losses = ? WHERE seq = ?", losses, row.task_seq);
    sql.exec("UPDATE job_queues SET worker_losses = worker_losses + 1 WHERE job_id = ?", row.job_id);
  }
  if (mayRetry({ ...row, worker_losses: losses })) {
    sql.exec("UPDATE tasks SET state = 'PENDING' WHERE seq = ?", row.task_seq);
    emit(sql, now, {
      jobId: row.job_id,
      type: "TASK_REQUEUED",
      message: `task ${row.task_id} requeued`,
      data: ids,
      task: taskOf(row),
    });
  } else {
    sql.exec("UPDATE tasks SET state = 'FAILED' WHERE seq = ?", row.task_seq);
    // Other replicas still out are wasted work now, and no verdict will come (docs/protocol.md §14).
    if (row.replica > 0) abandonReplicas(sql, row.task_seq);
    const why =
      lost && losses >= row.max_worker_losses
        ? `was lost to ${losses} workers`
        : `exhausted ${row.max_attempts} attempts`;
    emit(sql, now, {
      jobId: row.job_id,
      type: "TASK_EXHAUSTED",
      message: `task ${row.task_id} ${why}`,
      data: ids,
      task: taskOf(row),
    });
    settleJob(sql, now, row.job_id);
  }
}

/**
 * Ends every live lease of `nodeId` now, exactly as an expiry does
 * (LEASE_EXPIRED, a worker loss where the job retries them, docs/protocol.md §13): its
 * machine can no longer commit, so no task waits out its deadline (docs/protocol.md §9,
 * a revoked or replaced credential). Returns how many ended.
 */
export function endLeasesOf(sql: SqlStorage, now: number, nodeId: string, why: string): number {
  const live = sql
    .exec<{ lease_id: string }>("SELECT lease_id FROM leases WHERE node_id = ? AND status = 'live'", nodeId)
    .toArray();
  for (const { lease_id } of live) {
    const row = findLease(sql, lease_id);
    if (row) endAttempt(sql, now, row, "expired", "LEASE_EXPIRED", `lease ${lease_id} ended: ${why}`);
  }
  return live.length;
}

/** The earliest time a live lease is to be looked at (its deadline, or an earlier one it was renewed past): where the alarm must be. */
export function earliestDeadline(sql: SqlStorage): number | null {
  return sql.exec<{ d: number | null }>("SELECT MIN(check_ms) AS d FROM leases WHERE status = 'live'").one().d;
}
