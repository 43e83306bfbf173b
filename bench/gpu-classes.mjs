// Issue 26: does matching GPUs by memory, compute capability and driver
// cost the claim anything? Runs the in-object bench (bench/in-object.mjs,
// one run at one depth, its mix with GPU tasks that need memory, compute
// capability and driver) in pairs of processes, one in NOW (this checkout
// unless given) and one in DIR, a copy of it whose src/ is the code before
// (which ignores those requirements: its GPU tasks are one class),
// alternating which goes first, and takes the ratio of the claim's cost
// now to before within each pair, then the median over pairs, so load that
// changes between pairs cancels out (bench/paired.mjs). Bind+commit, which
// issue 26 does not touch, is the control. The bar: at most 1.1× on the CPU
// and the GPU node. Writes bench/results/gpu-classes.json here.
//
//   node bench/gpu-classes.mjs --base DIR [--now DIR] [--base-commit SHA] [--pairs 3] [--depth 100000]
// @ts-check

import { resolve } from "node:path";
import { machine, option, ROOT, today, writeResult } from "./lib.mjs";
import { load, pairedRuns } from "./paired.mjs";

const BASE = option("base", "");
const NOW = resolve(option("now", ROOT));
const BASE_COMMIT = option("base-commit", "");
const PAIRS = Number(option("pairs", "3"));
const DEPTH = Number(option("depth", "100000"));
const MAX_RATIO = 1.1;

if (!BASE) {
  console.error(
    "usage: node bench/gpu-classes.mjs --base DIR [--now DIR] [--base-commit SHA] [--pairs 3] [--depth 100000]",
  );
  process.exit(2);
}

const { load_at_start, ...paired } = pairedRuns({ base: resolve(BASE), now: NOW, pairs: PAIRS, depth: DEPTH });
const { cpu_claim: cpuRatio, gpu_claim: gpuRatio, commit: commitRatio } = paired.ratio;
const result = {
  command: `node bench/gpu-classes.mjs --base ${BASE}${NOW === ROOT ? "" : ` --now ${NOW}`}${BASE_COMMIT ? ` --base-commit ${BASE_COMMIT}` : ""} --pairs ${PAIRS} --depth ${DEPTH}`,
  date: today(),
  machine: { ...machine(), load_at_start, load_at_end: load() },
  base_commit: BASE_COMMIT || null,
  ...paired,
  bar: { max_ratio: MAX_RATIO, met: cpuRatio <= MAX_RATIO && gpuRatio <= MAX_RATIO },
};
console.log(
  `median ratio now / base: CPU claim ${cpuRatio}×, GPU claim ${gpuRatio}×, bind+commit (control) ${commitRatio}× (bar ≤ ${MAX_RATIO}×): ${result.bar.met ? "holds" : "MISSED"}`,
);
console.log(`wrote ${writeResult("gpu-classes", result)}`);
