// The lease lifecycle's requests: claim, renew, fail and commit. How a
// lease ends without a commit (the expiry sweep included) is in
// lease-endings.ts, reading lease rows in lease-rows.ts. Every function here
// runs inside one synchronous transaction of the pool object and must
// never await: a claim can then never interleave with another claim, a
// commit or a sweep.

import { MAX_STORED_TEXT_BYTES } from "../../protocol/limits";
import { parseEvidence } from "../../protocol/tasks";
import { isLiveLease, mayDrive } from "../../rules/leases";
import type { Membership } from "../../rules/placement";
import type { Settings } from "../../rules/settings";
import { truncateUtf8 } from "../../rules/text";
import { evidenceLies } from "../../rules/verification";
import type { ClaimResult } from "../claims/claim-result";
import type { Turn } from "../contract";
import { jobOpen, settleJob } from "../jobs/jobs";
import { emit } from "../ledger/events";
import { eventTally } from "../ledger/tally";
import { committedHere, nodeOutcome, renewedHere } from "../nodes/outcomes";
import { type ClaimantRow, claimant, seen, storedNodeView } from "../nodes/registry";
import { isAccepting, isHeldBack } from "../nodes/states";
import { DEFAULT_RETRY_ELSEWHERE_MS, pickTask, useTurn } from "../scheduling/scheduling";
import { commitKey, nextReplica, recordReplica } from "../verification/verification";
import { endAttempt, sweep, taskOf } from "./endings";
import { findLease, type Joined, leaseRecord, leaseTask, type WireLease } from "./rows";

export { earliestDeadline, endAttempt, endLeasesOf, sweep } from "./endings";
export { findLease, type LeaseRow, type WireLease } from "./rows";

/** Tenant weights of docs/protocol.md §13; a tenant not in the map weighs 1. */
export type TenantWeights = ReadonlyMap<string, number>;
const EQUAL_WEIGHTS: TenantWeights = new Map();
/** Owners configured for node ids (FLASHML_NODE_OWNERS, docs/protocol.md §14); a node not in the map has its enrolled or own. */
export type NodeOwners = ReadonlyMap<string, string>;
const NO_OWNERS: NodeOwners = new Map();

/** What a claim in a pool of shards adds (docs/sharding.md §5.1, §7.1); nothing at one shard. */
export type ShardedClaim = {
  claimId?: string;
  mint?: () => string;
  floor?: number;
  turn?: Turn;
  idleElsewhere?: number;
};

/**
 * What a claim decides by, from the coordinator's settings (`claimPolicy`):
 * tenant weights (docs/protocol.md §13), the draw of adaptive replication's
 * spot checks, rule 4's retry-elsewhere window, the nodes' owners (§14) and
 * whose word makes a node a team pool's member (§9).
 */
export type ClaimPolicy = {
  weights: TenantWeights;
  random: () => number;
  retryElsewhereMs: number;
  owners: NodeOwners;
  membership: Membership;
};

const DEFAULT_POLICY: ClaimPolicy = {
  weights: EQUAL_WEIGHTS,
  random: Math.random,
  retryElsewhereMs: DEFAULT_RETRY_ELSEWHERE_MS,
  owners: NO_OWNERS,
  membership: "assigned",
};

/** The claim policy the coordinator's settings give. */
export function claimPolicy(settings: Settings): ClaimPolicy {
  const { tenantWeights, retryElsewhereMs, owners, membership } = settings;
  return { weights: tenantWeights, random: Math.random, retryElsewhereMs, owners, membership };
}

export type RenewResult = { ok: true; lease: WireLease } | { ok: false; reason: "gone" | "not_holder" };
export type FailResult = { ok: true } | { ok: false; reason: "gone" | "not_holder" };

/**
 * Leases the PENDING task (optionally of one job) that the scheduling
 * policy picks among those the gate accepts for this node (docs/protocol.md §13,
 * `pickTask`), and uses up the turns of its job and tenant. A replicated
 * task (docs/protocol.md §14) is leased as its next replica, and stays PENDING while
 * it wants more. `random` draws adaptive replication's spot checks;
 * `retryElsewhereMs` is docs/protocol.md §13 rule 4's window. The lease records the
 * node's owner now (`owners`, else its enrolment's, else itself), so the
 * replicas it ran stay that owner's if ownership changes. `membership`
 * says whose word makes the node a team pool's member (docs/protocol.md §9); the
 * default is the enforcing one. The node is this shard's own or one whose
 * passport is here (`claimant`). In a pool of shards (`sharded`), a
 * forwarded claim names itself (`claimId`, docs/sharding.md §13.1),
 * recorded on its lease; `mint` draws lease ids that name this shard; and
 * `floor` leaves work below a priority another shard offers higher (§7.1);
 * `turn` is the tenant the pool-wide passes say goes first (§7.2).
 */
export function claim(
  sql: SqlStorage,
  now: number,
  nodeId: string,
  jobId: string | null,
  policy: Partial<ClaimPolicy> = {},
  sharded: ShardedClaim = {},
): ClaimResult {
  const weights = policy.weights ?? DEFAULT_POLICY.weights;
  const random = policy.random ?? DEFAULT_POLICY.random;
  const retryElsewhereMs = policy.retryElsewhereMs ?? DEFAULT_POLICY.retryElsewhereMs;
  const owners = policy.owners ?? DEFAULT_POLICY.owners;
  const membership = policy.membership ?? DEFAULT_POLICY.membership;
  sweep(sql, now);
  // The claim proves the node alive once: with the lease's deadline when it leases (below), else now.
  const admitted = admission(sql, now, nodeId, owners);
  if (!admitted.ok) {
    seen(sql, now, nodeId);
    return admitted;
  }
  const node = admitted.node;
  const owner = node.owner;
  const view = storedNodeView(node.registration, membership, node.assigned_pools);
  const claimant = { nodeId, owner, view, membership, idleElsewhere: sharded.idleElsewhere };
  const best = pickTask(sql, now, claimant, jobId, retryElsewhereMs, sharded.floor, sharded.turn);
  if (best === undefined) {
    seen(sql, now, nodeId, 0, node.live_until_ms);
    return { ok: false, reason: jobId !== null && !jobOpen(sql, jobId) ? "job_closed" : "nothing" };
  }

  const task = leaseTask(sql, best, sharded.mint);
  // A replica (docs/protocol.md §14) leaves its task PENDING while it wants more, and
  // uses no attempt: its attempt number counts the failed ones before it.
  let replica = 0;
  if (task.replicas > 1) {
    const next = nextReplica(sql, task, node.trusted, random());
    replica = next.replica;
    task.attempts_used = next.attempt;
    sql.exec("UPDATE tasks SET state = ?, attempts_used = ? WHERE seq = ?", next.state, next.attempt, task.seq);
  }
  const turn = useTurn(sql, now, task.job_id, weights);
  const deadline = now + Math.round(task.lease_seconds * 1000);
  sql.exec(
    `INSERT INTO leases (lease_id, task_seq, node_id, attempt_number, issued_ms, deadline_ms, check_ms, status, replica, owner, claim_id)
     VALUES (?, ?, ?, ?, ?, ?, ?, 'live', ?, ?, ?)`,
    task.lease_id,
    task.seq,
    nodeId,
    task.attempts_used,
    now,
    deadline,
    deadline,
    replica,
    owner,
    sharded.claimId ?? null,
  );
  seen(sql, now, nodeId, deadline, node.live_until_ms);
  emit(sql, now, {
    jobId: task.job_id,
    type: "LEASE_CLAIMED",
    message: `task ${task.task_id} leased to ${nodeId} (attempt ${task.attempts_used}${replica > 0 ? `, replica ${replica}` : ""})`,
    data: {
      task_id: task.task_id,
      node_id: nodeId,
      lease_id: task.lease_id,
      attempt: task.attempts_used,
      // Sealed from nodes with the rest of a replicated task's events until it ends (docs/protocol.md §14).
      ...(replica > 0 ? { replica } : {}),
    },
    task,
  });
  // The lease as just inserted, from the task's row: no read back.
  const issued = {
    lease_id: task.lease_id!,
    node_id: nodeId,
    attempt_number: task.attempts_used,
    deadline_ms: deadline,
  };
  return { ok: true, lease: leaseRecord({ ...task, ...issued, replica }), ...turn };
}

type Admission =
  | { ok: true; node: ClaimantRow }
  | { ok: false; reason: "unregistered" | "not_accepting" | "held_back" };

/**
 * The claimant, when it may claim now: registered here (or with a passport
 * here), accepting work and not held back (docs/protocol.md §13); else why
 * not. A claim is a request, so it counts as the node being seen.
 */
export function admit(sql: SqlStorage, now: number, nodeId: string, owners: NodeOwners): Admission {
  seen(sql, now, nodeId);
  return admission(sql, now, nodeId, owners);
}

/** Whether the claimant may claim now, as `admit` says, without counting the request as the node being seen. */
function admission(sql: SqlStorage, now: number, nodeId: string, owners: NodeOwners): Admission {
  const node = claimant(sql, nodeId, owners);
  if (!node) return { ok: false, reason: "unregistered" };
  if (!isAccepting(node)) return { ok: false, reason: "not_accepting" };
  if (isHeldBack(node, now)) return { ok: false, reason: "held_back" };
  return { ok: true, node };
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
  // One row (docs/protocol.md §16): no index holds the deadline (the sweep finds the lease
  // by check_ms), the renewal is counted in memory (src/pool/ledger/tally.ts, schema step 31),
  // and the node is online by its lease, its row written ahead when the sweep next looks.
  sql.exec(
    "UPDATE leases SET deadline_ms = ?, renewals = renewals + 1, renewed_ms = ? WHERE lease_id = ?",
    deadline,
    now,
    leaseId,
  );
  eventTally(sql).add("LEASE_RENEWED", 1, now);
  if (!seen(sql, now, row.node_id, 0, row.node_live_until_ms)) renewedHere(sql, now, row.node_id, deadline);
  return { ok: true, lease: leaseRecord({ ...row, deadline_ms: deadline }) };
}

/**
 * The worker gave up: requeue or exhaust. Only a live lease can fail, only
 * by its holder. Any reason is accepted; its event message keeps at most
 * MAX_STORED_TEXT_BYTES of it, marked where it was cut (docs/protocol.md §12).
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
  // Seen before the lease ends: at another shard than its home, the end tells the home this request (step 20).
  seen(sql, now, row.node_id, 0, row.node_live_until_ms);
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
 * hash, and for a replica its metrics object as JSON text (docs/protocol.md §14).
 */
export type ValidOutput = { object: string; metrics: string | null };

/**
 * Judges a commit. `output` is what passed validation against the claimed
 * hash, or null when validation failed; it is re-checked here against the
 * key's current binding, so a binding replaced while the bytes were being
 * read counts as failed validation. Evidence claiming more run time than
 * passed since the claim is a lie: an invalid result (docs/protocol.md §14). Only the
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
  // Seen before the lease ends: at another shard than its home, the end tells the home this request (step 20).
  seen(sql, now, row.node_id, 0, row.node_live_until_ms);
  return judge(sql, now, row, outputSha256, output, evidence);
}

function judge(
  sql: SqlStorage,
  now: number,
  row: Joined,
  outputSha256: string,
  output: ValidOutput | null,
  evidence: unknown,
): CommitOutcome {
  const leaseId = row.lease_id;
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
    nodeOutcome(sql, now, row.node_id, { outcome: "lie", reason: `its evidence lied: ${message}` });
    return { status: "invalid", detail: `${message}: an invalid result; attempt requeued` };
  }
  if (live && valid && row.replica > 0) {
    sql.exec("UPDATE leases SET status = 'completed' WHERE lease_id = ?", leaseId);
    committedHere(sql, now, row.node_id);
    recordReplica(sql, now, { ...row, seq: row.task_seq }, row, bound!, output!.metrics!);
    return { status: "accepted" };
  }
  if (live && valid) {
    sql.exec("UPDATE leases SET status = 'completed' WHERE lease_id = ?", leaseId);
    sql.exec("UPDATE tasks SET state = 'COMPLETED', accepted_object = ? WHERE seq = ?", bound!.object, row.task_seq);
    committedHere(sql, now, row.node_id, { outcome: "accepted" });
    emit(sql, now, {
      jobId: row.job_id,
      type: "TASK_COMMIT_ACCEPTED",
      message: `commit of ${row.task_id} accepted from ${row.node_id}`,
      data: { ...ids, output_sha256: outputSha256, evidence: parseEvidence(evidence) },
      task: taskOf(row),
    });
    settleJob(sql, now, row.job_id);
    return { status: "accepted" };
  }
  const message = `commit of ${row.task_id} rejected: ${rejection(row)}`;
  emit(sql, now, { jobId: row.job_id, type: "TASK_COMMIT_REJECTED", message, data: ids, task: taskOf(row) });
  return { status: "rejected" };
}

function rejection(row: Joined): string {
  if (row.state === "COMPLETED") return "task already completed";
  if (row.state === "CANCELLED") return "task cancelled";
  return `lease ${row.status}`;
}
