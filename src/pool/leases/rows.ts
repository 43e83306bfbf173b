// Lease rows: reading a lease with its task's columns, leasing a task under a new lease id,
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

/** A lease found with its task's columns, and its node's `live_until_ms` here (null: the node's home is elsewhere). */
export type Found = Joined & { node_live_until_ms: number | null };

/**
 * A lease issued here, with its task's columns and its node's liveness, which
 * every request on a lease goes on to note (`seen`); a lease of a job being
 * archived is forgotten (docs/protocol.md §12).
 */
export function findLease(sql: SqlStorage, leaseId: string): Found | undefined {
  return sql
    .exec<Found>(
      `SELECT l.*, t.job_id, t.task_id, t.class_id, t.payload, t.commit_key, t.max_attempts, t.lease_seconds,
              t.output_json, t.state, t.attempts_used, t.accepted_object, t.worker_losses, t.max_worker_losses,
              t.replicas, t.quorum, t.tolerance, t.tolerance_abs, t.wanted, t.lease_id AS current_lease_id,
              (SELECT n.live_until_ms FROM nodes n WHERE n.node_id = l.node_id) AS node_live_until_ms
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
 * Marks the PENDING task at `seq` leased under a new lease id: "ls-" and
 * what `draw` gives (12 random hex digits; at S > 1 an id naming its shard),
 * drawn again while a lease of this pool has it (docs/protocol.md §12: an id
 * collision is retried, never a 500). The UPDATE itself refuses a taken id,
 * in the caller's transaction: nothing is read apart, and no other change
 * can take the id before the lease is inserted.
 */
export function leaseTask(sql: SqlStorage, seq: number, draw?: () => string): TaskRow {
  let task: TaskRow | undefined;
  mintId(
    "ls-",
    (id) => {
      task = sql
        .exec<TaskRow>(
          // From its first replica on a task is replicating: out of the fresh head's index (docs/protocol.md §14 "Cost").
          `UPDATE tasks SET state = 'LEASED', attempts_used = attempts_used + 1, lease_id = ?1, replicating = replicas > 1
           WHERE seq = ?2 AND NOT EXISTS (SELECT 1 FROM leases WHERE lease_id = ?1) RETURNING *`,
          id,
          seq,
        )
        .toArray()[0];
      return task === undefined;
    },
    draw,
  );
  return task!;
}
