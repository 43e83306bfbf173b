// Replicas elsewhere (docs/sharding.md §8.6, docs/protocol.md §14 "Spot
// checks are invisible"): a home forwards a node's claim by the summary's
// class counts, and a replicating task on another shard counts there for
// every node, though the node that ran a replica of it (or a node of its
// owner) may never take it. Forwarded anyway, such a claim is refused there:
// one round trip a trusted node could time, present when its task is being
// checked and absent when it runs alone. So the job's shard tells the home
// which of its replicating tasks the home's nodes ran a replica of, and the
// home counts those out of that node's offers: the answer to the forwarded
// claim says so at the lease, and an outcome (schema step 22's trigger) each
// time the task starts or stops counting as replicating there.
//
// Each fact takes effect when the home's copy of the summary shows that
// shard's digest built after the change (`after_version`), so the count a
// node's claim is weighed by moves in one step with the summary's, never
// before it or after it. Home-internal: never passed on to a node. At one
// shard nothing here runs (no passports: the trigger writes nothing).

import { ownerOf } from "../../rules/owners";
import type { ClassLevel } from "../../rules/summary";
import type { ReplicaTask } from "../contract";
import type { Pool } from "../pool";
import type { RemoteClass } from "../shards/summary-copy";

/**
 * At the job's shard, in the lease's transaction: what a replica lease's
 * node's home is told of its task (a lease of a task run once is a replica
 * too, replica 1 of 1: then `counted` is false and the home keeps nothing).
 */
export function replicaTask(sql: SqlStorage, taskSeq: number, after: number): ReplicaTask | undefined {
  const row = sql
    .exec<{ class_key: string; priority: number; counted: number }>(
      `SELECT c.class_key, q.priority, t.state = 'PENDING' AND t.replicating = 1 AS counted
       FROM tasks t JOIN classes c ON c.class_id = t.class_id JOIN job_queues q ON q.job_id = t.job_id
       WHERE t.seq = ? AND t.replicas > 1`,
      taskSeq,
    )
    .toArray()[0];
  return row && { task: taskSeq, classKey: row.class_key, priority: row.priority, counted: row.counted === 1, after };
}

/**
 * At the home, in the caller's transaction: shard k says `nodeId` holds or
 * ran a replica of `task` there. From the answer to the forwarded claim
 * (`fromLease`), it is recorded only when nothing newer was: an outcome about
 * the same task can only come after the lease. False for a node not
 * registered here.
 */
export function replicaElsewhere(
  pool: Pool,
  k: number,
  nodeId: string,
  task: ReplicaTask,
  fromLease: boolean,
): boolean {
  const { sql } = pool;
  const enrolled = sql
    .exec<{ owner: string | null }>(
      `SELECT c.owner FROM nodes n LEFT JOIN node_credentials c ON c.node_id = n.node_id AND c.revoked_ms IS NULL
       WHERE n.node_id = ?`,
      nodeId,
    )
    .toArray()[0];
  if (enrolled === undefined) return false;
  const seen = pool.summary.version(k);
  // Versions start again at 1 when the shard's object restarts: what it said before applies as said.
  sql.exec("UPDATE replicas_elsewhere SET after_version = 0 WHERE shard = ? AND after_version > ?", k, task.after);
  const row = sql
    .exec<{ counted: number; counted_before: number; after_version: number }>(
      "SELECT counted, counted_before, after_version FROM replicas_elsewhere WHERE node_id = ? AND shard = ? AND task_seq = ?",
      nodeId,
      k,
      task.task,
    )
    .toArray()[0];
  if (row !== undefined && fromLease) return true;
  // What the copy counts now: the state before the new change, until a digest after it arrives.
  const before = row === undefined ? 0 : seen > row.after_version ? row.counted : row.counted_before;
  if (!task.counted && before === 0) {
    if (row !== undefined)
      sql.exec("DELETE FROM replicas_elsewhere WHERE node_id = ? AND shard = ? AND task_seq = ?", nodeId, k, task.task);
  } else {
    sql.exec(
      `INSERT INTO replicas_elsewhere
         (node_id, shard, task_seq, owner, class_key, priority, counted, counted_before, after_version)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (node_id, shard, task_seq) DO UPDATE SET counted = excluded.counted,
         counted_before = excluded.counted_before, after_version = excluded.after_version`,
      nodeId,
      k,
      task.task,
      ownerOf(nodeId, pool.settings.owners, enrolled.owner),
      task.classKey,
      task.priority,
      task.counted ? 1 : 0,
      before,
      task.after,
    );
  }
  // Rows whose task the copy no longer counts, nor will: nothing left to subtract.
  sql.exec("DELETE FROM replicas_elsewhere WHERE shard = ? AND counted = 0 AND after_version < ?", k, seen);
  return true;
}

/**
 * The other shards' classes as `nodeId` may take them: each shard's
 * replicating pending tasks less those the node, or a node of its owner
 * here, holds or ran a replica of, as the copy counts them now.
 */
export function classesFor(pool: Pool, nodeId: string, classes: RemoteClass[]): RemoteClass[] {
  const { sql } = pool;
  const enrolled =
    sql
      .exec<{ owner: string }>("SELECT owner FROM node_credentials WHERE node_id = ? AND revoked_ms IS NULL", nodeId)
      .toArray()[0]?.owner ?? null;
  const rows = sql
    .exec<{
      shard: number;
      class_key: string;
      priority: number;
      counted: number;
      counted_before: number;
      after_version: number;
    }>(
      `SELECT DISTINCT shard, task_seq, class_key, priority, counted, counted_before, after_version
       FROM replicas_elsewhere WHERE node_id = ?1 OR owner = ?2`,
      nodeId,
      ownerOf(nodeId, pool.settings.owners, enrolled),
    )
    .toArray();
  if (rows.length === 0) return classes;
  const ran = new Map<string, number>();
  for (const r of rows) {
    const counted = pool.summary.version(r.shard) > r.after_version ? r.counted : r.counted_before;
    const id = `${r.shard}|${r.class_key}|${r.priority}`;
    if (counted === 1) ran.set(id, (ran.get(id) ?? 0) + 1);
  }
  if (ran.size === 0) return classes;
  return classes.map((c) => {
    const levels: ClassLevel[] = c.levels.map((l) => {
      const n = ran.get(`${c.shard}|${c.key}|${l.priority}`) ?? 0;
      return n === 0 ? l : { ...l, replicating: Math.max(0, l.replicating - n) };
    });
    return { ...c, levels };
  });
}
