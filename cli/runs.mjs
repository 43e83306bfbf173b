// @ts-check
// The operator's hosted-run commands (POST /runs and its reads): start a
// federated-averaging or K-means run from a file and, with --follow, watch
// it round by round; list the pool's runs; show one with its history;
// cancel one. A run's progress is what its record says, rounds aggregated
// and the live round's job and quorum. How many of that round's commits are
// in is not in the record, so it is never shown or guessed (the round's job
// says it: `flashedge status JOB`).

import { EXIT } from "./errors.mjs";
import { followUntilEnd, OUTCOME_EXIT, TERMINAL } from "./follow.mjs";
import { table } from "./render.mjs";
import { readRequestFile } from "./request-file.mjs";

/**
 * @typedef {import("./jobs.mjs").Context} Context
 * @typedef {import("zod").z.infer<typeof import("../src/protocol/runs").RunRecordSchema>} RunRecord
 * @typedef {import("../src/protocol/runs").RunRound} RunRound
 */

/** @param {string} id */
const seg = (id) => encodeURIComponent(id);

/**
 * @param {Context} ctx
 * @param {string} runId
 */
async function getRun(ctx, runId) {
  return /** @type {RunRecord} */ (await ctx.api.call("GET", `/runs/${seg(runId)}`));
}

/** @param {RunRecord} run  "2/4 rounds" */
const roundsLine = (run) => `${run.rounds_completed}/${run.rounds} rounds`;

/**
 * The live round as the record has it: its number, job and quorum, and
 * whether its quorum is frozen (the round is being aggregated).
 * @param {RunRecord} run
 */
function liveLine(run) {
  const live = run.live_round;
  if (live === null) return TERMINAL.has(run.state) ? "no live round" : "next round not submitted yet";
  return `round ${live.round}: job ${live.job_id}, quorum ${live.quorum}${live.frozen ? ", aggregating" : ""}`;
}

/** @param {RunRecord["kind"]} kind */
const metricName = (kind) => (kind === "federated_averaging" ? "mean loss" : "inertia");

/**
 * A round's mean loss (federated averaging) or inertia (K-means), to six significant digits; null when absent.
 * @param {RunRound | undefined} round
 */
function metricOf(round) {
  const value = round?.mean_loss ?? round?.inertia;
  return value === undefined ? null : String(Number(value.toPrecision(6)));
}

/**
 * How a run ended (or stands): state and rounds, then its reason and its result.
 * @param {RunRecord} run
 */
function outcomeLines(run) {
  return [
    `run ${run.run_id} ${run.state}: ${roundsLine(run)} aggregated`,
    ...(run.reason ? [`reason: ${run.reason}`] : []),
    `result: ${run.result_uri ?? "none"}`,
  ].join("\n");
}

/**
 * A run request from a YAML or JSON file (`-` reads stdin).
 * @param {string} file
 */
export function readRunFile(file) {
  return readRequestFile(file, "one run (a mapping with kind: federated_averaging or sharded_kmeans)");
}

/**
 * Starts the run; with `follow`, polls it until it ends and resolves to the exit code of its outcome.
 * @param {Context} ctx
 * @param {string} file
 * @param {{ follow?: boolean, interval: number }} options
 * @returns {Promise<number | void>}
 */
export async function start(ctx, file, { follow, interval }) {
  const record = /** @type {RunRecord} */ (await ctx.api.call("POST", "/runs", readRunFile(file)));
  // --json --follow prints the record the run ended with, as `watch --json` does.
  if (ctx.json && !follow) return ctx.print(JSON.stringify(record));
  if (!ctx.json) {
    const sentence = `started run ${record.run_id} (${record.kind}, ${record.rounds} rounds): ${record.state}`;
    // Piped or captured (`RUN=$(flashedge run f.json)`), stdout is the id alone, as `submit` prints a job's.
    if (ctx.tty !== false || ctx.note === undefined) ctx.print(sentence);
    else {
      ctx.note(sentence);
      ctx.print(record.run_id);
    }
  }
  if (follow) return followRun(ctx, record.run_id, interval);
}

/**
 * Polls the run until it ends: a bar of rounds aggregated with the live
 * round at a terminal, else one line per change on stderr; then its outcome.
 * @param {Context} ctx
 * @param {string} runId
 * @param {number} interval seconds between polls
 * @returns {Promise<number>}
 */
async function followRun(ctx, runId, interval) {
  const run = await followUntilEnd(ctx, {
    interval,
    unit: "rounds aggregated",
    read: () => getRun(ctx, runId),
    progress: (r) => ({
      done: r.rounds_completed,
      total: r.rounds,
      detail: liveLine(r),
      line: `${roundsLine(r)} aggregated · ${r.state} · ${liveLine(r)}`,
    }),
  });
  ctx.print(ctx.json ? JSON.stringify(run) : outcomeLines(run));
  return OUTCOME_EXIT[run.state] ?? EXIT.failed;
}

/**
 * @param {Context} ctx
 * @param {{ limit?: number }} options
 */
export async function runs(ctx, { limit }) {
  const all = /** @type {RunRecord[]} */ (await ctx.api.list("/runs", limit));
  if (ctx.json) return ctx.print(JSON.stringify(all));
  ctx.print(
    table(
      ["run", "kind", "state", "rounds", "last loss / inertia", "created"],
      all.map((r) => {
        const metric = metricOf(r.history.at(-1));
        return [
          r.run_id,
          r.kind,
          r.state,
          `${r.rounds_completed}/${r.rounds}`,
          metric === null ? null : `${metricName(r.kind)} ${metric}`,
          r.created_at,
        ];
      }),
    ),
  );
}

/**
 * The run, its live round, and one row per aggregated round.
 * @param {Context} ctx
 * @param {string} runId
 */
export async function status(ctx, runId) {
  const run = await getRun(ctx, runId);
  if (ctx.json) return ctx.print(JSON.stringify(run));
  const fedavg = run.kind === "federated_averaging";
  const lines = [
    `run ${run.run_id}  ${run.state}  ${run.kind}`,
    `${roundsLine(run)} aggregated; ${liveLine(run)}`,
    `created ${run.created_at}${run.started_by ? ` by ${run.started_by}` : ""}${run.finished_at ? `, finished ${run.finished_at}` : ""}`,
    ...(run.reason ? [`reason: ${run.reason}`] : []),
    `result: ${run.result_uri ?? "none"}`,
  ];
  if (run.history.length === 0) lines.push("no round aggregated yet");
  else {
    const head = ["round", "job", "participants", metricName(run.kind), ...(fedavg ? ["clipped"] : [])];
    const rows = run.history.map((h) => [
      h.round,
      h.job_id,
      h.participants,
      metricOf(h),
      ...(fedavg ? [h.clipped?.length ? h.clipped.map((c) => c.task_id).join(", ") : null] : []),
    ]);
    lines.push(table(head, rows));
  }
  ctx.print(lines.join("\n"));
}

/**
 * Cancels the run (and its live round's job); a run that already ended is shown as it ended.
 * @param {Context} ctx
 * @param {string} runId
 */
export async function cancel(ctx, runId) {
  const run = /** @type {RunRecord} */ (await ctx.api.call("POST", `/runs/${seg(runId)}/cancel`));
  if (ctx.json) return ctx.print(JSON.stringify(run));
  ctx.print(outcomeLines(run));
}
