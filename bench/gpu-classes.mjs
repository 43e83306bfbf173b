// Issue 26: does matching GPUs by memory, compute capability and driver
// cost the claim anything? Runs the in-object bench (bench/in-object.mjs,
// one run at one depth, its mix with GPU tasks that need memory, compute
// capability and driver) in pairs of processes, one in NOW (this checkout
// unless given) and one in DIR, a copy of it whose src/ is the code before
// (which ignores those requirements: its GPU tasks are one class),
// alternating which goes first, and takes the ratio of the claim's cost
// now to before within each pair, then the median over pairs, so load that
// changes between pairs cancels out. Bind+commit, which issue 26 does not
// touch, is the control. The bar: at most 1.1× on the CPU and the GPU node.
// Writes bench/results/gpu-classes.json here; each side's own
// bench/results/in-object.json is restored after its runs.
//
//   node bench/gpu-classes.mjs --base DIR [--now DIR] [--base-commit SHA] [--pairs 3] [--depth 100000]
// @ts-check

import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { machine, median, option, ROOT, round, today, writeResult } from "./lib.mjs";

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

/**
 * One in-object run at DEPTH in `dir`: its figures at that depth.
 * @param {string} dir
 */
function runIn(dir) {
  const results = join(dir, "bench", "results", "in-object.json");
  const kept = readFileSync(results, "utf8");
  try {
    execFileSync(process.execPath, ["bench/in-object.mjs", "--runs", "1", "--depths", String(DEPTH)], {
      cwd: dir,
      stdio: ["ignore", "ignore", "inherit"],
      timeout: 900_000,
    });
    const s = JSON.parse(readFileSync(results, "utf8")).summary[0];
    return {
      classes: s.classes,
      cpu_claim_us: s.cpu.claim_us_p50,
      gpu_claim_us: s.gpu.claim_us_p50,
      cpu_cycles_per_s: s.cpu.cycles_per_s,
      gpu_cycles_per_s: s.gpu.cycles_per_s,
      commit_us: s.cpu.commit_us_p50,
      idle_claim_us: s.requests_us.idle_claim,
    };
  } finally {
    writeFileSync(results, kept);
  }
}

const load = () => round(Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0]), 2);
const started = Date.now();
const loadAtStart = load();
/** @type {{ first: string, now: ReturnType<typeof runIn>, base: ReturnType<typeof runIn> }[]} */
const pairs = [];
for (let i = 0; i < PAIRS; i++) {
  const baseFirst = i % 2 === 0;
  /** @type {Partial<Record<"now" | "base", ReturnType<typeof runIn>>>} */
  const pair = {};
  for (const side of baseFirst ? ["base", "now"] : ["now", "base"]) {
    pair[/** @type {"now" | "base"} */ (side)] = runIn(side === "base" ? resolve(BASE) : NOW);
  }
  const done = /** @type {{ now: ReturnType<typeof runIn>, base: ReturnType<typeof runIn> }} */ (pair);
  pairs.push({ first: baseFirst ? "base" : "now", ...done });
  console.log(
    `pair ${i + 1}/${PAIRS}: CPU claim ${done.now.cpu_claim_us} / ${done.base.cpu_claim_us} µs, GPU claim ${done.now.gpu_claim_us} / ${done.base.gpu_claim_us} µs (now / base)`,
  );
}

/** @param {(p: (typeof pairs)[number]) => number} ratio */
const medianRatio = (ratio) => round(/** @type {number} */ (median(pairs.map(ratio))), 2);
const cpuRatio = medianRatio((p) => p.now.cpu_claim_us / p.base.cpu_claim_us);
const gpuRatio = medianRatio((p) => p.now.gpu_claim_us / p.base.gpu_claim_us);
const commitRatio = medianRatio((p) => p.now.commit_us / p.base.commit_us);
const result = {
  command: `node bench/gpu-classes.mjs --base ${BASE}${NOW === ROOT ? "" : ` --now ${NOW}`}${BASE_COMMIT ? ` --base-commit ${BASE_COMMIT}` : ""} --pairs ${PAIRS} --depth ${DEPTH}`,
  date: today(),
  machine: { ...machine(), load_at_start: loadAtStart, load_at_end: load() },
  wall_s: Math.round((Date.now() - started) / 1000),
  depth: DEPTH,
  // NOW may be an export of a commit (no .git): then HEAD of this checkout is what was exported.
  head: execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim(),
  base_commit: BASE_COMMIT || null,
  pairs,
  median: {
    now: {
      cpu_claim_us: median(pairs.map((p) => p.now.cpu_claim_us)),
      gpu_claim_us: median(pairs.map((p) => p.now.gpu_claim_us)),
    },
    base: {
      cpu_claim_us: median(pairs.map((p) => p.base.cpu_claim_us)),
      gpu_claim_us: median(pairs.map((p) => p.base.gpu_claim_us)),
    },
  },
  ratio: { cpu_claim: cpuRatio, gpu_claim: gpuRatio, commit: commitRatio },
  bar: { max_ratio: MAX_RATIO, met: cpuRatio <= MAX_RATIO && gpuRatio <= MAX_RATIO },
};
console.log(
  `median ratio now / base: CPU claim ${cpuRatio}×, GPU claim ${gpuRatio}×, bind+commit (control) ${commitRatio}× (bar ≤ ${MAX_RATIO}×): ${result.bar.met ? "holds" : "MISSED"}`,
);
console.log(`wrote ${writeResult("gpu-classes", result)}`);
