// Driver of the longevity benchmark (issue 12). Runs
// bench/longevity.bench.test.ts under workerd (one vitest process), writes
// bench/results/longevity.json and checks the goals: every hot-path figure
// at the last mark within 1.5× of the figure at 0, and storage after
// retention within 10% of the fresh pool's.
//
//   node bench/longevity.mjs            marks 100,000 / 500,000 / 1,000,000 finished tasks (~15 min)
//   node bench/longevity.mjs --quick    marks 10,000 / 20,000; writes nothing unless --write
//   options: --marks 100000,1000000
//
// Exits non-zero when the run fails and, outside --quick, when a goal is missed.
// @ts-check

import { flag, machine, option, round, runBenchFile, today, writeResult } from "./lib.mjs";

const QUICK = flag("quick");
const MARKS = option("marks", QUICK ? "10000,20000" : "100000,500000,1000000");
const TIMEOUT_MS = QUICK ? 300_000 : 3_600_000;
/** The issue's goals. */
const MAX_RATIO = 1.5;
const MAX_STORAGE_GROWTH = 0.1;

/**
 * @typedef {object} Point
 * @property {number} finished_tasks
 * @property {number} storage_bytes
 * @property {number} claim_us
 * @property {number} commit_us
 * @property {number} dashboard_us
 * @property {number} metrics_us
 */
/**
 * What bench/longevity.bench.test.ts prints (one `BENCH {json}` line).
 * @typedef {object} LongevityRecord
 * @property {number} job_size
 * @property {number} live_pending
 * @property {number} batch
 * @property {number} batches
 * @property {number} drive_ms
 * @property {Point[]} points
 * @property {{ jobs: number, ms: number, objects: number, bytes: number, max_delete_ms: number, median_delete_ms: number }} archive
 * @property {Point} after_retention
 */

const started = Date.now();
const record = /** @type {LongevityRecord} */ (
  (await runBenchFile("bench/longevity.bench.test.ts", { BENCH_MARKS: MARKS }, TIMEOUT_MS))[0]
);
const first = /** @type {Point} */ (record.points[0]);
const last = /** @type {Point} */ (record.points[record.points.length - 1]);
/** @type {Record<string, number>} */
const ratios = {};
for (const key of /** @type {const} */ (["claim_us", "commit_us", "dashboard_us", "metrics_us"])) {
  ratios[key] = round(last[key] / first[key], 2);
}
const storageGrowth = round(record.after_retention.storage_bytes / first.storage_bytes - 1, 3);
const goals = {
  max_ratio: MAX_RATIO,
  ratios,
  ratios_hold: Object.values(ratios).every((r) => r <= MAX_RATIO),
  storage_growth_after_retention: storageGrowth,
  storage_holds: storageGrowth <= MAX_STORAGE_GROWTH,
};
const result = {
  command: `node bench/longevity.mjs${QUICK ? " --quick" : ""}${option("marks", "") ? ` --marks ${MARKS}` : ""}`,
  date: today(),
  machine: machine(),
  wall_s: Math.round((Date.now() - started) / 1000),
  ...record,
  goals,
};

console.log("finished tasks | storage MB | claim µs | commit µs | dashboard µs | metrics µs");
for (const p of [...record.points, record.after_retention]) {
  const label = p === record.after_retention ? `${p.finished_tasks} (after retention)` : String(p.finished_tasks);
  console.log(
    `${label} | ${round(p.storage_bytes / 1e6, 1)} | ${p.claim_us} | ${p.commit_us} | ${p.dashboard_us} | ${p.metrics_us}`,
  );
}
console.log(
  `ratios at ${last.finished_tasks} vs 0: ${JSON.stringify(ratios)}; storage after retention ${round(storageGrowth * 100, 1)}% vs fresh`,
);
if (!QUICK || flag("write")) console.log(`wrote ${writeResult("longevity", result)}`);
if (!QUICK && !(goals.ratios_hold && goals.storage_holds)) {
  console.error("goal missed");
  process.exit(1);
}
