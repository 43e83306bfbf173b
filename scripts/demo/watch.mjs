// @ts-check
// Watching the jobs as the run goes: their counts, and what their ledgers
// say happened (expiries, moves, retries, disagreeing replicas, verdicts);
// the broken node until it is held back; the fleet's GPUs and demand.

import { FLEET, OPERATOR } from "./cast.mjs";
import { bold, clearProgress, cyan, dim, drawProgress, green, note, red, say, yellow } from "./output.mjs";
import { api, countTasks, plural, run } from "./state.mjs";

/** @import { JobRecord, LedgerEvent, NodeRecord } from "./state.mjs" */

export const TERMINAL = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);

/**
 * Refreshes job counts and reads new ledger events, reporting expiries,
 * moves and retries; watches the broken node until it is held back.
 */
export async function watch() {
  let records;
  try {
    records = /** @type {JobRecord[]} */ (await api(OPERATOR, "GET", "/jobs"));
    if (run.held === null) await watchBrokenNode();
  } catch {
    return; // the next round retries
  }
  for (const job of run.jobs) {
    const record = records.find((r) => r.job_id === job.job_id);
    if (!record) continue;
    if (!TERMINAL.has(job.state) && TERMINAL.has(record.state)) {
      const ok = record.state === "SUCCEEDED";
      const after = job.priority > 0 ? ` ${((Date.now() - job.submittedAt) / 1000).toFixed(1)} s after submission` : "";
      const still = run.jobs.filter((j) => j.priority < job.priority && !j.unplaceable && !TERMINAL.has(j.state));
      const overtaken =
        job.priority > 0 && still.length > 0
          ? ` — earlier jobs still running: ${still.map((j) => `${j.name} (${j.counts.COMPLETED}/${countTasks(j.counts)})`).join(", ")}`
          : "";
      note(`${ok ? green("●") : red("●")} ${job.name} ${record.state}${after}${overtaken}`);
    }
    job.counts = record.task_counts;
    job.state = record.state;
    const events = /** @type {LedgerEvent[]} */ (
      await api(OPERATOR, "GET", `/jobs/${job.job_id}/events?after=${job.cursor}&limit=1000`).catch(() => [])
    );
    for (const event of events) {
      job.cursor = event.seq;
      const task = event.data?.task_id;
      if (event.type === "LEASE_EXPIRED") {
        note(
          yellow(
            `⌛ lease on ${job.name}/${task} held by ${event.data.node_id} expired — the task goes back to the queue`,
          ),
        );
        job.requeued[task] = { from: event.data.node_id, why: "expired" };
      } else if (event.type === "TASK_ATTEMPT_FAILED") {
        job.requeued[task] = { from: event.data.node_id, why: "failed" };
      } else if (event.type === "LEASE_CLAIMED" && job.requeued[task]) {
        const { from, why } = job.requeued[task];
        delete job.requeued[task];
        const to = event.data.node_id;
        run.moved.push({ job: job.name, task, from, to, attempt: event.data.attempt, why });
        const how = why === "expired" ? "moved" : to === from ? "retried on the same node" : "retried elsewhere";
        const which = event.data.replica ? `replica ${event.data.replica}` : `attempt ${event.data.attempt}`;
        note(cyan(`↻ ${job.name}/${task} ${how}: ${from} → ${to} (${which})`));
      } else if (event.type === "TASK_ATTEMPT_COMPLETED" && event.data.replica) {
        job.results[task] = (job.results[task] ?? 0) + 1;
      } else if (disagreed(event, job.results[task] ?? 0)) {
        job.disputed.add(task);
        note(
          cyan(
            `⚖ ${job.name}/${task}: its ${job.results[task]} replicas disagree, no quorum yet — it wants another one`,
          ),
        );
      } else if (event.type === "LEASE_CLAIMED" && job.disputed.delete(task)) {
        note(
          cyan(
            `↻ ${job.name}/${task} replica ${event.data.replica} → ${event.data.node_id}, a node that ran no replica of it`,
          ),
        );
      } else if (event.type === "TASK_COMMIT_REJECTED" && event.data.verdict === "invalid") {
        const from = event.data.node_id;
        note(
          red(
            `✗ ${job.name}/${task}: ${from}'s result disagrees with the quorum — outvoted, an invalid result for ${from}`,
          ),
        );
      } else if (event.type === "TASK_COMMIT_REJECTED") {
        note(yellow(`✗ ${job.name}/${task}: a commit was rejected (${event.message})`));
      } else if (event.type === "TASK_COMMIT_ACCEPTED" && event.data.replicas) {
        const votes = event.data.replicas.map((r) => `r${r.replica} ${r.node_id} ${r.verdict === "valid" ? "✓" : "✗"}`);
        const agreed = event.data.replicas.filter((r) => r.verdict === "valid").length;
        note(
          green(
            `✓ ${job.name}/${task} verified: ${agreed} of ${plural(event.data.replicas.length, "replica")} agree (${votes.join(", ")})`,
          ),
        );
      }
    }
  }
  clearProgress();
  drawProgress(false);
}

/**
 * Whether the event is a replicated task wanting another replica because
 * the `results` its replicas committed disagree (docs/protocol.md §14). No attempt
 * ended (no node), and there are two results at least: with one, the task
 * merely wants the replica not yet issued.
 * @param {LedgerEvent} event
 * @param {number} results
 */
export function disagreed(event, results) {
  return event.type === "TASK_REQUEUED" && event.data.node_id === undefined && results >= 2;
}

/** Reports the broken node once GET /nodes shows it held back. */
async function watchBrokenNode() {
  const broken = FLEET.find((n) => n.broken);
  if (!broken) return;
  const nodes = /** @type {NodeRecord[]} */ (await api(OPERATOR, "GET", "/nodes"));
  const row = nodes.find((n) => n.node_id === broken.node_id);
  if (!row?.held_until) return;
  const seconds = Math.round((Date.parse(row.held_until) - Date.now()) / 1000);
  run.held = { node: row.node_id, failures: row.consecutive_failures, until: row.held_until, seconds };
  note(
    yellow(
      `⏸ ${row.node_id} held back: ${row.consecutive_failures} failures in a row, its claims get 204 until ${row.held_until} (${seconds} s); what it failed runs elsewhere`,
    ),
  );
}

/**
 * The fleet's GPUs and the demand on them, as the dashboard's GPU and demand
 * panels show them (GET /nodes/summary).
 */
export async function showFleet() {
  const fleet =
    /** @type {{ gpus: { items: { model: string, memory_total_mb: number | null, compute_capability: string, gpus: number, nodes: number }[] }, demand: { classes: { servable: boolean, summary: string }[] } }} */ (
      await api(OPERATOR, "GET", "/nodes/summary")
    );
  say("");
  say(bold("GPUs") + dim(" (GET /nodes/summary; the dashboard's GPU panel)"));
  for (const g of fleet.gpus.items)
    say(
      `  ${String(g.gpus).padStart(2)} × ${g.model.padEnd(24)} ${String(g.memory_total_mb).padStart(6)} MB  cc ${g.compute_capability}  ${dim(`on ${plural(g.nodes, "node")}`)}`,
    );
  say(bold("Demand") + dim(" (the dashboard's demand panel: pending tasks by what they need)"));
  for (const c of fleet.demand.classes) say(`  ${c.servable ? "" : yellow("⚠ ")}${c.summary}`);
}
