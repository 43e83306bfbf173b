// Driver of the in-object benchmark (issue 8, part 1). Runs
// bench/in-object.bench.test.ts under workerd several times (each run a
// fresh vitest process), takes the medians across runs and checks the bar:
// cycles/s at the deepest queue must be at least 80% of those at 1,000.
//
//   node bench/in-object.mjs            3 runs at 1,000 / 10,000 / 100,000 pending;
//                                       writes bench/results/in-object.json
//   node bench/in-object.mjs --quick    1 run at 1,000 pending, 300 cycles (CI);
//                                       writes nothing unless --write
//   options: --runs N, --depths 1000,10000
//
// Exits non-zero when a run fails (a claim or commit that should succeed did
// not) and, outside --quick, when the bar is missed.
// @ts-check

import os from "node:os";
import { flag, machine, median, option, percentile, round, runBenchFile, spread, today, writeResult } from "./lib.mjs";

const QUICK = flag("quick");
const RUNS = Number(option("runs", QUICK ? "1" : "3"));
const DEPTHS = option("depths", QUICK ? "1000" : "1000,10000,100000");
const RUN_TIMEOUT_MS = QUICK ? 120_000 : 600_000;

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
/** @typedef {DepthRecord[] & { classes: ClassesRecord[] }} RunRecords */

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
 * @property {DepthSummary[]} summary
 * @property {{ classes: number, pending_ahead: boolean, claim_us: number }[]} classes
 * @property {{ deepest: number, ratio: number, holds: boolean, goal_2000_at_deepest: boolean }} bar
 */

/**
 * One vitest process; resolves with its BENCH records. Killed (its whole group) past the timeout.
 * @param {string} depths
 * @returns {Promise<RunRecords>}
 */
async function runOnce(depths) {
  /** @type {(DepthRecord | ClassesRecord)[]} */
  const lines = await runBenchFile(
    "bench/in-object.bench.test.ts",
    { BENCH_QUICK: QUICK ? "1" : "", BENCH_DEPTHS: depths },
    RUN_TIMEOUT_MS,
  );
  const records = /** @type {RunRecords} */ (lines.filter((r) => r.bench === "in-object"));
  records.classes = lines.filter((r) => r.bench === "classes");
  if (records.length === 0) throw new Error("the bench printed no in-object records");
  return records;
}

/**
 * Across runs: median of the run medians, their spread, and percentiles of all batch samples.
 * @param {RunRecords[]} runs
 * @param {number} depth
 */
function summarize(runs, depth) {
  const at = runs.map((records) => /** @type {DepthRecord} */ (records.find((r) => r.depth === depth)));
  const first = /** @type {DepthRecord} */ (at[0]);
  /** @param {"cpu" | "gpu"} key */
  const nodeSummary = (key) => {
    const cycles = at.map((r) => medianOf(r[key].cycles_per_s));
    const claimUs = at.flatMap((r) => r[key].claim_us);
    const commitUs = at.flatMap((r) => r[key].commit_us);
    return {
      cycles_per_s: Math.round(medianOf(cycles)),
      cycles_per_s_runs: cycles,
      cycles_noise: spread(cycles),
      claims_per_s: Math.round(1e6 / medianOf(claimUs)),
      claim_us_p50: round(median(claimUs)),
      claim_us_p99: round(percentile(claimUs, 99)),
      commit_us_p50: round(median(commitUs)),
      batch_samples: claimUs.length,
      max_single_claim_ms: Math.max(...at.map((r) => r[key].max_single_claim_ms)),
    };
  };
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
    cpu: nodeSummary("cpu"),
    gpu: nodeSummary("gpu"),
    methods: { cycles_per_s: Math.round(medianOf(methods)), cycles_per_s_runs: methods, cycles_noise: spread(methods) },
    rpc: { callers_1: rpc(1), callers_8: rpc(8) },
    requests_us: {
      renew: request("renew"),
      node_heartbeat: request("node_heartbeat"),
      idle_claim: request("idle_claim"),
    },
  };
}

const started = Date.now();
const host = machine();
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
  console.log(records.map((r) => `${r.depth}: ${Math.round(medianOf(r.cpu.cycles_per_s))} cycles/s`).join(", "));
}

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
for (const c of classes)
  console.log(
    `claim with ${c.classes} classes (${c.pending_ahead ? "all pending, ahead" : "history, none pending"}): ${c.claim_us} µs`,
  );
console.log(
  `\nbar: cycles/s at ${deepest.depth} = ${Math.round(ratio * 100)}% of those at ${shallow.depth} (need ≥ 80%): ${bar.holds ? "holds" : "MISSED"}`,
);
console.log(`goal: ≥ 2,000 cycles/s at ${deepest.depth}: ${bar.goal_2000_at_deepest ? "met" : "not met"}`);

if (!QUICK || flag("write")) {
  /** @satisfies {InObjectResult} */
  const result = {
    command: `node bench/in-object.mjs${QUICK ? " --quick" : ""} --runs ${RUNS} --depths ${DEPTHS}`,
    date: today(),
    machine: { ...host, load_at_end: round(/** @type {number} */ (os.loadavg()[0]), 2) },
    runs: RUNS,
    batch: /** @type {DepthRecord} */ (firstRun[0]).batch,
    batches_per_run: /** @type {DepthRecord} */ (firstRun[0]).batches,
    wall_s: Math.round((Date.now() - started) / 1000),
    summary,
    classes,
    bar,
  };
  const path = writeResult(QUICK ? "in-object.quick" : "in-object", result);
  console.log(`wrote ${path}`);
}
if (!QUICK && !bar.holds) process.exit(1);
