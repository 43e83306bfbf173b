// Driver of the cost benchmark (issue 42, SPEC §16 "What a pool costs").
// Runs bench/cost.bench.test.ts under workerd (bench/vitest.cost.config.ts),
// every shard count at once, which counts what each kind of request an
// agent sends costs the pool in what Cloudflare bills: Worker requests,
// Durable Object requests, SQLite rows written and read, R2 operations by
// class. Then it composes the workloads from those counts arithmetically
// (nothing here is a timing), prices them with one price file and its date,
// prints the tables and writes bench/results/cost.json, which BENCHMARKS.md
// section 14 renders:
//
//   - one-minute tasks on 100 busy agents with one-minute leases: dollars per million tasks;
//   - 1,000 idle agents holding claims: dollars per idle agent-month;
//   - a job of replicas 3 (quorum 3, the default), one-minute tasks: dollars per million tasks;
//   - a fleet of 10,000 agents running a million one-minute tasks a day: dollars per month.
//
//   npm run bench:cost                    S = 1 and S = 4, full sizes (about 3 minutes)
//   node bench/cost.mjs --quick           small fleets, busy tasks time-compressed 10× (CI; about a minute); writes nothing unless --write
//   node bench/cost.mjs --prices FILE     an operator's own prices: the keys of bench/prices.json
//   node bench/cost.mjs --reprice [--prices FILE]   the counts stored in bench/results/cost.json priced again; runs nothing, writes nothing
//   options: --shards 1,4
//
// Exits non-zero when the run fails; a goal or budget missed is reported, not a failure.
// @ts-check

import { readFileSync } from "node:fs";
import { isAbsolute, join, relative } from "node:path";
import { flag, machine, option, ROOT, readResult, round, runBenchFile, today, writeResult } from "./lib.mjs";

const QUICK = flag("quick");
const REPRICE = flag("reprice");
const SHARDS = option("shards", "1,4");
const PRICES_FILE = (() => {
  const given = option("prices", join(ROOT, "bench", "prices.json"));
  return isAbsolute(given) ? given : join(process.cwd(), given);
})();

/** A month, as the prices mean it: 30 days. */
const MONTH_S = 30 * 86_400;
const DAY_S = 86_400;
/** Workload 1: one-minute tasks, back to back, on this many busy agents (the pool's objects are shared by them). */
const TASK_S = 60;
const BUSY_AGENTS = 100;
/** Workload 2: this many idle agents share the pool's objects and background. */
const IDLE_AGENTS = 1_000;
/** The stated fleet. */
const FLEET = { agents: 10_000, tasks_per_day: 1_000_000 };
/** Storage is billed per GB-month; a GB is 10⁹ bytes here. */
const GB = 1e9;
/** The issue's goals. */
const GOALS = { per_million_tasks: 30, per_idle_agent_month: 0.2 };
/** SPEC §16's budgets of rows written (at S > 1 a lifecycle may add 5). */
const BUDGETS = { lifecycle: 20, lifecycle_sharded_extra: 5, attempt_heartbeat: 1, idle_loop: 0.5 };
/** Cloudflare's documented soft limit of one Durable Object, requests per second. */
const SOFT_LIMIT = 1_000;

/** How long a finished job's rows stay in the pool before they are archived (wrangler.toml), in seconds. */
const RETENTION_S = (() => {
  const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
  return Number(/^FLASHML_JOB_RETENTION_SECONDS\s*=\s*"(\d+)"/m.exec(toml)?.[1] ?? 604_800);
})();

// ---------------------------------------------------------------------------------------------------
// What the bench file prints (one record per shard count)

/**
 * @typedef {{ worker_requests: number, worker_calls: number, object_calls: number, rows_written: number,
 *   rows_read: number, r2_a: number, r2_b: number, worker_r2_a: number, worker_r2_b: number, ticks: number }} Counts
 * @typedef {{ units: number, seconds: number, counts: Counts, reads: number, read_seconds: number }} Measurement
 * @typedef {{ counts: Counts, seconds: number }} MetricsRead
 * @typedef {{ agents: number, window: Measurement, claims_answered: number, metrics_read: MetricsRead }} IdleFleet
 * @typedef {object} BenchRecord
 * @property {number} shards
 * @property {boolean} quick
 * @property {boolean} r2_exported  whether the objects export flashedge_r2_operations_total
 * @property {{ agents: number, task_seconds: number, lease_seconds: number, jobs: number, tasks_per_job: number,
 *   submit: Measurement, kinds: Record<BusyKind, Measurement>, after_answers: Measurement, lifecycle: Measurement,
 *   metrics_read: MetricsRead }} busy
 * @property {{ pending_shards: number, live_leases: number, window: Measurement, metrics_read: MetricsRead }} quiet
 * @property {{ hold_seconds: number, node_heartbeat_seconds: number, empty_sleep_seconds: number, fleets: IdleFleet[] }} idle
 * @property {{ node_heartbeat: Measurement, empty_claim: Measurement, rest: Measurement, metrics_read: MetricsRead }} alone
 * @property {{ tasks: number, leases: number, empty_claims: number, storage_bytes_per_task: number, archive: Measurement }} archive
 * @property {{ tasks: number, nodes: number, replicas: number, quorum: number, job_state: string, leases: number,
 *   empty_claims: number, rejected_commits: number, uploads_too_late: number, empty_claim: Measurement,
 *   submit: Measurement, run: Measurement,
 *   storage_bytes_per_task: number, archive: Measurement }} replicated
 */
/** @typedef {"node_heartbeat" | "claim" | "attempt_heartbeat" | "upload" | "commit"} BusyKind */
const BUSY_KINDS = /** @type {const} */ (["node_heartbeat", "claim", "attempt_heartbeat", "upload", "commit"]);

// ---------------------------------------------------------------------------------------------------
// What is billed, and its prices

/**
 * Billed quantities: Worker requests, Durable Object requests, duration (GB-s), rows written and read, R2
 * class A and B operations, storage (GB-month).
 * @typedef {{ requests: number, do_requests: number, gb_s: number, rows_written: number, rows_read: number,
 *   r2_a: number, r2_b: number, gb_month: number }} Usage
 */
/** @type {readonly (keyof Usage)[]} */
const USAGE_KEYS = ["requests", "do_requests", "gb_s", "rows_written", "rows_read", "r2_a", "r2_b", "gb_month"];
/** What each billed quantity is called in the breakdown. */
const BREAKDOWN = /** @type {const} */ ({
  requests: "requests",
  do_requests: "DO requests",
  gb_s: "duration",
  rows_written: "rows written",
  rows_read: "rows read",
  r2_a: "R2 A",
  r2_b: "R2 B",
  gb_month: "storage",
});

/**
 * bench/prices.json, or the operator's own: dollars per unit of each billed quantity, with its date.
 * @typedef {{ date: string, source: string, currency: string, worker_requests_per_million: number,
 *   do_requests_per_million: number, do_duration_per_million_gb_s: number, do_billed_memory_mb: number,
 *   sql_rows_written_per_million: number, sql_rows_read_per_million: number, sql_storage_per_gb_month: number,
 *   r2_class_a_per_million: number, r2_class_b_per_million: number }} Prices
 */
const PRICE_KEYS = /** @type {const} */ ([
  "worker_requests_per_million",
  "do_requests_per_million",
  "do_duration_per_million_gb_s",
  "do_billed_memory_mb",
  "sql_rows_written_per_million",
  "sql_rows_read_per_million",
  "sql_storage_per_gb_month",
  "r2_class_a_per_million",
  "r2_class_b_per_million",
]);

/**
 * @param {string} file
 * @returns {Prices}
 */
function loadPrices(file) {
  /** @type {Record<string, unknown>} */
  let p;
  try {
    p = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    throw new Error(`prices: cannot read ${file}: ${e instanceof Error ? e.message : e}`);
  }
  const problems = PRICE_KEYS.filter((k) => typeof p[k] !== "number" || !(Number(p[k]) >= 0)).map(
    (k) => `${k} must be a number ≥ 0`,
  );
  if (typeof p.date !== "string" || !/^\d{4}-\d{2}-\d{2}$/.test(p.date)) problems.push("date must be YYYY-MM-DD");
  if (problems.length > 0) throw new Error(`prices in ${file}: ${problems.join("; ")}`);
  return /** @type {Prices} */ ({ source: "", currency: "USD", ...p });
}

/**
 * Dollars per unit of each billed quantity.
 * @param {Prices} p
 * @returns {Usage}
 */
function unitPrices(p) {
  return {
    requests: p.worker_requests_per_million / 1e6,
    do_requests: p.do_requests_per_million / 1e6,
    gb_s: p.do_duration_per_million_gb_s / 1e6,
    rows_written: p.sql_rows_written_per_million / 1e6,
    rows_read: p.sql_rows_read_per_million / 1e6,
    r2_a: p.r2_class_a_per_million / 1e6,
    r2_b: p.r2_class_b_per_million / 1e6,
    gb_month: p.sql_storage_per_gb_month,
  };
}

/** @returns {Usage} */
const none = () => ({
  requests: 0,
  do_requests: 0,
  gb_s: 0,
  rows_written: 0,
  rows_read: 0,
  r2_a: 0,
  r2_b: 0,
  gb_month: 0,
});
/** @param {(k: keyof Usage) => number} f @returns {Usage} */
const usage = (f) => /** @type {Usage} */ (Object.fromEntries(USAGE_KEYS.map((k) => [k, f(k)])));
/** @param {Usage[]} us */
const sum = (...us) => usage((k) => us.reduce((s, u) => s + u[k], 0));
/** @param {Usage} a @param {Usage} b */
const less = (a, b) => usage((k) => a[k] - b[k]);
/** @param {Usage} a @param {number} f */
const scale = (a, f) => usage((k) => a[k] * f);
/** Nothing below 0: what the background over the same time leaves of a window, never negative. @param {Usage} a */
const floor0 = (a) => usage((k) => Math.max(0, a[k]));
/** @param {Usage} a @param {Usage} b */
const larger = (a, b) => usage((k) => Math.max(a[k], b[k]));

/**
 * The billed quantities of some counts. DO requests are the calls the pool's objects served (the Worker's,
 * alarms, calls between objects, the summary's); R2 by class as the objects count it, or (a build that does
 * not export it) the Worker's own R2 calls.
 * @param {Counts} c
 * @param {boolean} r2Exported
 * @returns {Usage}
 */
function billed(c, r2Exported) {
  return {
    ...none(),
    requests: c.worker_requests,
    do_requests: c.object_calls,
    rows_written: c.rows_written,
    rows_read: c.rows_read,
    r2_a: r2Exported ? c.r2_a : c.worker_r2_a,
    r2_b: r2Exported ? c.r2_b : c.worker_r2_b,
  };
}

/**
 * @typedef {{ total: number, breakdown: Record<keyof Usage, number> }} Priced
 * @param {Usage} u
 * @param {Usage} unit
 * @returns {Priced}
 */
function price(u, unit) {
  const breakdown = usage((k) => u[k] * unit[k]);
  return { total: USAGE_KEYS.reduce((s, k) => s + breakdown[k], 0), breakdown };
}

// ---------------------------------------------------------------------------------------------------
// Composition: the workloads from the measured counts

/**
 * One shard count's measurements per unit, its backgrounds, and the workloads composed and priced.
 * @param {BenchRecord} rec
 * @param {Prices} prices
 */
function compose(rec, prices) {
  const r2 = rec.r2_exported;
  /** The seconds of a window outside its metrics reads (a read's calibrated cost holds the background over it). @param {Measurement} m */
  const outsideReads = (m) => Math.max(0, m.seconds - m.reads * m.read_seconds);
  /** @param {Measurement} m */
  const perSecond = (m) => scale(billed(m.counts, r2), 1 / outsideReads(m));
  // At S > 1 the background is the shards' ticks with the summary (an alarm, an exchange, the digest's reads),
  // every 500 ms while a shard has work, held claims or a recent change, else every 5 s: what one costs, from the
  // pool with work pending on every shard and no request. At S = 1 nothing ticks (lease alarms are the requests').
  const quietTicks = rec.quiet.window.counts.ticks;
  const perTick = quietTicks > 0 ? scale(billed(rec.quiet.window.counts, r2), 1 / quietTicks) : none();
  /** A measurement per unit, the ticks in its window (beyond those its metrics reads held) taken out. @param {Measurement} m */
  const perUnit = (m) => scale(less(billed(m.counts, r2), scale(perTick, m.counts.ticks)), 1 / m.units);

  // What the pool does by itself, per second: busy (work pending on every shard, leases live), at rest, and
  // holding idle agents' claims (the intercept of the two idle fleets).
  const background = { busy: floor0(perSecond(rec.quiet.window)), rest: floor0(perSecond(rec.alone.rest)) };
  const [small, large] = [...rec.idle.fleets].sort((a, b) => a.agents - b.agents);
  if (!small || !large) throw new Error("the record has fewer than two idle fleets");
  const perAgentSecond = scale(
    less(perSecond(large.window), perSecond(small.window)),
    1 / (large.agents - small.agents),
  );
  const idleBackground = floor0(less(perSecond(small.window), scale(perAgentSecond, small.agents)));
  const loopSeconds = (large.agents * large.window.seconds) / large.claims_answered;
  const idleLoop = scale(perAgentSecond, loopSeconds);

  // Workload 1, request by request: each kind at the agent's cadence, its window's background taken out.
  const agents = rec.busy.agents;
  const kinds = /** @type {Record<BusyKind, Usage>} */ (
    Object.fromEntries(BUSY_KINDS.map((k) => [k, perUnit(rec.busy.kinds[k])]))
  );
  /** How many of each kind one task's lifecycle sends. */
  const perTaskOf = /** @type {Record<BusyKind, number>} */ (
    Object.fromEntries(BUSY_KINDS.map((k) => [k, rec.busy.kinds[k].units / agents]))
  );
  const afterAnswers = floor0(perUnit(rec.busy.after_answers));
  const submit = perUnit(rec.busy.submit);
  const archive = floor0(perUnit(rec.archive.archive));
  const requests = sum(...BUSY_KINDS.map((k) => scale(kinds[k], perTaskOf[k])), afterAnswers);
  const task = sum(submit, requests, archive);

  const objects = rec.shards + (rec.shards > 1 ? 1 : 0); // the shards, and the pool summary at S > 1
  const gbPerObject = prices.do_billed_memory_mb / 1024;
  /** Duration: every object of the pool is active the whole time (steady traffic keeps it in memory). @param {number} s */
  const duration = (s) => ({ ...none(), gb_s: objects * gbPerObject * s });
  /** A finished task's rows stay until the job is archived, RETENTION_S after it ends. @param {number} bytes */
  const storage = (bytes) => ({ ...none(), gb_month: ((bytes / GB) * RETENTION_S) / MONTH_S });
  /** Per task at BUSY_AGENTS agents: the pool's background and duration over the task's share of wall time. @param {number} s */
  const timeShare = (s) => sum(scale(background.busy, s), duration(s));

  const perMillionTasks = scale(
    sum(task, timeShare(TASK_S / BUSY_AGENTS), storage(rec.archive.storage_bytes_per_task)),
    1e6,
  );
  const perIdleAgentMonth = sum(
    scale(perAgentSecond, MONTH_S),
    scale(sum(idleBackground, duration(1)), MONTH_S / IDLE_AGENTS),
  );

  // Workload 3: replicas 3, quorum 3. The run's counts, the driver's own empty claims taken out, plus what a
  // one-minute lease adds to each replica: the node heartbeat before its claim and its attempt heartbeats.
  const rep = rec.replicated;
  const leasesPerTask = rep.leases / rep.tasks;
  const emptyClaim = perUnit(rep.empty_claim);
  const repRun = less(perUnit(rep.run), scale(emptyClaim, rep.empty_claims / rep.tasks));
  const perLease = sum(kinds.node_heartbeat, scale(kinds.attempt_heartbeat, perTaskOf.attempt_heartbeat));
  const repTask = sum(perUnit(rep.submit), repRun, floor0(perUnit(rep.archive)), scale(perLease, leasesPerTask));
  const perMillionReplicated = scale(
    sum(repTask, timeShare((leasesPerTask * TASK_S) / BUSY_AGENTS), storage(rep.storage_bytes_per_task)),
    1e6,
  );

  // The fleet: a million one-minute tasks a day keep this many agents busy on average; the others idle.
  const tasksPerMonth = (FLEET.tasks_per_day * MONTH_S) / DAY_S;
  const busyAgents = (FLEET.tasks_per_day * TASK_S) / DAY_S;
  const idleAgents = FLEET.agents - busyAgents;
  const fleetMonth = sum(
    scale(task, tasksPerMonth),
    scale(perAgentSecond, idleAgents * MONTH_S),
    scale(larger(background.busy, idleBackground), MONTH_S),
    duration(MONTH_S),
    // Steady state: a retention's worth of finished tasks in storage all month.
    { ...none(), gb_month: (FLEET.tasks_per_day * (RETENTION_S / DAY_S) * rec.archive.storage_bytes_per_task) / GB },
  );
  const fleetPerShardPerSecond = fleetMonth.do_requests / MONTH_S / rec.shards;

  const unit = unitPrices(prices);
  const lifecycleRows =
    submit.rows_written +
    kinds.claim.rows_written +
    kinds.upload.rows_written +
    kinds.commit.rows_written +
    afterAnswers.rows_written;
  const lifecycleBudget = BUDGETS.lifecycle + (rec.shards > 1 ? BUDGETS.lifecycle_sharded_extra : 0);
  return {
    shards: rec.shards,
    objects,
    r2_counted_by: r2 ? "the objects (flashedge_r2_operations_total)" : "the Worker's own R2 calls only",
    measured: {
      submit_per_task: submit,
      ...kinds,
      after_answers_per_task: afterAnswers,
      task_requests: requests,
      archive_per_task: archive,
      task,
      idle_loop: idleLoop,
      idle_loop_seconds: loopSeconds,
      node_heartbeat_alone: perUnit(rec.alone.node_heartbeat),
      empty_claim_alone: perUnit(rec.alone.empty_claim),
      replicated_task: repTask,
      leases_per_replicated_task: leasesPerTask,
      storage_bytes_per_task: rec.archive.storage_bytes_per_task,
      storage_bytes_per_replicated_task: rep.storage_bytes_per_task,
    },
    background: { busy: background.busy, idle: idleBackground, rest: background.rest },
    outputs: {
      per_million_tasks: { usage: perMillionTasks, ...price(perMillionTasks, unit), goal: GOALS.per_million_tasks },
      per_idle_agent_month: {
        usage: perIdleAgentMonth,
        ...price(perIdleAgentMonth, unit),
        goal: GOALS.per_idle_agent_month,
      },
      per_million_replicated_tasks: { usage: perMillionReplicated, ...price(perMillionReplicated, unit) },
      fleet_per_month: {
        usage: fleetMonth,
        ...price(fleetMonth, unit),
        busy_agents: busyAgents,
        idle_agents: idleAgents,
        do_requests_per_shard_per_second: fleetPerShardPerSecond,
        over_soft_limit: fleetPerShardPerSecond > SOFT_LIMIT,
      },
    },
    budgets: {
      lifecycle_rows_written: { value: lifecycleRows, budget: lifecycleBudget, met: lifecycleRows <= lifecycleBudget },
      attempt_heartbeat_rows_written: {
        value: kinds.attempt_heartbeat.rows_written,
        budget: BUDGETS.attempt_heartbeat,
        met: kinds.attempt_heartbeat.rows_written <= BUDGETS.attempt_heartbeat,
      },
      idle_loop_rows_written: {
        value: idleLoop.rows_written,
        budget: BUDGETS.idle_loop,
        met: idleLoop.rows_written <= BUDGETS.idle_loop,
      },
      upload_r2: {
        value: { a: kinds.upload.r2_a, b: kinds.upload.r2_b },
        budget: { a: 1, b: 0 },
        met: Math.round(kinds.upload.r2_a * 100) === 100 && Math.round(kinds.upload.r2_b * 100) === 0,
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// Printing

/**
 * A text table: right-aligned but for the first column.
 * @param {string[]} head
 * @param {string[][]} rows
 */
function table(head, rows) {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  /** @param {string[]} r */
  const line = (r) =>
    r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join("  ");
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

/** @param {number} x */
const n2 = (x) => (Math.abs(x) >= 100 ? Math.round(x).toLocaleString("en-US") : String(round(x, 2)));
/** @param {number} x */
const usd = (x) =>
  `$${x === 0 ? "0" : Math.abs(x) >= 1000 ? Math.round(x).toLocaleString("en-US") : Math.abs(x) >= 1 ? x.toFixed(2) : x.toPrecision(2)}`;

/**
 * @param {ReturnType<typeof compose>} c
 */
function measuredTable(c) {
  const m = c.measured;
  /** @type {Array<[string, string, Usage]>} */
  const rows = [
    ["submission, its share", "task", m.submit_per_task],
    ["node heartbeat (busy loop)", "request", m.node_heartbeat],
    ["claim that leases", "request", m.claim],
    ["attempt heartbeat (renew)", "request", m.attempt_heartbeat],
    ["upload (PUT metrics.json)", "request", m.upload],
    ["commit (accepted)", "request", m.commit],
    ["after the answers", "task", m.after_answers_per_task],
    ["archive, after retention", "task", m.archive_per_task],
    ["one-minute task, all of it", "task", m.task],
    [`idle agent's loop (${round(m.idle_loop_seconds, 1)} s)`, "loop", m.idle_loop],
    ["node heartbeat, alone", "request", m.node_heartbeat_alone],
    ["claim answered 204 at once, alone", "request", m.empty_claim_alone],
    [`3-replica task (${round(m.leases_per_replicated_task, 2)} leases)`, "task", m.replicated_task],
    ["background, busy pool", "second", c.background.busy],
    ["background, idle pool (claims held)", "second", c.background.idle],
    ["background, pool at rest", "second", c.background.rest],
  ];
  return table(
    [`S = ${c.shards}: counted`, "per", "Worker req", "DO req", "rows written", "rows read", "R2 A", "R2 B"],
    rows.map(([what, per, u]) => [
      what,
      per,
      n2(u.requests),
      n2(u.do_requests),
      n2(u.rows_written),
      n2(u.rows_read),
      n2(u.r2_a),
      n2(u.r2_b),
    ]),
  );
}

/**
 * @param {ReturnType<typeof compose>[]} composed
 */
function pricedTable(composed) {
  /** @type {Array<[string, (c: ReturnType<typeof compose>) => Priced & { goal?: number }]>} */
  const outputs = [
    [`per million one-minute tasks (${BUSY_AGENTS} busy agents)`, (c) => c.outputs.per_million_tasks],
    [
      `per idle agent-month (${IDLE_AGENTS.toLocaleString("en-US")} idle agents)`,
      (c) => c.outputs.per_idle_agent_month,
    ],
    ["per million one-minute tasks, replicas 3 (quorum 3)", (c) => c.outputs.per_million_replicated_tasks],
    [
      `per month, ${FLEET.agents.toLocaleString("en-US")} agents, ${FLEET.tasks_per_day.toLocaleString("en-US")} tasks a day`,
      (c) => c.outputs.fleet_per_month,
    ],
  ];
  const rows = outputs.flatMap(([name, of]) =>
    composed.map((c) => {
      const p = of(c);
      return [
        name,
        String(c.shards),
        usd(p.total),
        ...USAGE_KEYS.map((k) => usd(p.breakdown[k])),
        p.goal === undefined ? "" : `≤ ${usd(p.goal)}: ${p.total <= p.goal ? "met" : "NOT MET"}`,
      ];
    }),
  );
  return table(["dollars", "S", "total", ...USAGE_KEYS.map((k) => BREAKDOWN[k]), "goal"], rows);
}

/**
 * @param {ReturnType<typeof compose>} c
 */
function budgetLines(c) {
  const b = c.budgets;
  /** @param {boolean} met */
  const verdict = (met) => (met ? "within" : "OVER");
  return [
    `S = ${c.shards}, SPEC §16 budgets (rows written): task lifecycle (submission share, claim, upload, commit, what the answers left) ` +
      `${n2(b.lifecycle_rows_written.value)} (≤ ${b.lifecycle_rows_written.budget}: ${verdict(b.lifecycle_rows_written.met)}); ` +
      `attempt heartbeat ${n2(b.attempt_heartbeat_rows_written.value)} (≤ ${b.attempt_heartbeat_rows_written.budget}: ${verdict(b.attempt_heartbeat_rows_written.met)}); ` +
      `idle loop ${n2(b.idle_loop_rows_written.value)} (≤ ${b.idle_loop_rows_written.budget}: ${verdict(b.idle_loop_rows_written.met)}); ` +
      `upload R2 ${n2(b.upload_r2.value.a)} A / ${n2(b.upload_r2.value.b)} B (1 / 0: ${b.upload_r2.met ? "as stated" : "NOT as stated"})`,
    `S = ${c.shards}, the fleet: ${n2(c.outputs.fleet_per_month.busy_agents)} agents busy on average, ` +
      `${n2(c.outputs.fleet_per_month.do_requests_per_shard_per_second)} DO requests/s per shard` +
      (c.outputs.fleet_per_month.over_soft_limit
        ? ` — over one object's soft limit of about ${SOFT_LIMIT.toLocaleString("en-US")}/s: this fleet needs more shards`
        : ""),
  ];
}

/** What the numbers rest on, printed under the tables. */
const METHOD = [
  "How: the agents' requests sent for real through the Worker (workerd, SQLite storage, R2), and counted exactly:",
  "  rows read/written and R2 operations by the pool's objects (GET /metrics, every shard), DO requests as the calls",
  "  the objects served (the Worker's, alarms, calls between objects, the summary's), Worker requests by the harness.",
  "  The metrics reads' own cost is taken out; at S > 1 so are the shards' ticks with the summary in each window, at",
  "  what a tick costs in a pool with work on every shard and no request. The workloads are composed from these",
  "  counts (not timed): a one-minute task = the submission share + node heartbeat + claim + 2 attempt heartbeats +",
  "  upload + commit + what they left to do + archive; an idle agent = the difference of two idle fleets measured at",
  "  once over real time (held claims, a node heartbeat each loop), the rest the idle pool's background. Background",
  "  and duration are priced over wall time: every object of the pool (S shards, plus the summary at S > 1) active",
  "  all the time, at the price file's memory; a one-minute task holds 0.6 s of it at 100 busy agents, an idle agent",
  `  1/1,000 of it. Storage: a finished task's rows kept ${RETENTION_S / DAY_S} days (FLASHML_JOB_RETENTION_SECONDS) before archiving.`,
  "  Not priced: the plan's $5 and included amounts, Worker CPU time, R2 storage. A month is 30 days.",
];

// ---------------------------------------------------------------------------------------------------

/** @type {Prices} */
let prices;
try {
  prices = loadPrices(PRICES_FILE);
} catch (e) {
  console.error(e instanceof Error ? e.message : e);
  process.exit(2);
}
const started = Date.now();
/** @type {BenchRecord[]} */
let records;
/** @type {Record<string, unknown> | null} */
let stored = null;
if (REPRICE) {
  stored = /** @type {Record<string, unknown> | null} */ (readResult("cost"));
  if (!stored || !Array.isArray(stored.records)) throw new Error("--reprice: no bench/results/cost.json with records");
  records = /** @type {BenchRecord[]} */ (stored.records);
} else {
  const machineAtStart = machine();
  records = await runBenchFile(
    "bench/cost.bench.test.ts",
    { BENCH_QUICK: QUICK ? "1" : "", BENCH_COST_SHARDS: SHARDS },
    QUICK ? 300_000 : 900_000,
    { config: "bench/vitest.cost.config.ts" },
  );
  stored = { machine: machineAtStart };
}
records.sort((a, b) => a.shards - b.shards);
const composed = records.map((r) => compose(r, prices));

const pricesName = relative(ROOT, PRICES_FILE).startsWith("..") ? PRICES_FILE : relative(ROOT, PRICES_FILE);
console.log(
  `What a pool costs (SPEC §16)${QUICK ? " — QUICK: small fleets, busy tasks time-compressed 10×, not the published figures" : ""}`,
);
console.log(`Prices: ${pricesName}, dated ${prices.date} (${prices.currency}): ${prices.source}`);
for (const c of composed) {
  if (!records.find((r) => r.shards === c.shards)?.r2_exported)
    console.log(
      `S = ${c.shards}: R2 counted from the Worker's own calls only (this build exports no flashedge_r2_operations_total): ` +
        "the objects' own R2 operations (a commit's read of a JSON output, archive writes) are not counted",
    );
}
console.log("");
for (const c of composed) console.log(`${measuredTable(c)}\n`);
console.log(pricedTable(composed));
console.log("");
for (const c of composed) for (const line of budgetLines(c)) console.log(line);
console.log("");
for (const line of METHOD) console.log(line);

const machineStart = /** @type {import("./lib.mjs").Machine} */ (stored.machine);
const result = {
  command: `node bench/cost.mjs${process.argv.slice(2).length ? ` ${process.argv.slice(2).join(" ")}` : ""}`,
  date: today(),
  machine: { ...machineStart, load_at_end: machine().load_at_start },
  wall_s: Math.round((Date.now() - started) / 1000),
  quick: QUICK,
  prices: { file: pricesName, ...prices },
  model: {
    month_s: MONTH_S,
    task_s: TASK_S,
    busy_agents: BUSY_AGENTS,
    idle_agents: IDLE_AGENTS,
    fleet: FLEET,
    retention_s: RETENTION_S,
    storage_gb_bytes: GB,
  },
  goals: GOALS,
  budgets: BUDGETS,
  shards: composed,
  records,
};
if (!REPRICE && (!QUICK || flag("write"))) console.log(`\nwrote ${writeResult("cost", result)}`);
