// What a change costs the claim and the commit, measured in pairs: the
// in-object bench (bench/in-object.mjs, one run at one depth) in pairs of
// processes, one in NOW and one in BASE (a checkout of the code before),
// alternating which goes first, and the ratio now / before within each
// pair, then the median over pairs, so load that changes between pairs
// cancels out. Each side's own bench/results/in-object.json is restored
// after its runs. Used by bench/gpu-classes.mjs (issue 26) and
// bench/shards-s1.mjs (issue 27).
// @ts-check

import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { median, ROOT, round } from "./lib.mjs";

/**
 * One in-object run at `depth` in `dir`: its figures at that depth.
 * @param {string} dir @param {number} depth
 */
function runIn(dir, depth) {
  const results = join(dir, "bench", "results", "in-object.json");
  const kept = readFileSync(results, "utf8");
  try {
    execFileSync(process.execPath, ["bench/in-object.mjs", "--runs", "1", "--depths", String(depth)], {
      cwd: dir,
      stdio: ["ignore", "ignore", "inherit"],
      timeout: 900_000,
    });
    const written = JSON.parse(readFileSync(results, "utf8"));
    const s = written.summary[0];
    return {
      /** The first many-tenants queue's (1,000 jobs over 100 tenants, one priority); null where the bench has none. */
      tenants_cpu_cycles_per_s: written.tenants?.[0]?.cpu.cycles_per_s ?? null,
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

/** @typedef {ReturnType<typeof runIn>} Side */

/** The 1-minute load average. */
export const load = () => round(Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0]), 2);

/**
 * `pairs` pairs of runs at `depth`, in `now` and `base`; the pairs and the
 * median ratios now / base of the CPU and GPU claim and of bind+commit.
 * @param {{ base: string, now: string, pairs: number, depth: number }} o
 */
export function pairedRuns({ base, now, pairs: count, depth }) {
  const started = Date.now();
  const loadAtStart = load();
  /** @type {{ first: string, now: Side, base: Side }[]} */
  const pairs = [];
  for (let i = 0; i < count; i++) {
    const baseFirst = i % 2 === 0;
    /** @type {Partial<Record<"now" | "base", Side>>} */
    const pair = {};
    for (const side of baseFirst ? ["base", "now"] : ["now", "base"]) {
      pair[/** @type {"now" | "base"} */ (side)] = runIn(side === "base" ? base : now, depth);
    }
    const done = /** @type {{ now: Side, base: Side }} */ (pair);
    pairs.push({ first: baseFirst ? "base" : "now", ...done });
    console.log(
      `pair ${i + 1}/${count}: CPU claim ${done.now.cpu_claim_us} / ${done.base.cpu_claim_us} µs, GPU claim ${done.now.gpu_claim_us} / ${done.base.gpu_claim_us} µs, ` +
        `bind+commit ${done.now.commit_us} / ${done.base.commit_us} µs (now / base)`,
    );
  }
  /** @param {(p: (typeof pairs)[number]) => number} ratio */
  const medianRatio = (ratio) => round(/** @type {number} */ (median(pairs.map(ratio))), 2);
  return {
    wall_s: Math.round((Date.now() - started) / 1000),
    load_at_start: loadAtStart,
    depth,
    // NOW may be an export of a commit (no .git): then HEAD of this checkout is what was exported.
    head: execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim(),
    pairs,
    median: {
      now: {
        cpu_claim_us: median(pairs.map((p) => p.now.cpu_claim_us)),
        gpu_claim_us: median(pairs.map((p) => p.now.gpu_claim_us)),
        commit_us: median(pairs.map((p) => p.now.commit_us)),
      },
      base: {
        cpu_claim_us: median(pairs.map((p) => p.base.cpu_claim_us)),
        gpu_claim_us: median(pairs.map((p) => p.base.gpu_claim_us)),
        commit_us: median(pairs.map((p) => p.base.commit_us)),
      },
    },
    ratio: {
      cpu_claim: medianRatio((p) => p.now.cpu_claim_us / p.base.cpu_claim_us),
      gpu_claim: medianRatio((p) => p.now.gpu_claim_us / p.base.gpu_claim_us),
      commit: medianRatio((p) => p.now.commit_us / p.base.commit_us),
    },
  };
}
