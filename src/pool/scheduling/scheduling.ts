// The scheduling policy of docs/protocol.md §13 over the pool's tables: which pending
// task a node's claim takes, the turns that claim uses up, and the record
// of failures that sends a task's retry to another node (the node's own
// record, which holds it back, is src/pool/nodes/outcomes.ts). Every function
// runs inside the caller's transaction.

import { gateFor, type Membership, type NodeView, type PayloadGate } from "../../rules/placement";
import { DEFAULT_RETRY_ELSEWHERE_SECONDS, MAX_PRIORITY } from "../../rules/scheduling";
import type { Turn } from "../contract";
import { lastRequestHere, PASSPORT_LAG_MS } from "../nodes/liveness";
import { nodeOutcome } from "../nodes/outcomes";
import { ASSIGNED_POOLS, storedNodeView } from "../nodes/registry";
import { claimableSql, isOnlineHere, passportClaimableSql } from "../nodes/states";

/** Rows per page of an ordered walk. */
const PAGE = 16;

/**
 * A job's heads, by one seek per class it holds of the classes listed in
 * ?2 (a JSON list of class ids): `fresh`, its first pending task no replica
 * of which was issued yet, in queue order; and `replicating`, its first
 * pending task that has replicas out and wants more (docs/protocol.md §14), only among
 * classes where some such task is not one the owner ?4 holds or ran a
 * replica of — a class where the owner ran them all is passed over by its
 * counts, however many they are.
 */
/** Of the class `c`'s replicating pending tasks, how many the owner ?4 holds or ran a replica of. */
const RAN_BY_OWNER = `COALESCE((SELECT o.pending FROM owner_replicas o
      WHERE o.job_id = c.job_id AND o.class_id = c.class_id AND o.owner = ?4), 0)`;
const freshOf = (job: string) => `(SELECT MIN((SELECT t.seq FROM tasks t INDEXED BY tasks_fresh_job
      WHERE t.state = 'PENDING' AND t.replicating = 0 AND t.job_id = c.job_id AND t.class_id = c.class_id
      ORDER BY t.seq LIMIT 1))
    FROM queue_classes c WHERE c.job_id = ${job} AND c.pending > c.replicating
      AND +c.class_id IN (SELECT value FROM json_each(?2)))`;
const replicatingOf = (job: string) => `(SELECT MIN((SELECT t.seq FROM tasks t INDEXED BY tasks_replicating_job
      WHERE t.state = 'PENDING' AND t.replicating = 1 AND t.job_id = c.job_id AND t.class_id = c.class_id
      ORDER BY t.seq LIMIT 1))
    FROM queue_classes c WHERE c.job_id = ${job} AND c.replicating > ${RAN_BY_OWNER}
      AND +c.class_id IN (SELECT value FROM json_each(?2)))`;

/**
 * Whether the node ?3 failed a head, and whether the node or its owner ?4
 * holds or ran a replica of the replicating head (docs/protocol.md §14; the node
 * itself too, should its owner have changed since): either way that head
 * is looked at closer.
 */
const HEAD_CHECKS = `EXISTS (SELECT 1 FROM task_failures f WHERE f.task_seq = fresh AND f.node_id = ?3) AS fresh_failed,
    (EXISTS (SELECT 1 FROM task_failures f WHERE f.task_seq = replicating AND f.node_id = ?3)
      OR EXISTS (SELECT 1 FROM leases l WHERE l.task_seq = replicating AND l.replica > 0
        AND (l.owner = ?4 OR l.node_id = ?3)))
      AS replicating_passed`;

/**
 * The jobs at priority ?1 holding pending tasks of the classes ?2, in claim
 * order: tenants by pass (claims granted over weight), then each tenant's
 * jobs by pass, the longest waiting first at equal passes. Walked in that
 * order through the tenant_shares_next and job_queues_next indexes (the
 * rowids make the order total, so nothing is sorted), it stops at the
 * page's last row. Each with its heads for the node ?3 of owner ?4.
 */
const jobsAtSql = (page: string) => `SELECT job_id, fresh, replicating, ${HEAD_CHECKS}
  FROM (SELECT q.job_id, ${freshOf("q.job_id")} AS fresh, ${replicatingOf("q.job_id")} AS replicating
    FROM tenant_shares s CROSS JOIN job_queues q
    WHERE s.priority = ?1 AND q.priority = ?1 AND q.tenant = s.tenant AND q.queued = 1
      AND EXISTS (SELECT 1 FROM queue_classes c
        WHERE c.job_id = q.job_id AND c.queued = 1 AND +c.class_id IN (SELECT value FROM json_each(?2)))
    ORDER BY s.pass, s.turn, s.tenant, s.rowid, q.pass, q.turn, q.rowid ${page})`;

/** The same for one tenant ?5 only: its jobs at priority ?1 by pass, a page after the first ?6. */
const tenantJobsSql = `SELECT job_id, fresh, replicating, ${HEAD_CHECKS}
  FROM (SELECT q.job_id, ${freshOf("q.job_id")} AS fresh, ${replicatingOf("q.job_id")} AS replicating
    FROM job_queues q
    WHERE q.priority = ?1 AND q.tenant = ?5 AND q.queued = 1
      AND EXISTS (SELECT 1 FROM queue_classes c
        WHERE c.job_id = q.job_id AND c.queued = 1 AND +c.class_id IN (SELECT value FROM json_each(?2)))
    ORDER BY q.pass, q.turn, q.rowid LIMIT ${PAGE} OFFSET ?6)`;

/** A page of a job's pending tasks of one class after a task, fresh (0) or replicating (1), in queue order. */
const tasksSql = (replicating: 0 | 1, before: string) => `SELECT seq FROM tasks
    WHERE state = 'PENDING' AND replicating = ${replicating} AND job_id = ? AND class_id = ? AND seq > ?${before}
    ORDER BY seq LIMIT ${PAGE}`;

/**
 * The claim's statements, each index seeks or a page of an ordered index
 * walk (a plan test holds them to that). Pages are read whole, so no
 * statement is left open mid-walk. Limits are literals: a bound LIMIT makes
 * SQLite plan for many rows (Bloom filters and all), several times the cost.
 */
export const POLICY_SQL = {
  /** Requirement classes with pending tasks (the classes_queued index): what the gate judges once per claim. */
  pendingClasses: "SELECT class_id, requirement FROM classes WHERE queued = 1",
  /** The highest priority below ?2 holding pending tasks of the classes ?1: one seek per class. */
  level: `SELECT MAX((SELECT MAX(c.priority) FROM queue_classes c
      WHERE c.class_id = a.value AND c.queued = 1 AND c.priority < ?2)) AS p
    FROM json_each(?1) a`,
  /** The first job by claim order at a priority (most claims need no other). */
  firstJob: jobsAtSql("LIMIT 1"),
  /** A page of the jobs after the first ?5 (by offset: only a head looked at closer gets here). */
  jobs: jobsAtSql(`LIMIT ${PAGE} OFFSET ?5`),
  /**
   * A page of one tenant's (?5) jobs at a priority, after the first ?6: the
   * tenant whose turn it is by the pool-wide passes, in a pool of shards.
   */
  tenantJobs: tenantJobsSql,
  /** One job's heads (?1), for a claim restricted to that job. */
  head: `SELECT fresh, replicating, ${HEAD_CHECKS}
    FROM (SELECT ${freshOf("?1")} AS fresh, ${replicatingOf("?1")} AS replicating)`,
  /**
   * A job's (?2) requirement classes with pending tasks: whether some are
   * fresh, and whether some replicating ones are not the owner's (?1).
   */
  classes: `SELECT c.class_id, c.pending > c.replicating AS fresh,
      c.replicating > ${RAN_BY_OWNER.replace("?4", "?1")} AS replicating
    FROM queue_classes c WHERE c.job_id = ?2 AND c.queued = 1`,
  /** A page of a job's fresh pending tasks of one class after a task, in queue order. */
  freshTasks: tasksSql(0, ""),
  /**
   * The same, only before a bound (the best task of the job's other classes).
   * Its own statement: a bound must be an integer, and "none" as 2^53 binds
   * as a float, which doubles the seek's cost.
   */
  freshTasksBefore: tasksSql(0, " AND seq < ?"),
  /** The same two for replicating tasks. */
  replicatingTasks: tasksSql(1, ""),
  replicatingTasksBefore: tasksSql(1, " AND seq < ?"),
  /** When a node last failed a task (no row: never). */
  failed: "SELECT failed_ms FROM task_failures WHERE task_seq = ? AND node_id = ?",
  /** Whether a node of an owner (?2), or the node itself (?3), holds or ran a replica of a task. */
  ranReplica: "SELECT 1 FROM leases WHERE task_seq = ?1 AND replica > 0 AND (owner = ?2 OR node_id = ?3)",
  /**
   * A page of idle nodes other than ?2 (any node_id, '' too): claimable at ?1, holding no live lease,
   * and not having failed the task ?3 since ?4 (a failure before that has run its window), after rowid ?5.
   */
  others: `SELECT n.rowid AS id, n.registration, ap.pools AS assigned_pools FROM nodes n ${ASSIGNED_POOLS}
    WHERE ${claimableSql("n", "?1")} AND n.node_id <> ?2
      AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.node_id = n.node_id AND l.status = 'live')
      AND n.node_id NOT IN (SELECT node_id FROM task_failures WHERE task_seq = ?3 AND failed_ms > ?4) AND n.rowid > ?5
    ORDER BY n.rowid LIMIT ${PAGE}`,
  // The same for the nodes of other shards this shard has served (docs/sharding.md §7.3): claimable by their
  // passport (online by their last request here, accepting, not held back, not revoked at home). The row's
  // last request may lag (src/pool/nodes/liveness.ts seenHere): read loosely here, exactly by the caller.
  othersElsewhere: `SELECT p.rowid AS id, p.registration, p.assigned_pools, p.node_id, p.last_request_ms FROM passports p
    WHERE ${passportClaimableSql("p", "?1", PASSPORT_LAG_MS)} AND p.node_id <> ?2
      AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.node_id = p.node_id AND l.status = 'live')
      AND p.node_id NOT IN (SELECT node_id FROM task_failures WHERE task_seq = ?3 AND failed_ms > ?4) AND p.rowid > ?5
    ORDER BY p.rowid LIMIT ${PAGE}`,
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

/**
 * What the claim needs to know about the claiming node: its id, its owner
 * (docs/protocol.md §14: replicas of a task go to distinct owners) and its claim-time view.
 */
/** A claiming node; `membership` also judges the other nodes rule 4 asks about. */
/**
 * Who claims: the node, its owner and gate view. `idleElsewhere`, in a
 * pool of shards: about how many nodes of the other shards are idle, by the
 * summary (their gates this shard cannot see, docs/sharding.md §7.3).
 */
export type Claimant = {
  nodeId: string;
  owner: string;
  view: NodeView;
  membership: Membership;
  idleElsewhere?: number;
};

/** docs/protocol.md §13 rule 4's window when none is given: FLASHML_RETRY_ELSEWHERE_SECONDS's default. */
export const DEFAULT_RETRY_ELSEWHERE_MS = DEFAULT_RETRY_ELSEWHERE_SECONDS * 1000;

/**
 * Whose turn it is at a priority by the pool-wide passes (docs/sharding.md
 * §7.2), as the home that chose this shard judged: a shard's own passes
 * count only its own grants, so in a pool of shards the claim serves that
 * tenant first at that priority, then the shard's own order.
 */
type Heads = { fresh: number | null; replicating: number | null; fresh_failed: number; replicating_passed: number };
type JobRow = Heads & { job_id: string };

/**
 * The task `node` should be leased, by policy: the highest priority holding
 * a task it may take; at that priority the tenant with the lowest pass
 * (claims granted over weight), then that tenant's job with the lowest pass,
 * then the job's queue order. The gate runs once per requirement class with
 * pending tasks; a node that may take none of them is answered at once.
 * The priority is found by one seek per class the node accepts, and its
 * jobs are walked in order, inside SQLite, to the first holding such a
 * task, so the cost is bounded by active jobs and classes, never by the
 * queue's depth, nor by how many replicating tasks the node's owner already
 * ran (their counts pass over them). Most claims end at that job's heads; a
 * head the node failed, or a replicating head its owner ran, is looked at
 * closer (`jobHead`). `jobId` restricts the claim to one job; `floor` and
 * `turn` are a pool of shards' (docs/sharding.md §7.1, §7.2).
 */
export function pickTask(
  sql: SqlStorage,
  now: number,
  node: Claimant,
  jobId: string | null,
  retryElsewhereMs = DEFAULT_RETRY_ELSEWHERE_MS,
  floor = Number.NEGATIVE_INFINITY,
  turn?: Turn,
): number | undefined {
  const accepted = new Map<number, string>();
  for (const c of sql.exec<{ class_id: number; requirement: string }>(POLICY_SQL.pendingClasses).toArray()) {
    if (classGate(c.requirement).eligible(node.view)) accepted.set(c.class_id, c.requirement);
  }
  if (accepted.size === 0) return undefined;
  const classes = JSON.stringify([...accepted.keys()]);
  const headOrCloser = (jobId: string, h: Heads) => {
    if (h.fresh === null && h.replicating === null) return undefined;
    // The earlier head is the job's answer unless it must be looked at closer.
    const fresh = h.replicating === null || (h.fresh !== null && h.fresh < h.replicating);
    if (fresh ? !h.fresh_failed : !h.replicating_passed) return fresh ? h.fresh! : h.replicating!;
    return jobHead(sql, now, node, jobId, accepted, retryElsewhereMs);
  };
  if (jobId !== null)
    return headOrCloser(jobId, sql.exec<Heads>(POLICY_SQL.head, jobId, classes, node.nodeId, node.owner).one());
  const below = (bound: number) => sql.exec<{ p: number | null }>(POLICY_SQL.level, classes, bound).one().p;
  for (let level = below(MAX_PRIORITY + 1); level !== null && level >= floor; level = below(level)) {
    if (turn?.priority === level)
      for (const job of tenantJobsAt(sql, level, turn.tenant, classes, node)) {
        const seq = headOrCloser(job.job_id, job);
        if (seq !== undefined) return seq;
      }
    for (const job of jobsAt(sql, level, classes, node)) {
      const seq = headOrCloser(job.job_id, job);
      if (seq !== undefined) return seq;
    }
  }
  return undefined;
}

/** The jobs at `level` holding work of `classes`, in claim order: the first alone, then pages after it. */
function* jobsAt(sql: SqlStorage, level: number, classes: string, node: Claimant): Generator<JobRow> {
  const first = sql.exec<JobRow>(POLICY_SQL.firstJob, level, classes, node.nodeId, node.owner).toArray();
  yield* first;
  if (first.length === 0) return;
  for (let offset = 1; ; offset += PAGE) {
    const page = sql.exec<JobRow>(POLICY_SQL.jobs, level, classes, node.nodeId, node.owner, offset).toArray();
    yield* page;
    if (page.length < PAGE) return;
  }
}

/** One tenant's jobs at `level` holding work of `classes`, in its jobs' claim order, a page at a time. */
function* tenantJobsAt(sql: SqlStorage, level: number, tenant: string, classes: string, node: Claimant) {
  for (let offset = 0; ; offset += PAGE) {
    const page = sql
      .exec<JobRow>(POLICY_SQL.tenantJobs, level, classes, node.nodeId, node.owner, tenant, offset)
      .toArray();
    yield* page;
    if (page.length < PAGE) return;
  }
}

/**
 * The first task of one job, in queue order, among the `accepted` classes
 * (class id → requirement); a task the node failed less than
 * `retryElsewhereMs` ago is passed over while another idle node could take
 * it (docs/protocol.md §13 "retry elsewhere"), and one a node of its owner holds or ran a replica of always is (docs/protocol.md §14). Fresh
 * and replicating tasks are walked apart, the latter only in classes where
 * the owner did not run them all; what it walks past is bounded by the
 * replicating tasks of the class the owner ran that queue before the answer.
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
    .exec<{ class_id: number; fresh: number; replicating: number }>(POLICY_SQL.classes, node.owner, jobId)
    .toArray()
    .filter((c) => accepted.has(c.class_id));
  let best: number | undefined;
  const firstOf = (classId: number, replicating: boolean) => {
    const bound = best;
    const [after, before] = replicating
      ? [POLICY_SQL.replicatingTasks, POLICY_SQL.replicatingTasksBefore]
      : [POLICY_SQL.freshTasks, POLICY_SQL.freshTasksBefore];
    const tasks = walk<{ seq: number }>((last) =>
      (bound === undefined
        ? sql.exec<{ seq: number }>(after, jobId, classId, last?.seq ?? 0)
        : sql.exec<{ seq: number }>(before, jobId, classId, last?.seq ?? 0, bound)
      ).toArray(),
    );
    for (const t of tasks) {
      if (replicating && sql.exec(POLICY_SQL.ranReplica, t.seq, node.owner, node.nodeId).toArray().length > 0) continue;
      const failedMs = sql.exec<{ failed_ms: number }>(POLICY_SQL.failed, t.seq, node.nodeId).toArray()[0]?.failed_ms;
      const recent = failedMs !== undefined && failedMs > since;
      const waits =
        recent &&
        (anotherCouldTake(sql, now, t.seq, accepted.get(classId)!, node.nodeId, since, node.membership) ||
          mayBeElsewhere(sql, t.seq, since, node.idleElsewhere ?? 0));
      if (!waits) {
        best = t.seq;
        return;
      }
    }
  };
  for (const c of classes) {
    if (c.fresh) firstOf(c.class_id, false);
    if (c.replicating) firstOf(c.class_id, true);
  }
  return best;
}

/**
 * Whether an idle node — online, accepting, not held back, holding no live
 * lease — that is not `me` and has not failed the task after `since` would
 * pass the gate for it. A node busy on a long task is not waited for. In a
 * pool of shards the nodes are this shard's own and those whose passports
 * it holds (docs/sharding.md §7.3): an idle node that never worked here is
 * not waited for.
 */
export function anotherCouldTake(
  sql: SqlStorage,
  now: number,
  taskSeq: number,
  requirement: string,
  me: string,
  since: number,
  membership: Membership,
) {
  type Other = {
    id: number;
    registration: string;
    assigned_pools: string | null;
    node_id?: string;
    last_request_ms?: number;
  };
  const gate = classGate(requirement);
  for (const query of [POLICY_SQL.others, POLICY_SQL.othersElsewhere]) {
    const others = walk<Other>((last) => sql.exec<Other>(query, now, me, taskSeq, since, last?.id ?? 0).toArray());
    for (const other of others) {
      if (
        other.node_id !== undefined &&
        !isOnlineHere(lastRequestHere(sql, other.node_id, other.last_request_ms ?? 0), now)
      )
        continue;
      if (gate.eligible(storedNodeView(other.registration, membership, other.assigned_pools))) return true;
    }
  }
  return false;
}

/**
 * Whether another shard may have an idle node for the task, in a pool of
 * shards: this shard cannot see those nodes' gates, so it assumes one could
 * take the task while the other shards have more idle nodes (their online
 * nodes less the leases out, there and, to their nodes, here) than their
 * nodes that failed it within the window. A node homed here is in neither
 * count: `anotherCouldTake` judges it by its gate. Errs toward waiting:
 * at worst the node that failed it retries once the window ends, as when no
 * one else could take it; a broken node does not burn a task's attempts
 * while the pool has idle nodes.
 */
function mayBeElsewhere(sql: SqlStorage, taskSeq: number, since: number, idleElsewhere: number): boolean {
  if (idleElsewhere <= 0) return false;
  const { failed, leased } = sql
    .exec<{ failed: number; leased: number }>(
      `SELECT (SELECT COUNT(*) FROM task_failures f WHERE task_seq = ? AND failed_ms > ?
          AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.node_id = f.node_id)) AS failed,
        (SELECT COUNT(*) FROM leases l WHERE status = 'live'
          AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.node_id = l.node_id)) AS leased`,
      taskSeq,
      since,
    )
    .one();
  return idleElsewhere - leased > failed;
}

/** Requirement texts whose gate `classGate` keeps; past this it starts afresh. */
const CLASS_GATES_KEPT = 1024;
const classGates = new Map<string, PayloadGate>();

/**
 * The gate for a stored requirement class, read once per object rather
 * than on every claim. A memo of a pure function of the text: an evicted
 * object rebuilds it, and no answer depends on what it holds.
 */
export function classGate(requirement: string): PayloadGate {
  let gate = classGates.get(requirement);
  if (gate === undefined) {
    if (classGates.size >= CLASS_GATES_KEPT) classGates.clear();
    gate = gateFor(JSON.parse(requirement));
    classGates.set(requirement, gate);
  }
  return gate;
}

/**
 * Uses up the turns of a granted claim: one for the job within its tenant,
 * 1/weight for the tenant at the job's priority. `turn` orders equal passes
 * (the one waiting longest goes first). Answers the turn used: the job's
 * priority and tenant. The claim's task went PENDING → LEASED: its job's
 * counts move here, in the same write of the job's queue row, which the
 * count trigger leaves to it for that change alone (schema step 39).
 */
export function useTurn(
  sql: SqlStorage,
  now: number,
  jobId: string,
  weights: ReadonlyMap<string, number>,
): Turn | undefined {
  // The job's turn and counts, and its tenant's share as it stood, in one statement.
  const job = sql
    .exec<{ priority: number; tenant: string; share_turn: number | null; shared: number }>(
      `UPDATE job_queues SET pending = pending - 1, leased = leased + 1, pass = pass + 1, turn = ?1 WHERE job_id = ?2
       RETURNING priority, tenant,
         (SELECT s.turn FROM tenant_shares s WHERE s.priority = job_queues.priority AND s.tenant = job_queues.tenant)
           AS share_turn,
         EXISTS (SELECT 1 FROM tenant_shares s WHERE s.priority = job_queues.priority AND s.tenant <> job_queues.tenant)
           AS shared`,
      now,
      jobId,
    )
    .toArray()[0];
  if (!job) return undefined;
  // A tenant alone at its priority shares with no one: its pass orders nothing, and a tenant arriving there
  // starts at the lowest pass, its own (job_queues_activate), and before it, having waited longer (turn 0
  // against one once written). So the two stand as if the share had been written all along, and it is
  // not: two rows a claim fewer (docs/protocol.md §16).
  if (job.shared === 0 && (job.share_turn ?? 0) > 0) return { priority: job.priority, tenant: job.tenant };
  sql.exec(
    "UPDATE tenant_shares SET pass = pass + ?, turn = ? WHERE priority = ? AND tenant = ?",
    1 / (weights.get(job.tenant) ?? 1),
    now,
    job.priority,
    job.tenant,
  );
  return { priority: job.priority, tenant: job.tenant };
}

/**
 * An attempt of `nodeId` on the task ended without an accepted commit: the
 * task remembers it and when (its retry goes elsewhere for a while), here
 * where the task is, and the node's run of failures grows, holding it back
 * once long enough, at its home (src/pool/nodes/outcomes.ts).
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
  nodeOutcome(sql, now, nodeId, { outcome: "failed" });
}

/**
 * An operator releases a held-back node early, and lifts its distrust
 * (docs/protocol.md §14): its latest verdicts start afresh. False for an unknown node.
 */
export function endHoldBack(sql: SqlStorage, nodeId: string): boolean {
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
