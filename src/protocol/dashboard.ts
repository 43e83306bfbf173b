// The dashboard summary (`GET …/v1alpha1/dashboard`, docs/protocol.md §11) as a zod
// schema: what src/pool/reads/dashboard.ts builds, the OpenAPI document describes
// and the page's script reads (src/dashboard/wire.d.ts, checked against it
// in test/types/wire.ts). An answer only: nothing parses it. Pure: no I/O.

import { z } from "zod";
import { JobStateSchema } from "./jobs";
import { int } from "./primitives";
import { count, DemandSchema, dateTime, GpuGroupSchema, JobCountsSchema, page, TaskCountsSchema } from "./responses";

const labels = () => z.record(z.string(), z.string());

export const DashboardNodeSchema = z.object({
  node_id: z.string(),
  hostname: z.string(),
  online: z.boolean(),
  status: z.string(),
  last_heartbeat_age_s: z.number(),
  environment: z.string(),
  os: z.string(),
  architecture: z.string(),
  cpu_cores: z.number().nullable(),
  gpus: z.array(z.string()),
  gpu_count: count(),
  local_datasets: z.array(z.string()),
  local_dataset_count: count(),
  /** The team pools the gate counts it a member of: reported (open) or assigned by an operator (enforcing). */
  pools: z.array(z.string()),
  /** Who assigned those pools and when (docs/protocol.md §9); null when they are the node's report, or none was assigned. */
  pool_assignment: z.object({ assigned_by: z.string(), assigned_at: dateTime() }).nullable(),
  labels: labels(),
  sandbox_capable: z.boolean(),
  argv_capable: z.boolean(),
  module_capable: z.boolean(),
  unsandboxed_argv_capable: z.boolean(),
  accepted_tasks: count(),
  live_leases: count(),
  /** Failed attempts since its last accepted commit (docs/protocol.md §13). */
  consecutive_failures: count(),
  /** When its hold ends, while it is held back from claiming; else null. */
  held_until: dateTime().nullable(),
  /** Its replicas a quorum agreed with, and those outvoted or with lying evidence (docs/protocol.md §14). */
  valid_results: count(),
  invalid_results: count(),
  /** Why it may no longer run a task alone, until an operator releases it (docs/protocol.md §14); null when it may. */
  distrusted: z.string().nullable(),
});

export const StuckTasksSchema = z
  .object({
    job_id: z.string(),
    job_name: z.string().nullable(),
    task_id: z.string(),
    pending: count(),
    summary: z.string().nullable(),
  })
  .describe("Pending tasks of a job that no online node can take, with why (for the earliest one).");

export const DashboardJobSchema = z.object({
  job_id: z.string(),
  name: z.string(),
  workload_type: z.string(),
  state: JobStateSchema,
  created_at: dateTime(),
  finished_at: dateTime().nullable(),
  task_counts: TaskCountsSchema,
  total_tasks: count(),
  labels: labels(),
  /** Its scheduling priority and tenant (docs/protocol.md §13). */
  priority: int(),
  tenant: z.string(),
  /** Lease expiries its tasks counted as worker losses rather than attempts. */
  worker_losses: count(),
  stuck: StuckTasksSchema.nullable(),
});

export const DashboardLeaseSchema = z.object({
  lease_id: z.string(),
  job_id: z.string(),
  task_id: z.string(),
  node_id: z.string(),
  attempt: count(),
  deadline: dateTime(),
  seconds_left: z.number(),
  /** The task's lease window: the full length of `seconds_left`. */
  lease_seconds: z.number(),
  /** The replica of its task this lease runs (docs/protocol.md §14); 0 for a task run once. */
  replica: count(),
});

/** A machine's enrolled credential (docs/protocol.md §9), active or revoked. */
export const DashboardCredentialSchema = z.object({
  node_id: z.string(),
  /** Whose machine it is (docs/protocol.md §14), as its approval named it: the node id by default. */
  owner: z.string(),
  hostname: z.string(),
  platform: z.string(),
  approved_by: z.string(),
  approved_at: dateTime(),
  issued_at: dateTime(),
  revoked_by: z.string().nullable(),
  revoked_at: dateTime().nullable(),
});

/** An enrolment request of the last day. No user code: node tokens read the dashboard too. */
export const DashboardEnrolmentRequestSchema = z.object({
  node_id: z.string(),
  hostname: z.string(),
  platform: z.string(),
  requested_at: dateTime(),
  expires_at: dateTime(),
  state: z.enum(["pending", "approved", "denied", "redeemed", "expired"]),
  decided_by: z.string().nullable(),
  decided_at: dateTime().nullable(),
});

export const DashboardEventSchema = z.object({
  seq: count(),
  job_id: z.string(),
  type: z.string(),
  timestamp: dateTime(),
  message: z.string(),
});

export const DashboardSummarySchema = z.object({
  pool: z.string(),
  generated_at: dateTime(),
  limit: count(),
  online_window_s: z.number(),
  counts: z.object({
    nodes: z.object({
      total: count(),
      online: count(),
      offline: count(),
      not_accepting: count(),
      held_back: count(),
    }),
    tasks: TaskCountsSchema.and(z.object({ total: count() })),
    jobs: JobCountsSchema,
    leases_live: count(),
    stuck_tasks: count(),
    enrolment: z.object({ enrolled: count(), revoked: count(), pending_requests: count() }),
  }),
  nodes: page(DashboardNodeSchema),
  jobs: page(DashboardJobSchema),
  leases: page(DashboardLeaseSchema),
  events: z.object({ items: z.array(DashboardEventSchema), last_seq: count() }),
  /** `classes_unchecked`: pending requirement classes past the check's bound. */
  stuck: page(StuckTasksSchema).extend({ classes_unchecked: count() }),
  storage: z.object({ bytes: count(), limit_bytes: count(), warning: z.boolean() }),
  /** The fleet's GPUs by model, memory and compute capability, and the pending classes' demand (src/pool/reads/fleet.ts). */
  gpus: page(GpuGroupSchema),
  demand: DemandSchema,
  /** Credentials, active first then newest; requests, newest first. */
  enrolment: z.object({
    credentials: page(DashboardCredentialSchema),
    requests: page(DashboardEnrolmentRequestSchema),
  }),
});

export type DashboardNode = z.infer<typeof DashboardNodeSchema>;
export type StuckTasks = z.infer<typeof StuckTasksSchema>;
export type DashboardJob = z.infer<typeof DashboardJobSchema>;
export type DashboardLease = z.infer<typeof DashboardLeaseSchema>;
export type DashboardCredential = z.infer<typeof DashboardCredentialSchema>;
export type DashboardEnrolmentRequest = z.infer<typeof DashboardEnrolmentRequestSchema>;
export type DashboardEvent = z.infer<typeof DashboardEventSchema>;
export type DashboardSummary = z.infer<typeof DashboardSummarySchema>;
