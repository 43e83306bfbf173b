// The pool object's job, artifact and checkpoint calls (docs/protocol.md §7, §10, §12).
// Reads of a job answer "archived" once it lives in R2 only (docs/protocol.md §12): the
// Worker then reads its archive; null is a job the pool never had. Reads
// take the `viewer` they are served to: a node's id sees what docs/protocol.md §14
// seals from nodes sealed, null (an operator) everything.

import type { CommitCheckpointRequest, RegisterPartRequest } from "../../protocol/checkpoints";
import type { JobSpec } from "../../protocol/jobs";
import { jobOfKey } from "../../protocol/keys";
import { LIST_PAGE_MAX_BYTES } from "../../protocol/limits";
import type { TaskSpec } from "../../protocol/tasks";
import {
  listJobArtifacts as artifactsPage,
  bind,
  checkWrite,
  readArtifact,
  type StoredObject,
  type Writer,
} from "../artifacts/artifacts";
import {
  commitManifest,
  latest,
  lostWork,
  markRestoreVerified,
  quarantine,
  registerPart,
} from "../artifacts/checkpoints";
import { unreferenced, uploadStarted } from "../artifacts/collection";
import { sealedPending, type Viewer } from "../ledger/sealing";
import type { Pool } from "../pool";
import { afterNewWork } from "../shards/exchange";
import {
  archiveState,
  cancelJob as cancel,
  jobEvents as eventsPage,
  findJob,
  insertJob,
  type JobPlace,
  jobRecord,
  listJobs as jobsPage,
  poolPending,
  jobTasks as tasksOf,
} from "./jobs";

function archivedOrNull(pool: Pool, jobId: string | null): "archived" | null {
  return jobId !== null && archiveState(pool.sql, jobId) === "archived" ? "archived" : null;
}

// -- jobs --------------------------------------------------------------------

/**
 * Records a job and queues all its tasks in one transaction: all or
 * nothing. A job id the pool already knows is refused, writing nothing:
 * the caller mints another (docs/protocol.md §12: an id collision is retried).
 */
export async function submitJob(
  pool: Pool,
  jobId: string,
  spec: JobSpec,
  tasks: TaskSpec[],
  name: string,
  place: JobPlace,
) {
  const submitted = await pool.change((now) => {
    // The archive lives under the pool's name as the Worker routes it.
    pool.sql.exec("INSERT INTO pool_name (name) SELECT ? WHERE NOT EXISTS (SELECT 1 FROM pool_name)", name);
    if (!insertJob(pool.sql, now, jobId, spec, tasks, place))
      return { ok: false as const, reason: "job_id_taken" as const };
    return { ok: true as const, job: jobRecord(pool.sql, findJob(pool.sql, jobId)!, name) };
  });
  // Over several shards, the pool summary learns of new work before the submitter does (docs/sharding.md §6.2).
  if (submitted.ok && pool.shards > 1) await afterNewWork(pool);
  return submitted;
}

/**
 * One page of this shard's GET /jobs, after the job with submission number
 * `after` (0: the first page); `maxBytes` is what is left of a page walked
 * over shards (src/routes/context.ts).
 */
export function listJobs(
  pool: Pool,
  name: string,
  after: number,
  limit: number,
  viewer: Viewer,
  maxBytes = LIST_PAGE_MAX_BYTES,
) {
  return jobsPage(pool.sql, name, after, limit, Math.min(maxBytes, LIST_PAGE_MAX_BYTES), viewer);
}

export function getJob(pool: Pool, jobId: string, name: string, viewer: Viewer) {
  const row = findJob(pool.sql, jobId);
  const sealed = sealedPending(pool.sql, viewer, "job_id").get(jobId) ?? 0;
  return row ? jobRecord(pool.sql, row, name, sealed) : archivedOrNull(pool, jobId);
}

export function jobEvents(pool: Pool, jobId: string, after: number, limit: number, viewer: Viewer) {
  return findJob(pool.sql, jobId) ? eventsPage(pool.sql, jobId, after, limit, viewer) : archivedOrNull(pool, jobId);
}

export function jobTasks(pool: Pool, jobId: string, viewer: Viewer) {
  return findJob(pool.sql, jobId) ? tasksOf(pool.sql, Date.now(), jobId, viewer) : archivedOrNull(pool, jobId);
}

export function cancelJob(pool: Pool, jobId: string, name: string) {
  // A cancel records no event, so held claims for the job are told directly.
  return pool.change(
    (now) =>
      cancel(pool.sql, now, jobId) ? jobRecord(pool.sql, findJob(pool.sql, jobId)!, name) : archivedOrNull(pool, jobId),
    { wakesClaims: true },
  );
}

// -- artifacts -----------------------------------------------------------------

/**
 * May `writer` write `key`? If so, records that bytes are about to stream
 * into `object`, so they are collected unless a bind claims them in time.
 */
export async function beginUpload(pool: Pool, key: string, object: string, writer: Writer) {
  const check = await pool.change((now) => {
    const check = checkWrite(pool.sql, now, key, writer);
    if (check.ok) uploadStarted(pool.sql, now, object);
    return check;
  });
  if (check.ok) pool.r2.count("A"); // the Worker's PUT of the bytes, admitted here
  return check;
}

/** The upload into `object` failed: collect whatever reached R2. */
export function abandonUpload(pool: Pool, object: string) {
  return pool.change((now) => unreferenced(pool.sql, now, object));
}

export async function bindArtifact(pool: Pool, key: string, stored: StoredObject, writer: Writer) {
  const result = await pool.change((now) => bind(pool.sql, now, key, stored, writer));
  if (result.ok) {
    const { key: bound, size_bytes, sha256 } = result.record;
    pool.log({ event: "ARTIFACT_BOUND", key: bound, size_bytes, sha256, writer });
  }
  return result;
}

export function resolveArtifact(pool: Pool, key: string, viewer: Viewer) {
  const row = readArtifact(pool.sql, key, viewer);
  if (row) pool.r2.count("B"); // the Worker's GET of the bytes it names
  return row ?? archivedOrNull(pool, jobOfKey(key));
}

/** One page of a job's artifacts after the key `after` (null: the first page). */
export function listJobArtifacts(pool: Pool, jobId: string, after: string | null, limit: number, viewer: Viewer) {
  return archivedOrNull(pool, jobId) ?? artifactsPage(pool.sql, jobId, after, limit, viewer);
}

// -- checkpoints ---------------------------------------------------------------

/** Records an uploaded checkpoint part; a scoped writer needs a live lease on the task. */
export function registerCheckpointPart(
  pool: Pool,
  jobId: string,
  taskId: string,
  request: RegisterPartRequest,
  writer: Writer,
) {
  return pool.change((now) => registerPart(pool.sql, now, jobId, taskId, request, writer));
}

/** Writes the manifest only if every expected part was registered with its hash (parts first, manifest last). */
export function commitCheckpoint(
  pool: Pool,
  jobId: string,
  taskId: string,
  request: CommitCheckpointRequest,
  writer: Writer,
) {
  return pool.change((now) => commitManifest(pool.sql, now, jobId, taskId, request, writer));
}

export function latestCheckpoint(pool: Pool, jobId: string, taskId: string, worldSize: number | null) {
  return archivedOrNull(pool, jobId) ?? latest(pool.sql, jobId, taskId, worldSize);
}

export function checkpointLostWork(pool: Pool, jobId: string, taskId: string, failedAtStep: number) {
  return archivedOrNull(pool, jobId) ?? lostWork(pool.sql, jobId, taskId, failedAtStep);
}

export function verifyCheckpoint(pool: Pool, jobId: string, taskId: string, manifestId: string) {
  return pool.change((now) => markRestoreVerified(pool.sql, now, jobId, taskId, manifestId));
}

export function quarantineCheckpoint(pool: Pool, jobId: string, taskId: string, manifestId: string, reason: string) {
  return pool.change((now) => quarantine(pool.sql, now, jobId, taskId, manifestId, reason));
}

/** A slot for a job of `tasks` tasks, and this shard's load before it: pending tasks plus those reserved. */
export function reserveSlot(pool: Pool, tasks: number): { reservation: string; load: number } {
  const now = Date.now();
  const load = poolPending(pool.sql) + pool.reservations.reserved(now);
  return { reservation: pool.reservations.reserve(now, Math.max(0, Math.floor(tasks))), load };
}
