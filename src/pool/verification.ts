// Verified results in the pool (SPEC §14): the replicas of a task as
// concurrent leases, their committed metrics objects, the verdict once
// enough agree, and each node's record of valid and invalid results. The
// rules (agreement, verdict, adaptive replication) are pure, in
// src/rules/verification.ts. Every function runs inside the caller's
// transaction.

import { replicaPrefix } from "../protocol/keys";
import { EXTRA_REPLICAS, effectiveQuorum, type ReplicaResult, replicasFor, verdict } from "../rules/verification";
import { findArtifact } from "./artifacts";
import { unreferenced } from "./collection";
import { emit } from "./events";
import { settleJob } from "./jobs";
import { attemptFailed, attemptSucceeded } from "./scheduling";

/** A replicated task's columns the verdict needs. */
export type ReplicatedTask = {
  seq: number;
  job_id: string;
  task_id: string;
  commit_key: string;
  replicas: number;
  quorum: number;
  tolerance: number;
  wanted: number;
};

type ResultRow = { lease_id: string; node_id: string; replica: number; object: string; sha256: string; value: string };

/** The key a lease commits: its task's, or for replica `replica` > 0 the same under the replica's own prefix. */
export function commitKey(task: { job_id: string; task_id: string; commit_key: string }, replica: number): string {
  const own = `jobs/${task.job_id}/${task.task_id}/`;
  if (replica === 0) return task.commit_key;
  const rest = task.commit_key.startsWith(own) ? task.commit_key.slice(own.length) : "metrics.json";
  return replicaPrefix(task.job_id, task.task_id, replica) + rest;
}

function replicaCounts(sql: SqlStorage, taskSeq: number) {
  return sql
    .exec<{ issued: number; live: number; results: number }>(
      `SELECT COUNT(*) AS issued, TOTAL(status = 'live') AS live,
              (SELECT COUNT(*) FROM replica_results WHERE task_seq = ?1) AS results
       FROM leases WHERE task_seq = ?1 AND replica > 0`,
      taskSeq,
    )
    .one();
}

/**
 * One more replica of `task` for a node with `consecutiveValid` valid
 * results in a row: its number, and the task's state once it is out. The
 * first replica out decides how many the task wants (adaptive replication:
 * one for a trusted node, unless `random` picks a spot check).
 */
export function nextReplica(
  sql: SqlStorage,
  task: ReplicatedTask,
  consecutiveValid: number,
  random: number,
): { replica: number; state: "PENDING" | "LEASED" } {
  const { issued, live, results } = replicaCounts(sql, task.seq);
  let wanted = task.wanted;
  if (live === 0 && results === 0) {
    wanted = replicasFor(task, consecutiveValid, random);
    sql.exec("UPDATE tasks SET wanted = ? WHERE seq = ?", wanted, task.seq);
  }
  return { replica: issued + 1, state: live + 1 + results >= wanted ? "LEASED" : "PENDING" };
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
  sha256: string,
  object: string,
  metrics: string,
): void {
  sql.exec(
    `INSERT INTO replica_results (lease_id, task_seq, node_id, replica, object, sha256, value)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
    lease.lease_id,
    task.seq,
    lease.node_id,
    lease.replica,
    object,
    sha256,
    metrics,
  );
  emit(
    sql,
    now,
    task.job_id,
    "TASK_ATTEMPT_COMPLETED",
    `replica ${lease.replica} of ${task.task_id} committed by ${lease.node_id}`,
    {
      task_id: task.task_id,
      node_id: lease.node_id,
      lease_id: lease.lease_id,
      replica: lease.replica,
      output_sha256: sha256,
    },
  );
  judge(sql, now, task);
}

function judge(sql: SqlStorage, now: number, task: ReplicatedTask): void {
  const rows = sql
    .exec<ResultRow>(
      "SELECT lease_id, node_id, replica, object, sha256, value FROM replica_results WHERE task_seq = ? ORDER BY rowid",
      task.seq,
    )
    .toArray();
  const results: ReplicaResult[] = rows.map((r) => ({ id: r.lease_id, node: r.node_id, value: JSON.parse(r.value) }));
  const { live } = replicaCounts(sql, task.seq);
  const quorum = effectiveQuorum(task);
  const v = verdict(results, live, quorum, task.replicas + EXTRA_REPLICAS, task.tolerance);
  const ids = { task_id: task.task_id };
  if (v.kind === "waiting") {
    const wanted = rows.length + live + v.more;
    sql.exec(
      "UPDATE tasks SET wanted = ?, state = ? WHERE seq = ?",
      wanted,
      v.more > 0 ? "PENDING" : "LEASED",
      task.seq,
    );
    if (v.more > 0) {
      emit(sql, now, task.job_id, "TASK_REQUEUED", `task ${task.task_id} wants another replica: no quorum yet`, ids);
    }
    return;
  }
  const evidence = (verdictOf: (id: string) => string) =>
    rows.map((r) => ({
      replica: r.replica,
      node_id: r.node_id,
      output_sha256: r.sha256,
      verdict: verdictOf(r.lease_id),
    }));
  if (v.kind === "failed") {
    abandonReplicas(sql, task.seq);
    sql.exec("UPDATE tasks SET state = 'FAILED' WHERE seq = ?", task.seq);
    emit(
      sql,
      now,
      task.job_id,
      "TASK_EXHAUSTED",
      `task ${task.task_id} found no quorum of ${quorum} in ${rows.length} replicas`,
      {
        ...ids,
        replicas: evidence(() => "undecided"),
      },
    );
    settleJob(sql, now, task.job_id);
    return;
  }
  // Whatever replica is still out is wasted work now.
  sql.exec("UPDATE leases SET status = 'cancelled' WHERE task_seq = ? AND status = 'live'", task.seq);
  const winners = new Set(v.winners);
  const winner = rows.find((r) => r.lease_id === v.winners[0])!;
  bindTaskKey(sql, now, task, winner);
  sql.exec("UPDATE tasks SET state = 'COMPLETED', accepted_object = ? WHERE seq = ?", winner.object, task.seq);
  for (const r of rows) {
    const valid = winners.has(r.lease_id);
    sql.exec("UPDATE replica_results SET verdict = ? WHERE lease_id = ?", valid ? "valid" : "invalid", r.lease_id);
    if (valid) {
      sql.exec(
        `UPDATE nodes SET valid_results = valid_results + 1, consecutive_valid = consecutive_valid + 1,
                          accepted_tasks = accepted_tasks + 1
         WHERE node_id = ?`,
        r.node_id,
      );
      attemptSucceeded(sql, r.node_id);
    } else {
      invalidResult(sql, r.node_id);
      attemptFailed(sql, now, r.node_id, task.seq);
      emit(
        sql,
        now,
        task.job_id,
        "TASK_COMMIT_REJECTED",
        `replica ${r.replica} of ${task.task_id} from ${r.node_id} disagrees with the quorum`,
        {
          ...ids,
          node_id: r.node_id,
          lease_id: r.lease_id,
          output_sha256: r.sha256,
          verdict: "invalid",
        },
      );
    }
  }
  emit(
    sql,
    now,
    task.job_id,
    "TASK_COMMIT_ACCEPTED",
    `commit of ${task.task_id} accepted: ${winners.size} of ${rows.length} replicas agree`,
    {
      ...ids,
      node_id: winner.node_id,
      lease_id: winner.lease_id,
      output_sha256: winner.sha256,
      replicas: evidence((id) => (winners.has(id) ? "valid" : "invalid")),
    },
  );
  settleJob(sql, now, task.job_id);
}

/**
 * The task's own key now names the agreed object, so readers find one
 * answer where they always looked. An object has one key: the winning
 * replica's metrics key moves there (the ledger keeps every replica's hash).
 */
function bindTaskKey(sql: SqlStorage, now: number, task: ReplicatedTask, winner: ResultRow): void {
  const previous = findArtifact(sql, task.commit_key);
  if (previous) {
    sql.exec("DELETE FROM artifacts WHERE key = ?", task.commit_key);
    unreferenced(sql, now, previous.object);
  }
  sql.exec(
    "UPDATE artifacts SET key = ?, created_ms = ? WHERE key = ?",
    task.commit_key,
    now,
    commitKey(task, winner.replica),
  );
}

/** A task that failed otherwise than by verdict: its replicas still out are cancelled, its results left undecided. */
export function abandonReplicas(sql: SqlStorage, taskSeq: number): void {
  sql.exec("UPDATE leases SET status = 'cancelled' WHERE task_seq = ? AND status = 'live'", taskSeq);
  sql.exec("UPDATE replica_results SET verdict = 'undecided' WHERE task_seq = ? AND verdict = 'pending'", taskSeq);
}

/**
 * A result that lost its quorum, or evidence that lied: counted on the
 * node, ending its run of valid results. The caller counts it as a failed
 * attempt too (SPEC §13: enough in a row hold the node back).
 */
export function invalidResult(sql: SqlStorage, nodeId: string): void {
  sql.exec("UPDATE nodes SET invalid_results = invalid_results + 1, consecutive_valid = 0 WHERE node_id = ?", nodeId);
}
