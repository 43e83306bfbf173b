// Issue 27: is a one-shard pool still today's pool in cost? The in-object
// claim and bind+commit of this checkout against the commit before sharding,
// both in one workerd process and timed batch by batch in alternation
// (bench/ab/s1.ab.test.ts), so the machine's load falls on both sides alike.
// The bar (docs/sharding.md §12): at most 1.05× on the CPU claim, the GPU
// claim and bind+commit, by the median of the rounds' ratios. Writes
// bench/results/shards-s1.json; BENCHMARKS.md section 13 renders it.
//
//   node bench/shards-s1.mjs [--base-commit f4e0c65] [--rounds 60] [--depth 10000]
//
// The base commit's src is extracted (git archive) to bench/.base/src, which
// git ignores; its calls the bench makes are today's (the in-object bench's).
// @ts-check

import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { machine, option, ROOT, runBenchFile, today, writeResult } from "./lib.mjs";
import { load } from "./paired.mjs";

const BASE_COMMIT = option("base-commit", "f4e0c65");
const ROUNDS = Number(option("rounds", "60"));
const DEPTH = Number(option("depth", "10000"));
const MAX_RATIO = 1.05;

const baseDir = join(ROOT, "bench", ".base");
rmSync(baseDir, { recursive: true, force: true });
mkdirSync(baseDir, { recursive: true });
const archive = execFileSync("git", ["archive", BASE_COMMIT, "src"], { cwd: ROOT, maxBuffer: 1 << 28 });
execFileSync("tar", ["-x", "-C", baseDir], { input: archive });

const loadAtStart = load();
const started = Date.now();
const [record] = await runBenchFile(
  "bench/ab/s1.ab.test.ts",
  { BENCH_DEPTHS: String(DEPTH), BENCH_ROUNDS: String(ROUNDS) },
  1_800_000,
  { config: "bench/vitest.ab.config.ts" },
);
const { cpu_claim, gpu_claim, commit } = record.ratio;
const result = {
  command: `node bench/shards-s1.mjs --base-commit ${BASE_COMMIT} --rounds ${ROUNDS} --depth ${DEPTH}`,
  date: today(),
  machine: { ...machine(), load_at_start: loadAtStart, load_at_end: load() },
  wall_s: Math.round((Date.now() - started) / 1000),
  base_commit: BASE_COMMIT,
  head: execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim(),
  ...record,
  bar: { max_ratio: MAX_RATIO, met: [cpu_claim, gpu_claim, commit].every((r) => r <= MAX_RATIO) },
};
console.log(
  `median ratio now / base over ${ROUNDS} interleaved rounds: CPU claim ${cpu_claim}×, GPU claim ${gpu_claim}×, ` +
    `bind+commit ${commit}× (bar ≤ ${MAX_RATIO}×): ${result.bar.met ? "holds" : "MISSED"}`,
);
console.log(`wrote ${writeResult("shards-s1", result)}`);
if (!result.bar.met) process.exitCode = 1;
