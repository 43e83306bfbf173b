// Job specs, job records and the event ledger (docs/protocol.md §3.3). A JobSpec needs
// only apiVersion, kind, metadata.name, spec.image and spec.workload; every
// other block defaults. Whether a backend is served is the route's call,
// not the schema's: "ray" is a valid spec that this coordinator refuses.

import { z } from "zod";
import { ArtifactRecordSchema } from "./checkpoints";
import { DNS_1123_LABEL_RE } from "./keys";
import { IsoDateTimeSchema, int, JsonObjectSchema, SchemaVersionSchema, StringMapSchema } from "./primitives";

export const API_VERSION = "flashml.dev/v1alpha1";

/** Where outputs go unless the spec says otherwise; `{job_id}` is filled in at submission. */
export const DEFAULT_OUTPUT_PREFIX = "artifact://jobs/{job_id}/";

const JobMetadataSchema = z.object({
  name: z
    .string()
    .refine(
      (name) => DNS_1123_LABEL_RE.test(name),
      "job name must be a lowercase DNS-1123 label (a-z, 0-9, '-', max 63 chars)",
    ),
  labels: StringMapSchema.default(() => ({})),
});

const ExecutionSpecSchema = z.object({
  backend: z.enum(["ray", "leases"]).default("ray"),
  environment: z.enum(["auto", "local", "alibaba-ack"]).default("auto"),
});

/** The image tag must be pinned: not empty, not "latest". */
const ImageSpecSchema = z.object({
  repository: z.string(),
  tag: z
    .string()
    .refine((tag) => tag !== "", "image tag must not be empty; pin a version")
    .refine((tag) => tag !== "latest", "image tag must be pinned; 'latest' is not allowed"),
});

const WorkloadSpecSchema = z.object({
  type: z.string(),
  parameters: JsonObjectSchema.default(() => ({})),
});

/** maximumWorkers must be ≥ minimumWorkers (defaults included: 2 and 3). */
const ResourcesSpecSchema = z
  .object({
    minimumWorkers: int().min(1).default(2),
    maximumWorkers: int().min(1).default(3),
    cpuPerTask: z.number().positive().default(1),
    memoryPerTask: z.string().default("512Mi"),
    gpuPerTask: int().min(0).default(0),
  })
  .refine((r) => r.maximumWorkers >= r.minimumWorkers, {
    message: "maximumWorkers must be >= minimumWorkers",
    path: ["maximumWorkers"],
  });

/**
 * `pool` is a team pool id or "any" (differs: the reference's closed list).
 * An empty pool is refused: gate 6 would refuse it on every node, so such a
 * job could never run.
 */
const PlacementSpecSchema = z.object({
  pool: z
    .string()
    .refine((pool) => pool !== "", 'placement.pool must be a team pool id or "any", not empty')
    .default("any"),
  architectures: z.array(z.enum(["amd64", "arm64"])).default(() => ["amd64" as const]),
});

const IsolationSpecSchema = z.object({
  tier: z.enum(["standard", "sandboxed"]).default("standard"),
  allowFallback: z.boolean().default(false),
});

const RetryPolicySpecSchema = z.object({
  maxTaskAttempts: int().min(1).default(4),
  retryWorkerLoss: z.boolean().default(true),
});

const ArtifactsSpecSchema = z.object({
  outputPrefix: z
    .string()
    .refine((prefix) => prefix.startsWith("artifact://"), "outputPrefix must use the artifact:// scheme")
    .default(DEFAULT_OUTPUT_PREFIX),
});

/** `POST /v1alpha1/jobs`: the whole job as the submitter wrote it, defaults filled. */
export const JobSpecSchema = z.object({
  apiVersion: z.literal(API_VERSION).default(API_VERSION),
  kind: z.literal("Job").default("Job"),
  metadata: JobMetadataSchema,
  spec: z.object({
    execution: ExecutionSpecSchema.prefault({}),
    image: ImageSpecSchema,
    workload: WorkloadSpecSchema,
    resources: ResourcesSpecSchema.prefault({}),
    placement: PlacementSpecSchema.prefault({}),
    isolation: IsolationSpecSchema.prefault({}),
    retryPolicy: RetryPolicySpecSchema.prefault({}),
    artifacts: ArtifactsSpecSchema.prefault({}),
  }),
});
export type JobSpec = z.infer<typeof JobSpecSchema>;

export const JOB_STATES = [
  "PENDING",
  "SUBMITTED",
  "RUNNING",
  "RECOVERING",
  "SUCCEEDED",
  "FAILED",
  "CANCELLED",
] as const;
export const JobStateSchema = z.enum(JOB_STATES);
export type JobState = z.infer<typeof JobStateSchema>;

/** States a job never leaves. */
export const TERMINAL_JOB_STATES: readonly JobState[] = ["SUCCEEDED", "FAILED", "CANCELLED"];

/** The reference's full EventType enum, so any stored or relayed value round-trips. */
export const EVENT_TYPES = [
  "JOB_ACCEPTED",
  "BACKEND_SELECTED",
  "RAYJOB_CREATED",
  "RAY_CLUSTER_STARTING",
  "NODE_REGISTERED",
  "NODE_READY",
  "TASK_ATTEMPT_STARTED",
  "TASK_ATTEMPT_COMPLETED",
  "NODE_HEARTBEAT_LOST",
  "RAY_WORKER_LOST",
  "TASK_ATTEMPT_RETRIED",
  "RAY_WORKER_REPLACED",
  "ITERATION_COMPLETED",
  "ARTIFACT_UPLOAD_STARTED",
  "ARTIFACT_COMMITTED",
  "JOB_SUCCEEDED",
  "JOB_FAILED",
  "TASK_CREATED",
  "LEASE_CLAIMED",
  "LEASE_RENEWED",
  "LEASE_EXPIRED",
  "TASK_REQUEUED",
  "TASK_COMMIT_ACCEPTED",
  "TASK_COMMIT_REJECTED",
  "TASK_ATTEMPT_FAILED",
  "TASK_EXHAUSTED",
  "CHECKPOINT_PARTS_REGISTERED",
  "CHECKPOINT_MANIFEST_COMMITTED",
  "CHECKPOINT_RESTORE_VERIFIED",
  "CHECKPOINT_REJECTED",
  "FAILURE_CLASSIFIED",
  "RECOVERY_ACTION_SELECTED",
  "RECOVERY_FROZEN",
] as const;
export const EventTypeSchema = z.enum(EVENT_TYPES);
export type EventType = z.infer<typeof EventTypeSchema>;

/** One ledger entry. `source` names where it came from, e.g. "flashruntime.leases". */
export const EventSchema = z.object({
  schema_version: SchemaVersionSchema,
  job_id: z.string(),
  type: EventTypeSchema,
  timestamp: IsoDateTimeSchema,
  source: z.string(),
  message: z.string().default(""),
  data: JsonObjectSchema.default(() => ({})),
});
export type Event = z.infer<typeof EventSchema>;

/** 12 lowercase hex digits. */
export const JOB_ID_RE = /^[0-9a-f]{12}$/;

/** A job as the coordinator serves it. `deployment_profile` is the pool name. */
export const JobRecordSchema = z.object({
  schema_version: SchemaVersionSchema,
  job_id: z.string().regex(JOB_ID_RE),
  spec: JobSpecSchema,
  state: JobStateSchema.default("PENDING"),
  // differs: the reference defaults to "kuberay"; this coordinator only runs leases.
  backend: z.string().default("leases"),
  deployment_profile: z.string().default("local"),
  runtime_execution_id: z.string().nullable().default(null),
  created_at: IsoDateTimeSchema,
  finished_at: IsoDateTimeSchema.nullable().default(null),
  error: z.string().nullable().default(null),
  artifacts: z.array(ArtifactRecordSchema).default(() => []),
});
export type JobRecord = z.infer<typeof JobRecordSchema>;
