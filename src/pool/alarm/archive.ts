// Archiving jobs past retention (docs/protocol.md §12). A job terminal for longer than
// the retention is first marked (from then on it is read-only: writes are
// refused, its lease ids unknown), then its rows are written to R2 page by
// page, the index last, and only then deleted, in one transaction that also
// records it as archived. Reads of an archived job are answered from R2 by
// the Worker. A run that dies midway leaves the mark: the next run writes
// the same objects again, byte for byte, and carries on.

import {
  ARCHIVE_FORMAT,
  ARCHIVE_PAGE_ROWS,
  type ArchivedArtifact,
  type ArchivedManifest,
  type ArchivedTask,
  type ArchiveIndex,
  type ArchiveSection,
  archiveIndexKey,
  archivePageKey,
  type PageRange,
} from "../../protocol/archive";
import type { JsonObject } from "../../protocol/json";
import { jobKeyRange } from "../../protocol/keys";
import { type ManifestRow, manifestRecord } from "../artifacts/checkpoints";
import { findJob, jobRecord, TASKS_WITH_LEASE, type TaskLeaseRow, taskAnswer } from "../jobs/jobs";
import { ledgerAfter } from "../ledger/created";
import { eventRecord, iso } from "../ledger/events";

/** Tasks archived per alarm run (after its first job, which is always finished): claims wait at most one batch. */
export const ARCHIVE_BATCH_TASKS = 10_000;

/**
 * The job to archive next: the one whose archiving was interrupted, else the
 * job finished longest ago, if that was at least `retentionMs` before `now`,
 * which is marked here (read-only from this transaction on). Null when none is due.
 */
export function startArchive(sql: SqlStorage, now: number, retentionMs: number): string | null {
  const open = sql
    .exec<{ job_id: string }>("SELECT job_id FROM archived_jobs WHERE archived_ms IS NULL LIMIT 1")
    .toArray()[0];
  if (open) return open.job_id;
  const due = sql
    .exec<{ job_id: string; seq: number }>(
      `SELECT job_id, seq FROM jobs WHERE terminal_state IS NOT NULL AND finished_ms <= ?
       ORDER BY finished_ms LIMIT 1`,
      now - retentionMs,
    )
    .toArray()[0];
  if (!due) return null;
  sql.exec("INSERT INTO archived_jobs (job_id, seq, started_ms) VALUES (?, ?, ?)", due.job_id, due.seq, now);
  return due.job_id;
}

/** When the next archiving run is due: now while one is unfinished, else when the oldest finished job expires. */
export function nextArchive(sql: SqlStorage, now: number, retentionMs: number): number | null {
  const open = sql.exec("SELECT 1 FROM archived_jobs WHERE archived_ms IS NULL LIMIT 1").toArray().length > 0;
  if (open) return now;
  const oldest = sql
    .exec<{ t: number | null }>("SELECT MIN(finished_ms) AS t FROM jobs WHERE terminal_state IS NOT NULL")
    .one().t;
  return oldest === null ? null : oldest + retentionMs;
}

/** An object of the archive: its R2 key and its bytes. */
export type ArchiveObject = { key: string; body: string };

/**
 * The archive of a marked job, one object at a time (each a few hundred KiB
 * at most): every page of every section, then the index. The rows cannot
 * change meanwhile (the job is read-only), so the objects are the same
 * whenever they are built.
 */
export function* archiveObjects(sql: SqlStorage, pool: string, jobId: string): Generator<ArchiveObject> {
  const marked = sql.exec<{ started_ms: number }>("SELECT started_ms FROM archived_jobs WHERE job_id = ?", jobId).one();
  const pages = {} as Record<ArchiveSection, PageRange[]>;
  for (const [section, read] of Object.entries(SECTIONS) as [ArchiveSection, Section][]) {
    pages[section] = [];
    let after: Cursor = null;
    for (;;) {
      const rows = read(sql, jobId, after);
      if (rows.length === 0) break;
      const first = rows[0]!.sort;
      const last = rows[rows.length - 1]!.sort;
      yield {
        key: archivePageKey(pool, jobId, section, pages[section].length),
        body: JSON.stringify(rows.map((r) => r.item)),
      };
      pages[section].push({ first, last, count: rows.length });
      after = rows[rows.length - 1]!.cursor;
      if (rows.length < ARCHIVE_PAGE_ROWS) break;
    }
  }
  const index: ArchiveIndex = {
    format: ARCHIVE_FORMAT,
    job_id: jobId,
    archived_at: iso(marked.started_ms),
    job: jobRecord(sql, findJob(sql, jobId)!, pool) as unknown as JsonObject,
    pages,
  };
  yield { key: archiveIndexKey(pool, jobId), body: JSON.stringify(index) };
}

/**
 * The archive is in R2: deletes the job's rows (its artifacts' bytes stay
 * in R2, named by the archive) and records it as archived. One transaction.
 * Returns the number of tasks it held.
 */
export function finishArchive(sql: SqlStorage, now: number, jobId: string): number {
  const tasks = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM tasks WHERE job_id = ?", jobId).one().n;
  sql.exec("DELETE FROM leases WHERE task_seq IN (SELECT seq FROM tasks WHERE job_id = ?)", jobId);
  sql.exec("DELETE FROM task_failures WHERE task_seq IN (SELECT seq FROM tasks WHERE job_id = ?)", jobId);
  sql.exec("DELETE FROM replica_results WHERE task_seq IN (SELECT seq FROM tasks WHERE job_id = ?)", jobId);
  sql.exec("DELETE FROM events WHERE job_id = ?", jobId);
  sql.exec("DELETE FROM tasks_created WHERE job_id = ?", jobId);
  // The job's counts leave the pool's at once; with its queue row gone its tasks' delete counts nothing (schema step 38).
  sql.exec(
    `UPDATE pool_task_counts SET pending = pool_task_counts.pending - q.pending, leased = pool_task_counts.leased - q.leased,
       completed = pool_task_counts.completed - q.completed, failed = pool_task_counts.failed - q.failed,
       cancelled = pool_task_counts.cancelled - q.cancelled
     FROM (SELECT * FROM job_queues WHERE job_id = ?) AS q`,
    jobId,
  );
  sql.exec("DELETE FROM queue_classes WHERE job_id = ?", jobId);
  sql.exec("DELETE FROM job_queues WHERE job_id = ?", jobId);
  sql.exec("DELETE FROM tasks WHERE job_id = ?", jobId);
  sql.exec("DELETE FROM artifacts WHERE key >= ? AND key < ?", ...jobKeyRange(jobId));
  sql.exec("DELETE FROM checkpoint_parts WHERE job_id = ?", jobId);
  sql.exec("DELETE FROM checkpoint_manifests WHERE job_id = ?", jobId);
  sql.exec("DELETE FROM jobs WHERE job_id = ?", jobId);
  sql.exec("UPDATE archived_jobs SET archived_ms = ? WHERE job_id = ?", now, jobId);
  return tasks;
}

// -- the sections: each reads one page of rows after a cursor, in a fixed order

type Cursor = string | number | null;
type Row = { item: unknown; sort: string | number; cursor: Cursor };
type Section = (sql: SqlStorage, jobId: string, after: Cursor) => Row[];

const SECTIONS: Record<ArchiveSection, Section> = {
  events: (sql, jobId, after) =>
    ledgerAfter(sql, jobId, Number(after ?? 0), ARCHIVE_PAGE_ROWS).map((r) => ({
      item: eventRecord(r),
      sort: r.seq,
      cursor: r.seq,
    })),

  tasks: (sql, jobId, after) =>
    sql
      .exec<TaskLeaseRow & TaskStored>(
        `SELECT t.payload, t.commit_key, t.lease_seconds, t.output_json, t.accepted_object, ${TASKS_WITH_LEASE}
         WHERE t.job_id = ? AND t.task_id > ? ORDER BY t.task_id LIMIT ?`,
        jobId,
        after ?? "",
        ARCHIVE_PAGE_ROWS,
      )
      .toArray()
      .map((r) => {
        const stored: JsonObject = {
          payload: JSON.parse(r.payload) as JsonObject,
          commit_key: r.commit_key,
          lease_seconds: r.lease_seconds,
          output_json: r.output_json === 1,
          lease_id: r.current_lease_id,
          accepted_object: r.accepted_object,
        };
        // A finished job holds no live lease: the answer is the same at any time.
        const item: ArchivedTask = [taskAnswer(r, 0), stored];
        return { item, sort: r.task_id, cursor: r.task_id };
      }),

  // In the order they were issued.
  leases: (sql, jobId, after) =>
    sql
      .exec<Record<string, SqlStorageValue> & { claimed: number }>(
        `SELECT l.rowid AS claimed, l.lease_id, t.task_id, l.node_id, l.attempt_number, l.issued_ms, l.deadline_ms,
                l.status, l.renewals, l.renewed_ms
         FROM tasks t JOIN leases l ON l.task_seq = t.seq
         WHERE t.job_id = ? AND l.rowid > ? ORDER BY l.rowid LIMIT ?`,
        jobId,
        after ?? 0,
        ARCHIVE_PAGE_ROWS,
      )
      .toArray()
      .map(({ claimed, ...lease }) => ({ item: lease, sort: claimed, cursor: claimed })),

  artifacts: (sql, jobId, after) =>
    sql
      .exec<ArchivedArtifact>(
        `SELECT key, object, sha256, size_bytes, etag, created_ms FROM artifacts
         WHERE key >= ? AND key < ? AND key > ? ORDER BY key LIMIT ?`,
        ...jobKeyRange(jobId),
        after ?? "",
        ARCHIVE_PAGE_ROWS,
      )
      .toArray()
      .map((r) => ({ item: r, sort: r.key, cursor: r.key })),

  // By task, then commit order: a task's manifests are found by its id.
  checkpoints: (sql, jobId, after) => {
    const [task, seq] = after === null ? ["", 0] : (JSON.parse(String(after)) as [string, number]);
    return sql
      .exec<ManifestRow>(
        `SELECT * FROM checkpoint_manifests WHERE job_id = ? AND (task_id > ? OR (task_id = ? AND seq > ?))
         ORDER BY task_id, seq LIMIT ?`,
        jobId,
        task,
        task,
        seq,
        ARCHIVE_PAGE_ROWS,
      )
      .toArray()
      .map((r) => {
        const item: ArchivedManifest = [r.task_id, manifestRecord(r)];
        return { item, sort: r.task_id, cursor: JSON.stringify([r.task_id, r.seq]) };
      });
  },

  checkpoint_parts: (sql, jobId, after) =>
    sql
      .exec<Record<string, SqlStorageValue> & { rowid: number }>(
        `SELECT rowid, task_id, attempt_id, step, key, sha256, size_bytes, registered_ms FROM checkpoint_parts
         WHERE job_id = ? AND rowid > ? ORDER BY rowid LIMIT ?`,
        jobId,
        after ?? 0,
        ARCHIVE_PAGE_ROWS,
      )
      .toArray()
      .map(({ rowid, ...part }) => ({ item: part, sort: rowid, cursor: rowid })),
};

type TaskStored = {
  payload: string;
  commit_key: string;
  lease_seconds: number;
  output_json: number;
  accepted_object: string | null;
};
