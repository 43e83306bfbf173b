// Driver of the in-object benchmark (issue 8, part 1). Runs
// bench/in-object.bench.test.ts under workerd several times (each run a
// fresh vitest process), takes the medians across runs and checks the bar:
// cycles/s at the deepest queue must be at least 80% of those at 1,000.
// Also the scheduling policy's scenario (issue 13): 1,000 active jobs across
// 100 tenants, and with --base, the same scenario run on another checkout
// (the code before the policy) in alternating processes, for the ratio of
// the claim's cost now to then: it must stay at most 2×.
//
//   node bench/in-object.mjs            3 runs at 1,000 / 10,000 / 100,000 pending;
//                                       writes bench/results/in-object.json
//   node bench/in-object.mjs --quick    1 run at 1,000 pending, 300 cycles (CI);
//                                       writes nothing unless --write
//   options: --runs N, --depths 1000,10000
//   --base DIR [--pairs N]  also N pairs of runs (default 5) of the tenants
//                           scenario here and in DIR, a checkout with its own
//                           node_modules (e.g. a git worktree of the commit
//                           before the policy): this bench file is copied
//                           into DIR/bench/ for the runs and removed after.
//                           Without --base, the last recorded comparison is kept.
//
// Exits non-zero when a run fails (a claim or commit that should succeed did
// not) and, outside --quick, when the bar is missed (with --base, also when
// the claim costs more than 2× the base's). Writes nothing when src/ changed
// while it ran: the runs would mix versions.
// @ts-check

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import {
  flag,
  machine,
  median,
  option,
  percentile,
  ROOT,
  readResult,
  round,
  runBenchFile,
  spread,
  today,
  writeResult,
} from "./lib.mjs";

const QUICK = flag("quick");
const RUNS = Number(option("runs", QUICK ? "1" : "3"));
const DEPTHS = option("depths", QUICK ? "1000" : "1000,10000,100000");
const RUN_TIMEOUT_MS = QUICK ? 120_000 : 600_000;
const BASE = option("base", "");
const PAIRS = Number(option("pairs", "5"));
/** Issue 13: with 1,000 active jobs across 100 tenants a claim costs at most this times the base's. */
const MAX_RATIO_TO_BASE = 2;
const BENCH_FILE = "bench/in-object.bench.test.ts";
const REPLICAS_FILE = "bench/in-object-replicas.bench.test.ts";
/** Part of the scenario's test name, for running it alone (vitest -t takes a regular expression). */
const TENANTS_TEST = "with 1,000 active jobs across 100 tenants";

/**
 * What bench/in-object.bench.test.ts prints per depth (one `BENCH {json}` line).
 * @typedef {object} DepthRecord
 * @property {"in-object"} bench
 * @property {number} depth
 * @property {number} seed_ms
 * @property {number} batch
 * @property {number} batches
 * @property {number} classes
 * @property {number} pending_before
 * @property {number} pending_after
 * @property {NodeRecord} cpu
 * @property {NodeRecord} gpu
 * @property {{ cycles_per_s: number[] }} methods
 * @property {{ renew: number[], node_heartbeat: number[], idle_claim: number[] }} requests  µs samples per request
 * @property {{ callers_1: number[], callers_8: number[] }} rpc  cycles/s samples by number of concurrent callers
 */
/**
 * @typedef {object} NodeRecord
 * @property {number[]} cycles_per_s
 * @property {number[]} claim_us
 * @property {number[]} commit_us
 * @property {number} max_single_claim_ms
 */
/**
 * What it prints per number of requirement classes.
 * @typedef {{ bench: "classes", classes: number, pending_ahead: boolean, claim_us: number[] }} ClassesRecord
 */
/**
 * What it prints per queue of the tenants scenario.
 * @typedef {object} TenantsRecord
 * @property {"tenants"} bench
 * @property {string} queue  e.g. "three priorities"
 * @property {number} levels
 * @property {number} tenants
 * @property {number} jobs
 * @property {number} tasks_per_job
 * @property {number} seed_ms
 * @property {number} pending_before
 * @property {number} active_jobs_before
 * @property {number} pending_after
 * @property {number} active_jobs_after
 * @property {number[]} tenants_per_batch  distinct tenants among each batch's claims
 * @property {NodeRecord} cpu
 * @property {NodeRecord} gpu
 * @property {number[]} idle_claim_us
 */
/**
 * What bench/in-object-replicas.bench.test.ts prints (docs/protocol.md §14 "Cost").
 * @typedef {{ bench: "replicas", ran: number, pending_ran: number, none_claim_us: number[], ran_claim_us: number[] }} ReplicasRecord
 */
/** @typedef {DepthRecord[] & { classes: ClassesRecord[], tenants: TenantsRecord[], replicas: ReplicasRecord[] }} RunRecords */

/**
 * The median of samples every run records, so never of no values.
 * @param {readonly number[]} values
 */
const medianOf = (values) => /** @type {number} */ (median(values));

/**
 * One run's medians at one depth, as written to bench/results/in-object.json.
 * @typedef {ReturnType<typeof summarize>} DepthSummary
 */
/**
 * bench/results/in-object.json.
 * @typedef {object} InObjectResult
 * @property {string} command
 * @property {string} date
 * @property {import("./lib.mjs").Machine} machine
 * @property {number} runs
 * @property {number} batch
 * @property {number} batches_per_run
 * @property {number} wall_s
 * @property {string} src_sha1  of src/ as measured (see srcDigest)
 * @property {DepthSummary[]} summary
 * @property {{ classes: number, pending_ahead: boolean, claim_us: number }[]} classes
 * @property {{ deepest: number, ratio: number, holds: boolean, goal_2000_at_deepest: boolean }} bar
 * @property {TenantsSummary[]} tenants
 * @property {BaseComparison | null} base_comparison
 * @property {ReturnType<typeof summarizeReplicas>} replicas
 */
/**
 * One variant of the tenants scenario across runs.
 * @typedef {ReturnType<typeof summarizeTenants>} TenantsSummary
 */
/**
 * The tenants scenario here and on a base checkout, in alternating processes.
 * @typedef {object} BaseComparison
 * @property {string} command
 * @property {string} date
 * @property {import("./lib.mjs").Machine} machine
 * @property {string} base_commit
 * @property {string} head_commit  the commit this checkout's code sits on (uncommitted changes included in the runs)
 * @property {string} src_sha1  of this checkout's src/ as measured: which working tree, when it is not a commit
 * @property {number} pairs
 * @property {number} max_ratio
 * @property {ComparedVariant[]} variants
 * @property {boolean} holds
 */
/**
 * @typedef {object} ComparedVariant
 * @property {string} queue
 * @property {Compared} cpu_claim_us
 * @property {Compared} gpu_claim_us
 * @property {Compared} idle_claim_us
 * @property {{ now: number, base: number }} cpu_cycles_per_s
 * @property {{ now: number, base: number }} tenants_per_batch
 */
/**
 * Medians over pairs of each side's median, and of the ratio within each pair.
 * @typedef {{ now: number, base: number, ratio: number, ratios: number[], ratio_noise: import("./lib.mjs").Spread }} Compared
 */

/**
 * One vitest process; resolves with its BENCH records. Killed (its whole group) past the timeout.
 * @param {string} depths
 * @returns {Promise<RunRecords>}
 */
async function runOnce(depths) {
  /** @type {(DepthRecord | ClassesRecord | TenantsRecord)[]} */
  const lines = await runBenchFile(
    "bench/in-object.bench.test.ts",
    { BENCH_QUICK: QUICK ? "1" : "", BENCH_DEPTHS: depths },
    RUN_TIMEOUT_MS,
  );
  const records = /** @type {RunRecords} */ (lines.filter((r) => r.bench === "in-object"));
  records.classes = lines.filter((r) => r.bench === "classes");
  records.tenants = lines.filter((r) => r.bench === "tenants");
  if (records.length === 0) throw new Error("the bench printed no in-object records");
  /** @type {ReplicasRecord[]} */
  const replicas = await runBenchFile(REPLICAS_FILE, { BENCH_QUICK: QUICK ? "1" : "" }, RUN_TIMEOUT_MS);
  records.replicas = replicas.filter((r) => r.bench === "replicas");
  return records;
}

/**
 * docs/protocol.md §14 "Cost" across runs: claim µs with no pending task the node ran a
 * replica of, and with 4,000; the bar is a ratio of at most 1.5.
 * @param {RunRecords[]} runs
 */
function summarizeReplicas(runs) {
  const at = runs.flatMap((r) => r.replicas);
  const none = round(medianOf(at.flatMap((r) => r.none_claim_us)));
  const ran = round(medianOf(at.flatMap((r) => r.ran_claim_us)));
  const ratio = round(ran / none, 2);
  return { ran: at[0]?.ran ?? 0, none_claim_us: none, ran_claim_us: ran, ratio, max_ratio: 1.5, holds: ratio <= 1.5 };
}

/**
 * One node's cycles across runs: median of the run medians, their spread, and percentiles of all batch samples.
 * @param {NodeRecord[]} at  one per run
 */
function nodeSummary(at) {
  const cycles = at.map((r) => medianOf(r.cycles_per_s));
  const claimUs = at.flatMap((r) => r.claim_us);
  const commitUs = at.flatMap((r) => r.commit_us);
  return {
    cycles_per_s: Math.round(medianOf(cycles)),
    cycles_per_s_runs: cycles,
    cycles_noise: spread(cycles),
    claims_per_s: Math.round(1e6 / medianOf(claimUs)),
    claim_us_p50: round(median(claimUs)),
    claim_us_p99: round(percentile(claimUs, 99)),
    commit_us_p50: round(median(commitUs)),
    batch_samples: claimUs.length,
    max_single_claim_ms: Math.max(...at.map((r) => r.max_single_claim_ms)),
  };
}

/**
 * Across runs, at one depth.
 * @param {RunRecords[]} runs
 * @param {number} depth
 */
function summarize(runs, depth) {
  const at = runs.map((records) => /** @type {DepthRecord} */ (records.find((r) => r.depth === depth)));
  const first = /** @type {DepthRecord} */ (at[0]);
  const methods = at.map((r) => medianOf(r.methods.cycles_per_s));
  /** @param {keyof DepthRecord["requests"]} name */
  const request = (name) => round(median(at.flatMap((r) => r.requests[name])));
  /** @param {1 | 8} callers */
  const rpc = (callers) => {
    const perRun = at.map((r) => medianOf(r.rpc[/** @type {const} */ (`callers_${callers}`)]));
    return { cycles_per_s: Math.round(medianOf(perRun)), cycles_per_s_runs: perRun, cycles_noise: spread(perRun) };
  };
  return {
    depth,
    classes: first.classes,
    pending_before: first.pending_before,
    pending_after: first.pending_after,
    seed_ms: Math.round(medianOf(at.map((r) => r.seed_ms))),
    cpu: nodeSummary(at.map((r) => r.cpu)),
    gpu: nodeSummary(at.map((r) => r.gpu)),
    methods: { cycles_per_s: Math.round(medianOf(methods)), cycles_per_s_runs: methods, cycles_noise: spread(methods) },
    rpc: { callers_1: rpc(1), callers_8: rpc(8) },
    requests_us: {
      renew: request("renew"),
      node_heartbeat: request("node_heartbeat"),
      idle_claim: request("idle_claim"),
    },
  };
}

/**
 * One variant of the tenants scenario across runs.
 * @param {TenantsRecord[]} at  one per run
 */
function summarizeTenants(at) {
  const first = /** @type {TenantsRecord} */ (at[0]);
  const idle = at.flatMap((r) => r.idle_claim_us);
  return {
    queue: first.queue,
    levels: first.levels,
    tenants: first.tenants,
    jobs: first.jobs,
    tasks_per_job: first.tasks_per_job,
    pending_before: first.pending_before,
    pending_after: first.pending_after,
    active_jobs_after: Math.min(...at.map((r) => r.active_jobs_after)),
    seed_ms: Math.round(medianOf(at.map((r) => r.seed_ms))),
    tenants_per_batch: medianOf(at.flatMap((r) => r.tenants_per_batch)),
    cpu: nodeSummary(at.map((r) => r.cpu)),
    gpu: nodeSummary(at.map((r) => r.gpu)),
    idle_claim_us_p50: round(median(idle)),
    idle_claim_us_p99: round(percentile(idle, 99)),
  };
}

/**
 * The tenants scenario alone (vitest -t) in the checkout at `root`, from its
 * own node_modules and bench config; resolves with its records.
 * @param {string} root
 * @param {string} file  relative to root
 * @returns {Promise<TenantsRecord[]>}
 */
async function runTenantsAt(root, file) {
  const records = await runBenchFile(file, { BENCH_QUICK: QUICK ? "1" : "" }, RUN_TIMEOUT_MS, {
    root,
    testName: TENANTS_TEST,
  });
  return records.filter((r) => r.bench === "tenants");
}

/**
 * The checkout's commit, marked when its working tree differs from it (what was measured is then not that commit).
 * @param {string} dir
 */
function commitOf(dir) {
  /** @param {string[]} args */
  const git = (...args) => execFileSync("git", ["-C", dir, ...args], { encoding: "utf8" }).trim();
  // The copied bench file is not what a comparison measures.
  const changed = git("status", "--porcelain", "--", ".", ":!bench/in-object.base.bench.test.ts");
  return `${git("rev-parse", "--short", "HEAD")}${changed ? " with uncommitted changes" : ""}`;
}

/**
 * One digest of every file under src/ (paths and bytes, in path order).
 * @param {string} root
 */
function srcDigest(root) {
  const hash = createHash("sha1");
  const files = /** @type {string[]} */ (readdirSync(join(root, "src"), { recursive: true, encoding: "utf8" }))
    .map((f) => join("src", f))
    .sort();
  for (const file of files) {
    try {
      hash.update(`${file}\0`).update(readFileSync(join(root, file)));
    } catch {
      // a directory
    }
  }
  return hash.digest("hex");
}

/**
 * PAIRS pairs of tenants-only runs, here and in `base`, alternating which
 * goes first; per pair the ratio of the two sides' medians, so load that
 * changes between pairs cancels out.
 * @param {string} base
 * @returns {Promise<BaseComparison>}
 */
async function compareWithBase(base) {
  const host = machine();
  // A name of its own, so the base's own bench file stays as it is.
  const copied = "bench/in-object.base.bench.test.ts";
  copyFileSync(join(ROOT, BENCH_FILE), join(base, copied));
  /** @type {{ now: TenantsRecord[], base: TenantsRecord[] }[]} */
  const pairs = [];
  try {
    for (let i = 0; i < PAIRS; i++) {
      process.stdout.write(`tenants pair ${i + 1}/${PAIRS} ... `);
      const here = () => runTenantsAt(ROOT, BENCH_FILE);
      const there = () => runTenantsAt(base, copied);
      const pair =
        i % 2 === 0 ? { now: await here(), base: await there() } : { base: await there(), now: await here() };
      pairs.push(pair);
      console.log(
        pair.now
          .map((r) => {
            const b = /** @type {TenantsRecord} */ (pair.base.find((x) => x.queue === r.queue));
            return `${r.queue}: claim ${medianOf(r.cpu.claim_us)} µs vs ${medianOf(b.cpu.claim_us)} µs`;
          })
          .join(", "),
      );
    }
  } finally {
    rmSync(join(base, copied), { force: true });
  }
  const first = /** @type {{ now: TenantsRecord[] }} */ (pairs[0]);
  const variants = first.now.map(({ queue }) => {
    /** @param {"now" | "base"} side */
    const of = (side) => pairs.map((p) => /** @type {TenantsRecord} */ (p[side].find((r) => r.queue === queue)));
    const now = of("now");
    const then = of("base");
    /**
     * @param {(r: TenantsRecord) => number[]} samples
     * @returns {Compared}
     */
    const compare = (samples) => {
      const a = now.map((r) => medianOf(samples(r)));
      const b = then.map((r) => medianOf(samples(r)));
      const ratios = a.map((x, k) => round(x / /** @type {number} */ (b[k]), 2));
      return { now: medianOf(a), base: medianOf(b), ratio: medianOf(ratios), ratios, ratio_noise: spread(ratios) };
    };
    /** @param {(r: TenantsRecord) => number[]} samples */
    const both = (samples) => ({
      now: medianOf(now.map((r) => medianOf(samples(r)))),
      base: medianOf(then.map((r) => medianOf(samples(r)))),
    });
    return {
      queue,
      cpu_claim_us: compare((r) => r.cpu.claim_us),
      gpu_claim_us: compare((r) => r.gpu.claim_us),
      idle_claim_us: compare((r) => r.idle_claim_us),
      cpu_cycles_per_s: both((r) => r.cpu.cycles_per_s),
      tenants_per_batch: both((r) => r.tenants_per_batch),
    };
  });
  return {
    command: `node bench/in-object.mjs --base ${base} --pairs ${PAIRS}${QUICK ? " --quick" : ""}`,
    date: today(),
    machine: { ...host, load_at_end: round(/** @type {number} */ (os.loadavg()[0]), 2) },
    base_commit: commitOf(base),
    head_commit: commitOf(ROOT),
    src_sha1: SRC_AT_START,
    pairs: PAIRS,
    max_ratio: MAX_RATIO_TO_BASE,
    variants,
    holds: variants.every(
      (v) => v.cpu_claim_us.ratio <= MAX_RATIO_TO_BASE && v.gpu_claim_us.ratio <= MAX_RATIO_TO_BASE,
    ),
  };
}

const started = Date.now();
const host = machine();
/** What the runs measure; a src/ edited meanwhile makes them a mix, not written. */
const SRC_AT_START = srcDigest(ROOT);
/** @type {RunRecords[]} */
const runs = [];
for (let i = 0; i < RUNS; i++) {
  process.stdout.write(`in-object run ${i + 1}/${RUNS} ... `);
  // Each run measures the depths in a rotated order, so whatever builds up
  // within a process (heap, the other pools' objects) favours no depth.
  const list = DEPTHS.split(",");
  const records = await runOnce([...list.slice(i % list.length), ...list.slice(0, i % list.length)].join(","));
  records.sort((a, b) => a.depth - b.depth);
  runs.push(records);
  console.log(
    [
      ...records.map((r) => `${r.depth}: ${Math.round(medianOf(r.cpu.cycles_per_s))} cycles/s`),
      ...records.tenants.map(
        (r) => `${r.jobs} jobs/${r.tenants} tenants, ${r.queue}: ${Math.round(medianOf(r.cpu.cycles_per_s))}`,
      ),
    ].join(", "),
  );
}
const comparison = BASE ? await compareWithBase(resolve(BASE)) : null;

const depths = DEPTHS.split(",").map(Number);
const firstRun = /** @type {RunRecords} */ (runs[0]);
/** Claim µs by number of classes: median of batch means over all runs. */
const classes = firstRun.classes.map(({ classes: n, pending_ahead }) => ({
  classes: n,
  pending_ahead,
  claim_us: round(
    median(
      runs.flatMap(
        (r) =>
          /** @type {ClassesRecord} */ (r.classes.find((c) => c.classes === n && c.pending_ahead === pending_ahead))
            .claim_us,
      ),
    ),
  ),
}));
const summary = depths.map((d) => summarize(runs, d));
const tenants = firstRun.tenants.map(({ queue }) =>
  summarizeTenants(runs.map((r) => /** @type {TenantsRecord} */ (r.tenants.find((t) => t.queue === queue)))),
);
const shallow = /** @type {DepthSummary} */ (summary[0]);
const deepest = /** @type {DepthSummary} */ (summary[summary.length - 1]);
const ratio = round(deepest.cpu.cycles_per_s / shallow.cpu.cycles_per_s, 3);
const bar = {
  deepest: deepest.depth,
  ratio,
  holds: ratio >= 0.8,
  goal_2000_at_deepest: deepest.cpu.cycles_per_s >= 2000,
};

console.log(
  "\ndepth    | CPU node cycles/s (runs)        | claims/s | claim µs p50/p99 | GPU node cycles/s | via methods | via RPC 1/8 | renew/node-hb/idle µs",
);
for (const s of summary) {
  console.log(
    `${String(s.depth).padEnd(8)} | ${String(s.cpu.cycles_per_s).padEnd(6)} (${s.cpu.cycles_per_s_runs.map(Math.round).join(", ")})`.padEnd(
      45,
    ) +
      ` | ${String(s.cpu.claims_per_s).padEnd(8)} | ${s.cpu.claim_us_p50} / ${s.cpu.claim_us_p99}`.padEnd(30) +
      ` | ${String(s.gpu.cycles_per_s).padEnd(17)} | ${String(s.methods.cycles_per_s).padEnd(11)} | ${`${s.rpc.callers_1.cycles_per_s}/${s.rpc.callers_8.cycles_per_s}`.padEnd(11)} | ${s.requests_us.renew}/${s.requests_us.node_heartbeat}/${s.requests_us.idle_claim}`,
  );
}
for (const t of tenants)
  console.log(
    `${t.jobs} jobs across ${t.tenants} tenants, ${t.queue}, ${t.pending_before} pending: ` +
      `CPU ${t.cpu.cycles_per_s} cycles/s, claim ${t.cpu.claim_us_p50} / ${t.cpu.claim_us_p99} µs; ` +
      `GPU claim ${t.gpu.claim_us_p50} µs; idle claim ${t.idle_claim_us_p50} µs; ${t.tenants_per_batch} tenants per batch`,
  );
for (const c of classes)
  console.log(
    `claim with ${c.classes} classes (${c.pending_ahead ? "all pending, ahead" : "history, none pending"}): ${c.claim_us} µs`,
  );
const replicas = summarizeReplicas(runs);
console.log(
  `claim with ${replicas.ran} pending tasks the node ran a replica of: ${replicas.ran_claim_us} µs; with none: ${replicas.none_claim_us} µs; ` +
    `ratio ${replicas.ratio} (need ≤ ${replicas.max_ratio}): ${replicas.holds ? "holds" : "MISSED"}`,
);
console.log(
  `\nbar: cycles/s at ${deepest.depth} = ${Math.round(ratio * 100)}% of those at ${shallow.depth} (need ≥ 80%): ${bar.holds ? "holds" : "MISSED"}`,
);
console.log(`goal: ≥ 2,000 cycles/s at ${deepest.depth}: ${bar.goal_2000_at_deepest ? "met" : "not met"}`);
if (comparison) {
  for (const v of comparison.variants) {
    /** @param {Compared} c */
    const line = (c) => `${c.now} vs ${c.base} µs = ${c.ratio}× (pairs ${c.ratios.join(", ")})`;
    console.log(
      `vs ${comparison.base_commit}, ${v.queue}: CPU claim ${line(v.cpu_claim_us)}; GPU claim ${line(v.gpu_claim_us)}; idle claim ${line(v.idle_claim_us)}`,
    );
  }
  console.log(
    `bar: claim at most ${MAX_RATIO_TO_BASE}× ${comparison.base_commit}'s with 1,000 jobs across 100 tenants: ${comparison.holds ? "holds" : "MISSED"}`,
  );
}

if (srcDigest(ROOT) !== SRC_AT_START) {
  console.error("src/ changed while the runs went on: they measured more than one version, so nothing is written.");
  process.exit(1);
}
if (!QUICK || flag("write")) {
  // A run without --base keeps the last comparison, with its own command and date.
  const previous = /** @type {InObjectResult | null} */ (readResult("in-object"));
  /** @satisfies {InObjectResult} */
  const result = {
    command: `node bench/in-object.mjs${QUICK ? " --quick" : ""} --runs ${RUNS} --depths ${DEPTHS}`,
    date: today(),
    machine: { ...host, load_at_end: round(/** @type {number} */ (os.loadavg()[0]), 2) },
    runs: RUNS,
    batch: /** @type {DepthRecord} */ (firstRun[0]).batch,
    batches_per_run: /** @type {DepthRecord} */ (firstRun[0]).batches,
    wall_s: Math.round((Date.now() - started) / 1000),
    src_sha1: SRC_AT_START,
    summary,
    classes,
    bar,
    tenants,
    base_comparison: comparison ?? previous?.base_comparison ?? null,
    replicas,
  };
  const path = writeResult(QUICK ? "in-object.quick" : "in-object", result);
  console.log(`wrote ${path}`);
}
if (!QUICK && (!bar.holds || !replicas.holds)) process.exit(1);
if (comparison && !comparison.holds) process.exit(1);
