// The scheduling policy of SPEC §13 over the pool's tables: which pending
// task a node's claim takes, the turns that claim uses up, and the record
// of failures that holds a failing node back and sends a task's retry to
// another node. Every function runs inside the caller's transaction.

import { eligible, type NodeView } from "../rules/placement";
import { DEFAULT_RETRY_ELSEWHERE_SECONDS, holdBackMs, MAX_PRIORITY } from "../rules/scheduling";
import { nodeView } from "./nodes";

/** Rows per page of an ordered walk. */
const PAGE = 16;

/**
 * A job's head: its first pending task, in queue order, of the classes
 * listed in ?2 (a JSON list of class ids), by one seek per class it holds.
 */
const headOf = (job: string) => `(SELECT MIN((SELECT t.seq FROM tasks t INDEXED BY tasks_claim_job
      WHERE t.state = 'PENDING' AND t.job_id = c.job_id AND t.class_id = c.class_id ORDER BY t.seq LIMIT 1))
    FROM queue_classes c WHERE c.job_id = ${job} AND c.pending > 0 AND +c.class_id IN (SELECT value FROM json_each(?2)))`;

/**
 * Whether the node ?3 failed the task `head`, or holds or ran a replica of
 * it (SPEC §14): either way the head is looked at closer.
 */
const FAILED_HEAD = `(EXISTS (SELECT 1 FROM task_failures f WHERE f.task_seq = head AND f.node_id = ?3)
    OR EXISTS (SELECT 1 FROM leases l WHERE l.task_seq = head AND l.node_id = ?3 AND l.replica > 0)) AS failed`;

/**
 * The jobs at priority ?1 holding pending tasks of the classes ?2, in claim
 * order: tenants by pass (claims granted over weight), then each tenant's
 * jobs by pass, the longest waiting first at equal passes. Walked in that
 * order through the tenant_shares_next and job_queues_next indexes (the
 * rowids make the order total, so nothing is sorted), it stops at the
 * page's last row. Each with its head, and whether the node ?3 failed it.
 */
const jobsAtSql = (page: string) => `SELECT job_id, head, ${FAILED_HEAD}
  FROM (SELECT q.job_id, ${headOf("q.job_id")} AS head
    FROM tenant_shares s CROSS JOIN job_queues q
    WHERE s.priority = ?1 AND q.priority = ?1 AND q.tenant = s.tenant AND q.pending > 0
      AND EXISTS (SELECT 1 FROM queue_classes c
        WHERE c.job_id = q.job_id AND c.pending > 0 AND +c.class_id IN (SELECT value FROM json_each(?2)))
    ORDER BY s.pass, s.turn, s.tenant, s.rowid, q.pass, q.turn, q.rowid ${page})`;

/**
 * The claim's statements, each index seeks or a page of an ordered index
 * walk (a plan test holds them to that). Pages are read whole, so no
 * statement is left open mid-walk. Limits are literals: a bound LIMIT makes
 * SQLite plan for many rows (Bloom filters and all), several times the cost.
 */
export const POLICY_SQL = {
  /** Requirement classes with pending tasks (the classes_pending index): what the gate judges once per claim. */
  pendingClasses: "SELECT class_id, requirement FROM classes WHERE pending > 0",
  /** The highest priority below ?2 holding pending tasks of the classes ?1: one seek per class. */
  level: `SELECT MAX((SELECT MAX(c.priority) FROM queue_classes c
      WHERE c.class_id = a.value AND c.pending > 0 AND c.priority < ?2)) AS p
    FROM json_each(?1) a`,
  /** The first job by claim order at a priority (most claims need no other). */
  firstJob: jobsAtSql("LIMIT 1"),
  /** A page of the jobs after the first ?4 (by offset: only a failed head gets here). */
  jobs: jobsAtSql(`LIMIT ${PAGE} OFFSET ?4`),
  /** One job's head (?1), for a claim restricted to that job. */
  head: `SELECT head, ${FAILED_HEAD} FROM (SELECT ${headOf("?1")} AS head)`,
  /** A job's requirement classes with pending tasks. */
  classes: "SELECT class_id FROM queue_classes WHERE job_id = ? AND pending > 0",
  /** A page of a job's pending tasks of one class after a task, in queue order. */
  tasks: `SELECT seq FROM tasks WHERE state = 'PENDING' AND job_id = ? AND class_id = ? AND seq > ?
    ORDER BY seq LIMIT ${PAGE}`,
  /**
   * The same, only before a bound (the best task of the job's other classes).
   * Its own statement: a bound must be an integer, and "none" as 2^53 binds
   * as a float, which doubles the seek's cost.
   */
  tasksBefore: `SELECT seq FROM tasks WHERE state = 'PENDING' AND job_id = ? AND class_id = ? AND seq > ? AND seq < ?
    ORDER BY seq LIMIT ${PAGE}`,
  /** When a node last failed a task (no row: never). */
  failed: "SELECT failed_ms FROM task_failures WHERE task_seq = ? AND node_id = ?",
  /** Whether a node holds or ran a replica of a task. */
  ranReplica: "SELECT 1 FROM leases WHERE task_seq = ? AND node_id = ? AND replica > 0",
  /**
   * A page of idle nodes other than ?3 (any node_id, '' too): online, accepting, not held back, holding
   * no live lease, and not having failed the task ?4 since ?5 (a failure before that has run its window).
   */
  others: `SELECT rowid AS id, registration FROM nodes
    WHERE live_until_ms > ?1 AND status = 'online' AND held_until_ms <= ?2 AND node_id <> ?3
      AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.node_id = nodes.node_id AND l.status = 'live')
      AND node_id NOT IN (SELECT node_id FROM task_failures WHERE task_seq = ?4 AND failed_ms > ?5) AND rowid > ?6
    ORDER BY rowid LIMIT ${PAGE}`,
} as const;

/**
 * An ordered walk read a page at a time: `read(last)` is the page of at
 * most PAGE rows after row `last` (null: the first).
 */
function* walk<T>(read: (last: T | null) => T[]): Generator<T> {
  for (let last: T | null = null; ; ) {
    const page = read(last);
    yield* page;
    if (page.length < PAGE) return;
    last = page[page.length - 1]!;
  }
}

/** What the claim needs to know about the claiming node. */
export type Claimant = { nodeId: string; view: NodeView };

/** SPEC §13 rule 4's window when none is given: FLASHML_RETRY_ELSEWHERE_SECONDS's default. */
export const DEFAULT_RETRY_ELSEWHERE_MS = DEFAULT_RETRY_ELSEWHERE_SECONDS * 1000;

type Head = { head: number | null; failed: number };
type JobRow = Head & { job_id: string };

/**
 * The task `node` should be leased, by policy: the highest priority holding
 * a task it may take; at that priority the tenant with the lowest pass
 * (claims granted over weight), then that tenant's job with the lowest pass,
 * then the job's queue order. The gate runs once per requirement class with
 * pending tasks; a node that may take none of them is answered at once.
 * The priority is found by one seek per class the node accepts, and its
 * jobs are walked in order, inside SQLite, to the first holding such a
 * task, so the cost is bounded by active jobs and classes, never by the
 * queue's depth. Most claims end at that job's head; a head the node failed
 * is looked at closer (`jobHead`). `jobId` restricts the claim to one job.
 */
export function pickTask(
  sql: SqlStorage,
  now: number,
  node: Claimant,
  jobId: string | null,
  retryElsewhereMs = DEFAULT_RETRY_ELSEWHERE_MS,
): number | undefined {
  const accepted = new Map<number, string>();
  for (const c of sql.exec<{ class_id: number; requirement: string }>(POLICY_SQL.pendingClasses).toArray()) {
    if (eligible(JSON.parse(c.requirement), node.view)) accepted.set(c.class_id, c.requirement);
  }
  if (accepted.size === 0) return undefined;
  const classes = JSON.stringify([...accepted.keys()]);
  const headOrCloser = (jobId: string, h: Head) =>
    h.head === null ? undefined : h.failed ? jobHead(sql, now, node, jobId, accepted, retryElsewhereMs) : h.head;
  if (jobId !== null) return headOrCloser(jobId, sql.exec<Head>(POLICY_SQL.head, jobId, classes, node.nodeId).one());
  const below = (bound: number) => sql.exec<{ p: number | null }>(POLICY_SQL.level, classes, bound).one().p;
  for (let level = below(MAX_PRIORITY + 1); level !== null; level = below(level)) {
    for (const job of jobsAt(sql, level, classes, node.nodeId)) {
      const seq = headOrCloser(job.job_id, job);
      if (seq !== undefined) return seq;
    }
  }
  return undefined;
}

/** The jobs at `level` holding work of `classes`, in claim order: the first alone, then pages after it. */
function* jobsAt(sql: SqlStorage, level: number, classes: string, nodeId: string): Generator<JobRow> {
  const first = sql.exec<JobRow>(POLICY_SQL.firstJob, level, classes, nodeId).toArray();
  yield* first;
  if (first.length === 0) return;
  for (let offset = 1; ; offset += PAGE) {
    const page = sql.exec<JobRow>(POLICY_SQL.jobs, level, classes, nodeId, offset).toArray();
    yield* page;
    if (page.length < PAGE) return;
  }
}

/**
 * The first task of one job, in queue order, among the `accepted` classes
 * (class id → requirement); a task the node failed less than
 * `retryElsewhereMs` ago is passed over while another idle node could take
 * it (SPEC §13 "retry elsewhere"), and one it holds or ran a replica of
 * always is (SPEC §14).
 */
function jobHead(
  sql: SqlStorage,
  now: number,
  node: Claimant,
  jobId: string,
  accepted: ReadonlyMap<number, string>,
  retryElsewhereMs: number,
): number | undefined {
  const since = now - retryElsewhereMs;
  const classes = sql
    .exec<{ class_id: number }>(POLICY_SQL.classes, jobId)
    .toArray()
    .filter((c) => accepted.has(c.class_id));
  let best: number | undefined;
  for (const c of classes) {
    const bound = best;
    const tasks = walk<{ seq: number }>((last) =>
      (bound === undefined
        ? sql.exec<{ seq: number }>(POLICY_SQL.tasks, jobId, c.class_id, last?.seq ?? 0)
        : sql.exec<{ seq: number }>(POLICY_SQL.tasksBefore, jobId, c.class_id, last?.seq ?? 0, bound)
      ).toArray(),
    );
    for (const t of tasks) {
      if (sql.exec(POLICY_SQL.ranReplica, t.seq, node.nodeId).toArray().length > 0) continue;
      const failedMs = sql.exec<{ failed_ms: number }>(POLICY_SQL.failed, t.seq, node.nodeId).toArray()[0]?.failed_ms;
      const recent = failedMs !== undefined && failedMs > since;
      if (!recent || !anotherCouldTake(sql, now, t.seq, accepted.get(c.class_id)!, node.nodeId, since)) {
        best = t.seq;
        break;
      }
    }
  }
  return best;
}

/**
 * Whether an idle node — online, accepting, not held back, holding no live
 * lease — that is not `me` and has not failed the task after `since` would
 * pass the gate for it. A node busy on a long task is not waited for.
 */
export function anotherCouldTake(
  sql: SqlStorage,
  now: number,
  taskSeq: number,
  requirement: string,
  me: string,
  since: number,
) {
  const others = walk<{ id: number; registration: string }>((last) =>
    sql
      .exec<{ id: number; registration: string }>(POLICY_SQL.others, now, now, me, taskSeq, since, last?.id ?? 0)
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
 * task remembers it and when (its retry goes elsewhere for a while) and the node's run of
 * failures grows, holding it back once long enough.
 */
export function attemptFailed(sql: SqlStorage, now: number, nodeId: string, taskSeq: number): void {
  // The latest failure starts the retry-elsewhere window again.
  sql.exec(
    `INSERT INTO task_failures (task_seq, node_id, failed_ms) VALUES (?, ?, ?)
     ON CONFLICT (task_seq, node_id) DO UPDATE SET failed_ms = excluded.failed_ms`,
    taskSeq,
    nodeId,
    now,
  );
  const row = sql
    .exec<{ n: number }>(
      "UPDATE nodes SET consecutive_failures = consecutive_failures + 1 WHERE node_id = ? RETURNING consecutive_failures AS n",
      nodeId,
    )
    .toArray()[0];
  const hold = row ? holdBackMs(row.n) : 0;
  // Never shortens a longer hold already set (a distrusted node's, SPEC §14).
  if (hold > 0)
    sql.exec("UPDATE nodes SET held_until_ms = MAX(held_until_ms, ?) WHERE node_id = ?", now + hold, nodeId);
}

/**
 * An accepted commit ends the node's run of failures, and its hold, unless
 * the node is distrusted: a lie's hold runs out or is released (SPEC §14).
 */
export function attemptSucceeded(sql: SqlStorage, nodeId: string): void {
  sql.exec(
    `UPDATE nodes SET consecutive_failures = 0, held_until_ms = CASE WHEN distrusted IS NULL THEN 0 ELSE held_until_ms END
     WHERE node_id = ? AND consecutive_failures > 0`,
    nodeId,
  );
}

/**
 * An operator releases a held-back node early, and lifts its distrust
 * (SPEC §14): its latest verdicts start afresh. False for an unknown node.
 */
export function releaseNode(sql: SqlStorage, nodeId: string): boolean {
  return (
    sql
      .exec(
        `UPDATE nodes SET consecutive_failures = 0, held_until_ms = 0, distrusted = NULL, verdicts = ''
         WHERE node_id = ? RETURNING 1`,
        nodeId,
      )
      .toArray().length > 0
  );
}
