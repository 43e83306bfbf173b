// A task's placement report (docs/protocol.md §11): every registered node's gate answer
// for one task, read from the task's stored payload and each node's
// claim-time view. Read-only: it never changes state, and it asks the same
// gate the claim path asks, so the report cannot disagree with a claim.
// A replicated task (docs/protocol.md §14) also lists its replicas, and a node whose
// owner holds or ran one is refused by the pool's "replica" rule, as the
// claim path passes it over; a task short of distinct eligible owners for
// its replicas says so.

import type { PlacementReport, ReplicaItem } from "../../protocol/responses";
import type { TaskState } from "../../protocol/tasks";
import { ownerOf } from "../../rules/owners";
import { gateFor, type Membership, type PayloadGate } from "../../rules/placement";
import {
  countRefusals,
  membershipNote,
  mergePlacement,
  type NodePlacement,
  ownerReplicaRefusal,
  type PlacementAnswers,
  type PlacementFacts,
  type QueueElsewhere,
  type QueuePosition,
  replicaRefusal,
} from "../../rules/placement-summary";
import { type Refusal, refusalReason } from "../../rules/refusals";
import { isOpenState } from "../../rules/task-states";
import { effectiveQuorum } from "../../rules/verification";
import { iso } from "../ledger/events";
import type { Viewer } from "../ledger/sealing";
import { ASSIGNED_POOLS, storedNodeView } from "../nodes/registry";
import { claimableSql, isHeldBack, isOnline } from "../nodes/states";

export type PlacementResult =
  | { ok: true; report: PlacementReport }
  | { ok: false; reason: "unknown_job" | "unknown_task" };

export type RegisteredNode = {
  node_id: string;
  /** The owner its enrolled credential was approved with, if any. */
  enrolled_owner: string | null;
  registration: string;
  status: string;
  last_heartbeat_ms: number;
  live_until_ms: number;
  held_until_ms: number;
  /** node_pools (docs/protocol.md §9): the operator's assignment, all null when none was made. */
  assigned_pools: string | null;
  assigned_by: string | null;
  assigned_ms: number | null;
};

/** The columns `judgeNode` reads, for nodes aliased `n` joined with ASSIGNED_POOLS. */
export const REGISTERED_NODE_COLUMNS = `n.node_id, n.registration, n.status, n.last_heartbeat_ms, n.live_until_ms,
  n.held_until_ms, ap.pools AS assigned_pools, ap.assigned_by, ap.assigned_ms`;

/** The node's claim-time view, its team pools as `membership` says. */
export function registeredView(node: RegisteredNode, membership: Membership): unknown {
  return storedNodeView(node.registration, membership, node.assigned_pools);
}

/** The nodes a claim could lease to now (claimable), by node id, with their claim-time views. */
export function claimableNodes(
  sql: SqlStorage,
  now: number,
  membership: Membership,
): { nodes: RegisteredNode[]; views: unknown[] } {
  const nodes = sql
    .exec<RegisteredNode>(
      `SELECT ${REGISTERED_NODE_COLUMNS} FROM nodes n ${ASSIGNED_POOLS}
       WHERE ${claimableSql("n", "?1")} ORDER BY n.node_id`,
      now,
    )
    .toArray();
  return { nodes, views: nodes.map((n) => registeredView(n, membership)) };
}

/** A task's gate, read once for every node it is judged on, and whether it is confined to a team pool. */
export type TaskGate = { gate: PayloadGate; teamPool: boolean };

export function taskGate(payload: unknown): TaskGate {
  const teamPool = typeof payload === "object" && payload !== null && (payload as { pool?: unknown }).pool != null;
  return { gate: gateFor(payload), teamPool };
}

/** One node's answer as the wire shows it, and the refusal behind it (null: eligible) for the summary. */
export type JudgedNode = { placement: NodePlacement; refusal: Refusal | null };

/**
 * One node's answer for a task, given its claim-time view, with its
 * liveness. For a team-pool task when membership is assigned (tokens
 * enforced), it names the node's assignment, and a gate-6 refusal says it.
 */
export function judgeNode(
  task: TaskGate,
  node: RegisteredNode,
  view: unknown,
  now: number,
  membership: Membership,
): JudgedNode {
  const base = { node_id: node.node_id, online: isOnline(node, now), status: node.status };
  let refusal = task.gate.refusal(view);
  let note: { membership: string } | Record<string, never> = {};
  if (membership === "assigned" && task.teamPool) {
    const text = membershipNote(
      node.assigned_by === null
        ? null
        : {
            pools: JSON.parse(node.assigned_pools ?? "[]") as string[],
            assigned_by: node.assigned_by,
            assigned_at: iso(node.assigned_ms ?? 0),
          },
    );
    note = { membership: text };
    if (refusal !== null && refusal.gate === "pool") refusal = { ...refusal, note: text };
  }
  const placement: NodePlacement =
    refusal === null
      ? { ...base, eligible: true, ...note }
      : { ...base, eligible: false, gate: refusal.gate, reason: refusalReason(refusal), ...note };
  return { placement, refusal };
}

/**
 * Every registered node, sorted by node_id, judged against the task's
 * payload; for a replicated task, a node that passes the gate but holds or
 * ran a replica of it, or whose owner's nodes did (`owners`: configured
 * owners), is refused by the "replica" rule. One node set's report: a pool
 * of one shard's, and at S > 1 its two passes' merge (docs/sharding.md §10).
 */
export function placementReport(
  sql: SqlStorage,
  now: number,
  jobId: string,
  taskId: string,
  viewer: Viewer = null,
  owners: ReadonlyMap<string, string> = new Map(),
  membership: Membership = "assigned",
): PlacementResult {
  const facts = placementFacts(sql, jobId, taskId, viewer);
  if (!facts.ok) return facts;
  const answers = placementAnswers(
    sql,
    now,
    facts.facts.payload,
    facts.facts.replicas?.items ?? null,
    owners,
    membership,
  );
  return { ok: true, report: mergePlacement(facts.facts, [answers]) };
}

export type PlacementFactsResult =
  | { ok: true; facts: PlacementFacts }
  | { ok: false; reason: "unknown_job" | "unknown_task" };

/** The first pass, at the job's shard: the task's state, payload, replicas (sealed as `viewer` may see them) and queue. */
export function placementFacts(sql: SqlStorage, jobId: string, taskId: string, viewer: Viewer): PlacementFactsResult {
  const task = sql
    .exec<{ seq: number; state: TaskState; payload: string; replicas: number; quorum: number; wanted: number }>(
      "SELECT seq, state, payload, replicas, quorum, wanted FROM tasks WHERE job_id = ? AND task_id = ?",
      jobId,
      taskId,
    )
    .toArray()[0];
  if (!task) {
    const job = sql.exec("SELECT 1 FROM jobs WHERE job_id = ?", jobId).toArray();
    return { ok: false, reason: job.length > 0 ? "unknown_task" : "unknown_job" };
  }
  // A node sees a replicated task before its verdict as one run alone (docs/protocol.md
  // §14): leased while any replica is out, no replicas, no replica rule.
  const sealed = viewer !== null && task.replicas > 1 && isOpenState(task.state);
  const items = task.replicas > 1 ? replicaItems(sql, task.seq) : null;
  const state = sealed && items!.some((r) => r.state === "live") ? "LEASED" : task.state;
  const shown = sealed ? null : items;
  return {
    ok: true,
    facts: {
      job_id: jobId,
      task_id: taskId,
      state,
      pending: task.state === "PENDING",
      payload: task.payload,
      replicas:
        shown === null
          ? null
          : {
              wanted: task.wanted,
              quorum: effectiveQuorum(task),
              needed: Math.max(task.replicas, task.wanted),
              items: shown,
            },
      queue: state === "PENDING" ? queuePosition(sql, jobId, task.seq, 0) : null,
    },
  };
}

/**
 * The second pass, at every shard: its registered nodes' answers for a task
 * of `payload` whose shown replicas are `shown` (null: none, or sealed).
 */
export function placementAnswers(
  sql: SqlStorage,
  now: number,
  payload: string,
  shown: readonly ReplicaItem[] | null,
  owners: ReadonlyMap<string, string>,
  membership: Membership,
): PlacementAnswers {
  const registered = sql
    .exec<RegisteredNode>(
      `SELECT ${REGISTERED_NODE_COLUMNS}, c.owner AS enrolled_owner
       FROM nodes n LEFT JOIN node_credentials c ON c.node_id = n.node_id AND c.revoked_ms IS NULL ${ASSIGNED_POOLS}
       ORDER BY n.node_id`,
    )
    .toArray();
  const ran = replicasBy(shown, (item) => item.node_id);
  const ranByOwner = replicasBy(shown, (item) => item.owner);
  const eligibleOwners = new Set<string>();
  const gate = taskGate(JSON.parse(payload) as unknown);
  const judged = registered.map((node): JudgedNode => {
    const answer = judgeNode(gate, node, registeredView(node, membership), now, membership);
    const placement = answer.placement;
    if (!placement.eligible || shown === null) return answer;
    const owner = ownerOf(node.node_id, owners, node.enrolled_owner);
    eligibleOwners.add(owner);
    const own = ran.get(node.node_id);
    const byOwner = ranByOwner.get(owner);
    if (own === undefined && byOwner === undefined) return answer;
    const refusal =
      own !== undefined
        ? replicaRefusal(own.replicas, own.live)
        : ownerReplicaRefusal(owner, byOwner!.replicas, byOwner!.live);
    return {
      placement: {
        node_id: node.node_id,
        online: placement.online,
        status: node.status,
        eligible: false,
        gate: "replica",
        reason: refusalReason(refusal),
        ...(placement.membership === undefined ? {} : { membership: placement.membership }),
      },
      refusal,
    };
  });
  const nodes = judged.map((j) => j.placement);
  return {
    nodes,
    counts: countRefusals(judged.map((j) => j.refusal)),
    held_back: registered.filter((node, i) => nodes[i]!.eligible && isHeldBack(node, now)).length,
    owners: [...eligibleOwners],
  };
}

/** Every replica of a task issued so far, with its node's owner then, its committed output and verdict, if any. */
function replicaItems(sql: SqlStorage, taskSeq: number): ReplicaItem[] {
  return sql
    .exec<ReplicaItem>(
      `SELECT l.replica, l.node_id, COALESCE(l.owner, l.node_id) AS owner, l.status AS state,
              r.sha256 AS output_sha256, r.verdict
       FROM leases l LEFT JOIN replica_results r ON r.lease_id = l.lease_id
       WHERE l.task_seq = ? AND l.replica > 0 ORDER BY l.replica`,
      taskSeq,
    )
    .toArray();
}

/** Who holds or ran a replica (a node, or an owner), in key order: which replicas, and whether one is live. */
function replicasBy(
  items: readonly ReplicaItem[] | null,
  keyOf: (item: ReplicaItem) => string,
): Map<string, { replicas: number[]; live: boolean }> {
  const byKey = new Map<string, { replicas: number[]; live: boolean }>();
  const sorted = [...(items ?? [])].sort((a, b) =>
    keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : a.replica - b.replica,
  );
  for (const item of sorted) {
    const known = byKey.get(keyOf(item)) ?? { replicas: [], live: false };
    known.replicas.push(item.replica);
    known.live ||= item.state === "live";
    byKey.set(keyOf(item), known);
  }
  return byKey;
}

/**
 * What this shard queues ahead of, or beside, a pending task at `priority`
 * of `tenant` in the pool's claim order (docs/sharding.md §10): tasks of
 * higher priority, the other tenants taking turns at that priority, and the
 * tenant's jobs with pending work there (the task's own among them at its shard).
 */
export function queueElsewhere(sql: SqlStorage, priority: number, tenant: string): QueueElsewhere {
  const count = (query: string, ...args: (string | number)[]) => sql.exec<{ n: number }>(query, ...args).one().n;
  return {
    higher_priority: count("SELECT TOTAL(pending) AS n FROM job_queues WHERE priority > ? AND queued = 1", priority),
    tenants: sql
      .exec<{ tenant: string }>("SELECT tenant FROM tenant_shares WHERE priority = ? AND tenant <> ?", priority, tenant)
      .toArray()
      .map((r) => r.tenant),
    other_jobs: count(
      "SELECT COUNT(*) AS n FROM job_queues WHERE priority = ? AND tenant = ? AND queued = 1",
      priority,
      tenant,
    ),
  };
}

/** Counts what is ahead of a pending task in the claim order, from the policy's tables. */
function queuePosition(sql: SqlStorage, jobId: string, seq: number, heldBack: number): QueuePosition {
  const place = sql
    .exec<{ priority: number; tenant: string }>("SELECT priority, tenant FROM job_queues WHERE job_id = ?", jobId)
    .one();
  const count = (query: string, ...args: (string | number)[]) => sql.exec<{ n: number }>(query, ...args).one().n;
  return {
    ...place,
    higher_priority: count(
      "SELECT TOTAL(pending) AS n FROM job_queues WHERE priority > ? AND queued = 1",
      place.priority,
    ),
    // Per class of the job, a range of the fresh and the replicating index: no index holds a job's pending tasks by seq alone.
    earlier_in_job: count(
      `SELECT TOTAL((SELECT COUNT(*) FROM tasks t INDEXED BY tasks_fresh_job WHERE t.state = 'PENDING'
           AND t.replicating = 0 AND t.job_id = c.job_id AND t.class_id = c.class_id AND t.seq < ?2)
         + (SELECT COUNT(*) FROM tasks t INDEXED BY tasks_replicating_job WHERE t.state = 'PENDING'
           AND t.replicating = 1 AND t.job_id = c.job_id AND t.class_id = c.class_id AND t.seq < ?2)) AS n
       FROM queue_classes c WHERE c.job_id = ?1 AND c.queued = 1`,
      jobId,
      seq,
    ),
    other_tenants: count(
      "SELECT COUNT(*) AS n FROM tenant_shares WHERE priority = ? AND tenant <> ?",
      place.priority,
      place.tenant,
    ),
    other_jobs: count(
      "SELECT COUNT(*) AS n FROM job_queues WHERE priority = ? AND tenant = ? AND queued = 1 AND job_id <> ?",
      place.priority,
      place.tenant,
      jobId,
    ),
    failed_on: sql
      .exec<{ node_id: string }>("SELECT node_id FROM task_failures WHERE task_seq = ? ORDER BY node_id", seq)
      .toArray()
      .map((r) => r.node_id),
    eligible_held_back: heldBack,
  };
}

/** Above every task's seq: a (job, class) with no task in one of its two pending indexes. */
const NO_SEQ = Number.MAX_SAFE_INTEGER;

/**
 * The earliest pending task of the (job, class) of queue_classes row `q`: the
 * first of its fresh and its replicating index, two seeks. No index holds a
 * class's pending tasks by seq alone (schema step 32: it cost a row each time
 * a task was queued or claimed, for these reads only).
 */
export const pendingHeadSql = (q: string) => `MIN(
    COALESCE((SELECT t.seq FROM tasks t INDEXED BY tasks_fresh_job WHERE t.state = 'PENDING' AND t.replicating = 0
      AND t.job_id = ${q}.job_id AND t.class_id = ${q}.class_id ORDER BY t.seq LIMIT 1), ${NO_SEQ}),
    COALESCE((SELECT t.seq FROM tasks t INDEXED BY tasks_replicating_job WHERE t.state = 'PENDING' AND t.replicating = 1
      AND t.job_id = ${q}.job_id AND t.class_id = ${q}.class_id ORDER BY t.seq LIMIT 1), ${NO_SEQ}))`;

/** The earliest pending task of the classes row `c`, over its jobs with pending tasks of it. */
export const classHeadSql = (c: string) =>
  `(SELECT MIN(${pendingHeadSql("q")}) FROM queue_classes q WHERE q.class_id = ${c}.class_id AND q.queued = 1)`;

/**
 * The pending tasks of the classes row `c`, summed over its queued jobs
 * (schema step 35: a class counts its queued jobs, so a claim writes no row
 * of it); a seek of queue_classes_level.
 */
export const classPendingSql = (c: string) =>
  `(SELECT COALESCE(SUM(q.pending), 0) FROM queue_classes q WHERE q.class_id = ${c}.class_id AND q.queued = 1)`;
