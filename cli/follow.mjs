// @ts-check
// Following a job or a run until it ends (`watch`, `run --follow`): a
// progress bar on stderr at a terminal, else one line per change, so a log
// stays readable; the record as it ended.

import { setTimeout as sleep } from "node:timers/promises";
import { SingleBar } from "cli-progress";

/** The states a job and a run end in. */
export const TERMINAL = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);
/** The exit code of an outcome: 0 SUCCEEDED, 1 FAILED, 2 CANCELLED. */
export const OUTCOME_EXIT = /** @type {Record<string, number>} */ ({ SUCCEEDED: 0, FAILED: 1, CANCELLED: 2 });

/**
 * Polls `read` every `interval` seconds until its record's state is terminal.
 * `progress` says how far it is (the bar's value and total, in `unit`), what
 * the bar shows beside its state (`detail`), and the line a log gets (`line`).
 * @template {{ state: string }} R
 * @param {{ json: boolean }} ctx
 * @param {{
 *   interval: number,
 *   unit: string,
 *   read: () => Promise<R>,
 *   progress: (record: R) => { done: number, total: number, detail: string, line: string },
 * }} how
 * @returns {Promise<R>}
 */
export async function followUntilEnd(ctx, { interval, unit, read, progress }) {
  const bar =
    process.stderr.isTTY && !ctx.json
      ? new SingleBar({
          format: `{bar} {value}/{total} ${unit} | {state} | {detail}`,
          stream: process.stderr,
          hideCursor: true,
          clearOnComplete: false,
        })
      : null;
  let started = false;
  let last = "";
  try {
    for (;;) {
      const record = await read();
      const { done, total, detail, line } = progress(record);
      if (bar) {
        if (!started) bar.start(total, done, { state: record.state, detail });
        else bar.update(done, { state: record.state, detail });
        started = true;
      } else if (!ctx.json && line !== last) {
        process.stderr.write(`${line}\n`);
      }
      last = line;
      if (TERMINAL.has(record.state)) return record;
      await sleep(interval * 1000);
    }
  } finally {
    bar?.stop();
  }
}
