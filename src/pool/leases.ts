// The lease lifecycle: claim, renew, fail, commit and the expiry sweep.
// Every function here runs inside one synchronous transaction of the pool
// object and must never await: a claim can then never interleave with
// another claim, a commit or a sweep.

import { mintId } from "../protocol/ids";
import type { JsonObject } from "../protocol/json";
import { replicaPrefix } from "../protocol/keys";
import { MAX_STORED_TEXT_BYTES } from "../protocol/limits";
import { type Lease, parseEvidence } from "../protocol/tasks";
import { isLiveLease, mayDrive } from "../rules/leases";
import { ownerOf } from "../rules/owners";
import type { Membership } from "../rules/placement";
import { mayRetry } from "../rules/scheduling";
import { truncateUtf8 } from "../rules/text";
import { evidenceLies } from "../rules/verification";
import { emit, iso, tally } from "./events";
import { jobOpen, settleJob } from "./jobs";
import { isAccepting, isHeldBack } from "./node-states";
import { findClaimant, seen, storedNodeView } from "./nodes";
import { attemptFailed, attemptSucceeded, DEFAULT_RETRY_ELSEWHERE_MS, pickTask, useTurn } from "./scheduling";
import type { TaskRow } from "./tasks";
import {
  abandonReplicas,
  commitKey,
  endedReplicas,
  invalidResult,
  nextReplica,
  recordReplica,
  replicaAbandoned,
} from "./verification";

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
type Joined = LeaseRow & Omit<TaskRow, "lease_id" | "seq"> & { current_lease_id: string | null };

/** A Lease as it crosses RPC: the payload typed as JSON. */
export type WireLease = Omit<Lease, "payload"> & { payload: JsonObject };

/**
 * Why a claim got nothing: an unknown node; a draining or terminating node;
 * a claim restricted to a job with no open task (nothing will come); a node
 * held back after failing (SPEC §13); or nothing this node may take yet.
 * Only the last two are worth waiting on.
 */
export type ClaimResult =
  | { ok: true; lease: WireLease }
  | { ok: false; reason: "unregistered" | "not_accepting" | "job_closed" | "held" | "nothing" };

/** Tenant weights of SPEC §13; a tenant not in the map weighs 1. */
export type TenantWeights = ReadonlyMap<string, number>;
const EQUAL_WEIGHTS: TenantWeights = new Map();
/** Owners configured for node ids (FLASHML_NODE_OWNERS, SPEC §14); a node not in the map has its enrolled or own. */
export type NodeOwners = ReadonlyMap<string, string>;
const NO_OWNERS: NodeOwners = new Map();

export type RenewResult = { ok: true; lease: WireLease } | { ok: false; reason: "gone" | "not_holder" };
export type FailResult = { ok: true } | { ok: false; reason: "gone" | "not_holder" };

/** Expires every live lease whose deadline has passed. */
export function sweep(sql: SqlStorage, now: number): void {
  const due = sql
    .exec<{ lease_id: string }>("SELECT lease_id FROM leases WHERE status = 'live' AND deadline_ms <= ?", now)
    .toArray();
  for (const { lease_id } of due) {
    const row = findLease(sql, lease_id)!;
    endAttempt(sql, now, row, "expired", "LEASE_EXPIRED", `lease ${lease_id} expired`);
  }
}

/**
 * Leases the PENDING task (optionally of one job) that the scheduling
 * policy picks among those the gate accepts for this node (SPEC §13,
 * `pickTask`), and uses up the turns of its job and tenant. A replicated
 * task (SPEC §14) is leased as its next replica, and stays PENDING while
 * it wants more. `random` draws adaptive replication's spot checks;
 * `retryElsewhereMs` is SPEC §13 rule 4's window. The lease records the
 * node's owner now (`owners`, else its enrolment's, else itself), so the
 * replicas it ran stay that owner's if ownership changes. `membership`
 * says whose word makes the node a team pool's member (SPEC §9); the
 * default is the enforcing one.
 */
export function claim(
  sql: SqlStorage,
  now: number,
  nodeId: string,
  jobId: string | null,
  weights: TenantWeights = EQUAL_WEIGHTS,
  random: () => number = Math.random,
  retryElsewhereMs = DEFAULT_RETRY_ELSEWHERE_MS,
  owners: NodeOwners = NO_OWNERS,
  membership: Membership = "assigned",
): ClaimResult {
  sweep(sql, now);
  const node = findClaimant(sql, nodeId);
  if (!node) return { ok: false, reason: "unregistered" };
  seen(sql, now, nodeId);
  if (!isAccepting(node)) return { ok: false, reason: "not_accepting" };
  if (isHeldBack(node, now)) return { ok: false, reason: "held" };
  const owner = ownerOf(nodeId, owners, node.enrolled_owner);
  const view = storedNodeView(node.registration, membership, node.assigned_pools);
  const best = pickTask(sql, now, { nodeId, owner, view, membership }, jobId, retryElsewhereMs);
  if (best === undefined)
    return { ok: false, reason: jobId !== null && !jobOpen(sql, jobId) ? "job_closed" : "nothing" };

  const task = sql
    .exec<TaskRow>(
      // From its first replica on a task is replicating: out of the fresh head's index (SPEC §14 "Cost").
      `UPDATE tasks SET state = 'LEASED', attempts_used = attempts_used + 1, lease_id = ?, replicating = replicas > 1
       WHERE seq = ? RETURNING *`,
      newLeaseId(sql),
      best,
    )
    .one();
  // A replica (SPEC §14) leaves its task PENDING while it wants more, and
  // uses no attempt: its attempt number counts the failed ones before it.
  let replica = 0;
  if (task.replicas > 1) {
    const next = nextReplica(sql, task, node, random());
    replica = next.replica;
    task.attempts_used = next.attempt;
    sql.exec("UPDATE tasks SET state = ?, attempts_used = ? WHERE seq = ?", next.state, next.attempt, task.seq);
  }
  useTurn(sql, now, task.job_id, weights);
  const deadline = now + Math.round(task.lease_seconds * 1000);
  sql.exec(
    `INSERT INTO leases (lease_id, task_seq, node_id, attempt_number, issued_ms, deadline_ms, status, replica, owner)
     VALUES (?, ?, ?, ?, ?, ?, 'live', ?, ?)`,
    task.lease_id,
    task.seq,
    nodeId,
    task.attempts_used,
    now,
    deadline,
    replica,
    owner,
  );
  seen(sql, now, nodeId, deadline);
  emit(
    sql,
    now,
    task.job_id,
    "LEASE_CLAIMED",
    `task ${task.task_id} leased to ${nodeId} (attempt ${task.attempts_used}${replica > 0 ? `, replica ${replica}` : ""})`,
    {
      task_id: task.task_id,
      node_id: nodeId,
      lease_id: task.lease_id,
      attempt: task.attempts_used,
      // Sealed from nodes with the rest of a replicated task's events until it ends (SPEC §14).
      ...(replica > 0 ? { replica } : {}),
    },
    task,
  );
  return { ok: true, lease: leaseRecord(findLease(sql, task.lease_id!)!) };
}

/**
 * Extends a live lease by its task's window; anything else is gone (410).
 * `caller` is the node the request acts as (null: open mode), checked first.
 */
export function renew(sql: SqlStorage, now: number, leaseId: string, caller: string | null): RenewResult {
  sweep(sql, now);
  const row = findLease(sql, leaseId);
  if (!mayDrive(row?.node_id, caller)) return { ok: false, reason: "not_holder" };
  if (!row || !isLiveLease(row, now)) return { ok: false, reason: "gone" };
  const deadline = now + Math.round(row.lease_seconds * 1000);
  // No ledger row: a renewal is counted on its lease and in the event tally.
  sql.exec(
    "UPDATE leases SET deadline_ms = ?, renewals = renewals + 1, renewed_ms = ? WHERE lease_id = ?",
    deadline,
    now,
    leaseId,
  );
  seen(sql, now, row.node_id, deadline);
  tally(sql, "LEASE_RENEWED");
  return { ok: true, lease: leaseRecord({ ...row, deadline_ms: deadline }) };
}

/**
 * The worker gave up: requeue or exhaust. Only a live lease can fail, only
 * by its holder. Any reason is accepted; its event message keeps at most
 * MAX_STORED_TEXT_BYTES of it, marked where it was cut (SPEC §12).
 */
export function failAttempt(
  sql: SqlStorage,
  now: number,
  leaseId: string,
  reason: string,
  caller: string | null,
): FailResult {
  sweep(sql, now);
  const row = findLease(sql, leaseId);
  if (!mayDrive(row?.node_id, caller)) return { ok: false, reason: "not_holder" };
  if (!row || !isLiveLease(row, now)) return { ok: false, reason: "gone" };
  seen(sql, now, row.node_id);
  const message = truncateUtf8(`attempt ${row.attempt_number} failed: ${reason}`, MAX_STORED_TEXT_BYTES);
  endAttempt(sql, now, row, "failed", "TASK_ATTEMPT_FAILED", message);
  return { ok: true };
}

export type CommitOutcome =
  | { status: "not_holder" }
  | { status: "unknown" }
  | { status: "accepted" }
  | { status: "rejected" }
  | { status: "invalid"; detail: string };

/**
 * The stored object whose bytes passed validation against the claimed
 * hash, and for a replica its metrics object as JSON text (SPEC §14).
 */
export type ValidOutput = { object: string; metrics: string | null };

/**
 * Judges a commit. `output` is what passed validation against the claimed
 * hash, or null when validation failed; it is re-checked here against the
 * key's current binding, so a binding replaced while the bytes were being
 * read counts as failed validation. Evidence claiming more run time than
 * passed since the claim is a lie: an invalid result (SPEC §14). Only the
 * lease's holder may commit (`caller`, null in open mode).
 */
export function commit(
  sql: SqlStorage,
  now: number,
  leaseId: string,
  outputSha256: string,
  output: ValidOutput | null,
  evidence: unknown,
  caller: string | null,
): CommitOutcome {
  sweep(sql, now);
  const row = findLease(sql, leaseId);
  if (!mayDrive(row?.node_id, caller)) return { status: "not_holder" };
  if (!row) return { status: "unknown" };
  seen(sql, now, row.node_id);
  const live = isLiveLease(row, now);
  const key = commitKey(row, row.replica);
  const bound = sql
    .exec<{ object: string; sha256: string; size_bytes: number; etag: string }>(
      "SELECT object, sha256, size_bytes, etag FROM artifacts WHERE key = ?",
      key,
    )
    .toArray()[0];
  const valid =
    output !== null &&
    bound?.object === output.object &&
    bound.sha256 === outputSha256 &&
    (row.replica === 0 || output.metrics !== null);
  const ids = { task_id: row.task_id, node_id: row.node_id, lease_id: leaseId };
  if (live && !valid) {
    endAttempt(sql, now, row, "failed", "TASK_ATTEMPT_FAILED", `output validation failed for ${key}`);
    return { status: "invalid", detail: "output validation failed; attempt requeued" };
  }
  if (live && evidenceLies(evidence, now - row.issued_ms)) {
    const claimed = (evidence as { wall_seconds: number }).wall_seconds;
    const message = `evidence claims ${claimed} s of work, but ${(now - row.issued_ms) / 1000} s passed since the claim`;
    endAttempt(sql, now, row, "failed", "TASK_ATTEMPT_FAILED", message);
    invalidResult(sql, now, row.node_id, `its evidence lied: ${message}`);
    return { status: "invalid", detail: `${message}: an invalid result; attempt requeued` };
  }
  if (live && valid && row.replica > 0) {
    sql.exec("UPDATE leases SET status = 'completed' WHERE lease_id = ?", leaseId);
    recordReplica(sql, now, { ...row, seq: row.task_seq }, row, bound!, output!.metrics!);
    return { status: "accepted" };
  }
  if (live && valid) {
    sql.exec("UPDATE leases SET status = 'completed' WHERE lease_id = ?", leaseId);
    sql.exec("UPDATE tasks SET state = 'COMPLETED', accepted_object = ? WHERE seq = ?", bound!.object, row.task_seq);
    sql.exec("UPDATE nodes SET accepted_tasks = accepted_tasks + 1 WHERE node_id = ?", row.node_id);
    attemptSucceeded(sql, row.node_id);
    emit(
      sql,
      now,
      row.job_id,
      "TASK_COMMIT_ACCEPTED",
      `commit of ${row.task_id} accepted from ${row.node_id}`,
      { ...ids, output_sha256: outputSha256, evidence: parseEvidence(evidence) },
      taskOf(row),
    );
    settleJob(sql, now, row.job_id);
    return { status: "accepted" };
  }
  const message = `commit of ${row.task_id} rejected: ${rejection(row)}`;
  emit(sql, now, row.job_id, "TASK_COMMIT_REJECTED", message, ids, taskOf(row));
  return { status: "rejected" };
}

/** What emit() needs to seal a lease's events with its task (SPEC §14). */
function taskOf(row: Joined): { seq: number; replicas: number } {
  return { seq: row.task_seq, replicas: row.replicas };
}

function rejection(row: Joined): string {
  if (row.state === "COMPLETED") return "task already completed";
  if (row.state === "CANCELLED") return "task cancelled";
  return `lease ${row.status}`;
}

/**
 * Ends a live attempt; the task requeues while it may retry, else fails
 * (SPEC §13). An expiry of a task that retries worker loss counts as a
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
  sql.exec("UPDATE leases SET status = ? WHERE lease_id = ?", leaseStatus, row.lease_id);
  emit(sql, now, row.job_id, type, message, ids, taskOf(row));
  attemptFailed(sql, now, row.node_id, row.task_seq);
  if (row.replica > 0) {
    // Abandoning a replica is not free (SPEC §14); and the task's attempts
    // are its failed replicas, whatever other replicas are still out.
    replicaAbandoned(sql, row.node_id);
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
    emit(sql, now, row.job_id, "TASK_REQUEUED", `task ${row.task_id} requeued`, ids, taskOf(row));
  } else {
    sql.exec("UPDATE tasks SET state = 'FAILED' WHERE seq = ?", row.task_seq);
    // Other replicas still out are wasted work now, and no verdict will come (SPEC §14).
    if (row.replica > 0) abandonReplicas(sql, row.task_seq);
    const why =
      lost && losses >= row.max_worker_losses
        ? `was lost to ${losses} workers`
        : `exhausted ${row.max_attempts} attempts`;
    emit(sql, now, row.job_id, "TASK_EXHAUSTED", `task ${row.task_id} ${why}`, ids, taskOf(row));
    settleJob(sql, now, row.job_id);
  }
}

/**
 * Ends every live lease of `nodeId` now, exactly as an expiry does
 * (LEASE_EXPIRED, a worker loss where the job retries them, SPEC §13): its
 * machine can no longer commit, so no task waits out its deadline (SPEC §9,
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

/** The earliest live deadline: where the alarm must be. */
export function earliestDeadline(sql: SqlStorage): number | null {
  return sql.exec<{ d: number | null }>("SELECT MIN(deadline_ms) AS d FROM leases WHERE status = 'live'").one().d;
}

/** A lease issued here, with its task's columns; a lease of a job being archived is forgotten (SPEC §12). */
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

function leaseRecord(row: Joined): WireLease {
  const payload = JSON.parse(row.payload) as JsonObject;
  // A replica writes under its own prefix, which the agent honours (SPEC §14).
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
 * "ls-" + 12 lowercase hex digits that no lease of this pool has (SPEC §12:
 * an id collision is retried, never a 500). Looked up in the caller's
 * transaction, so no other change can take the id before it is inserted.
 * `draw` is the randomness, a parameter only so a test can force collisions.
 */
export function newLeaseId(sql: SqlStorage, draw?: () => string): string {
  return mintId("ls-", (id) => sql.exec("SELECT 1 FROM leases WHERE lease_id = ?", id).toArray().length > 0, draw);
}
