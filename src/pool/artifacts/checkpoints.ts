// The durable checkpoint catalog (docs/protocol.md §8): parts first, manifest last. A
// manifest is written only after every part it names was registered for the
// same (job, task, attempt, step) with the same hash, so a half-uploaded
// checkpoint never exists. Every function here runs inside one synchronous
// transaction of the pool object and must never await. Never delete a
// manifest: quarantine marks it "invalid" and `latest` skips it.

import type {
  CheckpointManifest,
  CheckpointPart,
  CommitCheckpointRequest,
  RegisterPartRequest,
} from "../../protocol/checkpoints";
import { mintId } from "../../protocol/ids";
import type { JsonObject } from "../../protocol/json";
import { MAX_STORED_TEXT_BYTES } from "../../protocol/limits";
import { commitProblems, lostWork as lostSteps } from "../../rules/checkpoints";
import { truncateList, truncateUtf8 } from "../../rules/text";
import { archiveState } from "../jobs/jobs";
import { findTask } from "../jobs/tasks";
import { emit, iso } from "../ledger/events";
import { seen } from "../nodes/registry";
import { holdsLiveLease, type Writer } from "./artifacts";

export type ManifestRow = {
  seq: number;
  manifest_id: string;
  job_id: string;
  task_id: string;
  attempt_id: string;
  step: number;
  framework: string;
  strategy_family: string;
  world_size: number;
  storage_prefix: string;
  parts: string; // CheckpointPart[] JSON, in the committer's order
  validation: "hash_verified" | "restore_verified" | "invalid";
  created_ms: number;
};

/** Why a write was refused before anything was checked: no lease, no such task, an archived job (read-only). */
export type Refusal = { ok: false; reason: "forbidden" | "unknown_task" | "archived" };

export type RegisterPartResult = { ok: true; key: string } | Refusal;

export type CommitResult =
  | { ok: true; manifest: CheckpointManifest; deduplicated: boolean }
  | Refusal
  | { ok: false; reason: "rejected"; problems: string[] };

export type LatestResult = { ok: true; manifest: CheckpointManifest | null } | { ok: false; reason: "unknown_task" };

export type LostWorkResult =
  | { ok: true; lost_steps: number | null; latest_step: number | null }
  | { ok: false; reason: "unknown_task" };

export type MarkResult =
  | { ok: true; manifest: CheckpointManifest }
  | { ok: false; reason: "unknown_task" | "unknown_manifest" | "invalid" | "archived" };

/**
 * May `writer` write checkpoints of (job, task)? A scoped writer needs a live
 * lease on the task (docs/protocol.md §9) — checked before existence, so a node learns
 * nothing about tasks it does not hold (403, never 404).
 */
function authorize(sql: SqlStorage, now: number, jobId: string, taskId: string, writer: Writer): Refusal | null {
  if (writer !== null && !holdsLiveLease(sql, now, writer, jobId, taskId)) return { ok: false, reason: "forbidden" };
  if (archiveState(sql, jobId) !== null) return { ok: false, reason: "archived" };
  if (!findTask(sql, jobId, taskId)) return { ok: false, reason: "unknown_task" };
  return null;
}

/** The event data every checkpoint event carries: the task, and the node when known. */
function scope(taskId: string, writer: Writer): JsonObject {
  return writer === null ? { task_id: taskId } : { task_id: taskId, node_id: writer };
}

/** Records one uploaded part for (job, task, attempt, step); re-registering a key replaces it. */
export function registerPart(
  sql: SqlStorage,
  now: number,
  jobId: string,
  taskId: string,
  request: RegisterPartRequest,
  writer: Writer,
): RegisterPartResult {
  const refused = authorize(sql, now, jobId, taskId, writer);
  if (refused) return refused;
  const { attempt_id, step, part } = request;
  sql.exec(
    `INSERT INTO checkpoint_parts (job_id, task_id, attempt_id, step, key, sha256, size_bytes, registered_ms)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (job_id, task_id, attempt_id, step, key) DO UPDATE SET
       sha256 = excluded.sha256, size_bytes = excluded.size_bytes, registered_ms = excluded.registered_ms`,
    jobId,
    taskId,
    attempt_id,
    step,
    part.key,
    part.sha256,
    part.size_bytes,
    now,
  );
  // The key is any string: the message keeps a bounded copy, the data the key itself.
  const message = truncateUtf8(`checkpoint part ${part.key} of step ${step} registered`, MAX_STORED_TEXT_BYTES);
  emit(sql, now, {
    jobId,
    type: "CHECKPOINT_PARTS_REGISTERED",
    message,
    data: {
      ...scope(taskId, writer),
      attempt_id,
      step,
      key: part.key,
      sha256: part.sha256,
      size_bytes: part.size_bytes,
    },
  });
  if (writer !== null) seen(sql, now, writer); // any request of a node proves it alive (docs/protocol.md §5)
  return { ok: true, key: part.key };
}

/**
 * Writes a hash_verified manifest when every expected part was registered
 * for the same (job, task, attempt, step) with the same hash; otherwise
 * refuses with every problem and writes nothing but the rejection event.
 *
 * Identical commits are deduplicated: a commit whose attempt, step, prefix,
 * world size, framework, strategy family and set of parts equal an existing
 * manifest's returns that manifest (same manifest_id, its current
 * validation, no second event). So a client retrying a commit whose answer
 * it lost creates no duplicate, and re-committing a quarantined checkpoint
 * cannot bring it back. Any difference makes a new manifest; the newest
 * wins a tie on step.
 */
export function commitManifest(
  sql: SqlStorage,
  now: number,
  jobId: string,
  taskId: string,
  request: CommitCheckpointRequest,
  writer: Writer,
): CommitResult {
  const refused = authorize(sql, now, jobId, taskId, writer);
  if (refused) return refused;
  const { attempt_id, step } = request;
  const registered = new Map(
    sql
      .exec<CheckpointPart>(
        `SELECT key, sha256, size_bytes FROM checkpoint_parts
         WHERE job_id = ? AND task_id = ? AND attempt_id = ? AND step = ?`,
        jobId,
        taskId,
        attempt_id,
        step,
      )
      .toArray()
      .map((p) => [p.key, { key: p.key, sha256: p.sha256, size_bytes: p.size_bytes }] as const),
  );
  const problems = commitProblems(registered, request.expected_parts);
  if (problems.length > 0) {
    // The answer lists every problem; the ledger keeps the first few (docs/protocol.md §12: bounded rows).
    emit(sql, now, {
      jobId,
      type: "CHECKPOINT_REJECTED",
      message: `checkpoint of step ${step} refused: ${problems.length} problem(s)`,
      data: {
        ...scope(taskId, writer),
        attempt_id,
        step,
        problems: truncateList(problems, MAX_STORED_TEXT_BYTES),
      },
    });
    return { ok: false, reason: "rejected", problems };
  }

  const identity = contentIdentity(request);
  const twin = sql
    .exec<ManifestRow>(
      "SELECT * FROM checkpoint_manifests WHERE job_id = ? AND task_id = ? AND attempt_id = ? AND step = ? ORDER BY seq",
      jobId,
      taskId,
      attempt_id,
      step,
    )
    .toArray()
    .find((row) => contentIdentity({ ...row, expected_parts: JSON.parse(row.parts) as CheckpointPart[] }) === identity);
  if (writer !== null) seen(sql, now, writer);
  if (twin) return { ok: true, manifest: manifestRecord(twin), deduplicated: true };

  const row = sql
    .exec<ManifestRow>(
      `INSERT INTO checkpoint_manifests (manifest_id, job_id, task_id, attempt_id, step, framework, strategy_family,
         world_size, storage_prefix, parts, validation, created_ms)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'hash_verified', ?) RETURNING *`,
      newManifestId(sql),
      jobId,
      taskId,
      attempt_id,
      step,
      request.framework,
      request.strategy_family,
      request.world_size,
      request.storage_prefix,
      JSON.stringify(request.expected_parts.map(({ key, sha256, size_bytes }) => ({ key, sha256, size_bytes }))),
      now,
    )
    .one();
  emit(sql, now, {
    jobId,
    type: "CHECKPOINT_MANIFEST_COMMITTED",
    message: `checkpoint ${row.manifest_id} of step ${step} committed`,
    data: {
      ...scope(taskId, writer),
      manifest_id: row.manifest_id,
      attempt_id,
      step,
      world_size: row.world_size,
      parts: request.expected_parts.length,
    },
  });
  return { ok: true, manifest: manifestRecord(row), deduplicated: false };
}

/** What makes two commits the same checkpoint: everything but order of parts. */
function contentIdentity(c: {
  storage_prefix: string;
  world_size: number;
  framework: string;
  strategy_family: string;
  expected_parts: readonly CheckpointPart[];
}): string {
  const parts = c.expected_parts
    .map((p) => [p.key, p.sha256, p.size_bytes] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return JSON.stringify([c.storage_prefix, c.world_size, c.framework, c.strategy_family, parts]);
}

// `compatible_world_sizes` is [world_size] for every manifest stored here: the
// commit request cannot widen it (docs/protocol.md §3.4's default). So "contains N" is
// `world_size = N`, a seek on checkpoint_manifests_latest_ws. `validation
// DESC` puts restore_verified before hash_verified (the CHECK admits only
// these two besides 'invalid', which the partial indexes exclude); `seq DESC`
// is "newest first". Exported for the query-plan test.
export const LATEST_SQL = `SELECT * FROM checkpoint_manifests
  WHERE job_id = ? AND task_id = ? AND validation <> 'invalid'
  ORDER BY step DESC, validation DESC, seq DESC LIMIT 1`;
export const LATEST_FOR_WORLD_SIZE_SQL = `SELECT * FROM checkpoint_manifests
  WHERE job_id = ? AND task_id = ? AND world_size = ? AND validation <> 'invalid'
  ORDER BY step DESC, validation DESC, seq DESC LIMIT 1`;

function latestRow(sql: SqlStorage, jobId: string, taskId: string, worldSize: number | null): ManifestRow | undefined {
  const rows =
    worldSize === null
      ? sql.exec<ManifestRow>(LATEST_SQL, jobId, taskId)
      : sql.exec<ManifestRow>(LATEST_FOR_WORLD_SIZE_SQL, jobId, taskId, worldSize);
  return rows.toArray()[0];
}

/**
 * The manifest to restore from: highest step among non-invalid manifests
 * (restorable at `worldSize` when given); ties prefer restore_verified, then
 * the newest. null when there is none.
 */
export function latest(sql: SqlStorage, jobId: string, taskId: string, worldSize: number | null): LatestResult {
  if (!findTask(sql, jobId, taskId)) return { ok: false, reason: "unknown_task" };
  const row = latestRow(sql, jobId, taskId, worldSize);
  return { ok: true, manifest: row ? manifestRecord(row) : null };
}

/** Steps a failure at `failedAtStep` loses against the latest valid manifest (any world size). */
export function lostWork(sql: SqlStorage, jobId: string, taskId: string, failedAtStep: number): LostWorkResult {
  if (!findTask(sql, jobId, taskId)) return { ok: false, reason: "unknown_task" };
  return { ok: true, ...lostSteps(latestRow(sql, jobId, taskId, null)?.step ?? null, failedAtStep) };
}

/**
 * An operator restored from this manifest and it worked: hash_verified →
 * restore_verified. Idempotent; a quarantined manifest stays invalid.
 */
export function markRestoreVerified(
  sql: SqlStorage,
  now: number,
  jobId: string,
  taskId: string,
  manifestId: string,
): MarkResult {
  const found = findManifest(sql, jobId, taskId, manifestId);
  if (!found.ok) return found;
  const row = found.row;
  if (row.validation === "invalid") return { ok: false, reason: "invalid" };
  if (row.validation === "restore_verified") return { ok: true, manifest: manifestRecord(row) };
  const updated = sql
    .exec<ManifestRow>(
      "UPDATE checkpoint_manifests SET validation = 'restore_verified' WHERE seq = ? RETURNING *",
      row.seq,
    )
    .one();
  emit(sql, now, {
    jobId,
    type: "CHECKPOINT_RESTORE_VERIFIED",
    message: `checkpoint ${manifestId} of step ${row.step} restore-verified`,
    data: {
      task_id: taskId,
      manifest_id: manifestId,
      attempt_id: row.attempt_id,
      step: row.step,
    },
  });
  return { ok: true, manifest: manifestRecord(updated) };
}

/**
 * Marks a manifest invalid so `latest` never selects it again, recording
 * the reason. Final: nothing makes it valid again. The event is
 * CHECKPOINT_REJECTED with the manifest_id and reason (the EventType enum
 * is closed: the Python client parses it). Quarantining twice keeps the
 * first reason and emits nothing. Any reason is accepted; the stored reason
 * and the event message each keep at most MAX_STORED_TEXT_BYTES of it,
 * marked where it was cut (docs/protocol.md §12).
 */
export function quarantine(
  sql: SqlStorage,
  now: number,
  jobId: string,
  taskId: string,
  manifestId: string,
  reason: string,
): MarkResult {
  const found = findManifest(sql, jobId, taskId, manifestId);
  if (!found.ok) return found;
  const row = found.row;
  if (row.validation === "invalid") return { ok: true, manifest: manifestRecord(row) };
  const kept = truncateUtf8(reason, MAX_STORED_TEXT_BYTES);
  const updated = sql
    .exec<ManifestRow>(
      "UPDATE checkpoint_manifests SET validation = 'invalid', invalid_reason = ? WHERE seq = ? RETURNING *",
      kept,
      row.seq,
    )
    .one();
  const message = `checkpoint ${manifestId} of step ${row.step} quarantined: ${reason}`;
  emit(sql, now, {
    jobId,
    type: "CHECKPOINT_REJECTED",
    message: truncateUtf8(message, MAX_STORED_TEXT_BYTES),
    data: {
      task_id: taskId,
      manifest_id: manifestId,
      attempt_id: row.attempt_id,
      step: row.step,
      reason: kept,
    },
  });
  return { ok: true, manifest: manifestRecord(updated) };
}

function findManifest(
  sql: SqlStorage,
  jobId: string,
  taskId: string,
  manifestId: string,
): { ok: true; row: ManifestRow } | { ok: false; reason: "unknown_task" | "unknown_manifest" | "archived" } {
  if (archiveState(sql, jobId) !== null) return { ok: false, reason: "archived" };
  if (!findTask(sql, jobId, taskId)) return { ok: false, reason: "unknown_task" };
  const row = sql
    .exec<ManifestRow>(
      "SELECT * FROM checkpoint_manifests WHERE manifest_id = ? AND job_id = ? AND task_id = ?",
      manifestId,
      jobId,
      taskId,
    )
    .toArray()[0];
  return row ? { ok: true, row } : { ok: false, reason: "unknown_manifest" };
}

/** The wire form (docs/protocol.md §3.4). */
export function manifestRecord(row: ManifestRow): CheckpointManifest {
  return {
    schema_version: "v1alpha1",
    manifest_id: row.manifest_id,
    job_id: row.job_id,
    attempt_id: row.attempt_id,
    step: row.step,
    framework: row.framework,
    strategy_family: row.strategy_family,
    world_size: row.world_size,
    compatible_world_sizes: [row.world_size],
    storage_prefix: row.storage_prefix,
    parts: JSON.parse(row.parts) as CheckpointPart[],
    validation: row.validation,
    created: iso(row.created_ms),
    checkpoint_duration_s: null,
  };
}

/**
 * "ck-" + 12 lowercase hex digits (docs/protocol.md §3.4) that no manifest of this pool
 * has (docs/protocol.md §12: an id collision is retried, never a 500). Looked up in the
 * caller's transaction; `draw` is the randomness, a parameter only so a test
 * can force collisions.
 */
export function newManifestId(sql: SqlStorage, draw?: () => string): string {
  const taken = (id: string) =>
    sql.exec("SELECT 1 FROM checkpoint_manifests WHERE manifest_id = ?", id).toArray().length > 0;
  return mintId("ck-", taken, draw);
}
