// The fields every task of every recipe carries, stamped in this one place
// (docs/protocol.md §4, §6, §13): output_prefix, task_id, image, isolation, pool,
// gpus and the GPU requirements of the job's labels, commit_key,
// max_attempts, lease_seconds, max_worker_losses. A recipe that
// could stamp these itself could also forget one — and a forgotten
// `isolation` or `pool` does not fail, it lets a task lease anywhere.
//
// Each payload leaves here as a fresh JSON copy: nothing in it aliases the
// spec or another task, and its size is known before the pool stores it.

import type { JobSpec } from "../protocol/jobs";
import { MIN_LEASE_SECONDS } from "../protocol/limits";
import { clampLeaseSeconds, type TaskSpec } from "../protocol/tasks";
import { gpuLabelFields } from "../rules/gpu";
import { DEFAULT_MAX_WORKER_LOSSES } from "../rules/scheduling";
import { describe, given, type Parameters } from "./parameters";
import type { TaskDraft } from "./recipe";

/** One task's payload as JSON, at most (the pool stores it as one value). */
export const MAX_TASK_PAYLOAD_BYTES = 1024 * 1024;
/** All of one job's payloads as JSON, at most (they are inserted in one transaction). */
export const MAX_JOB_PAYLOAD_BYTES = 16 * 1024 * 1024;

export type LeaseSeconds = { ok: true; seconds: number } | { ok: false; problem: string };

/**
 * The workload's `lease_seconds`: a finite number > 0 (a boolean or a
 * numeric string is a wrong type, not a number) and at least
 * MIN_LEASE_SECONDS, clamped to the §5 maximum; the recipe's default when
 * not given.
 */
export function readLeaseSeconds(parameters: Parameters, defaultSeconds: number): LeaseSeconds {
  const value = given(parameters, "lease_seconds");
  if (value === undefined) return { ok: true, seconds: defaultSeconds };
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    return { ok: false, problem: `'lease_seconds' must be a finite number > 0, got ${describe(value)}` };
  }
  if (value < MIN_LEASE_SECONDS) {
    return {
      ok: false,
      problem: `'lease_seconds' must be at least ${MIN_LEASE_SECONDS} seconds (a lease shorter than that cannot be renewed in time), got ${describe(value)}`,
    };
  }
  return { ok: true, seconds: clampLeaseSeconds(value) };
}

/** The team pool a job's tasks are confined to, or undefined for "any". */
export function teamPool(spec: JobSpec): string | undefined {
  const { pool } = spec.spec.placement;
  return pool === "any" ? undefined : pool;
}

export type Stamped = { ok: true; tasks: TaskSpec[] } | { ok: false; problems: string[] };

/** Turn drafts into TaskSpecs carrying the shared fields; refuse oversized payloads. */
export function stampTasks(
  spec: JobSpec,
  jobId: string,
  drafts: readonly TaskDraft[],
  leaseSeconds: number,
  maxWorkerLosses = DEFAULT_MAX_WORKER_LOSSES,
): Stamped {
  const { image, isolation, retryPolicy } = spec.spec;
  // docs/protocol.md §13: with retryWorkerLoss an expiry is a worker loss, counted apart from attempts.
  const workerLosses = retryPolicy.retryWorkerLoss ? maxWorkerLosses : 0;
  const pool = teamPool(spec);
  // Every recipe, not only `command` as docs/protocol.md §6 lists it: a GPU requirement
  // that a module job drops fails OPEN (the gate sees none and places the
  // task on a CPU-only node), so it is stamped here where no recipe can skip
  // it. Absent when 0, never 0.
  const gpus = spec.spec.resources.gpuPerTask;
  // The kind of GPU, from the job's labels, stamped beside the count for the
  // same reason (expandJob has already listed a malformed label; refusing
  // here too means no caller can stamp one).
  const gpuKind = gpuLabelFields(spec.metadata.labels, gpus);
  if (!gpuKind.ok) return { ok: false, problems: gpuKind.problems };
  const imageRef = `${image.repository}:${image.tag}`;
  const encoder = new TextEncoder();
  const tasks: TaskSpec[] = [];
  const problems: string[] = [];
  let jobBytes = 0;
  for (const draft of drafts) {
    const taskId = draft.taskId;
    // Object.assign, not spread: several times faster over 10,000 tasks, and
    // safe because top-level payload keys are the recipes' own, never the
    // submitter's (submitted data only ever sits one level down).
    const payload: Record<string, unknown> = Object.assign({}, draft.payload);
    payload.output_prefix = `jobs/${jobId}/${taskId}/`;
    payload.task_id = taskId;
    payload.image = imageRef;
    payload.isolation = { tier: isolation.tier, allowFallback: isolation.allowFallback };
    if (pool !== undefined) payload.pool = pool;
    Object.assign(payload, draft.extras);
    if (gpus > 0) payload.gpus = gpus;
    Object.assign(payload, gpuKind.fields);
    const json = JSON.stringify(payload);
    const bytes = encoder.encode(json).byteLength;
    jobBytes += bytes;
    if (bytes > MAX_TASK_PAYLOAD_BYTES) {
      problems.push(
        `${taskId}: payload is ${bytes} bytes of JSON, more than the limit of ${MAX_TASK_PAYLOAD_BYTES} per task`,
      );
    }
    if (jobBytes > MAX_JOB_PAYLOAD_BYTES) {
      // Stop measuring: the work stays bounded and the answer cannot change.
      problems.push(`the job's task payloads exceed ${MAX_JOB_PAYLOAD_BYTES} bytes of JSON in total`);
      break;
    }
    if (problems.length > 0) continue;
    tasks.push({
      schema_version: "v1alpha1",
      task_id: taskId,
      job_id: jobId,
      payload: JSON.parse(json) as Record<string, unknown>,
      commit_key: `jobs/${jobId}/${taskId}/metrics.json`,
      max_attempts: retryPolicy.maxTaskAttempts,
      lease_seconds: leaseSeconds,
      max_worker_losses: workerLosses,
    });
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, tasks };
}
