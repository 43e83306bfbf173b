// @ts-check
// How the CLI shows answers to a person: plain tables (cli-table3, no
// colour, so the bytes are the same in a terminal, a pipe and a test) and
// the job progress line. `--json` bypasses all of it.

import Table from "cli-table3";

/**
 * @param {string[]} head
 * @param {Array<Array<string | number | boolean | null | undefined>>} rows
 * @returns {string}
 */
export function table(head, rows) {
  const t = new Table({ head, style: { head: [], border: [], compact: true } });
  for (const row of rows) t.push(row.map((cell) => (cell === null || cell === undefined ? "-" : String(cell))));
  return t.toString();
}

/** The task states in the order a job moves through them. */
export const TASK_STATE_ORDER = /** @type {const} */ (["COMPLETED", "FAILED", "CANCELLED", "LEASED", "PENDING"]);

/**
 * "8 tasks: 3 COMPLETED, 2 LEASED, 3 PENDING" — only the states that have tasks.
 * @param {Partial<Record<string, number>>} counts
 */
export function countsLine(counts) {
  const total = Object.values(counts).reduce((a, b) => (a ?? 0) + (b ?? 0), 0) ?? 0;
  const parts = TASK_STATE_ORDER.filter((s) => (counts[s] ?? 0) > 0).map((s) => `${counts[s]} ${s}`);
  return `${total} task${total === 1 ? "" : "s"}${parts.length ? `: ${parts.join(", ")}` : ""}`;
}

/**
 * Finished tasks (committed, failed or cancelled) against all of them.
 * @param {Partial<Record<string, number>>} counts
 */
export function progressOf(counts) {
  const total = Object.values(counts).reduce((a, b) => (a ?? 0) + (b ?? 0), 0) ?? 0;
  const done = (counts.COMPLETED ?? 0) + (counts.FAILED ?? 0) + (counts.CANCELLED ?? 0);
  return { done, total };
}
