// Jobs: a job's state is derived from its tasks' states, never set by hand.
// The one thing stored is the terminal transition, recorded exactly once
// with its event, so reading a job many times never re-records it.

import { type JobSpec, type JobState, TERMINAL_JOB_STATES } from "../../protocol/jobs";
import type { JsonObject } from "../../protocol/json";
import { fillPage } from "../../protocol/paging";
import type { TaskSpec } from "../../protocol/tasks";
import { deriveJobState, emptyTaskCounts, type TaskCounts } from "../../rules/job-state";
import { isLiveLease, type LeaseAndTask } from "../../rules/leases";
import { DEFAULT_TENANT } from "../../rules/scheduling";
import { isOpenState, OPEN_STATES_SQL, OPEN_TASK_STATES } from "../../rules/task-states";
import { type Replication, SINGLE_REPLICA } from "../../rules/verification";
import { ledgerAfter } from "../ledger/created";
import { emit, eventRecord, iso } from "../ledger/events";
import { asSeenByNodes, SEALED_EVENT, sealedPending, type Viewer } from "../ledger/sealing";
import { cancelLeases } from "../nodes/registry";
import { quorumMet, ROUND_QUORUM_SQL, roundEnded } from "../runs/rounds";
import { addTasks } from "./tasks";

/** The counter columns of a state (schema step 28), as TaskCounts names them. */
const COUNTS_SQL = `pending AS PENDING, leased AS LEASED, completed AS COMPLETED, failed AS FAILED,
  cancelled AS CANCELLED`;

/**
 * The pool's task counts (schema step 40): the row of tasks of no running job,
 * plus each running job's queue row, read by jobs_live_first in one pass; the
 * pending tasks alone, from the queued jobs (job_queues_next).
 */
export const POOL_COUNTS_SQL = {
  counts: `SELECT p.pending + r.pending AS PENDING, p.leased + r.leased AS LEASED, p.completed + r.completed AS COMPLETED,
      p.failed + r.failed AS FAILED, p.cancelled + r.cancelled AS CANCELLED
    FROM pool_task_counts p,
      (SELECT TOTAL(q.pending) AS pending, TOTAL(q.leased) AS leased, TOTAL(q.completed) AS completed,
              TOTAL(q.failed) AS failed, TOTAL(q.cancelled) AS cancelled
       FROM jobs j JOIN job_queues q ON q.job_id = j.job_id WHERE (j.terminal_state IS NULL) = 1) r`,
  pending: "SELECT COALESCE(SUM(pending), 0) AS n FROM job_queues WHERE queued = 1",
  anyPending: "SELECT EXISTS (SELECT 1 FROM job_queues WHERE queued = 1) AS any",
};

/** The pool's tasks by state, from counters (no scan of tasks): a row read per running job. */
export function poolTaskCounts(sql: SqlStorage): TaskCounts {
  return sql.exec<TaskCounts>(POOL_COUNTS_SQL.counts).one();
}

/** The pool's pending tasks: a row per job that has some. */
export function poolPending(sql: SqlStorage): number {
  return sql.exec<{ n: number }>(POOL_COUNTS_SQL.pending).one().n;
}

/** Whether the pool has a pending task: one row read at most. */
export function anyPending(sql: SqlStorage): boolean {
  return sql.exec<{ any: number }>(POOL_COUNTS_SQL.anyPending).one().any === 1;
}

/** Whether a job has a task PENDING or LEASED: work may still come from it. */
export function jobOpen(sql: SqlStorage, jobId: string): boolean {
  const counts = taskCounts(sql, jobId);
  return OPEN_TASK_STATES.some((state) => counts[state] > 0);
}

/** A job's tasks by state, from the counters kept by the schema's triggers (no scan). */
export function taskCounts(sql: SqlStorage, jobId: string): TaskCounts {
  return (
    sql.exec<TaskCounts>(`SELECT ${COUNTS_SQL} FROM job_queues WHERE job_id = ?`, jobId).toArray()[0] ??
    emptyTaskCounts()
  );
}

/**
 * Records a job's terminal transition once: JOB_SUCCEEDED or JOB_FAILED and
 * `finished_at`. A no-op for a job that is not terminal, already recorded,
 * or unknown (tasks queued without a job record).
 */
export function settleJob(sql: SqlStorage, now: number, jobId: string): void {
  // Runs on every accepted commit: the job's record, counters and round in one statement, never its tasks.
  const job = sql
    .exec<TaskCounts & { terminal_state: string | null; queued: number | null; round_quorum: number | null }>(
      `SELECT j.terminal_state, q.job_id IS NOT NULL AS queued, ${COUNTS_SQL}, ${ROUND_QUORUM_SQL}
       FROM jobs j LEFT JOIN job_queues q ON q.job_id = j.job_id WHERE j.job_id = ?`,
      jobId,
    )
    .toArray()[0];
  if (!job || job.terminal_state !== null) return;
  const counts = job.queued ? job : emptyTaskCounts();
  // A hosted run's round is over at its quorum: what is still out is cancelled (docs/protocol.md §17).
  if (quorumMet(sql, jobId, counts.COMPLETED, job.round_quorum) && OPEN_TASK_STATES.some((s) => counts[s] > 0)) {
    cancelJob(sql, now, jobId);
    return;
  }
  const state = deriveJobState(counts);
  if (!TERMINAL_JOB_STATES.includes(state)) return;
  sql.exec("UPDATE jobs SET terminal_state = ?, finished_ms = ? WHERE job_id = ?", state, now, jobId);
  roundEnded(sql, jobId, state);
  if (state === "SUCCEEDED") emit(sql, now, { jobId, type: "JOB_SUCCEEDED", message: "all tasks completed", data: {} });
  if (state === "FAILED")
    emit(sql, now, { jobId, type: "JOB_FAILED", message: "a task exhausted its attempts", data: {} });
}

type JobRow = {
  job_id: string;
  seq: number;
  spec: string;
  workload_type: string;
  created_ms: number;
  terminal_state: string | null;
  finished_ms: number | null;
};

/** Where a job's tasks stand in the scheduling policy (docs/protocol.md §13), and how their results are verified (§14). */
export type JobPlace = { priority: number; tenant: string; replication: Replication };
/** A job with no priority, tenant or replication label, submitted in open mode. */
export const DEFAULT_PLACE: JobPlace = { priority: 0, tenant: DEFAULT_TENANT, replication: SINGLE_REPLICA };

/**
 * Inserts a job, its queue at `place` and all its tasks; the caller's
 * transaction makes it all-or-nothing. False, writing nothing, when the
 * pool already knows the job id (a job, its tasks or its ledger): ids are
 * random, so the caller mints another.
 */
export function insertJob(
  sql: SqlStorage,
  now: number,
  jobId: string,
  spec: JobSpec,
  tasks: readonly TaskSpec[],
  place: JobPlace,
): boolean {
  if (jobIdTaken(sql, jobId)) return false;
  // Submission numbers are never reused, archived jobs' included (a GET /jobs cursor is one).
  const seq = sql
    .exec<{ n: number }>(
      "SELECT MAX(COALESCE((SELECT MAX(seq) FROM jobs), 0), COALESCE((SELECT MAX(seq) FROM archived_jobs), 0)) + 1 AS n",
    )
    .one().n;
  sql.exec(
    "INSERT INTO jobs (job_id, seq, spec, workload_type, created_ms) VALUES (?, ?, ?, ?, ?)",
    jobId,
    seq,
    JSON.stringify(spec),
    spec.spec.workload.type,
    now,
  );
  emit(sql, now, {
    jobId,
    type: "JOB_ACCEPTED",
    message: `job ${spec.metadata.name} accepted with ${tasks.length} tasks`,
    data: {
      tasks: tasks.length,
    },
  });
  emit(sql, now, { jobId, type: "BACKEND_SELECTED", message: "backend leases selected", data: { backend: "leases" } });
  // Before its tasks: their triggers count them into this queue.
  sql.exec("INSERT INTO job_queues (job_id, priority, tenant) VALUES (?, ?, ?)", jobId, place.priority, place.tenant);
  const added = addTasks(sql, now, tasks, {
    outputJson: spec.spec.workload.type === "command",
    replication: place.replication,
  });
  // Job ids are fresh, so a duplicate is a bug in expansion: abort the transaction.
  if (!added.ok) throw new Error(`duplicate task ids in expansion: ${added.duplicates.slice(0, 3).join(", ")}`);
  return true;
}

/** Whether any row of the pool carries `jobId`, archived jobs included: four index seeks. */
function jobIdTaken(sql: SqlStorage, jobId: string): boolean {
  const taken = sql.exec<{ taken: number }>(
    `SELECT EXISTS (SELECT 1 FROM jobs WHERE job_id = ?1) OR EXISTS (SELECT 1 FROM tasks WHERE job_id = ?1)
       OR EXISTS (SELECT 1 FROM events WHERE job_id = ?1) OR EXISTS (SELECT 1 FROM archived_jobs WHERE job_id = ?1)
       AS taken`,
    jobId,
  );
  return taken.one().taken === 1;
}

/** Cancels every non-terminal task; live leases die with them. Idempotent. */
export function cancelJob(sql: SqlStorage, now: number, jobId: string): boolean {
  if (!findJob(sql, jobId)) return false;
  cancelLeases(sql, `task_seq IN (SELECT seq FROM tasks WHERE job_id = ? AND state IN ${OPEN_STATES_SQL})`, jobId);
  sql.exec(`UPDATE tasks SET state = 'CANCELLED' WHERE job_id = ? AND state IN ${OPEN_STATES_SQL}`, jobId);
  const job = findJob(sql, jobId)!;
  if (job.terminal_state === null) {
    // No event: v1alpha1's EventType enum has no cancellation value, and a
    // value outside it would break the reference client's event parsing.
    sql.exec("UPDATE jobs SET terminal_state = 'CANCELLED', finished_ms = ? WHERE job_id = ?", now, jobId);
  }
  roundEnded(sql, jobId, "CANCELLED");
  return true;
}

/**
 * Whether a job is being archived (read-only: writes refused, its leases
 * unknown, its rows still here) or archived (in R2 only); null for neither.
 */
export function archiveState(sql: SqlStorage, jobId: string): "archiving" | "archived" | null {
  const row = sql
    .exec<{ archived_ms: number | null }>("SELECT archived_ms FROM archived_jobs WHERE job_id = ?", jobId)
    .toArray()[0];
  if (!row) return null;
  return row.archived_ms === null ? "archiving" : "archived";
}

export function findJob(sql: SqlStorage, jobId: string): JobRow | undefined {
  return sql.exec<JobRow>("SELECT * FROM jobs WHERE job_id = ?", jobId).toArray()[0];
}

/** The JobRecord of docs/protocol.md §3.3, with its state derived from the task counts. */
/** A job as GET /jobs/{id} answers it; `sealed` pending tasks with a replica out count as leased (docs/protocol.md §14). */
export function jobRecord(sql: SqlStorage, row: JobRow, pool: string, sealed = 0) {
  const counts = asSeenByNodes(taskCounts(sql, row.job_id), sealed);
  return {
    schema_version: "v1alpha1" as const,
    job_id: row.job_id,
    spec: JSON.parse(row.spec) as JsonObject,
    state: (row.terminal_state as JobState | null) ?? deriveJobState(counts),
    backend: "leases" as const,
    deployment_profile: pool,
    runtime_execution_id: null,
    created_at: iso(row.created_ms),
    finished_at: row.finished_ms === null ? null : iso(row.finished_ms),
    error: null,
    artifacts: [] as string[],
    task_counts: counts,
  };
}

/**
 * One page of GET /jobs in submission order: the jobs after submission
 * number `after`, at most `limit` of them and fewer once the page's body
 * passes `maxBytes`. `next` is the key to continue after, null on the last
 * page. Rows are read one at a time through the seq index and stop being
 * read once the page is full: a page costs its own rows, never the pool's.
 */
export function listJobs(
  sql: SqlStorage,
  pool: string,
  after: number,
  limit: number,
  maxBytes: number,
  viewer: Viewer,
) {
  const sealed = sealedPending(sql, viewer, "job_id");
  const rows = sql.exec<JobRow>("SELECT * FROM jobs WHERE seq > ? ORDER BY seq LIMIT ?", after, limit);
  const { items, last } = fillPage(rows, maxBytes, (row) => jobRecord(sql, row, pool, sealed.get(row.job_id)));
  const more =
    last !== undefined && sql.exec("SELECT 1 FROM jobs WHERE seq > ? LIMIT 1", last.seq).toArray().length > 0;
  return { items, next: more ? last.seq : null };
}

/** A task row joined with its latest lease: what GET .../tasks answers from. */
export type TaskLeaseRow = {
  task_id: string;
  state: string;
  attempts_used: number;
  max_attempts: number;
  current_lease_id: string | null;
  lease_id: string | null; // the lease columns are all null for a task never leased
  node_id: string | null;
  deadline_ms: number | null;
  status: string | null;
  replica: number | null;
  replicas: number;
  live_replicas: number;
};

/** The query behind GET .../tasks: `SELECT {TASKS_WITH_LEASE} WHERE t.job_id = ?`, extra columns allowed. */
export const TASKS_WITH_LEASE = `t.task_id, t.state, t.attempts_used, t.max_attempts, t.lease_id AS current_lease_id,
       l.lease_id, l.node_id, l.deadline_ms, l.status, l.replica, t.replicas,
       CASE WHEN t.replicas > 1 THEN (SELECT COUNT(*) FROM leases r WHERE r.task_seq = t.seq AND r.status = 'live')
            ELSE 0 END AS live_replicas
  FROM tasks t LEFT JOIN leases l ON l.lease_id = t.lease_id`;

/** One row per task, sorted by task_id (docs/protocol.md §6); `deadline` only for a live lease. */
export function jobTasks(sql: SqlStorage, now: number, jobId: string, viewer: Viewer) {
  return sql
    .exec<TaskLeaseRow>(`SELECT ${TASKS_WITH_LEASE} WHERE t.job_id = ? ORDER BY t.task_id`, jobId)
    .toArray()
    .map((r) => taskAnswer(r, now, viewer));
}

/**
 * A task as GET .../tasks answers it. A node sees a replicated task before
 * its verdict as it would see one run alone (docs/protocol.md §14): LEASED while any
 * replica is out, and no node or deadline that would tell replicas apart.
 */
export function taskAnswer(r: TaskLeaseRow, now: number, viewer: Viewer = null) {
  if (viewer !== null && r.replicas > 1 && isOpenState(r.state)) {
    return {
      task_id: r.task_id,
      state: r.live_replicas > 0 ? "LEASED" : "PENDING",
      attempts: r.attempts_used,
      max_attempts: r.max_attempts,
      node_id: null,
      deadline: null,
    };
  }
  return {
    task_id: r.task_id,
    state: r.state,
    attempts: r.attempts_used,
    max_attempts: r.max_attempts,
    node_id: r.node_id,
    deadline: r.lease_id !== null && isLiveLease(r as LeaseAndTask, now) ? iso(r.deadline_ms!) : null,
  };
}

/**
 * A job's ledger in order, after the `after` cursor (an event's `seq`). A
 * node is not shown the events of a replicated task before its verdict
 * (docs/protocol.md §14); they are in the ledger, in order, once the task ends.
 */
export function jobEvents(sql: SqlStorage, jobId: string, after: number, limit: number, viewer: Viewer) {
  const sealed = viewer === null ? "" : `AND NOT ${SEALED_EVENT}`;
  return ledgerAfter(sql, jobId, after, limit, sealed).map(eventRecord);
}
