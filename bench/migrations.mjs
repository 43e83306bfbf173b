// Driver of the migration benchmark (issue 12). Runs
// bench/migrations.bench.test.ts under workerd: pools with 100,000 and
// 1,000,000 finished tasks of history, created at step 2 of the schema and
// brought to the current step, each step timed. Projects the time to a pool
// that fills the object's 10 GB with such history (the most any pool can
// hold), writes bench/results/migrations.json and checks the bound: that
// no event of the upgrade runs more than half of the object's 30 s. Such
// an object upgrades one step per event, so that is its heaviest step;
// one just below UPGRADE.wholeBelowBytes runs every step at its start.
//
//   node bench/migrations.mjs            sizes 100,000 and 1,000,000 (~3 min)
//   node bench/migrations.mjs --quick    size 20,000; writes nothing unless --write
//   options: --sizes 100000,1000000
//
// Exits non-zero when the run fails and, outside --quick, when the bound is missed.
// @ts-check

import { flag, machine, option, round, runBenchFile, today, writeResult } from "./lib.mjs";

const QUICK = flag("quick");
const SIZES = option("sizes", QUICK ? "20000" : "100000,1000000");
const TIMEOUT_MS = QUICK ? 180_000 : 1_800_000;
/** Cloudflare's limit on a blockConcurrencyWhile callback, and the object's storage limit. */
const LIMIT_MS = 30_000;
const OBJECT_BYTES = 10e9;
/** The bound checked: a full object migrates in at most this share of the limit. */
const MAX_SHARE = 0.5;

/**
 * What bench/migrations.bench.test.ts prints per size (one `BENCH {json}` line).
 * @typedef {{ finished_tasks: number, events: number, bytes: number, bytes_at_current_schema: number,
 *   make_ms: number, rewind_ms: number, migrate_ms: number, steps: Array<{ step: number, ms: number }>,
 *   whole_below_bytes: number }} Point
 */

const started = Date.now();
const points = /** @type {Point[]} */ (
  await runBenchFile("bench/migrations.bench.test.ts", { BENCH_SIZES: SIZES }, TIMEOUT_MS)
);
const largest = /** @type {Point} */ (points[points.length - 1]);
const bytesPerTask = largest.bytes_at_current_schema / largest.finished_tasks;
const tasksAtLimit = Math.floor(OBJECT_BYTES / bytesPerTask);
const msPerTask = largest.migrate_ms / largest.finished_tasks;
const projectedMs = Math.round(msPerTask * tasksAtLimit);
// What one event runs (src/pool/object.ts): an object above `whole_below_bytes` one step, the heaviest at
// 10 GB; one at that size every step at once.
const heaviest = [...largest.steps].sort((a, b) => b.ms - a.ms)[0] ?? { step: 0, ms: 0 };
const heaviestStepMs = Math.round((heaviest.ms / largest.finished_tasks) * tasksAtLimit);
const wholeAtSizeMs = Math.round(msPerTask * (largest.whole_below_bytes / bytesPerTask));
const eventMs = Math.max(heaviestStepMs, wholeAtSizeMs);
const met = eventMs <= MAX_SHARE * LIMIT_MS;

for (const p of points) {
  const top = [...p.steps].sort((a, b) => b.ms - a.ms).slice(0, 3);
  console.log(
    `${p.finished_tasks.toLocaleString("en-US")} finished tasks (${round(p.bytes_at_current_schema / 1e6, 1)} MB): ` +
      `steps ${p.steps[0]?.step}–${p.steps[p.steps.length - 1]?.step} in ${p.migrate_ms} ms ` +
      `(heaviest: ${top.map((s) => `step ${s.step} ${s.ms} ms`).join(", ")})`,
  );
}
console.log(
  `a full 10 GB object holds about ${tasksAtLimit.toLocaleString("en-US")} such tasks (${Math.round(bytesPerTask)} bytes each): ` +
    `every step ${round(projectedMs / 1000, 1)} s, one per event; the heaviest event step ${heaviest.step} ${round(heaviestStepMs / 1000, 1)} s, ` +
    `all steps at once at ${round(largest.whole_below_bytes / 2 ** 20)} MiB ${round(wholeAtSizeMs / 1000, 1)} s; ` +
    `limit ${LIMIT_MS / 1000} s — bound (an event ≤ ${MAX_SHARE * 100}% of the limit): ` +
    (QUICK ? "not checked with --quick" : met ? "met" : "NOT MET"),
);

const result = {
  command: `node bench/migrations.mjs${process.argv.slice(2).length ? ` ${process.argv.slice(2).join(" ")}` : ""}`,
  date: today(),
  machine: machine(),
  wall_s: Math.round((Date.now() - started) / 1000),
  points,
  bytes_per_task: Math.round(bytesPerTask),
  tasks_at_object_limit: tasksAtLimit,
  projected_ms_at_object_limit: projectedMs,
  whole_below_bytes: largest.whole_below_bytes,
  heaviest_event_ms: {
    one_step_at_object_limit: heaviestStepMs,
    step: heaviest.step,
    all_steps_at_whole_below: wholeAtSizeMs,
  },
  limit_ms: LIMIT_MS,
  bound: { max_share: MAX_SHARE, met },
};
if (!QUICK || flag("write")) console.log(`wrote ${writeResult("migrations", result)}`);
if (!QUICK && !met) process.exit(1);
