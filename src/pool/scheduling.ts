// The scheduling policy of SPEC §13 over the pool's tables: which pending
// task a node's claim takes, the turns that claim uses up, and the record
// of failures that holds a failing node back and sends a task's retry to
// another node. Every function runs inside the caller's transaction.

import { eligible, type NodeView } from "../rules/placement";
import { holdBackMs, MAX_PRIORITY } from "../rules/scheduling";
import { nodeView } from "./nodes";

/** Rows per read of an ordered walk: one first (most claims stop at it), then a page at a time. */
const FIRST_PAGE = 1;
const PAGE = 16;

/**
 * The claim's statements, each an index seek or a page of an ordered index
 * walk, continued after the last row read (a plan test holds them to that).
 * Pages are read whole, so no statement is left open mid-walk.
 */
export const POLICY_SQL = {
  /** The highest priority with active tenants below a bound. */
  level: "SELECT MAX(priority) AS p FROM tenant_shares WHERE priority < ?",
  /** A priority's first active tenant, lowest pass first (the tenant_shares_next index). */
  firstTenant: "SELECT tenant, pass, turn FROM tenant_shares WHERE priority = ? ORDER BY pass, turn, tenant LIMIT 1",
  /** The next page of a priority's active tenants, after one. */
  tenants: `SELECT tenant, pass, turn FROM tenant_shares WHERE priority = ? AND (pass, turn, tenant) > (?, ?, ?)
    ORDER BY pass, turn, tenant LIMIT ?`,
  /** A tenant's first job with pending tasks, lowest pass first (the job_queues_next index). */
  firstJob: `SELECT job_id, pass, turn, rowid AS id FROM job_queues WHERE priority = ? AND tenant = ? AND pending > 0
    ORDER BY pass, turn, rowid LIMIT 1`,
  /** The next page of a tenant's jobs with pending tasks, after one. */
  jobs: `SELECT job_id, pass, turn, rowid AS id FROM job_queues
    WHERE priority = ? AND tenant = ? AND pending > 0 AND (pass, turn, rowid) > (?, ?, ?)
    ORDER BY pass, turn, rowid LIMIT ?`,
  /** Requirement classes with pending tasks (the classes_pending index): what the gate judges once per claim. */
  pendingClasses: "SELECT class_id, requirement FROM classes WHERE pending > 0",
  /** A job's requirement classes with pending tasks. */
  classes: "SELECT class_id FROM queue_classes WHERE job_id = ? AND pending > 0",
  /**
   * Jobs with pending tasks in the given classes (a JSON list of class ids),
   * in claim order: what a claim sorts when it may take only rare work.
   */
  candidates: `SELECT DISTINCT q.job_id, q.priority, s.pass AS share_pass, s.turn AS share_turn, q.tenant,
           q.pass, q.turn, q.rowid AS id
    FROM queue_classes c JOIN job_queues q ON q.job_id = c.job_id
      JOIN tenant_shares s ON s.priority = q.priority AND s.tenant = q.tenant
    WHERE c.class_id IN (SELECT value FROM json_each(?)) AND c.pending > 0
    ORDER BY q.priority DESC, share_pass, share_turn, q.tenant, q.pass, q.turn, id`,
  /** A job's pending tasks of one class after a task, in queue order. */
  tasks: `SELECT seq FROM tasks WHERE state = 'PENDING' AND job_id = ? AND class_id = ? AND seq > ?
    ORDER BY seq LIMIT ?`,
  /**
   * The same, only before a bound (the best task of the job's other classes).
   * Its own statement: a bound must be an integer, and "none" as 2^53 binds
   * as a float, which doubles the seek's cost.
   */
  tasksBefore: `SELECT seq FROM tasks WHERE state = 'PENDING' AND job_id = ? AND class_id = ? AND seq > ? AND seq < ?
    ORDER BY seq LIMIT ?`,
  /** Whether a node failed a task. */
  failed: "SELECT 1 FROM task_failures WHERE task_seq = ? AND node_id = ?",
  /** Online, accepting nodes not held back, other than one, that have not failed a task (any node_id, '' too). */
  others: `SELECT rowid AS id, registration FROM nodes
    WHERE live_until_ms > ? AND status = 'online' AND held_until_ms <= ? AND node_id <> ?
      AND node_id NOT IN (SELECT node_id FROM task_failures WHERE task_seq = ?) AND rowid > ?
    ORDER BY rowid LIMIT ?`,
} as const;

/**
 * An ordered walk read a page at a time: `read(last, limit)` is the page of
 * at most `limit` rows after row `last` (null: the first). The first page
 * is one row: most claims stop at it.
 */
function* walk<T>(read: (last: T | null, limit: number) => T[]): Generator<T> {
  let limit = FIRST_PAGE;
  for (let last: T | null = null; ; limit = PAGE) {
    const page = read(last, limit);
    yield* page;
    if (page.length < limit) return;
    last = page[page.length - 1]!;
  }
}

type QueueRow = { job_id: string; pass: number; turn: number; id: number };

/** What the claim needs to know about the claiming node. */
export type Claimant = { nodeId: string; view: NodeView };

/** Jobs the walk may pass over before the claim sorts only the jobs holding work the node may take. */
const WALK_LIMIT = 16;

/**
 * The task `node` should be leased, by policy: the highest priority with a
 * task it may take; at that priority the tenant with the lowest pass (claims
 * granted over weight), then that tenant's job with the lowest pass, then
 * the job's queue order. The gate runs once per requirement class with
 * pending tasks; a node that may take none of them is answered at once.
 * Then the policy order is walked through its indexes, stopping at the
 * first job with a task for the node; a walk that passes over WALK_LIMIT
 * jobs (the node may take only rare work) sorts the jobs holding that work
 * instead. Either way the cost is bounded by active jobs and classes, never
 * by the queue's depth. `jobId` restricts the claim to one job.
 */
export function pickTask(sql: SqlStorage, now: number, node: Claimant, jobId: string | null): number | undefined {
  const accepted = new Map<number, string>();
  for (const c of sql.exec<{ class_id: number; requirement: string }>(POLICY_SQL.pendingClasses)) {
    if (eligible(JSON.parse(c.requirement), node.view)) accepted.set(c.class_id, c.requirement);
  }
  if (accepted.size === 0) return undefined;
  if (jobId !== null) return jobHead(sql, now, node, jobId, accepted);
  let passed = 0;
  for (const job of policyOrder(sql)) {
    const seq = jobHead(sql, now, node, job, accepted);
    if (seq !== undefined) return seq;
    if (++passed === WALK_LIMIT) break;
  }
  if (passed < WALK_LIMIT) return undefined;
  const candidates = sql.exec<{ job_id: string }>(POLICY_SQL.candidates, JSON.stringify([...accepted.keys()]));
  for (const { job_id } of candidates.toArray()) {
    const seq = jobHead(sql, now, node, job_id, accepted);
    if (seq !== undefined) return seq;
  }
  return undefined;
}

/** Jobs with pending tasks in claim order: priority, then tenant turns, then job turns, read a page at a time. */
function* policyOrder(sql: SqlStorage): Generator<string> {
  const below = (bound: number) => sql.exec<{ p: number | null }>(POLICY_SQL.level, bound).one().p;
  for (let level = below(MAX_PRIORITY + 1); level !== null; level = below(level)) {
    const tenants = walk<{ tenant: string; pass: number; turn: number }>((last, limit) =>
      last === null
        ? sql.exec<{ tenant: string; pass: number; turn: number }>(POLICY_SQL.firstTenant, level).toArray()
        : sql
            .exec<{ tenant: string; pass: number; turn: number }>(
              POLICY_SQL.tenants,
              level,
              last.pass,
              last.turn,
              last.tenant,
              limit,
            )
            .toArray(),
    );
    for (const { tenant } of tenants) {
      const jobs = walk<QueueRow>((last, limit) =>
        last === null
          ? sql.exec<QueueRow>(POLICY_SQL.firstJob, level, tenant).toArray()
          : sql.exec<QueueRow>(POLICY_SQL.jobs, level, tenant, last.pass, last.turn, last.id, limit).toArray(),
      );
      for (const job of jobs) yield job.job_id;
    }
  }
}

/**
 * The first task of one job, in queue order, among the `accepted` classes
 * (class id → requirement); a task the node has failed is passed over while
 * another online node could take it (SPEC §13 "retry elsewhere").
 */
function jobHead(
  sql: SqlStorage,
  now: number,
  node: Claimant,
  jobId: string,
  accepted: ReadonlyMap<number, string>,
): number | undefined {
  const classes = sql
    .exec<{ class_id: number }>(POLICY_SQL.classes, jobId)
    .toArray()
    .filter((c) => accepted.has(c.class_id));
  let best: number | undefined;
  for (const c of classes) {
    const bound = best;
    const tasks = walk<{ seq: number }>((last, limit) =>
      (bound === undefined
        ? sql.exec<{ seq: number }>(POLICY_SQL.tasks, jobId, c.class_id, last?.seq ?? 0, limit)
        : sql.exec<{ seq: number }>(POLICY_SQL.tasksBefore, jobId, c.class_id, last?.seq ?? 0, bound, limit)
      ).toArray(),
    );
    for (const t of tasks) {
      const failed = sql.exec(POLICY_SQL.failed, t.seq, node.nodeId).toArray().length > 0;
      if (!failed || !anotherCouldTake(sql, now, t.seq, accepted.get(c.class_id)!, node.nodeId)) {
        best = t.seq;
        break;
      }
    }
  }
  return best;
}

/**
 * Whether an online, accepting node that is not held back, is not `me` and
 * has not failed the task, would pass the gate for it.
 */
export function anotherCouldTake(sql: SqlStorage, now: number, taskSeq: number, requirement: string, me: string) {
  const others = walk<{ id: number; registration: string }>((last, limit) =>
    sql
      .exec<{ id: number; registration: string }>(POLICY_SQL.others, now, now, me, taskSeq, last?.id ?? 0, limit)
      .toArray(),
  );
  const parsed: unknown = JSON.parse(requirement);
  for (const other of others) if (eligible(parsed, nodeView(other.registration))) return true;
  return false;
}

/**
 * Uses up the turns of a granted claim: one for the job within its tenant,
 * 1/weight for the tenant at the job's priority. `turn` orders equal passes
 * (the one waiting longest goes first).
 */
export function useTurn(sql: SqlStorage, now: number, jobId: string, weights: ReadonlyMap<string, number>): void {
  const job = sql
    .exec<{ priority: number; tenant: string }>(
      "UPDATE job_queues SET pass = pass + 1, turn = ? WHERE job_id = ? RETURNING priority, tenant",
      now,
      jobId,
    )
    .toArray()[0];
  if (!job) return;
  sql.exec(
    "UPDATE tenant_shares SET pass = pass + ?, turn = ? WHERE priority = ? AND tenant = ?",
    1 / (weights.get(job.tenant) ?? 1),
    now,
    job.priority,
    job.tenant,
  );
}

/**
 * An attempt of `nodeId` on the task ended without an accepted commit: the
 * task remembers it (its retry goes elsewhere) and the node's run of
 * failures grows, holding it back once long enough.
 */
export function attemptFailed(sql: SqlStorage, now: number, nodeId: string, taskSeq: number): void {
  sql.exec("INSERT OR IGNORE INTO task_failures (task_seq, node_id) VALUES (?, ?)", taskSeq, nodeId);
  const row = sql
    .exec<{ n: number }>(
      "UPDATE nodes SET consecutive_failures = consecutive_failures + 1 WHERE node_id = ? RETURNING consecutive_failures AS n",
      nodeId,
    )
    .toArray()[0];
  const hold = row ? holdBackMs(row.n) : 0;
  if (hold > 0) sql.exec("UPDATE nodes SET held_until_ms = ? WHERE node_id = ?", now + hold, nodeId);
}

/** An accepted commit ends the node's run of failures. */
export function attemptSucceeded(sql: SqlStorage, nodeId: string): void {
  sql.exec(
    "UPDATE nodes SET consecutive_failures = 0, held_until_ms = 0 WHERE node_id = ? AND consecutive_failures > 0",
    nodeId,
  );
}

/** An operator releases a held-back node early; false for an unknown node. */
export function releaseNode(sql: SqlStorage, nodeId: string): boolean {
  return (
    sql
      .exec("UPDATE nodes SET consecutive_failures = 0, held_until_ms = 0 WHERE node_id = ? RETURNING 1", nodeId)
      .toArray().length > 0
  );
}
