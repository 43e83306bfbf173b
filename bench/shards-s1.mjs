// Issue 27: is a one-shard pool still today's pool in cost? The in-object
// bench's claim and bind+commit, paired against a checkout of the code
// before sharding (bench/paired.mjs): NOW (this checkout unless given)
// against DIR, alternating which goes first, the ratio now / before within
// each pair and the median over pairs. The bar (docs/sharding.md §12): at
// most 1.05× on the CPU claim, the GPU claim and bind+commit. Writes
// bench/results/shards-s1.json; BENCHMARKS.md section 13 renders it.
//
//   node bench/shards-s1.mjs --base DIR [--now DIR] [--base-commit SHA] [--pairs 5] [--depth 10000] [--depth-only]
//
// --depth-only: each side runs the in-object bench's depth test alone
// (bench/paired.mjs), the same claim and commit figures in less time.
//
// DIR: a checkout of the commit before sharding (f4e0c65, whose in-object
// bench files are this checkout's) with its own node_modules.
// @ts-check

import { resolve } from "node:path";
import { flag, machine, option, ROOT, today, writeResult } from "./lib.mjs";
import { load, pairedRuns } from "./paired.mjs";

const BASE = option("base", "");
const NOW = resolve(option("now", ROOT));
const BASE_COMMIT = option("base-commit", "");
const PAIRS = Number(option("pairs", "5"));
const DEPTH = Number(option("depth", "10000"));
const MAX_RATIO = 1.05;

if (!BASE) {
  console.error(
    "usage: node bench/shards-s1.mjs --base DIR [--now DIR] [--base-commit SHA] [--pairs 5] [--depth 10000]",
  );
  process.exit(2);
}

const DEPTH_ONLY = flag("depth-only");
const { load_at_start, ...paired } = await pairedRuns({
  base: resolve(BASE),
  now: NOW,
  pairs: PAIRS,
  depth: DEPTH,
  depthOnly: DEPTH_ONLY,
});
const { cpu_claim, gpu_claim, commit } = paired.ratio;
const result = {
  command: `node bench/shards-s1.mjs --base ${BASE}${NOW === ROOT ? "" : ` --now ${NOW}`}${BASE_COMMIT ? ` --base-commit ${BASE_COMMIT}` : ""} --pairs ${PAIRS} --depth ${DEPTH}${DEPTH_ONLY ? " --depth-only" : ""}`,
  date: today(),
  machine: { ...machine(), load_at_start, load_at_end: load() },
  base_commit: BASE_COMMIT || null,
  ...paired,
  bar: { max_ratio: MAX_RATIO, met: [cpu_claim, gpu_claim, commit].every((r) => r <= MAX_RATIO) },
};
console.log(
  `median ratio now / base: CPU claim ${cpu_claim}×, GPU claim ${gpu_claim}×, bind+commit ${commit}× (bar ≤ ${MAX_RATIO}×): ${result.bar.met ? "holds" : "MISSED"}`,
);
console.log(`wrote ${writeResult("shards-s1", result)}`);
if (!result.bar.met) process.exitCode = 1;
