// What the dashboard's script (the *.browser.js files page.ts inlines) reads,
// as the script sees it: its config, and the fields of the JSON it draws.
// Types only, with no imports, so `tsc -p tsconfig.dashboard.json` checks the
// browser script against them without pulling the Worker's modules into a
// DOM program.
//
// They must never drift from the server: page.ts fills PageConfig from the
// protocol's own constants (`satisfies`), and test/types/wire.ts checks at
// compile time that every field named here is one the response schemas in
// src/protocol (responses.ts, dashboard.ts) send, with exactly their type.

/** The task states (TASK_STATES in src/protocol/tasks.ts). */
export type TaskState = "PENDING" | "LEASED" | "COMPLETED" | "FAILED" | "CANCELLED";
/** The job states (JOB_STATES in src/protocol/jobs.ts). */
export type JobState = "PENDING" | "SUBMITTED" | "RUNNING" | "RECOVERING" | "SUCCEEDED" | "FAILED" | "CANCELLED";

/** The constants the page shares with the server, in the page's `flashedge-config` meta tag. */
export type PageConfig = {
  /** The pool-name rule (POOL_NAME_RE), as a RegExp's source and flags. */
  pool_name: { source: string; flags: string };
  /** Entries per list the page asks for (DASHBOARD_LIMIT_DEFAULT). */
  page_size: number;
  /** Every task state, in the protocol's order (TASK_STATES). */
  task_states: readonly TaskState[];
  /** The states a job's progress bar draws, in drawing order. */
  progress_states: readonly TaskState[];
};

export type TaskCounts = Record<TaskState, number>;
export type Labels = { [key: string]: string };
export type Page<T> = { items: T[]; more: number };

export type StuckTasks = {
  job_id: string;
  job_name: string | null;
  task_id: string;
  pending: number;
  summary: string | null;
};

export type JobItem = {
  job_id: string;
  name: string;
  workload_type: string;
  state: JobState;
  created_at: string;
  task_counts: TaskCounts;
  total_tasks: number;
  labels: Labels;
  priority: number;
  tenant: string;
  worker_losses: number;
  stuck: StuckTasks | null;
};

export type NodeItem = {
  node_id: string;
  hostname: string;
  online: boolean;
  status: string;
  last_heartbeat_age_s: number;
  architecture: string;
  cpu_cores: number | null;
  gpus: string[];
  gpu_count: number;
  local_datasets: string[];
  local_dataset_count: number;
  /** The team pools the gate counts: reported (open coordinator) or assigned by an operator (tokens enforced). */
  pools: string[];
  /** Who assigned them and when (docs/protocol.md §9); null when they are the node's own report, or none was assigned. */
  pool_assignment: { assigned_by: string; assigned_at: string } | null;
  labels: Labels;
  sandbox_capable: boolean;
  argv_capable: boolean;
  module_capable: boolean;
  unsandboxed_argv_capable: boolean;
  accepted_tasks: number;
  live_leases: number;
  consecutive_failures: number;
  /** When its hold ends, while it is held back from claiming; else null. */
  held_until: string | null;
  distrusted: string | null;
  /** Its replicas a quorum agreed with, and those outvoted or with lying evidence (docs/protocol.md §14). */
  valid_results: number;
  invalid_results: number;
};

export type LeaseItem = {
  job_id: string;
  task_id: string;
  node_id: string;
  attempt: number;
  deadline: string;
  lease_seconds: number;
  /** The replica of its task this lease runs; 0 for a task run once. */
  replica: number;
};

export type EventItem = { type: string; timestamp: string; message: string };

/** An enrolled machine's credential (docs/protocol.md §9 "Enrolled machines"); `revoked_*` are null while it is active. */
export type CredentialItem = {
  node_id: string;
  /** Whose machine it is (docs/protocol.md §14): replicas of a task run on distinct owners. */
  owner: string;
  hostname: string;
  platform: string;
  approved_by: string;
  approved_at: string;
  issued_at: string;
  revoked_by: string | null;
  revoked_at: string | null;
};

export type EnrolmentState = "pending" | "approved" | "denied" | "redeemed" | "expired";

/** A machine's request for a device code; `decided_*` are null until an operator decides. No user code. */
export type EnrolmentRequestItem = {
  node_id: string;
  hostname: string;
  platform: string;
  requested_at: string;
  expires_at: string;
  state: EnrolmentState;
  decided_by: string | null;
  decided_at: string | null;
};

/** One kind of GPU in the fleet (src/pool/reads/fleet.ts): nodes with one, online, and busy (holding a live lease). */
export type GpuGroup = {
  model: string;
  memory_total_mb: number | null;
  compute_capability: string;
  gpus: number;
  nodes: number;
  online: number;
  busy: number;
};

/** A pending requirement class: how many tasks wait, what they need, who could take them. */
export type DemandClass = {
  class_id: number;
  pending: number;
  needs: string;
  online_nodes_able: number;
  servable: boolean;
  every_node_checked: boolean;
  summary: string;
};

/** The demand on the fleet, bounded: the classes with the most pending tasks, against the first nodes. */
export type Demand = {
  classes: DemandClass[];
  classes_unchecked: number;
  nodes_unchecked: number;
  unservable_classes: number;
  unservable_tasks: number;
};

/** `GET …/v1alpha1/nodes/summary` (src/pool/reads/fleet.ts). */
export type FleetSummary = {
  pool: string;
  generated_at: string;
  gpus: Page<GpuGroup>;
  demand: Demand;
};

/** `GET …/v1alpha1/dashboard` (src/pool/reads/dashboard.ts). */
export type Summary = {
  pool: string;
  generated_at: string;
  counts: {
    nodes: { total: number; online: number; not_accepting: number; held_back: number };
    tasks: TaskCounts & { total: number };
    jobs: Record<JobState, number>;
    leases_live: number;
    stuck_tasks: number;
    enrolment: { enrolled: number; revoked: number; pending_requests: number };
  };
  nodes: Page<NodeItem>;
  jobs: Page<JobItem>;
  leases: Page<LeaseItem>;
  events: { items: EventItem[] };
  stuck: Page<StuckTasks> & { classes_unchecked: number };
  storage: { bytes: number; limit_bytes: number; warning: boolean };
  /** The fleet's GPUs by model, memory and compute capability. */
  gpus: Page<GpuGroup>;
  demand: Demand;
  enrolment: {
    /** Enrolled credentials: active ones first, then newest issued first. */
    credentials: Page<CredentialItem>;
    /** Enrolment requests of the last day, newest first (no user codes: node tokens read this too). */
    requests: Page<EnrolmentRequestItem>;
  };
};

export type NodePlacement =
  | { node_id: string; online: boolean; status: string; eligible: true; membership?: string }
  | {
      node_id: string;
      online: boolean;
      status: string;
      eligible: false;
      gate: "argv" | "module" | "local_data" | "gpu" | "exclusion" | "pool" | "isolation" | "replica";
      reason: string;
      membership?: string;
    };

/** One replica of a replicated task: its lease's state, and its output's hash and verdict once committed. */
export type ReplicaItem = {
  replica: number;
  node_id: string;
  owner: string;
  state: "live" | "completed" | "failed" | "expired" | "cancelled";
  output_sha256: string | null;
  verdict: "pending" | "valid" | "invalid" | "undecided" | null;
};

/** `GET …/jobs/{job}/tasks/{task}/placement` (src/pool/reads/placement-report.ts). */
export type PlacementReport = {
  state: TaskState;
  nodes: NodePlacement[];
  unplaceable: boolean;
  summary: string;
  /** What a pending task waits for, in words; null for any other state. */
  waiting: string | null;
  /** A replicated task's replicas (docs/protocol.md §14); null for a task run once. */
  replicas: { wanted: number; quorum: number; items: ReplicaItem[] } | null;
};

/** The run states (RUN_STATES in src/protocol/runs.ts). */
export type RunState = "RUNNING" | "SUCCEEDED" | "FAILED" | "CANCELLED";

/** One aggregated round of a run: its mean loss (federated averaging) or inertia (K-means), when reported. */
export type RunRound = {
  round: number;
  job_id: string;
  mean_loss?: number;
  inertia?: number;
};

/** An item of `GET …/v1alpha1/runs` (RunRecordSchema in src/protocol/runs.ts). */
export type RunRecord = {
  run_id: string;
  kind: "federated_averaging" | "sharded_kmeans";
  state: RunState;
  /** Why it FAILED, or who CANCELLED it; null while it runs and when it SUCCEEDED. */
  reason: string | null;
  rounds: number;
  rounds_completed: number;
  /** The round being waited on; null once the run ended. */
  live_round: { round: number; job_id: string; quorum: number; frozen: boolean } | null;
  created_at: string;
  /** The operator who started it; null in an open pool. */
  started_by: string | null;
  /** The run as it was started, its `labels` among it: narrowed before it is read. */
  request: { [field: string]: unknown };
  history: RunRound[];
};
