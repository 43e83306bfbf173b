// The fleet's GPUs and the demand on them (issue 26), for the dashboard,
// `GET /v1alpha1/nodes/summary` and metrics. Read-only, and bounded by live
// state, never by history: the GPU groups are one grouped pass over the
// registered nodes (in SQLite, no registration parsed here); the demand
// reads at most DEMAND_CLASSES_CHECKED pending requirement classes (from
// their counters, never the tasks table) against at most
// DEMAND_NODES_CHECKED registered nodes, so it costs at most their product
// in gate evaluations, however large the pool.

import type { Demand, DemandClass, FleetSummary, GpuGroup } from "../../protocol/responses";
import { type ClassDemand, demandSentence, describeRequirement } from "../../rules/demand";
import type { Membership } from "../../rules/placement";
import { gateFor } from "../../rules/placement";
import { countRefusals, NO_COUNTS } from "../../rules/placement-summary";
import type { NodeAnswer, NodeAnswers } from "../../rules/shard-merge";
import { iso } from "../ledger/events";
import { sealedPending, type Viewer } from "../ledger/sealing";
import { ASSIGNED_POOLS, storedNodeView } from "../nodes/registry";
import { acceptingSql, onlineSql } from "../nodes/states";
import { clip } from "./clipping";
import { claimableNodes, classHeadSql, classPendingSql, judgeNode, taskGate } from "./placement-report";

/** Pending requirement classes the demand reads, those with the most pending tasks first. */
export const DEMAND_CLASSES_CHECKED = 50;
/** Registered nodes each of those classes is checked against, online and accepting first. */
export const DEMAND_NODES_CHECKED = 500;

/** The fleet's GPUs grouped by model, memory and compute capability, at most `limit` groups, most GPUs first. */
export function gpuGroups(sql: SqlStorage, now: number, limit: number): { items: GpuGroup[]; more: number } {
  const rows = sql
    .exec<GpuGroup & { total_groups: number }>(
      `WITH busy AS (SELECT DISTINCT node_id FROM leases WHERE status = 'live'),
       g AS (
         SELECT n.node_id, n.live_until_ms, b.node_id IS NOT NULL AS is_busy,
                COALESCE(json_extract(e.value, '$.name'), '') AS model,
                json_extract(e.value, '$.memory_total_mb') AS memory_total_mb,
                COALESCE(json_extract(e.value, '$.compute_capability'), '') AS compute_capability
         FROM nodes n JOIN json_each(n.registration, '$.capabilities.gpus') e
         LEFT JOIN busy b ON b.node_id = n.node_id
       )
       SELECT model, memory_total_mb, compute_capability, COUNT(*) AS gpus, COUNT(DISTINCT node_id) AS nodes,
              COUNT(DISTINCT IIF(${onlineSql("", "?")}, node_id, NULL)) AS online,
              COUNT(DISTINCT IIF(is_busy, node_id, NULL)) AS busy,
              COUNT(*) OVER () AS total_groups
       FROM g GROUP BY model, memory_total_mb, compute_capability
       ORDER BY gpus DESC, model, memory_total_mb, compute_capability LIMIT ?`,
      now,
      limit,
    )
    .toArray();
  const items = rows.map((r) => ({
    model: clip(String(r.model)),
    memory_total_mb: typeof r.memory_total_mb === "number" ? r.memory_total_mb : null,
    compute_capability: clip(String(r.compute_capability)),
    gpus: r.gpus,
    nodes: r.nodes,
    online: r.online,
    busy: r.busy,
  }));
  return { items, more: (rows[0]?.total_groups ?? 0) - items.length };
}

/**
 * For each pending requirement class (the DEMAND_CLASSES_CHECKED with the
 * most pending tasks), how many tasks wait, what they need, how many online,
 * accepting nodes the gate lets take them, and whether any registered node
 * could. With `countOnline` false (metrics), a class stops at the first
 * node that could serve it. In a sharded pool `pool` holds every shard's
 * nodes' answers (docs/sharding.md §10), which then say who could serve a class.
 */
export function demand(
  sql: SqlStorage,
  now: number,
  membership: Membership,
  viewer: Viewer,
  countOnline = true,
  pool?: NodeAnswers,
): Demand {
  // A node is shown a replicated task with a replica out as taken (docs/protocol.md §14).
  const sealed = sealedPending(sql, viewer, "class_id");
  const classes = sql
    .exec<{ class_id: number; class_key: string; requirement: string; pending: number }>(
      `SELECT class_id, class_key, requirement, ${classPendingSql("classes")} AS pending FROM classes WHERE queued = 1
       ORDER BY pending DESC, class_id LIMIT ?`,
      DEMAND_CLASSES_CHECKED,
    )
    .toArray()
    .map((c) => ({ ...c, pending: c.pending - (sealed.get(c.class_id) ?? 0) }))
    .filter((c) => c.pending > 0);
  // Classes whose only pending tasks a node is shown as taken count as none to it.
  const onlySealed = [...sealed].filter(
    ([id, n]) =>
      sql
        .exec<{ pending: number }>(
          `SELECT ${classPendingSql("classes")} AS pending FROM classes WHERE class_id = ?`,
          id,
        )
        .one().pending <= n,
  ).length;
  const pendingClasses =
    sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM classes WHERE queued = 1").one().n - onlySealed;
  const registered = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM nodes").one().n;
  const nodesUnchecked = pool?.nodesUnchecked ?? Math.max(0, registered - DEMAND_NODES_CHECKED);
  // This shard's nodes are read only for a class the pool's answers miss (it appeared since they were asked).
  const nodes = classes.some((c) => pool?.answers[c.class_key] === undefined) ? checkedNodes(sql, now, membership) : [];
  const everyNode = nodesUnchecked === 0;
  let unservableClasses = 0;
  let unservableTasks = 0;
  const out = classes.map((c): DemandClass => {
    const requirement: unknown = JSON.parse(c.requirement);
    const answer = pool?.answers[c.class_key] ?? answerOf(gateFor(requirement), nodes, [], countOnline);
    const servable = answer.registered;
    const able = answer.able;
    if (!servable) {
      unservableClasses++;
      unservableTasks += c.pending;
    }
    const d: ClassDemand = {
      pending: c.pending,
      needs: describeRequirement(requirement),
      online_nodes_able: countOnline ? able : 0,
      servable,
      every_node_checked: everyNode,
    };
    return { class_id: c.class_id, ...d, summary: demandSentence(d) };
  });
  return {
    classes: out,
    classes_unchecked: Math.max(0, pendingClasses - classes.length),
    nodes_unchecked: nodesUnchecked,
    unservable_classes: unservableClasses,
    unservable_tasks: unservableTasks,
  };
}

/** `GET /v1alpha1/nodes/summary`: the GPU groups and the demand (judged by the pool's `answers` in a sharded pool). */
export function fleetView(
  sql: SqlStorage,
  now: number,
  pool: string,
  limit: number,
  membership: Membership,
  viewer: Viewer,
  answers?: NodeAnswers,
): FleetSummary {
  return {
    pool,
    generated_at: iso(now),
    gpus: gpuGroups(sql, now, limit),
    demand: demand(sql, now, membership, viewer, true, answers),
  };
}

type CheckedNode = { view: unknown; onlineAccepting: boolean };

/** The registered nodes the demand checks: at most DEMAND_NODES_CHECKED, online and accepting first. */
function checkedNodes(sql: SqlStorage, now: number, membership: Membership): CheckedNode[] {
  return sql
    .exec<{ registration: string; online_accepting: number; assigned_pools: string | null }>(
      // Team pools as the claim counts them (docs/protocol.md §9): assigned when enforcing.
      `SELECT n.registration, ap.pools AS assigned_pools,
              (${onlineSql("n", "?")} AND ${acceptingSql("n")}) AS online_accepting
       FROM nodes n ${ASSIGNED_POOLS} ORDER BY online_accepting DESC, n.node_id LIMIT ?`,
      now,
      DEMAND_NODES_CHECKED,
    )
    .toArray()
    .map((n) => ({
      view: storedNodeView(n.registration, membership, n.assigned_pools),
      onlineAccepting: n.online_accepting === 1,
    }));
}

/**
 * What `checked` and `claimable` nodes say of one gate. With `countOnline`
 * false the checked nodes stop at the first that could serve it.
 */
function answerOf(
  gate: ReturnType<typeof gateFor>,
  checked: readonly CheckedNode[],
  claimable: readonly unknown[],
  countOnline: boolean,
): NodeAnswer {
  let able = 0;
  let servable = false;
  for (const node of checked) {
    if (!countOnline && servable) break;
    if (!node.onlineAccepting && servable) continue;
    if (!gate.eligible(node.view)) continue;
    servable = true;
    if (node.onlineAccepting) able++;
  }
  return {
    claimable: claimable.some((view) => gate.eligible(view)),
    registered: servable,
    able: countOnline ? able : 0,
    refusals: NO_COUNTS,
  };
}

/** A pending class as the shards name it to each other: its canonical key (the same on every shard) and requirement. */
export type PendingClass = { key: string; requirement: string };

/**
 * This shard's pending classes that its stuck tasks and demand judge: the
 * `stuckClasses` earliest queued and the DEMAND_CLASSES_CHECKED with the
 * most pending tasks (docs/sharding.md §10, pass 1).
 */
export function pendingClasses(sql: SqlStorage, stuckClasses: number): PendingClass[] {
  const earliest = sql
    .exec<PendingClass>(
      `SELECT c.class_key AS key, c.requirement FROM classes c WHERE c.queued = 1
       ORDER BY ${classHeadSql("c")} LIMIT ?`,
      stuckClasses,
    )
    .toArray();
  const most = sql
    .exec<PendingClass>(
      `SELECT class_key AS key, requirement FROM classes WHERE queued = 1 ORDER BY ${classPendingSql("classes")} DESC, class_id LIMIT ?`,
      DEMAND_CLASSES_CHECKED,
    )
    .toArray();
  const byKey = new Map([...earliest, ...most].map((c) => [c.key, c]));
  return [...byKey.values()];
}

/**
 * What this shard's nodes say of each class (docs/sharding.md §10,
 * pass 2): whether a claimable node accepts it, and, over the demand's
 * DEMAND_NODES_CHECKED registered nodes, whether one could and how many
 * online accepting ones can. Bounded by the classes passed times the nodes checked.
 */
export function nodeAnswers(
  sql: SqlStorage,
  now: number,
  membership: Membership,
  classes: readonly PendingClass[],
): NodeAnswers {
  const registered = sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM nodes").one().n;
  const nodesUnchecked = Math.max(0, registered - DEMAND_NODES_CHECKED);
  if (classes.length === 0 || registered === 0) {
    const none = { claimable: false, registered: false, able: 0, refusals: NO_COUNTS };
    return { answers: Object.fromEntries(classes.map((c) => [c.key, none])), nodesUnchecked };
  }
  const checked = checkedNodes(sql, now, membership);
  const { nodes: claimable, views } = claimableNodes(sql, now, membership);
  const answers: Record<string, NodeAnswer> = {};
  for (const c of classes) {
    const requirement: unknown = JSON.parse(c.requirement);
    const answer = answerOf(gateFor(requirement), checked, views, true);
    // The class's tasks may be stuck: say why each claimable node refuses, as the dashboard explains them.
    if (!answer.claimable) {
      const gate = taskGate(requirement);
      answer.refusals = countRefusals(claimable.map((n, i) => judgeNode(gate, n, views[i], now, membership).refusal));
    }
    answers[c.key] = answer;
  }
  return { answers, nodesUnchecked };
}
