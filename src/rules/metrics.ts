// The pool's metrics in the Prometheus text exposition format (version
// 0.0.4), pure: the pool object counts, this renders. Label values are
// escaped, since pool names and event types come from outside.

import { OBJECT_STORAGE_LIMIT_BYTES } from "../protocol/limits";
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
}

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
  const perShard = <T>(f: (sample: MetricsSample, labels: string) => T[]): T[] =>
    shards === undefined ? f(s, p) : shards.flatMap((sample, k) => f(sample, `${p},shard="${k}"`));
  const ev = (type: string) => s.events[type] ?? 0;
  const out: string[] = [];
  const metric = (name: string, type: "gauge" | "counter", help: string, samples: Array<[string, number]>) => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [labels, value] of samples) out.push(`${name}{${labels}} ${value}`);
  };
  metric(
    "flashedge_tasks",
    "gauge",
    "Tasks in the pool by state.",
    TASK_STATES.map((state) => [`${p},state="${state}"`, s.tasks[state] ?? 0]),
  );
  metric("flashedge_leases_live", "gauge", "Leases currently live.", [[p, s.leasesLive]]);
  metric("flashedge_leases_expired_total", "counter", "Leases that expired because their node stopped heartbeating.", [
    [p, ev("LEASE_EXPIRED")],
  ]);
  metric("flashedge_claims_total", "counter", "Claims that leased a task.", [[p, ev("LEASE_CLAIMED")]]);
  metric(
    "flashedge_claims_held",
    "gauge",
    "Claims held open waiting for work their node may take (long-poll): idle machines; in memory, so 0 after the object restarts.",
    [[p, s.claimsHeld]],
  );
  metric("flashedge_commits_total", "counter", "Commits judged, by outcome.", [
    [`${p},result="accepted"`, ev("TASK_COMMIT_ACCEPTED")],
    [`${p},result="rejected"`, ev("TASK_COMMIT_REJECTED")],
  ]);
  metric("flashedge_attempts_failed_total", "counter", "Attempts failed by their worker or by output validation.", [
    [p, ev("TASK_ATTEMPT_FAILED")],
  ]);
  metric(
    "flashedge_nodes",
    "gauge",
    "Registered nodes, and those online: seen within the online window or holding a live lease.",
    [
      [`${p},online="true"`, s.nodesOnline],
      [`${p},online="false"`, s.nodesRegistered - s.nodesOnline],
    ],
  );
  // Where nodes live, so an operator sees a shard that homes more than its share.
  if (shards !== undefined)
    metric(
      "flashedge_nodes_homed",
      "gauge",
      "Registered nodes whose home is the shard (a pool of shards only).",
      perShard((sample, labels): Array<[string, number]> => [[labels, sample.nodesRegistered]]),
    );
  metric(
    "flashedge_nodes_held_back",
    "gauge",
    "Registered nodes held back from claiming because their last attempts all failed.",
    [[p, s.nodesHeldBack]],
  );
  metric(
    "flashedge_results_total",
    "counter",
    "Results judged, by verdict: replicas in or outvoted by a quorum, and evidence that lied (invalid).",
    [
      [`${p},verdict="valid"`, s.results.valid],
      [`${p},verdict="invalid"`, s.results.invalid],
    ],
  );
  metric(
    "flashedge_pending_tasks_by_class",
    "gauge",
    "Pending tasks per requirement class, the classes with the most first (bounded), with what they need.",
    perShard((sample, labels) =>
      sample.demand.classes.map((c): [string, number] => [
        `${labels},class="${c.class_id}",needs="${escapeLabel(c.needs)}"`,
        c.pending,
      ]),
    ),
  );
  metric(
    "flashedge_unservable_pending_tasks",
    "gauge",
    "Pending tasks of requirement classes no registered node can serve.",
    [[p, s.demand.unservable_tasks]],
  );
  metric(
    "flashedge_unservable_requirement_classes",
    "gauge",
    "Pending requirement classes no registered node can serve.",
    [[p, s.demand.unservable_classes]],
  );
  metric(
    "flashedge_storage_bytes",
    "gauge",
    "Size of the pool object's SQLite storage.",
    perShard((sample, labels): Array<[string, number]> => [[labels, sample.storageBytes]]),
  );
  // A one-shard pool's own load sends nothing between objects: every reader sees it, as before shards.
  if (traffic || shards === undefined) {
    metric(
      "flashedge_requests_served_total",
      "counter",
      "Calls the pool object served (requests, alarms, calls from other objects); in memory, so it restarts at 0 when the object restarts.",
      perShard((sample, labels): Array<[string, number]> => [[labels, sample.load.requests]]),
    );
    metric(
      "flashedge_object_busy_seconds_total",
      "counter",
      "Summed run time of the pool object's call handlers on the 1 ms clock, what they await not included; in memory, so it restarts at 0 when the object restarts.",
      perShard((sample, labels): Array<[string, number]> => [[labels, sample.load.busyMs / 1000]]),
    );
  }
  if (shards !== undefined && traffic) {
    metric(
      "flashedge_summary_age_seconds",
      "gauge",
      "Age of the shard's copy of the pool summary (the oldest other shard's entry); absent before its first reply.",
      shards.flatMap((sample, k): Array<[string, number]> => {
        const age = sample.links?.summaryAgeMs;
        return age === null || age === undefined ? [] : [[`${p},shard="${k}"`, age / 1000]];
      }),
    );
    metric(
      "flashedge_forwarded_claims_total",
      "counter",
      "Claims the shard sent to another shard for its work; in memory, so it restarts at 0 when the object restarts.",
      shards.map((sample, k) => [`${p},shard="${k}"`, sample.links?.forwardedClaims ?? 0]),
    );
    metric(
      "flashedge_outbox_rows",
      "gauge",
      "Outcomes the shard has yet to deliver to other shards' nodes' homes.",
      shards.map((sample, k) => [`${p},shard="${k}"`, sample.links?.outboxRows ?? 0]),
    );
  }
  if (summary !== undefined && traffic) {
    metric(
      "flashedge_summary_requests_total",
      "counter",
      "Calls the pool summary served, by kind: shards' exchanges by reason (tick, on_demand, poke), and other calls; in memory, so it restarts at 0 when the summary restarts.",
      [...EXCHANGE_REASONS, "other" as const].map((kind) => [`${p},kind="${kind}"`, summary.requests[kind]]),
    );
    metric(
      "flashedge_summary_busy_seconds_total",
      "counter",
      "Summed run time of the pool summary's call handlers on the 1 ms clock; in memory, so it restarts at 0 when the summary restarts.",
      [[p, summary.busyMs / 1000]],
    );
  }
  if (s.sql !== undefined) {
    const rows = (f: (sql: NonNullable<MetricsSample["sql"]>) => number) =>
      perShard((sample, labels): Array<[string, number]> => (sample.sql ? [[labels, f(sample.sql)]] : []));
    metric(
      "flashedge_sql_rows_read_total",
      "counter",
      "SQLite rows the pool object's statements read, triggers included (what Cloudflare bills, docs/protocol.md §16); in memory, so it restarts at 0 when the object restarts.",
      rows((sql) => sql.rowsRead),
    );
    metric(
      "flashedge_sql_rows_written_total",
      "counter",
      "SQLite rows the pool object's statements wrote, each index entry and trigger write counted (what Cloudflare bills, docs/protocol.md §16); in memory, so it restarts at 0 when the object restarts.",
      rows((sql) => sql.rowsWritten),
    );
  }
  metric("flashedge_storage_limit_bytes", "gauge", "The storage limit of one Durable Object.", [
    [p, OBJECT_STORAGE_LIMIT_BYTES],
  ]);
  metric(
    "flashedge_events_total",
    "counter",
    "Ledger events by type.",
    Object.keys(s.events)
      .sort()
      .map((type) => [`${p},type="${escapeLabel(type)}"`, s.events[type]!]),
  );
  return `${out.join("\n")}\n`;
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
    events: add(samples.map((s) => s.events)),
    demand: {
      classes: samples.flatMap((s) => s.demand.classes),
      unservable_classes: sum((s) => s.demand.unservable_classes),
      unservable_tasks: sum((s) => s.demand.unservable_tasks),
    },
    ...(samples.every((s) => s.sql !== undefined) && samples.length > 0
      ? { sql: { rowsRead: sum((s) => s.sql!.rowsRead), rowsWritten: sum((s) => s.sql!.rowsWritten) } }
      : {}),
  };
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}
