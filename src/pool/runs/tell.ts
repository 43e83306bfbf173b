// Telling a run its round is over (docs/protocol.md §17): after a change
// that froze a round's quorum or ended its job short, the run's Workflow
// gets an event at once, so the run moves on the moment the quorum is met
// instead of when it next looks. At least once: a round stays untold until
// an event was sent for it, and is tried again after the next change. The
// Workflow also looks for itself between waits, so an event that is lost
// only delays it.

import type { Pool } from "../pool";
import { told } from "./calls";

/** The Workflow instance of run `runId` of pool `pool`: pool names are DNS labels, so `_` cannot be part of one. */
export function runInstanceId(pool: string, runId: string): string {
  return `${pool}_${runId}`;
}

/** The event a run waits for between its looks at round `round`. */
export function roundEventType(round: number): string {
  return `round-${round}-settled`;
}

/**
 * At the object's start, every live round of a running run is told again:
 * an event also wakes a Workflow instance whose engine stopped with the
 * process that ran it (as `wrangler dev` does when killed; the platform
 * resumes its own). A run that was not asleep looks once more, and waits on.
 */
export function retellLiveRounds(sql: SqlStorage): void {
  sql.exec(
    `UPDATE run_rounds SET told = 0 WHERE told = 1 AND result IS NULL AND ended IS NULL
       AND run_id IN (SELECT run_id FROM runs WHERE state = 'RUNNING')`,
  );
}

/** Sends the events of every untold round; none to send costs one seek of an empty index. */
export async function tellRuns(pool: Pool): Promise<void> {
  const untold = pool.sql
    .exec<{ job_id: string; run_id: string; round: number }>(
      "SELECT job_id, run_id, round FROM run_rounds WHERE told = 0",
    )
    .toArray();
  if (untold.length === 0) return;
  const { poolName } = pool;
  const sent = await Promise.allSettled(
    untold.map(async (r) => {
      const instance = await pool.env.RUNS.get(runInstanceId(poolName, r.run_id));
      await instance.sendEvent({ type: roundEventType(r.round), payload: { job_id: r.job_id } });
      return r.job_id;
    }),
  );
  const done = sent.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
  if (done.length > 0) await told(pool, done);
}
