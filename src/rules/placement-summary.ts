// Placement summaries (docs/protocol.md §4, §11): the answer to "why is my task not
// running?". Pure: it turns the gate's per-node refusals into the grouped
// one-line summary an operator reads, e.g.
// "0/3 nodes eligible: 2 × gpu (task needs 2 GPUs), 1 × local_data (missing dataset 'patients')",
// and says what a pending task waits for in the claim order.
//
// It never decides eligibility itself — that is the gate in placement.ts —
// and never does I/O. Grouping keeps only the task's side of each refusal
// (refusals.ts), so nodes refused for the same missing thing land in one group.

import type { PlacementReport, ReplicaItem, ReplicaReport } from "../protocol/responses";
import type { TaskState } from "../protocol/tasks";
import { REFUSAL_NAMES, type Refusal, type RefusalName, taskSide } from "./refusals";

export type { RefusalName } from "./refusals";

/** One node's answer for a task on the wire: eligible, or the first refusing rule and its reason. */
/** `membership`: for a team-pool task when tokens are enforced, whose assignment made the node a member or not. */
export type NodePlacement =
  | { node_id: string; online: boolean; status: string; eligible: true; membership?: string }
  | {
      node_id: string;
      online: boolean;
      status: string;
      eligible: false;
      gate: RefusalName;
      reason: string;
      membership?: string;
    };

/** Nodes refused by the same rule for the same task-side reason. */
export type RefusalGroup = { gate: RefusalName; reason: string; nodes: number };

export type PlacementSummary = {
  eligible: number;
  total: number;
  /** No node in the set can take the task (an empty set included). */
  unplaceable: boolean;
  groups: RefusalGroup[];
  summary: string;
};

/** How many refusal groups the summary line names before "and K more". */
export const SUMMARY_GROUPS = 4;

/** A node set's answers for one task as counts: what each shard of a pool sends, so their sum writes the pool's summary. */
export type PlacementCounts = { eligible: number; total: number; groups: RefusalGroup[] };

/** Counts the nodes' refusals (null: eligible) by rule and task-side reason, groups in first-seen order. */
export function countRefusals(refusals: readonly (Refusal | null)[]): PlacementCounts {
  const byKey = new Map<string, RefusalGroup>();
  let eligible = 0;
  for (const refusal of refusals) {
    if (refusal === null) {
      eligible++;
      continue;
    }
    const reason = taskSide(refusal);
    const key = groupKey(refusal.gate, reason);
    const group = byKey.get(key);
    if (group) group.nodes++;
    else byKey.set(key, { gate: refusal.gate, reason, nodes: 1 });
  }
  return { eligible, total: refusals.length, groups: [...byKey.values()] };
}

/** The counts of two disjoint node sets (two shards' nodes) as one set's. */
export function addCounts(a: PlacementCounts, b: PlacementCounts): PlacementCounts {
  const byKey = new Map<string, RefusalGroup>(a.groups.map((g) => [groupKey(g.gate, g.reason), { ...g }]));
  for (const g of b.groups) {
    const known = byKey.get(groupKey(g.gate, g.reason));
    if (known) known.nodes += g.nodes;
    else byKey.set(groupKey(g.gate, g.reason), { ...g });
  }
  return { eligible: a.eligible + b.eligible, total: a.total + b.total, groups: [...byKey.values()] };
}

export const NO_COUNTS: PlacementCounts = { eligible: 0, total: 0, groups: [] };

const groupKey = (gate: RefusalName, reason: string) => `${gate}\u0000${reason}`;

/**
 * Groups the nodes' refusals (null: eligible) by rule and task-side reason,
 * largest group first (ties in REFUSAL_NAMES order, then by reason), and
 * writes the summary line. `scope` names the node set in the line
 * ("online" → "0/2 online nodes eligible").
 */
export function summarizePlacement(
  refusals: readonly (Refusal | null)[],
  options: { scope?: string; maxGroups?: number } = {},
): PlacementSummary {
  return summarizeCounts(countRefusals(refusals), options);
}

/** The summary line of `summarizePlacement` from counts, however many node sets they were summed over. */
export function summarizeCounts(
  counts: PlacementCounts,
  options: { scope?: string; maxGroups?: number } = {},
): PlacementSummary {
  const maxGroups = options.maxGroups ?? SUMMARY_GROUPS;
  const noun = options.scope ? `${options.scope} nodes` : "nodes";
  const { eligible, total } = counts;
  const groups = [...counts.groups].sort(
    (a, b) =>
      b.nodes - a.nodes ||
      REFUSAL_NAMES.indexOf(a.gate) - REFUSAL_NAMES.indexOf(b.gate) ||
      (a.reason < b.reason ? -1 : a.reason > b.reason ? 1 : 0),
  );
  let summary = `${eligible}/${total} ${noun} eligible`;
  if (total === 0) summary += options.scope ? `: no ${noun}` : ": no nodes registered";
  else if (groups.length > 0) {
    const named = groups.slice(0, maxGroups).map((g) => `${g.nodes} × ${g.gate} (${g.reason})`);
    const rest = groups.slice(maxGroups);
    if (rest.length > 0) {
      const restNodes = rest.reduce((n, g) => n + g.nodes, 0);
      named.push(`and ${restNodes} more refused for ${rest.length} other ${rest.length === 1 ? "reason" : "reasons"}`);
    }
    summary += `: ${named.join(", ")}`;
  }
  return { eligible, total, unplaceable: eligible === 0, groups, summary };
}

/**
 * Why a node that holds (`live`) or ran the replicas numbered `replicas` of
 * a task may not take it again: each replica runs on a different node
 * (docs/protocol.md §14).
 */
export function replicaRefusal(replicas: readonly number[], live: boolean): Refusal {
  return { gate: "replica", form: "replica_node", need: replicaNumbers(replicas), have: live ? "holds" : "ran" };
}

/**
 * Why a node may not take a task when another node of its `owner` holds
 * (`live`) or ran the replicas numbered `replicas`: replicas of one task
 * run on nodes of distinct owners (docs/protocol.md §14).
 */
export function ownerReplicaRefusal(owner: string, replicas: readonly number[], live: boolean): Refusal {
  return {
    gate: "replica",
    form: "replica_owner",
    need: replicaNumbers(replicas),
    have: live ? "holds" : "ran",
    detail: owner,
  };
}

/** A replicated task's flag when fewer distinct owners can run it than its replicas need. */
export function ownersShort(eligible: number, needed: number): string {
  return `only ${plural(eligible, "distinct owner")} can run its replicas, ${needed} needed`;
}

function replicaNumbers(replicas: readonly number[]): string {
  return replicas.length === 1
    ? `replica ${replicas[0]}`
    : `replicas ${replicas.slice(0, -1).join(", ")} and ${replicas[replicas.length - 1]}`;
}

/** An operator's team-pool assignment (docs/protocol.md §9), as a placement explanation names it. */
export type PoolAssignmentNote = { pools: readonly string[]; assigned_by: string; assigned_at: string };

/**
 * Who made a node a team pool's member when tokens are enforced (docs/protocol.md §9):
 * the assignment's pools, operator and time, or that none was made — the
 * pools a node reports for itself count only on an open coordinator.
 */
export function membershipNote(assignment: PoolAssignmentNote | null): string {
  if (assignment === null)
    return "no team pools assigned by an operator; pools a node reports count only on an open coordinator";
  const pools = assignment.pools.length === 0 ? "none" : assignment.pools.map((p) => JSON.stringify(p)).join(", ");
  return `assigned pools: ${pools}, by ${assignment.assigned_by} at ${assignment.assigned_at}`;
}

/** Where a pending task stands in the claim order (docs/protocol.md §13), as the pool counts it. */
export type QueuePosition = {
  priority: number;
  tenant: string;
  /** Pending tasks of jobs at a higher priority. */
  higher_priority: number;
  /** Pending tasks queued before it in its own job. */
  earlier_in_job: number;
  /** Other tenants with pending work at its priority: they take turns. */
  other_tenants: number;
  /** Other jobs of its tenant with pending work at its priority: they take turns. */
  other_jobs: number;
  /** Nodes that failed it: its retry goes elsewhere while another node could take it. */
  failed_on: string[];
  /** Nodes the gate accepts that are held back after failing. */
  eligible_held_back: number;
};

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/**
 * What a pending task waits for, in claim order: higher-priority work, its
 * tenant's and its job's turns, the tasks ahead of it in its job, a node
 * that has not failed it, and for a replicated task a node that has not run
 * a replica of it (`replicaNodes` hold or ran one, docs/protocol.md §14); "next in
 * line" when nothing is ahead of it.
 */
export function waitingSummary(q: QueuePosition, replicaNodes: readonly string[] = []): string {
  const parts: string[] = [];
  if (q.higher_priority > 0)
    parts.push(`${plural(q.higher_priority, "pending task")} of higher priority than ${q.priority}`);
  if (q.other_tenants > 0) {
    parts.push(`tenant ${q.tenant}'s turn (${q.other_tenants + 1} tenants take turns at priority ${q.priority})`);
  }
  if (q.other_jobs > 0) parts.push(`its job's turn (${q.other_jobs + 1} jobs of ${q.tenant} take turns)`);
  if (q.earlier_in_job > 0) parts.push(`${plural(q.earlier_in_job, "earlier task")} of its own job`);
  // A node that failed a replica is named once, as one that ran it: that is what keeps it away for good.
  const failedOnly = q.failed_on.filter((node) => !replicaNodes.includes(node));
  if (failedOnly.length > 0) parts.push(`a node other than ${failedOnly.join(", ")} (failed it)`);
  if (replicaNodes.length > 0) {
    const verb = replicaNodes.length === 1 ? "holds or ran one" : "hold or ran one";
    parts.push(`a node that has not run a replica of it (${replicaNodes.join(", ")} ${verb})`);
  }
  let line = parts.length === 0 ? "next in line" : `waits for ${parts.join("; ")}`;
  if (q.eligible_held_back > 0) {
    line += `; ${plural(q.eligible_held_back, "eligible node is", "eligible nodes are")} held back after failing`;
  }
  return line;
}

/**
 * A report's first pass (docs/sharding.md §10), at the job's shard: the
 * task's facts, sealed as the viewer may see them. `queue` counts no
 * held-back node yet: the nodes' answers bring that.
 */
export type PlacementFacts = {
  job_id: string;
  task_id: string;
  /** The state the viewer is shown: a sealed replicated task with a replica out is LEASED. */
  state: TaskState;
  /** The task is PENDING (a replicated one's flag of too few owners is for a pending task only). */
  pending: boolean;
  /** The task's stored payload, which the gate reads on every shard. */
  payload: string;
  /** A replicated task's replicas as the viewer may see them; null when run once or sealed. */
  replicas: { wanted: number; quorum: number; needed: number; items: ReplicaItem[] } | null;
  queue: QueuePosition | null;
};

/** One shard's part of a pending task's place in the pool's claim order (src/pool/reads/placement-report.ts queueElsewhere). */
export type QueueElsewhere = { higher_priority: number; tenants: string[]; other_jobs: number };

/** A report's second pass, at every shard: its registered nodes' answers, sorted by node_id, and their counts. */
export type PlacementAnswers = {
  /** For a pending task: this shard's part of its queue position. */
  queue?: QueueElsewhere;
  nodes: NodePlacement[];
  counts: PlacementCounts;
  /** Eligible nodes held back after failing. */
  held_back: number;
  /** Distinct owners of nodes the gate accepts, for a replicated task's shown replicas; empty otherwise. */
  owners: string[];
};

/**
 * The report from its task's facts and every shard's node answers: nodes
 * merged by node_id, counts summed and the summary, `unplaceable`, queue
 * and owners written from the sums, as one node set's report writes them.
 */
export function mergePlacement(facts: PlacementFacts, answers: readonly PlacementAnswers[]): PlacementReport {
  const nodes = answers.length === 1 ? answers[0]!.nodes : mergeByNodeId(answers.map((a) => a.nodes));
  const summarized = summarizeCounts(answers.reduce((sum, a) => addCounts(sum, a.counts), NO_COUNTS));
  let summary = summarized.summary;
  let replicas: ReplicaReport | null = null;
  if (facts.replicas !== null) {
    const { wanted, quorum, needed, items } = facts.replicas;
    const owners = new Set<string>(items.map((item) => item.owner));
    for (const answer of answers) for (const owner of answer.owners) owners.add(owner);
    const short = owners.size < needed;
    replicas = { wanted, quorum, items, owners: { eligible: owners.size, needed, short } };
    if (short && facts.pending) summary += `; ${ownersShort(owners.size, needed)}`;
  }
  const heldBack = answers.reduce((n, a) => n + a.held_back, 0);
  const queue = facts.queue && { ...poolQueue(facts.queue, answers), eligible_held_back: heldBack };
  const ran = [...new Set((facts.replicas?.items ?? []).map((item) => item.node_id))].sort();
  return {
    job_id: facts.job_id,
    task_id: facts.task_id,
    state: facts.state,
    nodes,
    unplaceable: summarized.unplaceable,
    summary,
    queue,
    waiting: queue && waitingSummary(queue, ran),
    replicas,
  };
}

/**
 * The task's place in the whole pool's claim order, when the shards brought
 * their parts: what is ahead of it or beside it anywhere, less the task's
 * own job (counted at its shard); else its shard's own counts.
 */
function poolQueue(own: QueuePosition, answers: readonly PlacementAnswers[]): QueuePosition {
  const parts = answers.flatMap((a) => (a.queue ? [a.queue] : []));
  if (parts.length === 0) return own;
  return {
    ...own,
    higher_priority: parts.reduce((n, p) => n + p.higher_priority, 0),
    other_tenants: new Set(parts.flatMap((p) => p.tenants)).size,
    other_jobs: Math.max(0, parts.reduce((n, p) => n + p.other_jobs, 0) - 1),
  };
}

/** Lists each sorted by node_id, as one sorted list (a k-way merge). */
function mergeByNodeId(lists: readonly (readonly NodePlacement[])[]): NodePlacement[] {
  const at = lists.map(() => 0);
  const merged: NodePlacement[] = [];
  for (;;) {
    let best = -1;
    for (let i = 0; i < lists.length; i++) {
      const node = lists[i]![at[i]!];
      if (node !== undefined && (best < 0 || node.node_id < lists[best]![at[best]!]!.node_id)) best = i;
    }
    if (best < 0) return merged;
    merged.push(lists[best]![at[best]!]!);
    at[best] = at[best]! + 1;
  }
}
