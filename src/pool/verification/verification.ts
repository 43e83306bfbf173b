// Verified results in the pool (docs/protocol.md §14): the replicas of a task as
// concurrent leases, their committed metrics objects, and the verdict once
// enough agree; each node's record of valid and invalid results is kept at
// its home (src/pool/nodes/outcomes.ts). The rules (agreement, verdict, adaptive
// replication) are pure, in src/rules/verification.ts. Every function runs
// inside the caller's transaction.

import { replicaPrefix } from "../../protocol/keys";
import { parseMetrics } from "../../rules/strict-json";
import { EXTRA_REPLICAS, effectiveQuorum, type ReplicaResult, replicasFor, verdict } from "../../rules/verification";
import { findArtifact } from "../artifacts/artifacts";
import { unreferenced } from "../artifacts/collection";
import { settleJob } from "../jobs/jobs";
import { emit } from "../ledger/events";
import { nodeOutcome } from "../nodes/outcomes";
import { cancelLeases } from "../nodes/registry";
import { attemptFailed } from "../scheduling/scheduling";

/** A replicated task's columns the verdict needs. */
export type ReplicatedTask = {
  seq: number;
  job_id: string;
  task_id: string;
  commit_key: string;
  replicas: number;
  quorum: number;
  tolerance: number;
  tolerance_abs: number;
  wanted: number;
};

/** The stored object a replica committed: the bytes its verdict judges and the task key then serves. */
export type JudgedObject = { object: string; sha256: string; size_bytes: number; etag: string };

type ResultRow = JudgedObject & { lease_id: string; node_id: string; replica: number; value: string };

/** The key a lease commits: its task's, or for replica `replica` > 0 the same under the replica's own prefix. */
export function commitKey(task: { job_id: string; task_id: string; commit_key: string }, replica: number): string {
  const own = `jobs/${task.job_id}/${task.task_id}/`;
  if (replica === 0) return task.commit_key;
  const rest = task.commit_key.startsWith(own) ? task.commit_key.slice(own.length) : "metrics.json";
  return replicaPrefix(task.job_id, task.task_id, replica) + rest;
}

function replicaCounts(sql: SqlStorage, taskSeq: number) {
  return sql
    .exec<{ issued: number; live: number; results: number; ended: number }>(
      `SELECT COUNT(*) AS issued, TOTAL(status = 'live') AS live, TOTAL(status IN ('failed', 'expired')) AS ended,
              (SELECT COUNT(*) FROM replica_results WHERE task_seq = ?1) AS results
       FROM leases WHERE task_seq = ?1 AND replica > 0`,
      taskSeq,
    )
    .one();
}

/**
 * One more replica of `task` for `node`: its number, its attempt number
 * (failed attempts + 1: replicas use none, docs/protocol.md §14), and the task's state
 * once it is out. The first replica ever issued decides how many the task
 * wants (adaptive replication: one for a `trusted` node, unless `random`
 * picks a spot check), once: a replica that fails, expires or is cancelled
 * never buys a fresh draw. A task decided to run alone that an untrusted
 * node now claims is replicated in full instead (never the other way).
 * `trusted` is the claimant's (src/pool/nodes/registry.ts): its home's record, or the
 * passport its home sent with the claim (docs/sharding.md §8.6).
 */
export function nextReplica(
  sql: SqlStorage,
  task: ReplicatedTask,
  trusted: boolean,
  random: number,
): { replica: number; attempt: number; state: "PENDING" | "LEASED" } {
  const { issued, live, results, ended } = replicaCounts(sql, task.seq);
  let wanted = task.wanted;
  if (issued === 0) wanted = replicasFor(task, trusted, random);
  else if (wanted === 1 && !trusted) wanted = task.replicas;
  if (wanted !== task.wanted) sql.exec("UPDATE tasks SET wanted = ? WHERE seq = ?", wanted, task.seq);
  return { replica: issued + 1, attempt: ended + 1, state: live + 1 + results >= wanted ? "LEASED" : "PENDING" };
}

/** Replica attempts of a task that failed or expired: what its attempt count is made of (docs/protocol.md §14). */
export function endedReplicas(sql: SqlStorage, taskSeq: number): number {
  return replicaCounts(sql, taskSeq).ended;
}

/**
 * Records a replica's committed metrics object and judges the task: it
 * completes once a quorum agrees (its key bound to their object), fails
 * once no quorum can be reached, or wants more replicas meanwhile.
 */
export function recordReplica(
  sql: SqlStorage,
  now: number,
  task: ReplicatedTask,
  lease: { lease_id: string; node_id: string; replica: number },
  judged: JudgedObject,
  metrics: string,
): void {
  const { object, sha256 } = judged;
  sql.exec(
    `INSERT INTO replica_results (lease_id, task_seq, node_id, replica, object, sha256, value, size_bytes, etag)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    lease.lease_id,
    task.seq,
    lease.node_id,
    lease.replica,
    object,
    sha256,
    metrics,
    judged.size_bytes,
    judged.etag,
  );
  emit(sql, now, {
    jobId: task.job_id,
    type: "TASK_ATTEMPT_COMPLETED",
    message: `replica ${lease.replica} of ${task.task_id} committed by ${lease.node_id}`,
    data: {
      task_id: task.task_id,
      node_id: lease.node_id,
      lease_id: lease.lease_id,
      replica: lease.replica,
      output_sha256: sha256,
    },
  });
  judge(sql, now, task);
}

/** Judges `task` by its replicas' results so far: which verdict applies (rules/verification.ts verdict). */
function judge(sql: SqlStorage, now: number, task: ReplicatedTask): void {
  const rows = sql
    .exec<ResultRow>(
      `SELECT lease_id, node_id, replica, object, sha256, size_bytes, etag, value
       FROM replica_results WHERE task_seq = ? ORDER BY rowid`,
      task.seq,
    )
    .toArray();
  // Stored only once parseMetrics accepted it at commit; read the same way here.
  const results: ReplicaResult[] = rows.map((r) => {
    const parsed = parseMetrics(r.value);
    return { id: r.lease_id, node: r.node_id, value: parsed.ok ? parsed.value : undefined };
  });
  const { live } = replicaCounts(sql, task.seq);
  const quorum = effectiveQuorum(task);
  const tolerance = { relative: task.tolerance, absolute: task.tolerance_abs };
  const v = verdict(results, live, quorum, task.replicas + EXTRA_REPLICAS, tolerance);
  if (v.kind === "waiting") wantMoreReplicas(sql, now, task, rows.length + live, v.more);
  else if (v.kind === "failed") failWithoutQuorum(sql, now, task, rows, quorum);
  else acceptQuorum(sql, now, task, rows, v.winners, quorum);
}

/** No quorum yet: disagreement issues another replica; the task stays PENDING while it wants more out (§14). */
function wantMoreReplicas(sql: SqlStorage, now: number, task: ReplicatedTask, out: number, more: number): void {
  sql.exec(
    "UPDATE tasks SET wanted = ?, state = ? WHERE seq = ?",
    out + more,
    more > 0 ? "PENDING" : "LEASED",
    task.seq,
  );
  if (more > 0) {
    emit(sql, now, {
      jobId: task.job_id,
      type: "TASK_REQUEUED",
      message: `task ${task.task_id} wants another replica: no quorum yet`,
      data: {
        task_id: task.task_id,
      },
    });
  }
}

/** No quorum by replicas + 2: the task fails; its TASK_EXHAUSTED lists every replica's node and sha256 (§14). */
function failWithoutQuorum(
  sql: SqlStorage,
  now: number,
  task: ReplicatedTask,
  rows: ResultRow[],
  quorum: number,
): void {
  abandonReplicas(sql, task.seq);
  sql.exec("UPDATE tasks SET state = 'FAILED' WHERE seq = ?", task.seq);
  emit(sql, now, {
    jobId: task.job_id,
    type: "TASK_EXHAUSTED",
    message: `task ${task.task_id} found no quorum of ${quorum} in ${rows.length} replicas`,
    data: { task_id: task.task_id, replicas: evidence(rows, () => "undecided") },
  });
  settleJob(sql, now, task.job_id);
}

/** `quorum` replicas agree: the task completes, its key bound to their object; outvoted results are invalid (§14). */
function acceptQuorum(
  sql: SqlStorage,
  now: number,
  task: ReplicatedTask,
  rows: ResultRow[],
  winnerIds: string[],
  quorum: number,
): void {
  const ids = { task_id: task.task_id };
  // Whatever replica is still out is wasted work now.
  cancelLeases(sql, "task_seq = ?", task.seq);
  const winners = new Set(winnerIds);
  const winner = rows.find((r) => r.lease_id === winnerIds[0])!;
  bindTaskKey(sql, now, task, winner);
  sql.exec("UPDATE tasks SET state = 'COMPLETED', accepted_object = ? WHERE seq = ?", winner.object, task.seq);
  // A result accepted alone was compared with nothing: it earns no trust (docs/protocol.md §14).
  const compared = quorum > 1;
  for (const r of rows) {
    const valid = winners.has(r.lease_id);
    sql.exec("UPDATE replica_results SET verdict = ? WHERE lease_id = ?", valid ? "valid" : "invalid", r.lease_id);
    if (valid) {
      nodeOutcome(sql, now, r.node_id, { outcome: compared ? "valid" : "accepted" });
    } else {
      nodeOutcome(sql, now, r.node_id, { outcome: "invalid" });
      attemptFailed(sql, now, r.node_id, task.seq);
      emit(sql, now, {
        jobId: task.job_id,
        type: "TASK_COMMIT_REJECTED",
        message: `replica ${r.replica} of ${task.task_id} from ${r.node_id} disagrees with the quorum`,
        data: {
          ...ids,
          node_id: r.node_id,
          lease_id: r.lease_id,
          output_sha256: r.sha256,
          verdict: "invalid",
        },
      });
    }
  }
  emit(sql, now, {
    jobId: task.job_id,
    type: "TASK_COMMIT_ACCEPTED",
    message: `commit of ${task.task_id} accepted: ${winners.size} of ${rows.length} replicas agree`,
    data: {
      ...ids,
      node_id: winner.node_id,
      lease_id: winner.lease_id,
      output_sha256: winner.sha256,
      replicas: evidence(rows, (id) => (winners.has(id) ? "valid" : "invalid")),
    },
  });
  settleJob(sql, now, task.job_id);
}

/** Every replica's node and sha256, with the verdict on each, as a verdict's event lists them. */
function evidence(rows: ResultRow[], verdictOf: (id: string) => string) {
  return rows.map((r) => ({
    replica: r.replica,
    node_id: r.node_id,
    output_sha256: r.sha256,
    verdict: verdictOf(r.lease_id),
  }));
}

/**
 * The task's own key now names the object the verdict judged, so readers
 * find one answer where they always looked: that object, by the hash the
 * replica committed, never whatever its replica key points at by now. An
 * object has one key, so wherever it is still bound moves there (the
 * ledger keeps every replica's hash).
 */
function bindTaskKey(sql: SqlStorage, now: number, task: ReplicatedTask, winner: ResultRow): void {
  const previous = findArtifact(sql, task.commit_key);
  const current = sql
    .exec<{ size_bytes: number; etag: string }>(
      "SELECT size_bytes, etag FROM artifacts WHERE object = ?",
      winner.object,
    )
    .toArray()[0];
  // Results judged before these columns existed still have their key row.
  const { size_bytes, etag } = winner.etag === "" && current ? current : winner;
  sql.exec("DELETE FROM artifacts WHERE key = ? OR object = ?", task.commit_key, winner.object);
  if (previous && previous.object !== winner.object) unreferenced(sql, now, previous.object);
  sql.exec(
    "INSERT INTO artifacts (key, object, sha256, size_bytes, etag, created_ms) VALUES (?, ?, ?, ?, ?, ?)",
    task.commit_key,
    winner.object,
    winner.sha256,
    size_bytes,
    etag,
    now,
  );
}

/** A task that failed otherwise than by verdict: its replicas still out are cancelled, its results left undecided. */
export function abandonReplicas(sql: SqlStorage, taskSeq: number): void {
  cancelLeases(sql, "task_seq = ?", taskSeq);
  sql.exec("UPDATE replica_results SET verdict = 'undecided' WHERE task_seq = ? AND verdict = 'pending'", taskSeq);
}
