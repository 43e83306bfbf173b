// Driver of the verification benchmark (issue 17). Runs
// bench/verification.bench.test.ts under workerd once per seed (each a fresh
// vitest process), averages the scenarios across seeds, writes
// bench/results/verification.json and checks the issue's goal: with
// adaptive replication at a 1% cheater rate, at most 1.3 leases per
// accepted task and at most 0.1% of accepted results wrong (in every seed),
// for each adversary: the mixed always/sometimes-wrong cheaters, copycats,
// dodgers and sleepers (bench/verification.bench.test.ts says what each does).
//
//   node bench/verification.mjs           200 nodes, 10,000 tasks, cheater rates 1% and 5%, 3 seeds (~2 min)
//   node bench/verification.mjs --quick   100 nodes, 1,000 tasks, 1%, one seed (CI); writes nothing unless --write
//   node bench/verification.mjs --shards 4   the same fleet through the Worker on a pool of 4 shards, tokens
//                                          enforced (bench/verification-shards.bench.test.ts): 100 nodes, 3,000
//                                          tasks, 1%, adaptive only, one seed (~5 min); with --quick 40 nodes, 300
//                                          tasks (~1.5 min). Its bar: the one-object bench at the same fleet, run too.
//   options: --seeds 17,18,19  --nodes N  --tasks N  --cheaters 0.01,0.05  --sometimes 0.2  --adversaries mixed,…
//
// Exits non-zero when a run fails and, outside --quick, when the goal is missed.
// @ts-check

import { flag, machine, option, round, runBenchFile, today, writeResult } from "./lib.mjs";

const QUICK = flag("quick");
const SHARDS = Number(option("shards", "1"));
const SHARDED = SHARDS > 1;
const SEEDS = option("seeds", QUICK || SHARDED ? "17" : "17,18,19")
  .split(",")
  .map(Number);
const NODES = option("nodes", SHARDED ? (QUICK ? "40" : "100") : QUICK ? "100" : "200");
const VARS = {
  BENCH_QUICK: QUICK ? "1" : "",
  BENCH_NODES: NODES,
  BENCH_TASKS: option("tasks", SHARDED ? (QUICK ? "300" : "3000") : QUICK ? "1000" : "10000"),
  BENCH_CHEATERS: option("cheaters", QUICK || SHARDED ? "0.01" : "0.01,0.05"),
  BENCH_SOMETIMES: option("sometimes", "0.2"),
  BENCH_ADVERSARIES: option("adversaries", "mixed,copycat,dodger,sleeper"),
  // At S > 1 the fleet enrols by tokens (node-0000: tok-node-0000, …) and the operator is ops: tok-ops.
  ...(SHARDED
    ? {
        BENCH_POOL_SHARDS: String(SHARDS),
        BENCH_NODE_TOKENS: Array.from({ length: Number(NODES) }, (_, n) => {
          const id = `node-${String(n).padStart(4, "0")}`;
          return `${id}:tok-${id}`;
        }).join(","),
      }
    : {}),
};
const FILE = SHARDED ? "bench/verification-shards.bench.test.ts" : "bench/verification.bench.test.ts";
const TIMEOUT_MS = QUICK ? 300_000 : 1_800_000;
/** At S > 1: how far from the one-object bench at the same fleet and job a figure may be (noise at a few thousand tasks). */
const PARITY = { leases_per_accepted_task: 0.05, wrong_fraction: 0.002 };
/** The issue's goal, for adaptive replication at a 1% cheater rate. */
const GOAL = { cheater_rate: 0.01, max_leases_per_task: 1.3, max_wrong_fraction: 0.001 };

/**
 * What bench/verification.bench.test.ts prints per scenario (one `BENCH {json}` line).
 * @typedef {{ node_id: string, behaviour: string, valid_results: number, invalid_results: number, held_back: boolean }} Cheater
 * @typedef {object} Scenario
 * @property {"mixed" | "copycat" | "dodger" | "sleeper"} adversary
 * @property {"fixed" | "adaptive"} mode
 * @property {number} cheater_rate
 * @property {number} nodes
 * @property {Cheater[]} cheaters
 * @property {number} tasks
 * @property {number} sometimes_wrong
 * @property {number} replicas
 * @property {number} leases
 * @property {number} leases_per_accepted_task
 * @property {number} completed
 * @property {number} failed
 * @property {number} open
 * @property {number} completed_alone
 * @property {number} wrong_accepted
 * @property {number} wrong_fraction
 * @property {number} honest_invalid_results
 * @property {number} simulated_hours
 */

/**
 * One (mode, cheater rate) over every seed.
 * @typedef {object} Summary
 * @property {"mixed" | "copycat" | "dodger" | "sleeper"} adversary
 * @property {"fixed" | "adaptive"} mode
 * @property {number} cheater_rate
 * @property {number} cheaters
 * @property {number} leases_per_accepted_task  mean over seeds
 * @property {number} completed_alone_fraction  mean over seeds
 * @property {number} wrong_fraction  over every seed's accepted tasks
 * @property {number} max_wrong_fraction  the worst seed's
 * @property {number} wrong_accepted  summed over seeds
 * @property {number} completed  summed over seeds
 * @property {number} failed  summed over seeds
 * @property {number} honest_invalid_results  summed over seeds
 * @property {{ always: number, sometimes: number }} invalid_per_cheater  mean invalid results per cheater of each kind
 * @property {number} always_wrong_held_back  fraction of always-wrong cheaters held back at the end
 */

const started = Date.now();

/**
 * Every seed's scenarios of `file` with `vars`.
 * @param {string} file
 * @param {Record<string, string>} vars
 * @returns {Promise<Scenario[]>}
 */
async function runSeeds(file, vars) {
  /** @type {Scenario[]} */
  const out = [];
  for (const seed of SEEDS) out.push(...(await runBenchFile(file, { ...vars, BENCH_SEED: String(seed) }, TIMEOUT_MS)));
  return out;
}

/**
 * One summary per (adversary, mode, cheater rate) over every seed.
 * @param {Scenario[]} runs
 * @returns {Summary[]}
 */
function summarize(runs) {
  /** @type {Summary[]} */
  const summaries = [];
  const keyOf = (/** @type {Scenario} */ r) => `${r.adversary}/${r.mode}/${r.cheater_rate}`;
  for (const key of new Set(runs.map(keyOf))) {
    const group = runs.filter((r) => keyOf(r) === key);
    const first = /** @type {Scenario} */ (group[0]);
    const mean = (/** @type {(r: Scenario) => number} */ f) => group.reduce((s, r) => s + f(r), 0) / group.length;
    const sum = (/** @type {(r: Scenario) => number} */ f) => group.reduce((s, r) => s + f(r), 0);
    const cheaters = group.flatMap((r) => r.cheaters);
    const ofKind = (/** @type {string} */ kind) => cheaters.filter((c) => c.behaviour === kind);
    const meanInvalid = (/** @type {Cheater[]} */ cs) =>
      cs.length === 0 ? 0 : round(cs.reduce((s, c) => s + c.invalid_results, 0) / cs.length, 1);
    summaries.push({
      adversary: first.adversary,
      mode: first.mode,
      cheater_rate: first.cheater_rate,
      cheaters: first.cheaters.length,
      leases_per_accepted_task: round(
        mean((r) => r.leases_per_accepted_task),
        3,
      ),
      completed_alone_fraction: round(
        mean((r) => r.completed_alone / r.completed),
        3,
      ),
      wrong_fraction: sum((r) => r.wrong_accepted) / sum((r) => r.completed),
      max_wrong_fraction: Math.max(...group.map((r) => r.wrong_fraction)),
      wrong_accepted: sum((r) => r.wrong_accepted),
      completed: sum((r) => r.completed),
      failed: sum((r) => r.failed),
      honest_invalid_results: sum((r) => r.honest_invalid_results),
      invalid_per_cheater: { always: meanInvalid(ofKind("always")), sometimes: meanInvalid(ofKind("sometimes")) },
      always_wrong_held_back: round(
        ofKind("always").filter((c) => c.held_back).length / Math.max(1, ofKind("always").length),
        2,
      ),
    });
  }
  return summaries;
}

const runs = await runSeeds(FILE, VARS);
const summaries = summarize(runs);

const pct = (/** @type {number} */ x) => `${round(x * 100, 2)}%`;
console.log("adversary  mode      cheaters  leases/task  alone   wrong accepted (worst seed)  failed  honest invalid");
for (const s of summaries) {
  console.log(
    `${s.adversary.padEnd(10)} ${s.mode.padEnd(9)} ${pct(s.cheater_rate).padStart(8)}  ${String(s.leases_per_accepted_task).padStart(11)}  ` +
      `${pct(s.completed_alone_fraction).padStart(5)}  ${`${s.wrong_accepted} = ${pct(s.wrong_fraction)} (${pct(s.max_wrong_fraction)})`.padStart(27)}  ` +
      `${String(s.failed).padStart(6)}  ${String(s.honest_invalid_results).padStart(14)}`,
  );
}
if (runs.some((r) => r.open > 0)) {
  console.error("FAIL: a run ended with open tasks");
  process.exit(1);
}
// The goal holds for every adversary: adaptive replication at the goal's cheater rate.
const targets = summaries.filter((s) => s.mode === "adaptive" && s.cheater_rate === GOAL.cheater_rate);
const goalMet =
  targets.length > 0 &&
  targets.every(
    (t) => t.leases_per_accepted_task <= GOAL.max_leases_per_task && t.max_wrong_fraction <= GOAL.max_wrong_fraction,
  );
/**
 * At S > 1 the bar is the one-object bench at the same fleet and job, run here too (a fleet small enough to run
 * through the Worker is still warming up, so the absolute goal is out of reach at either shard count): per
 * adversary, leases per accepted task and the wrong fraction each within PARITY of it.
 */
const reference = SHARDED
  ? summarize(
      await runSeeds(
        "bench/verification.bench.test.ts",
        Object.fromEntries(
          Object.entries(VARS).filter(([k]) => !["BENCH_POOL_SHARDS", "BENCH_NODE_TOKENS"].includes(k)),
        ),
      ),
    ).filter((s) => s.mode === "adaptive")
  : [];
const parity = summaries.map((s) => {
  const one = reference.find((r) => r.adversary === s.adversary && r.cheater_rate === s.cheater_rate);
  return {
    adversary: s.adversary,
    cheater_rate: s.cheater_rate,
    one_object: one
      ? { leases_per_accepted_task: one.leases_per_accepted_task, wrong_fraction: one.wrong_fraction }
      : null,
    held:
      one !== undefined &&
      s.leases_per_accepted_task <= one.leases_per_accepted_task + PARITY.leases_per_accepted_task &&
      s.wrong_fraction <= one.wrong_fraction + PARITY.wrong_fraction,
  };
});
const met = SHARDED ? parity.every((p) => p.held) : goalMet;
if (SHARDED) {
  for (const p of parity)
    console.log(
      `one object, same fleet: ${p.adversary.padEnd(10)} ${p.one_object ? `${p.one_object.leases_per_accepted_task} leases/task, ${pct(p.one_object.wrong_fraction)} wrong` : "not run"}: ${p.held ? "within" : "NOT within"} ${PARITY.leases_per_accepted_task} leases and ${pct(PARITY.wrong_fraction)}`,
    );
}
const verdict = QUICK ? "not checked with --quick (a fleet this small is mostly warm-up)" : met ? "met" : "NOT MET";
console.log(
  SHARDED
    ? `goal (at ${SHARDS} shards, every adversary within ${PARITY.leases_per_accepted_task} leases per task and ${pct(PARITY.wrong_fraction)} wrong of one object at the same fleet): ${verdict}`
    : `goal (adaptive, ${pct(GOAL.cheater_rate)} cheaters: ≤ ${GOAL.max_leases_per_task} leases per task, ≤ ${pct(GOAL.max_wrong_fraction)} wrong in every seed): ${verdict}`,
);

const result = {
  shards: SHARDS,
  command: `node bench/verification.mjs${process.argv.slice(2).length ? ` ${process.argv.slice(2).join(" ")}` : ""}`,
  date: today(),
  machine: machine(),
  wall_s: Math.round((Date.now() - started) / 1000),
  seeds: SEEDS,
  nodes: Number(VARS.BENCH_NODES),
  tasks: Number(VARS.BENCH_TASKS),
  replicas: runs[0]?.replicas,
  sometimes_wrong: Number(VARS.BENCH_SOMETIMES),
  simulated_hours: round(Math.max(...runs.map((r) => r.simulated_hours)), 1),
  goal: SHARDED ? { parity: PARITY, met } : { ...GOAL, met },
  ...(SHARDED ? { parity } : {}),
  summaries,
  runs,
};
if (!QUICK || flag("write"))
  console.log(`wrote ${writeResult(SHARDED ? `verification-s${SHARDS}` : "verification", result)}`);
if (!QUICK && !met) process.exit(1);
