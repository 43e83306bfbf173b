// @ts-check
// The demo's output: colours on a terminal, log lines, and the progress
// block of the running step's jobs, redrawn beneath the log lines on a
// terminal and printed every 5 s elsewhere (CI).

import { countTasks, run } from "./state.mjs";

export const TTY = process.stdout.isTTY === true;
/** @param {number} code */
const color = (code) => (/** @type {string} */ text) => (TTY ? `\x1b[${code}m${text}\x1b[0m` : text);
export const bold = color(1);
export const dim = color(2);
export const green = color(32);
export const red = color(31);
export const yellow = color(33);
export const cyan = color(36);

function progressLines() {
  const width = 24;
  return run.jobs
    .filter((job) => job.phase === run.phase)
    .map((job) => {
      const c = job.counts;
      const total = countTasks(c);
      /** @param {number} n */
      const cells = (n) => Math.round((n / Math.max(1, total)) * width);
      const done = cells(c.COMPLETED);
      const failed = cells(c.FAILED);
      const leased = Math.min(width - done - failed, cells(c.LEASED));
      const bar =
        green("█".repeat(done)) +
        red("█".repeat(failed)) +
        cyan("▒".repeat(leased)) +
        dim("░".repeat(Math.max(0, width - done - failed - leased)));
      const state =
        job.unplaceable && c.PENDING > 0
          ? yellow("STUCK: no node can take it")
          : job.state === "SUCCEEDED"
            ? green(job.state)
            : job.state;
      const priority = job.priority !== 0 ? dim(`  priority ${job.priority}`) : "";
      return `  ${job.name.padEnd(15)} ${bar} ${String(c.COMPLETED).padStart(2)}/${String(total).padEnd(2)} ${state}${priority}`;
    });
}

let lastPrinted = 0;

/** The next draw prints, whenever the last one was. */
export function printNext() {
  lastPrinted = 0;
}

/** @param {boolean} force */
export function drawProgress(force) {
  if (!TTY && !force && Date.now() - lastPrinted < 5000) return;
  lastPrinted = Date.now();
  const lines = progressLines();
  process.stdout.write(`${lines.join("\n")}\n`);
  run.lines = TTY ? lines.length : 0;
}

export function clearProgress() {
  if (run.lines > 0) process.stdout.write(`\x1b[${run.lines}A\x1b[J`);
  run.lines = 0;
}

/**
 * A log line above the progress block (redrawn beneath it on a terminal).
 * @param {string} line
 */
export function note(line) {
  if (TTY) {
    const had = run.lines > 0;
    clearProgress();
    process.stdout.write(`${line}\n`);
    if (had) drawProgress(true);
  } else {
    process.stdout.write(`${line}\n`);
  }
}

/** @param {string} line */
export function say(line) {
  process.stdout.write(`${line}\n`);
}
