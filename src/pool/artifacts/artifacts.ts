// Artifact keys bound to stored R2 objects. The Worker streams bytes into a
// fresh object; only a bind here makes them visible under a key, and the
// bind re-checks everything the write depends on in the same transaction.

import { artifactListEntry } from "../../protocol/checkpoints";
import { jobKeyRange, jobOfKey, replicaPrefix, taskOfKey } from "../../protocol/keys";
import { isLiveLease, type LeaseAndTask } from "../../rules/leases";
import { sealedFrom, type Viewer } from "../ledger/sealing";
import { seen } from "../nodes/registry";
import { bindable, kept, referenced, unreferenced } from "./collection";

export type ArtifactRow = {
  key: string;
  object: string;
  sha256: string;
  size_bytes: number;
  etag: string;
  created_ms: number;
};

/** Who is writing: null is an unscoped writer (open mode, or an operator). */
export type Writer = string | null;

export type WriteCheck = { ok: true } | { ok: false; reason: "forbidden" | "completed"; detail: string };

/**
 * May `writer` bind `key` now? An accepted task's prefix is immutable for
 * everyone, and so is everything under an archived job's; a scoped writer
 * needs a live lease on the key's task.
 */
export function checkWrite(sql: SqlStorage, now: number, key: string, writer: Writer): WriteCheck {
  const job = jobOfKey(key);
  const owner = taskOfKey(key);
  // Both in one statement, which every upload's bind runs: the job archived (or being archived), the task committed.
  const { archived, done } = sql
    .exec<{ archived: number; done: number }>(
      `SELECT EXISTS (SELECT 1 FROM archived_jobs WHERE job_id = ?1) AS archived,
              EXISTS (SELECT 1 FROM tasks WHERE job_id = ?1 AND task_id = ?2 AND state = 'COMPLETED') AS done`,
      job,
      owner?.taskId ?? null,
    )
    .one();
  if (archived)
    return { ok: false, reason: "completed", detail: `job ${job} is archived; its artifacts are read-only` };
  if (owner && done) {
    return {
      ok: false,
      reason: "completed",
      detail: `task ${owner.jobId}/${owner.taskId} is committed; its outputs are immutable`,
    };
  }
  if (writer === null) return { ok: true };
  // A cancelled task's last holder may still upload until its lease would have ended: the reference agent
  // uploads before it commits and stops on a refused upload, where a commit refused (accepted: false) it
  // takes in its stride (docs/protocol.md §7). Hosted runs cancel a round's stragglers routinely (§17).
  const lease =
    owner &&
    (liveLeaseOf(sql, now, writer, owner.jobId, owner.taskId) ??
      cancelledLeaseOf(sql, now, writer, owner.jobId, owner.taskId));
  if (lease && lease.replica === 0) return { ok: true };
  if (lease) {
    // A replica writes only its own outputs: never another replica's, nor the task's key (docs/protocol.md §14).
    const prefix = replicaPrefix(owner.jobId, owner.taskId, lease.replica);
    if (key.startsWith(prefix)) return { ok: true };
    return {
      ok: false,
      reason: "forbidden",
      detail: `node ${writer} runs a replica of this task: it writes only under '${prefix}'`,
    };
  }
  return { ok: false, reason: "forbidden", detail: `node ${writer} holds no live lease covering '${key}'` };
}

/**
 * The live lease `nodeId` holds on (job, task): the task's current lease,
 * or one replica's of a replicated task (docs/protocol.md §14); null for none.
 */
function liveLeaseOf(sql: SqlStorage, now: number, nodeId: string, jobId: string, taskId: string) {
  const rows = sql
    .exec<LeaseAndTask>(
      `SELECT l.lease_id, l.status, l.deadline_ms, l.replica, t.state, t.lease_id AS current_lease_id
       FROM tasks t JOIN leases l ON l.task_seq = t.seq
       WHERE t.job_id = ? AND t.task_id = ? AND l.node_id = ? AND l.status = 'live'`,
      jobId,
      taskId,
      nodeId,
    )
    .toArray();
  return rows.find((row) => isLiveLease(row, now)) ?? null;
}

/** The lease `nodeId` held on (job, task) when the task was cancelled, while its deadline has not passed; null for none. */
function cancelledLeaseOf(sql: SqlStorage, now: number, nodeId: string, jobId: string, taskId: string) {
  return (
    sql
      .exec<{ replica: number }>(
        `SELECT l.replica FROM tasks t JOIN leases l ON l.task_seq = t.seq
         WHERE t.job_id = ? AND t.task_id = ? AND t.state = 'CANCELLED' AND l.node_id = ? AND l.status = 'cancelled'
           AND l.deadline_ms > ?`,
        jobId,
        taskId,
        nodeId,
        now,
      )
      .toArray()[0] ?? null
  );
}

/** Whether `nodeId` holds a live lease on (job, task). */
export function holdsLiveLease(sql: SqlStorage, now: number, nodeId: string, jobId: string, taskId: string): boolean {
  return liveLeaseOf(sql, now, nodeId, jobId, taskId) !== null;
}

export interface StoredObject {
  object: string;
  sha256: string;
  size_bytes: number;
  etag: string;
}

export type BindResult =
  | { ok: true; record: ArtifactRow; replaced: string | null }
  | { ok: false; reason: "forbidden" | "completed" | "expired"; detail: string };

/** Points `key` at a freshly stored object, if the write is still allowed. */
export function bind(sql: SqlStorage, now: number, key: string, stored: StoredObject, writer: Writer): BindResult {
  if (!bindable(sql, stored.object)) {
    return {
      ok: false,
      reason: "expired",
      detail: "the upload took longer than an hour and was discarded: upload again",
    };
  }
  const check = checkWrite(sql, now, key, writer);
  if (!check.ok) {
    unreferenced(sql, now, stored.object); // refused bytes are collected
    return check;
  }
  if (writer !== null) seen(sql, now, writer); // an upload proves its node alive (docs/protocol.md §5)
  const previous = findArtifact(sql, key);
  const record = sql
    .exec<ArtifactRow>(
      `INSERT INTO artifacts (key, object, sha256, size_bytes, etag, created_ms) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (key) DO UPDATE SET object = excluded.object, sha256 = excluded.sha256,
         size_bytes = excluded.size_bytes, etag = excluded.etag, created_ms = excluded.created_ms
       RETURNING *`,
      key,
      stored.object,
      stored.sha256,
      stored.size_bytes,
      stored.etag,
      now,
    )
    .one();
  referenced(sql, stored.object);
  if (previous) unreferenced(sql, now, previous.object); // the bytes it replaced
  // Bytes a verdict judged or a commit accepted stay, whatever key was rebound (docs/protocol.md §14).
  const replaced = previous && !kept(sql, previous.object) ? previous.object : null;
  return { ok: true, record, replaced };
}

export function findArtifact(sql: SqlStorage, key: string): ArtifactRow | undefined {
  return sql.exec<ArtifactRow>("SELECT * FROM artifacts WHERE key = ?", key).toArray()[0];
}

/** The artifact at `key` as `viewer` may read it: none while it is another replica's sealed output (docs/protocol.md §14). */
export function readArtifact(sql: SqlStorage, key: string, viewer: Viewer): ArtifactRow | undefined {
  return sealedFrom(sql, key, viewer) ? undefined : findArtifact(sql, key);
}

/**
 * One page of `[{uri, key, size_bytes}]` under `jobs/{jobId}/`, sorted by
 * key, after the key `after` (docs/protocol.md §12: paged, never assembled whole), with
 * the keys `viewer` may not read left out; `next` is the key to continue
 * after, null on the last page. A page may come out short of `limit` where
 * it left keys out: the walk costs `limit` rows, whatever is sealed.
 */
export function listJobArtifacts(sql: SqlStorage, jobId: string, after: string | null, limit: number, viewer: Viewer) {
  const [from, before] = jobKeyRange(jobId);
  const rows = sql
    .exec<{ key: string; size_bytes: number }>(
      "SELECT key, size_bytes FROM artifacts WHERE key >= ? AND key > ? AND key < ? ORDER BY key LIMIT ?",
      from,
      after ?? "",
      before,
      limit + 1,
    )
    .toArray();
  const page = rows.slice(0, limit);
  const items = page.filter((row) => !sealedFrom(sql, row.key, viewer)).map(artifactListEntry);
  return { items, next: rows.length > limit ? page[page.length - 1]!.key : null };
}
