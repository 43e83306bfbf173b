// The pool's metrics in the Prometheus text exposition format (version
// 0.0.4), pure: the pool object counts, this renders. Label values are
// escaped, since pool names and event types come from outside.

import { OBJECT_STORAGE_LIMIT_BYTES } from "../protocol/limits";
import { RUN_STATES } from "../protocol/runs";
import { TASK_STATES } from "../protocol/tasks";
import { addLoads, EXCHANGE_REASONS, type ObjectLoad, type SummaryLoad } from "./object-load";

export interface MetricsSample {
  load: ObjectLoad; // calls the object served and their busy time, since it last started
  tasks: Record<string, number>; // by state
  leasesLive: number;
  claimsHeld: number; // claims held open waiting for work (long-poll, docs/protocol.md §5), counted at their nodes' homes
  storageBytes: number; // the object's SQLite size
  nodesRegistered: number;
  nodesOnline: number;
  nodesHeldBack: number; // held back from claiming after failing attempts in a row (docs/protocol.md §13)
  results: { valid: number; invalid: number }; // nodes' judged results, summed (docs/protocol.md §14)
  runs: Record<string, number>; // hosted runs by state (docs/protocol.md §17)
  roundsAggregated: number; // rounds hosted runs have aggregated
  events: Record<string, number>; // by type, since the pool began
  // Pending tasks per requirement class (the most pending first, bounded), and
  // those of classes no registered node can serve (issue 26).
  demand: {
    classes: Array<{ class_id: number; pending: number; needs: string }>;
    unservable_classes: number;
    unservable_tasks: number;
  };
  // A shard of a pool of shards only (docs/sharding.md §10): the age of its copy
  // of the summary (null before its first reply), the claims it forwarded to
  // other shards since it started, and the outcomes it still owes other shards.
  links?: { summaryAgeMs: number | null; forwardedClaims: number; outboxRows: number };
  // What the object's statements read and wrote since it started (docs/protocol.md §16):
  // an operator's read only, since rows written move with whether a task is being checked.
  sql?: { rowsRead: number; rowsWritten: number };
  // The R2 operations its work made, by billing class (docs/protocol.md §16); an operator's read only.
  r2?: { A: number; B: number };
}

/** A series' labels beyond the pool's (and the shard's), by name; every value is escaped. */
type Labels = Readonly<Record<string, string | number>>;

/** What a metric reads: one value, none (no sample), or values by labels. */
type Reading = number | undefined | ReadonlyArray<readonly [Labels, number]>;

/** Who reads the text, of what pool: decides which metrics it shows. */
type Audience = { sharded: boolean; traffic: boolean; summary: boolean; sql: boolean };

/**
 * A metric: its name, type and help, when it is shown (always, unless
 * `shown` says otherwise), and how its value(s) read from a sample: the
 * pool's (`pool`), each object's (`object`: each shard's with
 * `shard="k"`, or the pool's at one shard), or the pool summary's load
 * (`summary`).
 */
type MetricDefinition = {
  name: string;
  type: "gauge" | "counter";
  help: string;
  shown?: (a: Audience) => boolean;
} & (
  | { of: "pool" | "object"; read: (sample: MetricsSample) => Reading }
  | { of: "summary"; read: (summary: SummaryLoad) => Reading }
);

const event = (sample: MetricsSample, type: string) => sample.events[type] ?? 0;

/** Every metric, in the order the text shows them. */
const METRICS: readonly MetricDefinition[] = [
  {
    name: "flashedge_tasks",
    type: "gauge",
    help: "Tasks in the pool by state.",
    of: "pool",
    read: (s) => TASK_STATES.map((state) => [{ state }, s.tasks[state] ?? 0]),
  },
  {
    name: "flashedge_runs",
    type: "gauge",
    help: "Hosted runs by state (docs/protocol.md §17).",
    of: "pool",
    read: (s) => RUN_STATES.map((state) => [{ state }, s.runs[state] ?? 0]),
  },
  {
    name: "flashedge_run_rounds_aggregated_total",
    type: "counter",
    help: "Rounds that hosted runs have aggregated.",
    of: "pool",
    read: (s) => s.roundsAggregated,
  },
  {
    name: "flashedge_leases_live",
    type: "gauge",
    help: "Leases currently live.",
    of: "pool",
    read: (s) => s.leasesLive,
  },
  {
    name: "flashedge_leases_expired_total",
    type: "counter",
    help: "Leases that expired because their node stopped heartbeating.",
    of: "pool",
    read: (s) => event(s, "LEASE_EXPIRED"),
  },
  {
    name: "flashedge_claims_total",
    type: "counter",
    help: "Claims that leased a task.",
    of: "pool",
    read: (s) => event(s, "LEASE_CLAIMED"),
  },
  {
    name: "flashedge_claims_held",
    type: "gauge",
    help: "Claims held open waiting for work their node may take (long-poll): idle machines; in memory, so 0 after the object restarts.",
    of: "pool",
    read: (s) => s.claimsHeld,
  },
  {
    name: "flashedge_commits_total",
    type: "counter",
    help: "Commits judged, by outcome.",
    of: "pool",
    read: (s) => [
      [{ result: "accepted" }, event(s, "TASK_COMMIT_ACCEPTED")],
      [{ result: "rejected" }, event(s, "TASK_COMMIT_REJECTED")],
    ],
  },
  {
    name: "flashedge_attempts_failed_total",
    type: "counter",
    help: "Attempts failed by their worker or by output validation.",
    of: "pool",
    read: (s) => event(s, "TASK_ATTEMPT_FAILED"),
  },
  {
    name: "flashedge_nodes",
    type: "gauge",
    help: "Registered nodes, and those online: seen within the online window or holding a live lease.",
    of: "pool",
    read: (s) => [
      [{ online: "true" }, s.nodesOnline],
      [{ online: "false" }, s.nodesRegistered - s.nodesOnline],
    ],
  },
  // Where nodes live, so an operator sees a shard that homes more than its share.
  {
    name: "flashedge_nodes_homed",
    type: "gauge",
    help: "Registered nodes whose home is the shard (a pool of shards only).",
    shown: (a) => a.sharded,
    of: "object",
    read: (s) => s.nodesRegistered,
  },
  {
    name: "flashedge_nodes_held_back",
    type: "gauge",
    help: "Registered nodes held back from claiming because their last attempts all failed.",
    of: "pool",
    read: (s) => s.nodesHeldBack,
  },
  {
    name: "flashedge_results_total",
    type: "counter",
    help: "Results judged, by verdict: replicas in or outvoted by a quorum, and evidence that lied (invalid).",
    of: "pool",
    read: (s) => [
      [{ verdict: "valid" }, s.results.valid],
      [{ verdict: "invalid" }, s.results.invalid],
    ],
  },
  {
    name: "flashedge_pending_tasks_by_class",
    type: "gauge",
    help: "Pending tasks per requirement class, the classes with the most first (bounded), with what they need.",
    of: "object",
    read: (s) => s.demand.classes.map((c) => [{ class: c.class_id, needs: c.needs }, c.pending]),
  },
  {
    name: "flashedge_unservable_pending_tasks",
    type: "gauge",
    help: "Pending tasks of requirement classes no registered node can serve.",
    of: "pool",
    read: (s) => s.demand.unservable_tasks,
  },
  {
    name: "flashedge_unservable_requirement_classes",
    type: "gauge",
    help: "Pending requirement classes no registered node can serve.",
    of: "pool",
    read: (s) => s.demand.unservable_classes,
  },
  {
    name: "flashedge_storage_bytes",
    type: "gauge",
    help: "Size of the pool object's SQLite storage.",
    of: "object",
    read: (s) => s.storageBytes,
  },
  // A one-shard pool's own load sends nothing between objects: every reader sees it, as before shards.
  {
    name: "flashedge_requests_served_total",
    type: "counter",
    help: "Calls the pool object served (requests, alarms, calls from other objects); in memory, so it restarts at 0 when the object restarts.",
    shown: (a) => a.traffic || !a.sharded,
    of: "object",
    read: (s) => s.load.requests,
  },
  {
    name: "flashedge_object_busy_seconds_total",
    type: "counter",
    help: "Summed run time of the pool object's call handlers on the 1 ms clock, what they await not included; in memory, so it restarts at 0 when the object restarts.",
    shown: (a) => a.traffic || !a.sharded,
    of: "object",
    read: (s) => s.load.busyMs / 1000,
  },
  {
    name: "flashedge_summary_age_seconds",
    type: "gauge",
    help: "Age of the shard's copy of the pool summary (the oldest other shard's entry); absent before its first reply.",
    shown: (a) => a.sharded && a.traffic,
    of: "object",
    read: (s) => {
      const age = s.links?.summaryAgeMs;
      return age === null || age === undefined ? undefined : age / 1000;
    },
  },
  {
    name: "flashedge_forwarded_claims_total",
    type: "counter",
    help: "Claims the shard sent to another shard for its work; in memory, so it restarts at 0 when the object restarts.",
    shown: (a) => a.sharded && a.traffic,
    of: "object",
    read: (s) => s.links?.forwardedClaims ?? 0,
  },
  {
    name: "flashedge_outbox_rows",
    type: "gauge",
    help: "Outcomes the shard has yet to deliver to other shards' nodes' homes.",
    shown: (a) => a.sharded && a.traffic,
    of: "object",
    read: (s) => s.links?.outboxRows ?? 0,
  },
  {
    name: "flashedge_summary_requests_total",
    type: "counter",
    help: "Calls the pool summary served, by kind: shards' exchanges by reason (tick, on_demand, poke), and other calls; in memory, so it restarts at 0 when the summary restarts.",
    shown: (a) => a.summary && a.traffic,
    of: "summary",
    read: (summary) => [...EXCHANGE_REASONS, "other" as const].map((kind) => [{ kind }, summary.requests[kind]]),
  },
  {
    name: "flashedge_summary_busy_seconds_total",
    type: "counter",
    help: "Summed run time of the pool summary's call handlers on the 1 ms clock; in memory, so it restarts at 0 when the summary restarts.",
    shown: (a) => a.summary && a.traffic,
    of: "summary",
    read: (summary) => summary.busyMs / 1000,
  },
  {
    name: "flashedge_sql_rows_read_total",
    type: "counter",
    help: "SQLite rows the pool object's statements read, triggers included (what Cloudflare bills, docs/protocol.md §16); in memory, so it restarts at 0 when the object restarts.",
    shown: (a) => a.sql,
    of: "object",
    read: (s) => s.sql?.rowsRead,
  },
  {
    name: "flashedge_sql_rows_written_total",
    type: "counter",
    help: "SQLite rows the pool object's statements wrote, each index entry and trigger write counted (what Cloudflare bills, docs/protocol.md §16); in memory, so it restarts at 0 when the object restarts.",
    shown: (a) => a.sql,
    of: "object",
    read: (s) => s.sql?.rowsWritten,
  },
  {
    name: "flashedge_r2_operations_total",
    type: "counter",
    help: "R2 operations the pool object's work made or admitted, by billing class: A (PUT, LIST), B (GET, HEAD); deletes are free (docs/protocol.md §16). In memory, so it restarts at 0 when the object restarts.",
    shown: (a) => a.sql,
    of: "object",
    read: (s) =>
      s.r2 === undefined
        ? undefined
        : [
            [{ class: "A" }, s.r2.A],
            [{ class: "B" }, s.r2.B],
          ],
  },
  {
    name: "flashedge_storage_limit_bytes",
    type: "gauge",
    help: "The storage limit of one Durable Object.",
    of: "pool",
    read: () => OBJECT_STORAGE_LIMIT_BYTES,
  },
  {
    name: "flashedge_events_total",
    type: "counter",
    help: "Ledger events by type.",
    of: "pool",
    read: (s) =>
      Object.keys(s.events)
        .sort()
        .map((type) => [{ type }, s.events[type]!]),
  },
];

/**
 * The pool's metrics. With `shards` (a pool of more than one shard, each
 * shard's sample in shard order, `s` their mergeMetrics), the per-object
 * series carry `shard="k"`: pending tasks by class (each shard numbers its
 * own classes) and storage bytes (the limit is each object's). Without, the
 * text is a one-shard pool's, which omits the label (docs/protocol.md §15).
 * `summary` is the pool summary's load, which only a pool of shards has.
 *
 * `traffic` false (a node's read of a pool of shards) leaves out every
 * series that counts calls between objects: each object's calls served and
 * busy time, the summary's age and load, the forwarded claims and the
 * outbox. How a shard's calls move tells where a node's claims went, and so
 * whether its task is being checked (docs/protocol.md §14).
 */
export function renderMetrics(
  pool: string,
  s: MetricsSample,
  shards?: readonly MetricsSample[],
  summary?: SummaryLoad,
  traffic = true,
): string {
  const p = `pool="${escapeLabel(pool)}"`;
  const audience: Audience = {
    sharded: shards !== undefined,
    traffic,
    summary: summary !== undefined,
    sql: s.sql !== undefined,
  };
  const series = (m: MetricDefinition): Array<[string, number]> => {
    if (m.of === "summary") return summary === undefined ? [] : labelled(p, m.read(summary));
    if (m.of === "pool" || shards === undefined) return labelled(p, m.read(s));
    return shards.flatMap((sample, k) => labelled(`${p},shard="${k}"`, m.read(sample)));
  };
  const out: string[] = [];
  for (const m of METRICS) {
    if (m.shown !== undefined && !m.shown(audience)) continue;
    out.push(`# HELP ${m.name} ${m.help}`, `# TYPE ${m.name} ${m.type}`);
    for (const [labels, value] of series(m)) out.push(`${m.name}{${labels}} ${value}`);
  }
  return `${out.join("\n")}\n`;
}

/** A reading's series under `labels`, each with its own labels after them. */
function labelled(labels: string, reading: Reading): Array<[string, number]> {
  if (reading === undefined) return [];
  if (typeof reading === "number") return [[labels, reading]];
  return reading.map(([own, value]) => [
    labels +
      Object.entries(own)
        .map(([name, v]) => `,${name}="${escapeLabel(String(v))}"`)
        .join(""),
    value,
  ]);
}

/**
 * A sharded pool's sample from every shard's: counts summed (events by
 * type, tasks by state), the demand's classes concatenated in shard order.
 * Each shard judged its demand by the pool's node answers, so unservable
 * classes and tasks add up.
 */
export function mergeMetrics(samples: readonly MetricsSample[]): MetricsSample {
  const sum = (f: (s: MetricsSample) => number) => samples.reduce((n, s) => n + f(s), 0);
  const add = (records: Array<Record<string, number>>) => {
    const out: Record<string, number> = {};
    for (const r of records) for (const [k, v] of Object.entries(r)) out[k] = (out[k] ?? 0) + v;
    return out;
  };
  return {
    load: addLoads(samples.map((s) => s.load)),
    tasks: add(samples.map((s) => s.tasks)),
    leasesLive: sum((s) => s.leasesLive),
    claimsHeld: sum((s) => s.claimsHeld),
    storageBytes: sum((s) => s.storageBytes),
    nodesRegistered: sum((s) => s.nodesRegistered),
    nodesOnline: sum((s) => s.nodesOnline),
    nodesHeldBack: sum((s) => s.nodesHeldBack),
    results: { valid: sum((s) => s.results.valid), invalid: sum((s) => s.results.invalid) },
    runs: add(samples.map((s) => s.runs)),
    roundsAggregated: sum((s) => s.roundsAggregated),
    events: add(samples.map((s) => s.events)),
    demand: {
      classes: samples.flatMap((s) => s.demand.classes),
      unservable_classes: sum((s) => s.demand.unservable_classes),
      unservable_tasks: sum((s) => s.demand.unservable_tasks),
    },
    ...(samples.every((s) => s.sql !== undefined) && samples.length > 0
      ? { sql: { rowsRead: sum((s) => s.sql!.rowsRead), rowsWritten: sum((s) => s.sql!.rowsWritten) } }
      : {}),
    ...(samples.every((s) => s.r2 !== undefined) && samples.length > 0
      ? { r2: { A: sum((s) => s.r2!.A), B: sum((s) => s.r2!.B) } }
      : {}),
  };
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}
