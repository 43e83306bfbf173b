// Lease rows: reading a lease with its task's columns, minting lease ids,
// and the Lease a node is sent. Every function runs inside the caller's
// transaction.

import { mintId } from "../../protocol/ids";
import type { JsonObject } from "../../protocol/json";
import { replicaPrefix } from "../../protocol/keys";
import type { Lease } from "../../protocol/tasks";
import type { TaskRow } from "../jobs/tasks";
import { iso } from "../ledger/events";

export type LeaseRow = {
  lease_id: string;
  task_seq: number;
  node_id: string;
  attempt_number: number;
  issued_ms: number;
  deadline_ms: number;
  status: string;
  replica: number;
};

/** A lease with its task's columns; `current_lease_id` is the task's latest lease. */
export type Joined = LeaseRow & Omit<TaskRow, "lease_id" | "seq"> & { current_lease_id: string | null };

/** A Lease as it crosses RPC: the payload typed as JSON. */
export type WireLease = Omit<Lease, "payload"> & { payload: JsonObject };

/** A lease issued here, with its task's columns; a lease of a job being archived is forgotten (docs/protocol.md §12). */
export function findLease(sql: SqlStorage, leaseId: string): Joined | undefined {
  return sql
    .exec<Joined>(
      `SELECT l.*, t.job_id, t.task_id, t.class_id, t.payload, t.commit_key, t.max_attempts, t.lease_seconds,
              t.output_json, t.state, t.attempts_used, t.accepted_object, t.worker_losses, t.max_worker_losses,
              t.replicas, t.quorum, t.tolerance, t.tolerance_abs, t.wanted, t.lease_id AS current_lease_id
       FROM leases l JOIN tasks t ON t.seq = l.task_seq
       WHERE l.lease_id = ? AND NOT EXISTS (SELECT 1 FROM archived_jobs a WHERE a.job_id = t.job_id)`,
      leaseId,
    )
    .toArray()[0];
}

/** What a lease's wire form is made of. */
type LeaseFields = Pick<
  Joined,
  "lease_id" | "job_id" | "task_id" | "node_id" | "attempt_number" | "deadline_ms" | "payload" | "replica"
>;

export function leaseRecord(row: LeaseFields): WireLease {
  const payload = JSON.parse(row.payload) as JsonObject;
  // A replica writes under its own prefix, which the agent honours (docs/protocol.md §14).
  if (row.replica > 0) payload.output_prefix = replicaPrefix(row.job_id, row.task_id, row.replica);
  return {
    schema_version: "v1alpha1",
    lease_id: row.lease_id,
    task_id: row.task_id,
    job_id: row.job_id,
    node_id: row.node_id,
    attempt_number: row.attempt_number,
    deadline: iso(row.deadline_ms),
    payload,
  };
}

/**
 * "ls-" + 12 lowercase hex digits that no lease of this pool has (docs/protocol.md §12:
 * an id collision is retried, never a 500). Looked up in the caller's
 * transaction, so no other change can take the id before it is inserted.
 * `draw` is the randomness, a parameter only so a test can force collisions.
 */
export function newLeaseId(sql: SqlStorage, draw?: () => string): string {
  return mintId("ls-", (id) => sql.exec("SELECT 1 FROM leases WHERE lease_id = ?", id).toArray().length > 0, draw);
}
