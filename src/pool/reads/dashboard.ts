// The dashboard's view of a pool (docs/protocol.md §11): counts, and at most `limit`
// entries of each list with how many more there are. Read-only, and bounded
// whatever the pool holds: with 1,000 nodes and 10,000 tasks it costs a few
// grouped index scans and sends a few dozen rows, never a table whole.
//
// Client-chosen strings (node ids, hostnames, labels, job names, tenants,
// dataset names) are clipped (clipping.ts) and escaped by the page; this
// module never builds markup. Its stuck tasks are in stuck.ts, its
// enrolment pages in dashboard-enrolment.ts.

import type {
  DashboardEvent,
  DashboardJob,
  DashboardLease,
  DashboardNode,
  DashboardSummary,
  StuckTasks,
} from "../../protocol/dashboard";
import { JOB_STATES, type JobState } from "../../protocol/jobs";
import type { NodeRegistration } from "../../protocol/nodes";
import type { Page } from "../../protocol/responses";
import { TASK_STATES } from "../../protocol/tasks";
import { deriveJobState, emptyTaskCounts, type TaskCounts } from "../../rules/job-state";
import type { Membership } from "../../rules/placement";
import { DEFAULT_TENANT } from "../../rules/scheduling";
import type { NodeAnswers } from "../../rules/shard-merge";
import { storageReport } from "../../rules/storage";
import { poolTaskCounts, taskCounts } from "../jobs/jobs";
import { LAST_SEQ_SQL, mergeBySeq, newestCreated } from "../ledger/created";
import { type EventRow, iso } from "../ledger/events";
import { asSeenByNodes, SEALED_EVENT, sealedPending, type Viewer } from "../ledger/sealing";
import { lastRequestOf } from "../nodes/liveness";
import { ASSIGNED_POOLS, memberPools, ONLINE_WINDOW_MS } from "../nodes/registry";
import { acceptingSql, heldBackSql, isHeldBack, isOnline, onlineSql } from "../nodes/states";
import { CLIP_ENTRIES, clip, clipLabels } from "./clipping";
import { enrolmentPages } from "./dashboard-enrolment";
import { demand, gpuGroups } from "./fleet";
import { REGISTERED_NODE_COLUMNS, type RegisteredNode } from "./placement-report";
import { stuckTasks } from "./stuck";

export { STUCK_CLASSES_CHECKED } from "./stuck";

/**
 * The bounded summary of a pool at `now`; `limit` bounds every list. A
 * shard of a sharded pool passes the pool's node `answers`, so its stuck
 * tasks and demand are judged against every shard's nodes.
 */
/** Live leases here per node: a node's home shows them, and in a pool of shards adds the others' (§10). */
export function liveLeasesByNode(sql: SqlStorage): Record<string, number> {
  const live: Record<string, number> = {};
  for (const r of sql.exec<{ node_id: string; n: number }>(
    "SELECT node_id, COUNT(*) AS n FROM leases WHERE status = 'live' GROUP BY node_id",
  ))
    live[r.node_id] = r.n;
  return live;
}

export function dashboardView(
  sql: SqlStorage,
  now: number,
  pool: string,
  limit: number,
  viewer: Viewer = null,
  membership: Membership = "assigned",
  answers?: NodeAnswers,
): DashboardSummary {
  // A node sees replicated tasks before their verdict as tasks run alone (docs/protocol.md §14).
  const sealed = sealedPending(sql, viewer, "job_id");
  const stuck = stuckTasks(sql, now, limit, membership, answers);
  const jobs = jobsPage(sql, limit, stuck.byJob, sealed);
  const taskTotals = asSeenByNodes(
    poolTaskCounts(sql),
    [...sealed.values()].reduce((a, b) => a + b, 0),
  );
  const nodeCounts = sql
    .exec<{ total: number; online: number; not_accepting: number; held_back: number }>(
      `SELECT COUNT(*) AS total, TOTAL(${onlineSql("", "?")}) AS online, TOTAL(NOT ${acceptingSql("")}) AS not_accepting,
              TOTAL(${heldBackSql("", "?")}) AS held_back
       FROM nodes`,
      now,
      now,
    )
    .one();
  const leasesLive = sql
    .exec<{ n: number }>(
      `SELECT COUNT(${viewer === null ? "*" : "DISTINCT task_seq"}) AS n FROM leases WHERE status = 'live'`,
    )
    .one().n;
  const lastSeq = sql.exec<{ n: number }>(`SELECT ${LAST_SEQ_SQL} AS n`).one().n;
  const enrolment = enrolmentPages(sql, now, limit);
  return {
    pool,
    generated_at: iso(now),
    limit,
    online_window_s: ONLINE_WINDOW_MS / 1000,
    counts: {
      nodes: {
        total: nodeCounts.total,
        online: nodeCounts.online,
        offline: nodeCounts.total - nodeCounts.online,
        not_accepting: nodeCounts.not_accepting,
        held_back: nodeCounts.held_back,
      },
      tasks: { ...taskTotals, total: TASK_STATES.reduce((n, s) => n + taskTotals[s], 0) },
      jobs: jobs.byState,
      leases_live: leasesLive,
      stuck_tasks: stuck.pending,
      enrolment: enrolment.counts,
    },
    nodes: nodesPage(sql, now, limit, nodeCounts.total, membership),
    jobs: { items: jobs.items, more: jobs.total - jobs.items.length },
    storage: storageReport(sql.databaseSize),
    leases: leasesPage(sql, now, limit, leasesLive, viewer),
    events: { items: recentEvents(sql, limit, viewer), last_seq: lastSeq },
    stuck: { items: stuck.items, more: stuck.entries - stuck.items.length, classes_unchecked: stuck.classesUnchecked },
    gpus: gpuGroups(sql, now, limit),
    demand: demand(sql, now, membership, viewer, true, answers),
    enrolment: enrolment.pages,
  };
}

type NodeRow = RegisteredNode & {
  accepted_tasks: number;
  consecutive_failures: number;
  held_until_ms: number;
  distrusted: string | null;
  valid_results: number;
  invalid_results: number;
};

function nodesPage(
  sql: SqlStorage,
  now: number,
  limit: number,
  total: number,
  membership: Membership,
): Page<DashboardNode> {
  // Online, accepting nodes first: those are the ones doing the work.
  const rows = sql
    .exec<NodeRow>(
      `SELECT ${REGISTERED_NODE_COLUMNS}, n.accepted_tasks, n.consecutive_failures,
              n.distrusted, n.valid_results, n.invalid_results
       FROM nodes n ${ASSIGNED_POOLS}
       ORDER BY (${onlineSql("n", "?")} AND ${acceptingSql("n")}) DESC, n.node_id LIMIT ?`,
      now,
      limit,
    )
    .toArray();
  const live = new Map(Object.entries(liveLeasesByNode(sql)));
  const items = rows.map((row): DashboardNode => {
    const reg = JSON.parse(row.registration) as NodeRegistration;
    const caps = reg.capabilities;
    const gpus = caps.gpus ?? [];
    const datasets = reg.local_datasets ?? [];
    return {
      node_id: clip(row.node_id),
      hostname: clip(reg.hostname ?? ""),
      online: isOnline(row, now),
      status: row.status,
      last_heartbeat_age_s:
        Math.round(Math.max(0, now - lastRequestOf(sql, row.node_id, row.last_heartbeat_ms)) / 100) / 10,
      environment: clip(reg.environment ?? ""),
      os: clip(caps.os ?? ""),
      architecture: clip(caps.architecture ?? ""),
      cpu_cores: typeof caps.cpu_cores === "number" ? caps.cpu_cores : null,
      gpus: gpus.slice(0, CLIP_ENTRIES).map((g) => clip(g.name || `GPU ${g.index}`)),
      gpu_count: gpus.length,
      local_datasets: datasets.slice(0, CLIP_ENTRIES).map(clip),
      local_dataset_count: datasets.length,
      pools: memberPools(caps.pools, membership, row.assigned_pools).slice(0, CLIP_ENTRIES).map(clip),
      pool_assignment:
        membership === "assigned" && row.assigned_by !== null
          ? { assigned_by: clip(row.assigned_by), assigned_at: iso(row.assigned_ms ?? 0) }
          : null,
      labels: clipLabels(reg.labels),
      sandbox_capable: reg.sandbox_capable === true,
      argv_capable: reg.argv_capable === true,
      module_capable: reg.module_capable !== false,
      unsandboxed_argv_capable: reg.unsandboxed_argv_capable === true,
      accepted_tasks: row.accepted_tasks,
      live_leases: live.get(row.node_id) ?? 0,
      consecutive_failures: row.consecutive_failures,
      held_until: isHeldBack(row, now) ? iso(row.held_until_ms) : null,
      distrusted: row.distrusted === null ? null : clip(row.distrusted),
      valid_results: row.valid_results,
      invalid_results: row.invalid_results,
    };
  });
  return { items, more: total - items.length };
}

type JobRow = {
  job_id: string;
  name: string | null;
  labels: string | null;
  workload_type: string;
  created_ms: number;
  terminal_state: string | null;
  finished_ms: number | null;
};

function jobsPage(
  sql: SqlStorage,
  limit: number,
  stuckByJob: Map<string, StuckTasks>,
  sealed: ReadonlyMap<string, number>,
) {
  // Jobs per state from their counter: a job not yet terminal is RUNNING (a
  // job always has tasks), so history costs nothing here.
  const byState = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
  let total = 0;
  for (const r of sql.exec<{ state: JobState; n: number }>("SELECT state, n FROM job_counts")) {
    byState[r.state] += r.n;
    total += r.n;
  }
  // Live jobs first, newest first (the jobs_live_first index); the spec is read only for the rows shown.
  const rows = sql
    .exec<JobRow>(
      `SELECT job_id, json_extract(spec, '$.metadata.name') AS name, json_extract(spec, '$.metadata.labels') AS labels,
              workload_type, created_ms, terminal_state, finished_ms
       FROM jobs ORDER BY (terminal_state IS NULL) DESC, seq DESC LIMIT ?`,
      limit,
    )
    .toArray();
  const items = rows.map((row): DashboardJob => {
    const counts = asSeenByNodes(taskCounts(sql, row.job_id), sealed.get(row.job_id) ?? 0);
    // One primary-key seek per job shown; a job with no queue row (finished
    // before the scheduling policy) was queued at the defaults.
    const queue = sql
      .exec<{ priority: number; tenant: string; worker_losses: number }>(
        "SELECT priority, tenant, worker_losses FROM job_queues WHERE job_id = ?",
        row.job_id,
      )
      .toArray()[0] ?? { priority: 0, tenant: DEFAULT_TENANT, worker_losses: 0 };
    return {
      job_id: row.job_id,
      name: clip(row.name ?? ""),
      workload_type: clip(row.workload_type),
      state: stateOf(row.terminal_state, counts),
      created_at: iso(row.created_ms),
      finished_at: row.finished_ms === null ? null : iso(row.finished_ms),
      task_counts: counts,
      total_tasks: TASK_STATES.reduce((n, s) => n + counts[s], 0),
      labels: clipLabels(row.labels === null ? {} : (JSON.parse(row.labels) as { [key: string]: string })),
      priority: queue.priority,
      tenant: clip(queue.tenant),
      worker_losses: queue.worker_losses,
      stuck: stuckByJob.get(row.job_id) ?? null,
    };
  });
  return { items, total, byState };
}

function stateOf(terminal: string | null, counts: TaskCounts | undefined): JobState {
  return (terminal as JobState | null) ?? deriveJobState(counts ?? emptyTaskCounts());
}

/**
 * The live leases, soonest deadline first. A node is shown one lease per
 * task, and no replica numbers: two leases on one task would tell it the
 * task was spot-checked (docs/protocol.md §14).
 */
function leasesPage(sql: SqlStorage, now: number, limit: number, total: number, viewer: Viewer): Page<DashboardLease> {
  const oneForEachTask =
    viewer === null
      ? ""
      : "AND l.lease_id = (SELECT o.lease_id FROM leases o WHERE o.task_seq = l.task_seq AND o.status = 'live' ORDER BY o.issued_ms, o.lease_id LIMIT 1)";
  const items = sql
    .exec<{
      lease_id: string;
      node_id: string;
      attempt_number: number;
      deadline_ms: number;
      job_id: string;
      task_id: string;
      lease_seconds: number;
      replica: number;
    }>(
      `SELECT l.lease_id, l.node_id, l.attempt_number, l.deadline_ms, t.job_id, t.task_id, t.lease_seconds, l.replica
       FROM leases l JOIN tasks t ON t.seq = l.task_seq
       WHERE l.status = 'live' ${oneForEachTask} ORDER BY l.deadline_ms LIMIT ?`,
      limit,
    )
    .toArray()
    .map((r) => ({
      lease_id: r.lease_id,
      job_id: r.job_id,
      task_id: clip(r.task_id),
      node_id: clip(r.node_id),
      attempt: r.attempt_number,
      deadline: iso(r.deadline_ms),
      seconds_left: Math.max(0, Math.round((r.deadline_ms - now) / 100) / 10),
      lease_seconds: r.lease_seconds,
      replica: viewer === null ? r.replica : 0,
    }));
  return { items, more: total - items.length };
}

function recentEvents(sql: SqlStorage, limit: number, viewer: Viewer): DashboardEvent[] {
  const sealed = viewer === null ? "" : `WHERE NOT ${SEALED_EVENT}`;
  const rows = sql.exec<EventRow>(`SELECT e.* FROM events e ${sealed} ORDER BY e.seq DESC LIMIT ?`, limit).toArray();
  return mergeBySeq(rows, newestCreated(sql, limit), limit, true).map((r) => ({
    seq: r.seq,
    job_id: clip(r.job_id),
    type: r.type,
    timestamp: iso(r.ts_ms),
    message: clip(r.message),
  }));
}
