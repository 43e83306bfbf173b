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

import { spawn } from "node:child_process";
import os from "node:os";
import { join } from "node:path";
import {
  flag,
  machine,
  median,
  option,
  percentile,
  ROOT,
  round,
  spread,
  stripAnsi,
  today,
  writeResult,
} from "./lib.mjs";

const QUICK = flag("quick");
const RUNS = Number(option("runs", QUICK ? "1" : "3"));
const DEPTHS = option("depths", QUICK ? "1000" : "1000,10000,100000");
const RUN_TIMEOUT_MS = QUICK ? 120_000 : 600_000;

/** One vitest process; resolves with its BENCH records. Killed (its whole group) past the timeout. */
function runOnce(depths) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [join(ROOT, "node_modules/vitest/vitest.mjs"), "run", "--config", "bench/vitest.bench.config.ts"],
      {
        cwd: ROOT,
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, BENCH_QUICK: QUICK ? "1" : "", BENCH_DEPTHS: depths, WRANGLER_SEND_METRICS: "false" },
      },
    );
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }, RUN_TIMEOUT_MS);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const lines = stripAnsi(out)
        .split("\n")
        .filter((line) => line.startsWith("BENCH "))
        .map((line) => JSON.parse(line.slice(6)));
      const records = lines.filter((r) => r.bench === "in-object");
      records.classes = lines.filter((r) => r.bench === "classes");
      if (code !== 0 || records.length === 0) {
        reject(new Error(`bench run failed (exit ${code ?? signal}):\n${stripAnsi(out).slice(-4000)}`));
      } else resolve(records);
    });
  });
}

/** Across runs: median of the run medians, their spread, and percentiles of all batch samples. */
function summarize(runs, depth) {
  const at = runs.map((records) => records.find((r) => r.depth === depth));
  const nodeSummary = (key) => {
    const cycles = at.map((r) => median(r[key].cycles_per_s));
    const claimUs = at.flatMap((r) => r[key].claim_us);
    const commitUs = at.flatMap((r) => r[key].commit_us);
    return {
      cycles_per_s: Math.round(median(cycles)),
      cycles_per_s_runs: cycles,
      cycles_noise: spread(cycles),
      claims_per_s: Math.round(1e6 / median(claimUs)),
      claim_us_p50: round(median(claimUs)),
      claim_us_p99: round(percentile(claimUs, 99)),
      commit_us_p50: round(median(commitUs)),
      batch_samples: claimUs.length,
      max_single_claim_ms: Math.max(...at.map((r) => r[key].max_single_claim_ms)),
    };
  };
  const methods = at.map((r) => median(r.methods.cycles_per_s));
  const request = (name) => round(median(at.flatMap((r) => r.requests[name])));
  const rpc = (callers) => {
    const perRun = at.map((r) => median(r.rpc[`callers_${callers}`]));
    return { cycles_per_s: Math.round(median(perRun)), cycles_per_s_runs: perRun, cycles_noise: spread(perRun) };
  };
  return {
    depth,
    classes: at[0].classes,
    pending_before: at[0].pending_before,
    pending_after: at[0].pending_after,
    seed_ms: Math.round(median(at.map((r) => r.seed_ms))),
    cpu: nodeSummary("cpu"),
    gpu: nodeSummary("gpu"),
    methods: { cycles_per_s: Math.round(median(methods)), cycles_per_s_runs: methods, cycles_noise: spread(methods) },
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
const runs = [];
for (let i = 0; i < RUNS; i++) {
  process.stdout.write(`in-object run ${i + 1}/${RUNS} ... `);
  // Each run measures the depths in a rotated order, so whatever builds up
  // within a process (heap, the other pools' objects) favours no depth.
  const list = DEPTHS.split(",");
  const records = await runOnce([...list.slice(i % list.length), ...list.slice(0, i % list.length)].join(","));
  records.sort((a, b) => a.depth - b.depth);
  runs.push(records);
  console.log(records.map((r) => `${r.depth}: ${Math.round(median(r.cpu.cycles_per_s))} cycles/s`).join(", "));
}

const depths = DEPTHS.split(",").map(Number);
/** Claim µs by number of classes: median of batch means over all runs. */
const classes = runs[0].classes.map(({ classes: n, pending_ahead }) => ({
  classes: n,
  pending_ahead,
  claim_us: round(
    median(runs.flatMap((r) => r.classes.find((c) => c.classes === n && c.pending_ahead === pending_ahead).claim_us)),
  ),
}));
const summary = depths.map((d) => summarize(runs, d));
const shallow = summary[0];
const deepest = summary[summary.length - 1];
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
  const path = writeResult(QUICK ? "in-object.quick" : "in-object", {
    command: `node bench/in-object.mjs${QUICK ? " --quick" : ""} --runs ${RUNS} --depths ${DEPTHS}`,
    date: today(),
    machine: { ...host, load_at_end: round(os.loadavg()[0], 2) },
    runs: RUNS,
    batch: runs[0][0].batch,
    batches_per_run: runs[0][0].batches,
    wall_s: Math.round((Date.now() - started) / 1000),
    summary,
    classes,
    bar,
  });
  console.log(`wrote ${path}`);
}
if (!QUICK && !bar.holds) process.exit(1);
