// Tasks, leases and the attempt request bodies (docs/protocol.md §3.2, §5). The task
// payload is arbitrary JSON and is never validated here — the placement
// gate narrows it. Execution evidence is never a reason to refuse a commit:
// a block that does not fit is recorded as absent, a huge one is cut short.

import { z } from "zod";
import { truncateUtf8 } from "../rules/text";
import { Sha256Schema } from "./checkpoints";
import { MAX_STORED_TEXT_BYTES, MIN_LEASE_SECONDS } from "./limits";
import { IsoDateTimeSchema, int, JsonObjectSchema, SchemaVersionSchema } from "./primitives";

/** Longest lease a task may ask for, in seconds (docs/protocol.md §5). */
export const MAX_LEASE_SECONDS = 3600;

/**
 * A lease length the coordinator will honour: at most MAX_LEASE_SECONDS.
 * The caller must already have refused anything not finite or below
 * MIN_LEASE_SECONDS.
 */
export function clampLeaseSeconds(n: number): number {
  return Math.min(n, MAX_LEASE_SECONDS);
}

export const TASK_STATES = ["PENDING", "LEASED", "COMPLETED", "FAILED", "CANCELLED"] as const;
export const TaskStateSchema = z.enum(TASK_STATES);
export type TaskState = z.infer<typeof TaskStateSchema>;

/** States a task never leaves. */
export const TERMINAL_TASK_STATES: readonly TaskState[] = ["COMPLETED", "FAILED", "CANCELLED"];

/**
 * One unit of independent work. `commit_key` is the idempotency anchor:
 * exactly one accepted output may ever exist under it. `lease_seconds` must
 * be finite and at least MIN_LEASE_SECONDS; clamping to MAX_LEASE_SECONDS is
 * the caller's job.
 */
export const TaskSpecSchema = z.object({
  schema_version: SchemaVersionSchema,
  task_id: z.string(),
  job_id: z.string(),
  payload: JsonObjectSchema.default(() => ({})),
  commit_key: z.string(),
  max_attempts: int().min(1).default(3),
  lease_seconds: z.number().min(MIN_LEASE_SECONDS).default(60),
  // Workers the task may be lost to (lease expiries) before it fails, apart
  // from max_attempts; 0: an expiry uses an attempt (docs/protocol.md §13).
  max_worker_losses: int().min(0).default(0),
});
export type TaskSpec = z.infer<typeof TaskSpecSchema>;

/** "ls-" followed by 12 lowercase hex digits. */
export const LEASE_ID_RE = /^ls-[0-9a-f]{12}$/;

/** A time-limited right to run one attempt of one task. */
export const LeaseSchema = z.object({
  schema_version: SchemaVersionSchema,
  lease_id: z.string().regex(LEASE_ID_RE),
  task_id: z.string(),
  job_id: z.string(),
  node_id: z.string(),
  attempt_number: int().min(1),
  deadline: IsoDateTimeSchema,
  payload: JsonObjectSchema.default(() => ({})),
});
export type Lease = z.infer<typeof LeaseSchema>;

/**
 * What the agent says about the run it commits. Evidence, never proof, and
 * deliberately unconstrained (no ranges, no digest format). null means "not
 * measured" and must stay distinct from 0.
 */
export const ExecutionEvidenceSchema = z.object({
  wall_seconds: z.number().nullable().default(null),
  cpu_percent_mean: z.number().nullable().default(null),
  gpu_util_percent_mean: z.number().nullable().default(null),
  image_digest: z.string().default(""),
  exit_code: int().nullable().default(null),
});
export type ExecutionEvidence = z.infer<typeof ExecutionEvidenceSchema>;

/**
 * The evidence block of a complete request as it will be recorded: the
 * parsed block, or null when it is absent, null or does not fit the types —
 * a badly typed block is recorded as absent, never a refusal (docs/protocol.md §3.2).
 * Its one free-text field, `image_digest`, is kept to MAX_STORED_TEXT_BYTES
 * with a truncation marker (docs/protocol.md §12): a huge one is cut, never refused.
 */
export function parseEvidence(value: unknown): ExecutionEvidence | null {
  if (value === undefined || value === null) return null;
  const parsed = ExecutionEvidenceSchema.safeParse(value);
  if (!parsed.success) return null;
  return { ...parsed.data, image_digest: truncateUtf8(parsed.data.image_digest, MAX_STORED_TEXT_BYTES) };
}

/** `POST /v1alpha1/leases/claim`: optionally only tasks of one job. */
export const ClaimRequestSchema = z.object({
  node_id: z.string(),
  job_id: z.string().nullable().default(null),
});
export type ClaimRequest = z.infer<typeof ClaimRequestSchema>;

/**
 * `POST /v1alpha1/attempts/{lease_id}/complete`. `output_sha256` is 64
 * lowercase hex characters (else 422); `evidence` passes through
 * unvalidated on purpose; read it with parseEvidence.
 */
export const CompleteRequestSchema = z.object({
  output_sha256: Sha256Schema,
  evidence: z.unknown().optional(),
});
export type CompleteRequest = z.infer<typeof CompleteRequestSchema>;

/**
 * `POST /v1alpha1/attempts/{lease_id}/fail`. `reason` is required, as in the
 * reference, and any length is accepted: the pool keeps at most
 * MAX_STORED_TEXT_BYTES of it (docs/protocol.md §12).
 */
export const FailRequestSchema = z.object({
  reason: z.string(),
});
export type FailRequest = z.infer<typeof FailRequestSchema>;
