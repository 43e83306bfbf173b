// @ts-check
// The submitter's commands: submit a JobSpec, read a job, its tasks, its
// events and why a task waits, watch it to the end, cancel it. Each prints
// a readable answer, or with --json the coordinator's JSON as it came.

import { setTimeout as sleep } from "node:timers/promises";
import { EXIT } from "./errors.mjs";
import { followUntilEnd, OUTCOME_EXIT, TERMINAL } from "./follow.mjs";
import { countsLine, progressOf, table } from "./render.mjs";
import { readRequestFile } from "./request-file.mjs";

/**
 * @typedef {import("./coordinator.mjs").Coordinator} Coordinator
 * @typedef {{ api: Coordinator, json: boolean, print: (text: string) => void, note?: (text: string) => void, tty?: boolean }} Context
 * @typedef {import("../src/protocol/jobs").JobRecord & { task_counts: Partial<Record<import("../src/protocol/tasks").TaskState, number>> }} ServedJob
 * @typedef {import("../src/protocol/jobs").Event & { seq: number }} ServedEvent
 * @typedef {{ task_id: string, state: string, attempts: number, max_attempts: number, node_id: string | null, deadline: string | null }} TaskRow
 * @typedef {{ node_id: string, online: boolean, status: string, eligible: boolean, gate?: string, reason?: string }} NodePlacement
 * @typedef {{ wanted: number, quorum: number, owners: { eligible: number, needed: number, short: boolean } }} ReplicaReport
 * @typedef {{ job_id: string, task_id: string, state: string, nodes: NodePlacement[], unplaceable: boolean,
 *   summary: string, waiting: string | null, replicas: ReplicaReport | null }} PlacementReport
 */

/** `watch`'s exit code for each way a job ends (README "The flashedge CLI"). */
const EVENTS_PAGE = 1000;

/** @param {string} id */
const seg = (id) => encodeURIComponent(id);

/**
 * A JobSpec from a YAML or JSON file (`-` reads stdin).
 * @param {string} file
 * @returns {unknown}
 */
export function readJobFile(file) {
  return readRequestFile(file, "one JobSpec (a mapping with apiVersion, kind, metadata, spec)");
}

/**
 * @param {Context} ctx
 * @param {string} job
 */
async function getJob(ctx, job) {
  return /** @type {ServedJob} */ (await ctx.api.call("GET", `/jobs/${seg(job)}`));
}

/**
 * @param {Context} ctx
 * @param {string} file
 */
export async function submit(ctx, file) {
  const record = /** @type {ServedJob} */ (await ctx.api.call("POST", "/jobs", readJobFile(file)));
  if (ctx.json) return ctx.print(JSON.stringify(record));
  const sentence = `submitted job ${record.job_id} (${record.spec.metadata.name}): ${countsLine(record.task_counts ?? {})}`;
  // Piped or captured (`JOB=$(flashedge submit f.yaml)`), stdout is the id alone and the sentence goes to stderr,
  // as `gh` and `kubectl -o name` do; at a terminal, the sentence.
  if (ctx.tty !== false || ctx.note === undefined) return ctx.print(sentence);
  ctx.note(sentence);
  ctx.print(record.job_id);
}

/**
 * @param {Context} ctx
 * @param {string} job
 */
export async function status(ctx, job) {
  const record = await getJob(ctx, job);
  if (ctx.json) return ctx.print(JSON.stringify(record));
  ctx.print(
    [
      `job ${record.job_id}  ${record.state}  ${record.spec.metadata.name}`,
      countsLine(record.task_counts ?? {}),
      `created ${record.created_at}${record.finished_at ? `, finished ${record.finished_at}` : ""}`,
      ...(record.error ? [`error: ${record.error}`] : []),
    ].join("\n"),
  );
}

/**
 * Polls the job's task counts until it ends; resolves to the exit code of its outcome.
 * @param {Context} ctx
 * @param {string} job
 * @param {{ interval: number }} options
 * @returns {Promise<number>}
 */
export async function watch(ctx, job, { interval }) {
  const record = await followUntilEnd(ctx, {
    interval,
    unit: "tasks finished",
    read: () => getJob(ctx, job),
    progress: (r) => {
      const counts = r.task_counts ?? {};
      const { done, total } = progressOf(counts);
      return {
        done,
        total,
        detail: countsLine(counts),
        line: `${done}/${total} finished · ${r.state}: ${countsLine(counts)}`,
      };
    },
  });
  if (ctx.json) ctx.print(JSON.stringify(record));
  else ctx.print(`job ${record.job_id} ${record.state}: ${countsLine(record.task_counts ?? {})}`);
  return OUTCOME_EXIT[record.state] ?? EXIT.failed;
}

/** @param {ServedEvent} e */
const eventLine = (e) => `${String(e.seq).padStart(5)}  ${e.timestamp}  ${e.type.padEnd(22)}  ${e.message}`;

/**
 * The ledger; with `follow`, new events as they come (`?after=SEQ`) until the job ends.
 * @param {Context} ctx
 * @param {string} job
 * @param {{ follow: boolean, interval: number }} options
 */
export async function events(ctx, job, { follow, interval }) {
  const path = `/jobs/${seg(job)}/events`;
  if (!follow) {
    const all = /** @type {ServedEvent[]} */ (await ctx.api.call("GET", path));
    if (ctx.json) return ctx.print(JSON.stringify(all));
    for (const e of all) ctx.print(eventLine(e));
    return;
  }
  // Followed, each event is printed once as it arrives: one JSON object a line with --json.
  let after = 0;
  let ended = false;
  for (;;) {
    const page = /** @type {ServedEvent[]} */ (
      await ctx.api.call("GET", `${path}?after=${after}&limit=${EVENTS_PAGE}`)
    );
    for (const e of page) ctx.print(ctx.json ? JSON.stringify(e) : eventLine(e));
    if (page.length > 0) after = page[page.length - 1]?.seq ?? after;
    if (page.length === EVENTS_PAGE) continue;
    // The job ended before this page was read: nothing comes after it.
    if (ended) return;
    ended = TERMINAL.has((await getJob(ctx, job)).state);
    if (!ended) await sleep(interval * 1000);
  }
}

/**
 * @param {Context} ctx
 * @param {string} job
 */
export async function tasks(ctx, job) {
  const rows = /** @type {TaskRow[]} */ (await ctx.api.call("GET", `/jobs/${seg(job)}/tasks`));
  if (ctx.json) return ctx.print(JSON.stringify(rows));
  ctx.print(
    table(
      ["task", "state", "attempts", "node", "lease deadline"],
      rows.map((t) => [t.task_id, t.state, `${t.attempts}/${t.max_attempts}`, t.node_id, t.deadline]),
    ),
  );
}

/**
 * The placement report: every node's gate answer, then the summary and what the task waits for.
 * @param {Context} ctx
 * @param {string} job
 * @param {string} task
 */
export async function why(ctx, job, task) {
  const report = /** @type {PlacementReport} */ (
    await ctx.api.call("GET", `/jobs/${seg(job)}/tasks/${seg(task)}/placement`)
  );
  if (ctx.json) return ctx.print(JSON.stringify(report));
  const lines = [`task ${report.task_id} of job ${report.job_id}: ${report.state}`];
  if (report.nodes.length > 0) {
    lines.push(
      table(
        ["node", "online", "eligible", "gate", "reason"],
        report.nodes.map((n) => [n.node_id, n.online ? "yes" : "no", n.eligible ? "yes" : "no", n.gate, n.reason]),
      ),
    );
  } else lines.push("no node is registered in this pool");
  lines.push(`summary: ${report.summary}`);
  if (report.waiting) lines.push(`waiting: ${report.waiting}`);
  if (report.unplaceable) lines.push("unplaceable: no registered node could ever take this task");
  if (report.replicas) {
    const { wanted, quorum, owners } = report.replicas;
    lines.push(
      `replicas: ${wanted} wanted, ${quorum} must agree; ${owners.eligible} of ${owners.needed} distinct owners eligible${owners.short ? " (too few)" : ""}`,
    );
  }
  ctx.print(lines.join("\n"));
}

/**
 * @param {Context} ctx
 * @param {{ limit?: number }} options
 */
export async function jobs(ctx, { limit }) {
  const all = /** @type {ServedJob[]} */ (await ctx.api.list("/jobs", limit));
  if (ctx.json) return ctx.print(JSON.stringify(all));
  ctx.print(
    table(
      ["job", "name", "state", "finished", "created"],
      all.map((j) => {
        const { done, total } = progressOf(j.task_counts ?? {});
        return [j.job_id, j.spec.metadata.name, j.state, `${done}/${total}`, j.created_at];
      }),
    ),
  );
}

/**
 * @param {Context} ctx
 * @param {string} job
 */
export async function cancel(ctx, job) {
  const record = /** @type {ServedJob} */ (await ctx.api.call("POST", `/jobs/${seg(job)}/cancel`));
  if (ctx.json) return ctx.print(JSON.stringify(record));
  ctx.print(`job ${record.job_id} ${record.state}: ${countsLine(record.task_counts ?? {})}`);
}
