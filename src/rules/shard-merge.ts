// The pool-wide reads of a sharded pool merged from every shard's answer
// (docs/sharding.md §10): the dashboard, the fleet and the node answers
// behind "stuck" and "unservable". Pure: the Worker asks the shards, this
// merges. Counts are summed; each list is merged by its own order and cut to
// `limit`, its `more` counting everything the shards hold past what is shown.
// Never called at S = 1, whose answer is the one shard's, untouched.

import type { DashboardSummary } from "../protocol/dashboard";
import { TERMINAL_JOB_STATES } from "../protocol/jobs";
import type { Demand, DemandClass, GpuGroup, Page } from "../protocol/responses";
import { demandSentence } from "./demand";
import { addCounts, type PlacementCounts } from "./placement-summary";

/** What one shard's nodes say of one requirement class. */
export type NodeAnswer = {
  /** Some claimable node (online, accepting, not held back) accepts it: its tasks are not stuck. */
  claimable: boolean;
  /** Some registered node checked accepts it: its class is servable. */
  registered: boolean;
  /** Online, accepting nodes checked that accept it. */
  able: number;
  /** When no claimable node accepts it, why each refused, counted as the placement summary counts (countRefusals). */
  refusals: PlacementCounts;
};

/** One shard's answers for a list of classes (keyed by the class's canonical key), or all shards' combined. */
export type NodeAnswers = {
  answers: Record<string, NodeAnswer>;
  /** Registered nodes past the check's bound, not asked. */
  nodesUnchecked: number;
};

/** The pool's answer: a class is accepted if any shard's node accepts it; able nodes and unchecked nodes add up. */
export function combineAnswers(shards: readonly NodeAnswers[]): NodeAnswers {
  const answers: Record<string, NodeAnswer> = {};
  let nodesUnchecked = 0;
  for (const shard of shards) {
    nodesUnchecked += shard.nodesUnchecked;
    for (const [requirement, a] of Object.entries(shard.answers)) {
      const known = answers[requirement];
      answers[requirement] =
        known === undefined
          ? { ...a }
          : {
              claimable: known.claimable || a.claimable,
              registered: known.registered || a.registered,
              able: known.able + a.able,
              refusals: addCounts(known.refusals, a.refusals),
            };
    }
  }
  return { answers, nodesUnchecked };
}

/**
 * The items of every page in `compare`'s order (stable: ties keep the
 * shards' order), at most `limit`; `more` is all the shards hold less those shown.
 */
export function mergePages<T>(pages: readonly Page<T>[], limit: number, compare: (a: T, b: T) => number): Page<T> {
  const items = pages
    .flatMap((p) => p.items)
    .sort(compare)
    .slice(0, limit);
  const total = pages.reduce((n, p) => n + p.items.length + p.more, 0);
  return { items, more: total - items.length };
}

const byKeys =
  <T>(...keys: Array<(item: T) => number | string>) =>
  (a: T, b: T): number => {
    for (const key of keys) {
      const x = key(a);
      const y = key(b);
      if (x < y) return -1;
      if (x > y) return 1;
    }
    return 0;
  };

const sumBy = <T>(items: readonly T[], f: (item: T) => number) => items.reduce((n, item) => n + f(item), 0);

function sumRecords<K extends string>(records: ReadonlyArray<Record<K, number>>): Record<K, number> {
  const out = {} as Record<K, number>;
  for (const r of records) for (const [k, v] of Object.entries(r) as Array<[K, number]>) out[k] = (out[k] ?? 0) + v;
  return out;
}

/**
 * GPU groups of every shard merged by (model, memory, compute capability),
 * their counts summed, most GPUs first, at most `limit`. `more` is exact
 * when no shard cut its groups; else it also counts the groups the shards
 * cut, which may be among those shown (an upper bound).
 */
export function mergeGpuGroups(pages: readonly Page<GpuGroup>[], limit: number): Page<GpuGroup> {
  const groups = new Map<string, GpuGroup>();
  for (const g of pages.flatMap((p) => p.items)) {
    const key = JSON.stringify([g.model, g.memory_total_mb, g.compute_capability]);
    const known = groups.get(key);
    if (known === undefined) groups.set(key, { ...g });
    else {
      known.gpus += g.gpus;
      known.nodes += g.nodes;
      known.online += g.online;
      known.busy += g.busy;
    }
  }
  const items = [...groups.values()]
    .sort(
      byKeys(
        (g) => -g.gpus,
        (g) => g.model,
        (g) => g.memory_total_mb ?? Number.NEGATIVE_INFINITY, // SQLite sorts NULL first
        (g) => g.compute_capability,
      ),
    )
    .slice(0, limit);
  return { items, more: groups.size - items.length + sumBy(pages, (p) => p.more) };
}

/**
 * The shards' demand merged by what the classes need (class ids are each
 * shard's own): pending tasks summed; the node answers, which every shard
 * took from the same pool-wide answers, kept; most pending first, at most
 * `maxClasses`. Unservable classes and tasks are counted over every class
 * the shards checked.
 */
export function mergeDemands(demands: readonly Demand[], maxClasses: number): Demand {
  const classes = new Map<string, DemandClass>();
  for (const c of demands.flatMap((d) => d.classes)) {
    const known = classes.get(c.needs);
    if (known === undefined) classes.set(c.needs, { ...c });
    else {
      known.pending += c.pending;
      known.online_nodes_able = Math.max(known.online_nodes_able, c.online_nodes_able);
      known.servable ||= c.servable;
      known.every_node_checked &&= c.every_node_checked;
    }
  }
  const all = [...classes.values()].map((c) => ({ ...c, summary: demandSentence(c) }));
  const unservable = all.filter((c) => !c.servable);
  const shown = all.sort(byKeys((c) => -c.pending)).slice(0, maxClasses);
  return {
    classes: shown,
    classes_unchecked: sumBy(demands, (d) => d.classes_unchecked) + all.length - shown.length,
    nodes_unchecked: Math.max(0, ...demands.map((d) => d.nodes_unchecked)),
    unservable_classes: unservable.length,
    unservable_tasks: sumBy(unservable, (c) => c.pending),
  };
}

/** The fleet of a sharded pool: its GPU groups and its demand, merged. */
export function mergeFleets<F extends { pool: string; generated_at: string; gpus: Page<GpuGroup>; demand: Demand }>(
  parts: readonly F[],
  limit: number,
  maxClasses: number,
): { pool: string; generated_at: string; gpus: Page<GpuGroup>; demand: Demand } {
  const first = parts[0]!;
  return {
    pool: first.pool,
    generated_at: first.generated_at,
    gpus: mergeGpuGroups(
      parts.map((p) => p.gpus),
      limit,
    ),
    demand: mergeDemands(
      parts.map((p) => p.demand),
      maxClasses,
    ),
  };
}

/**
 * The dashboard of a sharded pool from every shard's (shard 0 first): its
 * counts summed, its lists merged in their own orders (nodes doing the work
 * first, live and newest jobs first, soonest leases first, newest events
 * first; stuck entries in the shards' order) and cut to `limit`. Storage is
 * the fullest shard's, since the limit is each object's.
 */
/** The fleet half of a dashboard: its GPU groups and its demand. */
const fleetPart = ({ gpus, demand }: { gpus: Page<GpuGroup>; demand: Demand }) => ({ gpus, demand });

export function mergeDashboards(
  parts: ReadonlyArray<DashboardSummary & { leasesByNode: Record<string, number> }>,
  limit: number,
  maxClasses: number,
): DashboardSummary {
  // A node is listed by its home, and holds leases at every shard it works for.
  const leasesOf = (nodeId: string) => parts.reduce((n, p) => n + (p.leasesByNode[nodeId] ?? 0), 0);
  const first = parts[0]!;
  const counts = parts.map((p) => p.counts);
  const fullest = parts.reduce((a, b) => (b.storage.bytes > a.storage.bytes ? b : a)).storage;
  const tasks = sumRecords(counts.map((c) => c.tasks as Record<string, number>));
  return {
    pool: first.pool,
    generated_at: first.generated_at,
    limit,
    online_window_s: first.online_window_s,
    counts: {
      nodes: sumRecords(counts.map((c) => c.nodes)),
      tasks: tasks as DashboardSummary["counts"]["tasks"],
      jobs: sumRecords(counts.map((c) => c.jobs)) as DashboardSummary["counts"]["jobs"],
      leases_live: sumBy(counts, (c) => c.leases_live),
      stuck_tasks: sumBy(counts, (c) => c.stuck_tasks),
      enrolment: sumRecords(counts.map((c) => c.enrolment)),
    },
    nodes: mergePages(
      parts.map((p) => ({ ...p.nodes, items: p.nodes.items.map((n) => ({ ...n, live_leases: leasesOf(n.node_id) })) })),
      limit,
      byKeys(
        (n) => (n.online && n.status === "online" ? 0 : 1),
        (n) => n.node_id,
      ),
    ),
    jobs: mergePages(
      parts.map((p) => p.jobs),
      limit,
      byKeys(
        (j) => (TERMINAL_JOB_STATES.includes(j.state) ? 1 : 0),
        (j) => -Date.parse(j.created_at),
        (j) => j.job_id,
      ),
    ),
    storage: { ...fullest },
    leases: mergePages(
      parts.map((p) => p.leases),
      limit,
      byKeys((l) => Date.parse(l.deadline)),
    ),
    events: {
      items: parts
        .flatMap((p) => p.events.items)
        .sort(byKeys((e) => -Date.parse(e.timestamp)))
        .slice(0, limit),
      // Each shard numbers its own ledger: the sum still grows whenever any shard's does.
      last_seq: sumBy(parts, (p) => p.events.last_seq),
    },
    stuck: {
      ...mergePages(
        parts.map((p) => p.stuck),
        limit,
        () => 0,
      ),
      classes_unchecked: sumBy(parts, (p) => p.stuck.classes_unchecked),
    },
    ...fleetPart(mergeFleets(parts, limit, maxClasses)),
    enrolment: {
      credentials: mergePages(
        parts.map((p) => p.enrolment.credentials),
        limit,
        byKeys(
          (c) => (c.revoked_at === null ? 0 : 1),
          (c) => -Date.parse(c.issued_at),
        ),
      ),
      requests: mergePages(
        parts.map((p) => p.enrolment.requests),
        limit,
        byKeys((r) => -Date.parse(r.requested_at)),
      ),
    },
  };
}
