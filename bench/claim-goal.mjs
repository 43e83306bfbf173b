// Issue 42's claim goal: >= 5,000 claim+commit cycles/s at 100,000 pending and
// >= 4,000 with 1,000 jobs over 100 tenants in the in-object bench, where
// BENCHMARKS.md section 1 read 3,378 and 2,907 when the issue was filed. This
// shared VM's speed drifts between sessions by more than the goal asks
// (the same code read 3,378 on 2026-12-01 and about 2,000 on 2026-12-07), so
// the figures are measured in pairs of processes, this checkout against the
// code the issue was filed on (BASE), alternating which goes first, and
// carried over as the figure times the median ratio now / base.
// Writes bench/results/claim-goal.json; BENCHMARKS.md section 1.2 renders it.
//
//   node bench/claim-goal.mjs [--base-commit 63ebbf3] [--pairs 5]
//
// The base is a git worktree of BASE in the system's temp directory, made
// once, using this checkout's node_modules.
// @ts-check

import { execFileSync } from "node:child_process";
import { existsSync, symlinkSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { machine, median, option, ROOT, round, today, writeResult } from "./lib.mjs";
import { load, pairedRuns } from "./paired.mjs";

const BASE_COMMIT = option("base-commit", "63ebbf3");
// Five pairs: a phase of either process sometimes runs half again slower than its others (seen on
// both sides, in 5 of the first 6 runs), and a median of five stands two such pairs where three could not stand one.
const PAIRS = Number(option("pairs", "5"));
const DEPTH = 100_000;
/** BENCHMARKS.md section 1 when issue 42 was filed, and the goals. */
const FILED = { depth: 3378, tenants: 2907 };
const GOAL = { depth: 5000, tenants: 4000 };

const base = join(os.tmpdir(), `flashedge-base-${BASE_COMMIT}`);
if (!existsSync(base)) {
  execFileSync("git", ["worktree", "add", "--detach", "--force", base, BASE_COMMIT], { cwd: ROOT, stdio: "ignore" });
  symlinkSync(join(ROOT, "node_modules"), join(base, "node_modules"));
}

const run = pairedRuns({ base, now: ROOT, pairs: PAIRS, depth: DEPTH });
const { pairs } = run;
/** @param {(p: (typeof pairs)[number]) => number} of */
const ratio = (of) => round(/** @type {number} */ (median(pairs.map(of))), 2);
const depthRatio = ratio((p) => p.now.cpu_cycles_per_s / p.base.cpu_cycles_per_s);
const tenantsRatio = ratio((p) => Number(p.now.tenants_cpu_cycles_per_s) / Number(p.base.tenants_cpu_cycles_per_s));
const carried = { depth: Math.round(FILED.depth * depthRatio), tenants: Math.round(FILED.tenants * tenantsRatio) };
const result = {
  command: `node bench/claim-goal.mjs --base-commit ${BASE_COMMIT} --pairs ${PAIRS}`,
  date: today(),
  machine: { ...machine(), load_at_start: run.load_at_start, load_at_end: load() },
  wall_s: run.wall_s,
  head: run.head,
  base_commit: BASE_COMMIT,
  depth: DEPTH,
  pairs,
  ratio: { depth: depthRatio, tenants: tenantsRatio },
  filed: FILED,
  goal: GOAL,
  carried,
  met: { depth: carried.depth >= GOAL.depth, tenants: carried.tenants >= GOAL.tenants },
};
console.log(
  `median ratio now / base: ${depthRatio}x at ${DEPTH} pending, ${tenantsRatio}x over 100 tenants; ` +
    `carried to the issue's figures: ${carried.depth} (goal ${GOAL.depth}) and ${carried.tenants} (goal ${GOAL.tenants}) cycles/s`,
);
console.log(`wrote ${writeResult("claim-goal", result)}`);
