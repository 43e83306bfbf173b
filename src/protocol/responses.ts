// What the routes answer beyond the request models: the refusal bodies, the
// small answers, the placement report and the fleet summary, as zod schemas.
// Their TypeScript types are inferred from them, so the pool code that
// builds an answer, the OpenAPI document that describes it and the browser's
// wire.d.ts (checked against them in test/types/wire.ts) read one shape.
// Schemas of answers only: nothing parses them on the way in. Pure: no I/O.

import { z } from "zod";
import { GATE_NAMES, REFUSAL_NAMES } from "./gates";
import { JobStateSchema } from "./jobs";
import { int } from "./primitives";
import { TaskStateSchema } from "./tasks";

// -- building blocks ------------------------------------------------------------

/** A count: a non-negative integer. */
export const count = () => int().min(0);
/** A timestamp as the coordinator writes it (`Date.toISOString()`). */
export const dateTime = () => z.string().meta({ format: "date-time" });
/** One bounded page of a list: at most `limit` items, and how many more there are. */
export const page = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item), more: count() });
export type Page<T> = { items: T[]; more: number };

/** Task counts by state, as served with each job and on the dashboard. */
export const TaskCountsSchema = z.record(TaskStateSchema, count());
/** Job counts by state. */
export const JobCountsSchema = z.record(JobStateSchema, count());

// -- refusals -------------------------------------------------------------------------

export const RefusalSchema = z.object({ detail: z.string() });
export const ValidationErrorSchema = z.object({
  loc: z.array(z.union([z.string(), z.int()])),
  msg: z.string(),
  type: z.string(),
});
/** A 422 as FastAPI sends it: one `{loc, msg, type}` per problem. */
export const HTTPValidationErrorSchema = z.object({ detail: z.array(ValidationErrorSchema) });
export const CheckpointRejectedSchema = z.object({ detail: z.array(z.string()) });
export const InternalErrorSchema = z.object({ detail: z.string(), request_id: z.string() });

// -- the small answers -----------------------------------------------------------------

export const StatusOkSchema = z.object({ status: z.literal("ok") });
export const NodeRegisteredSchema = z.object({ node_id: z.string(), status: z.literal("registered") });
export const DeviceCodeSchema = z.object({
  device_code: z.string(),
  user_code: z.string(),
  verification_uri: z.string(),
  verification_uri_complete: z.string(),
  interval: count(),
  expires_in: count(),
  expires_at: dateTime(),
});
export const AuthorizationPendingSchema = z.object({ error: z.literal("authorization_pending"), interval: count() });
export const EnrolledTokenSchema = z.object({ token: z.string(), node_id: z.string() });
/** One entry of `GET /v1alpha1/device/pending`. */
export const PendingEnrolmentSchema = z.object({
  user_code: z.string(),
  node_id: z.string(),
  hostname: z.string(),
  platform: z.string(),
  requested_at: dateTime(),
  requested_from: z.string().nullable(),
  expires_at: dateTime(),
  /** Approving replaces this node's current enrolled credential. */
  replaces_credential: z.boolean(),
});
export type PendingEnrolment = z.infer<typeof PendingEnrolmentSchema>;
export const EnrolmentDecidedSchema = z
  .object({
    approved: z.literal(true).optional(),
    denied: z.literal(true).optional(),
    node_id: z.string(),
    owner: z.string().optional(),
    pools: z.array(z.string()).optional(),
  })
  .describe(
    "An approval names the machine's owner as stored: the one asked for, else the node id; and the team pools it named, if any, which the machine is assigned when it redeems the code.",
  );
export const EnrolmentsDeniedSchema = z.object({ denied: z.literal(true), count: count() });
export const CredentialRevokedSchema = z.object({ node_id: z.string(), revoked: z.boolean() });
export const NodePoolsAssignedSchema = z
  .object({ node_id: z.string(), pools: z.array(z.string()), assigned_by: z.string() })
  .describe(
    "The node's team pools as now assigned, replacing any earlier assignment, and the operator who assigned them.",
  );
export const NodeReleasedSchema = z.object({
  node_id: z.string(),
  consecutive_failures: z.literal(0),
  held_until: z.null(),
});
export const CommitOutcomeSchema = z.object({ accepted: z.boolean(), detail: z.string().optional() });
export const AttemptFailedSchema = z.object({ status: z.literal("requeued-or-exhausted") });
export const TaskRowSchema = z.object({
  task_id: z.string(),
  state: TaskStateSchema,
  attempts: count(),
  max_attempts: count(),
  node_id: z.string().nullable(),
  deadline: dateTime().nullable(),
});
export const JobArtifactSchema = z.object({ uri: z.string(), key: z.string(), size_bytes: count() });
export const JobLogsSchema = z.object({ logs: z.string() });
export const PartRegisteredSchema = z.object({ status: z.literal("registered"), key: z.string() });
export const LostWorkSchema = z.object({ lost_steps: count().nullable(), latest_step: count().nullable() });

// -- the placement report (src/pool/reads/placement-report.ts) ----------------------------------------

const placed = {
  node_id: z.string(),
  online: z.boolean(),
  status: z.string(),
  /** For a team-pool task when tokens are enforced: whose assignment made the node a member or not. */
  membership: z.string().optional(),
};
export const NodePlacementSchema = z
  .discriminatedUnion("eligible", [
    z.object({ ...placed, eligible: z.literal(true) }),
    z.object({ ...placed, eligible: z.literal(false), gate: z.enum(REFUSAL_NAMES), reason: z.string() }),
  ])
  .describe(
    `One node's gate answer; a refused node names the gate (${GATE_NAMES.join(", ")}) and why, or \`replica\` when it holds or ran a replica of the task (each replica runs on a different node).`,
  );

export const ReplicaStateSchema = z.enum(["live", "completed", "failed", "expired", "cancelled"]);
export const ReplicaVerdictSchema = z.enum(["pending", "valid", "invalid", "undecided"]);
export const ReplicaItemSchema = z.object({
  replica: int().min(1),
  node_id: z.string(),
  /** The node's owner when the replica was issued (docs/protocol.md §14). */
  owner: z.string(),
  state: ReplicaStateSchema,
  output_sha256: z.string().nullable(),
  verdict: ReplicaVerdictSchema.nullable(),
});
export const ReplicaReportSchema = z
  .object({
    wanted: count(),
    quorum: count(),
    items: z.array(ReplicaItemSchema),
    owners: z.object({ eligible: count(), needed: count(), short: z.boolean() }),
  })
  .describe(
    "A replicated task's replicas in replica order: each one's node and that node's owner when it was issued, its lease state, and once committed its output's sha256 and verdict. `wanted`: replicas it wants out or done now; `quorum`: how many must agree (1 for a task trusted to one replica). `owners`: distinct owners that ran a replica or have a node the gate accepts, against the replicas needed; `short` when too few (replicas of one task run on nodes of distinct owners).",
  );
/** Where a pending task stands in the claim order (docs/protocol.md §13). */
export const QueuePositionSchema = z.object({
  priority: int(),
  tenant: z.string(),
  higher_priority: count(),
  earlier_in_job: count(),
  other_tenants: count(),
  other_jobs: count(),
  failed_on: z.array(z.string()),
  eligible_held_back: count(),
});
export const PlacementReportSchema = z.object({
  job_id: z.string(),
  task_id: z.string(),
  state: TaskStateSchema,
  nodes: z.array(NodePlacementSchema),
  unplaceable: z.boolean(),
  summary: z.string(),
  /** A pending task's place in the claim order (docs/protocol.md §13); null for any other state. */
  queue: QueuePositionSchema.nullable(),
  /** What a pending task waits for, in words; null for any other state. */
  waiting: z.string().nullable(),
  /** A replicated task's replicas (docs/protocol.md §14); null for a task run once. */
  replicas: ReplicaReportSchema.nullable(),
});
export type ReplicaState = z.infer<typeof ReplicaStateSchema>;
export type ReplicaVerdict = z.infer<typeof ReplicaVerdictSchema>;
export type ReplicaItem = z.infer<typeof ReplicaItemSchema>;
export type ReplicaReport = z.infer<typeof ReplicaReportSchema>;
export type PlacementReport = z.infer<typeof PlacementReportSchema>;

// -- the fleet (src/pool/reads/fleet.ts) --------------------------------------------------------

export const GpuGroupSchema = z
  .object({
    model: z.string(),
    memory_total_mb: int().nullable(),
    compute_capability: z.string(),
    gpus: count(),
    nodes: count(),
    online: count(),
    /** Nodes with this GPU holding a live lease (of any task). */
    busy: count(),
  })
  .describe(
    "One kind of GPU in the fleet (model, memory, compute capability as nodes report them): how many such GPUs, on how many nodes, how many of those nodes are online and how many hold a live lease.",
  );
export const DemandClassSchema = z.object({
  class_id: count(),
  pending: count(),
  needs: z.string(),
  /** Online, accepting nodes the gate lets take the class's tasks. */
  online_nodes_able: count(),
  /** Whether any registered node (online or not) could; false flags the class. */
  servable: z.boolean(),
  /** Whether every registered node was checked, so "no node" is the whole fleet's answer. */
  every_node_checked: z.boolean(),
  summary: z.string(),
});
export const DemandSchema = z
  .object({
    classes: z.array(DemandClassSchema),
    /** Pending classes past DEMAND_CLASSES_CHECKED, not shown and not counted below. */
    classes_unchecked: count(),
    /** Registered nodes past DEMAND_NODES_CHECKED, not checked. */
    nodes_unchecked: count(),
    unservable_classes: count(),
    unservable_tasks: count(),
  })
  .describe(
    "Pending tasks by requirement class, the 50 classes with the most pending tasks, each checked against the first 500 registered nodes (online and accepting first): what they need, how many online accepting nodes the gate lets take them, and whether any registered node could (`servable` false flags demand no one can serve). Bounded by live state, never by history.",
  );
export const FleetSummarySchema = z.object({
  pool: z.string(),
  generated_at: dateTime(),
  gpus: page(GpuGroupSchema),
  demand: DemandSchema,
});
export type GpuGroup = z.infer<typeof GpuGroupSchema>;
export type DemandClass = z.infer<typeof DemandClassSchema>;
export type Demand = z.infer<typeof DemandSchema>;
export type FleetSummary = z.infer<typeof FleetSummarySchema>;
export type EnrolmentDecided = z.infer<typeof EnrolmentDecidedSchema>;
export type EnrolmentsDenied = z.infer<typeof EnrolmentsDeniedSchema>;
