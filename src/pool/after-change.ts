// What follows every state change (`Pool.change`, src/pool/pool.ts), once
// its transaction is durable and before its request is answered: the held
// claims it lets through get their turn before anyone else, its events are
// logged, the alarm moves to the earliest live deadline, held claims go on
// to other shards, new passports reach the shards a claim is in flight to,
// the outbox rows it wrote leave, and a run whose round it ended hears so. The object installs it
// (src/pool/object.ts); the modules that change state only call `change`.

import { arm } from "./alarm/housekeeping";
import { forwardHeld, pushPassports } from "./claims/forwarding";
import { answerHeld } from "./claims/held-claims";
import type { EventRow } from "./ledger/events";
import { logEvent } from "./ledger/log";
import type { ChangeMade, Pool } from "./pool";
import { tellRuns } from "./runs/tell";
import { sendWritten } from "./shards/outbox";

/**
 * The work after a change. Its first part runs in the change's turn, with
 * no await before it: the held claims a change wakes are answered from the
 * state it left, before any other request runs.
 */
export async function afterChange(
  pool: Pool,
  { before, outboxBefore, wakesClaims, wakesNode }: ChangeMade,
): Promise<void> {
  const wakeAll = pool.held.size > 0 && (wakesClaims || (before !== null && workAppeared(pool.sql, before)));
  const woken = wakeAll
    ? answerHeld(pool, null)
    : pool.held.size > 0 && wakesNode !== undefined
      ? answerHeld(pool, wakesNode)
      : [];
  if (before !== null && pool.logging) {
    // A job's TASK_CREATED events are summarised by its JOB_ACCEPTED line (it
    // carries the count): a 10,000-task submission is one change, not 10,000.
    for (const row of pool.sql.exec<EventRow>(
      "SELECT * FROM events WHERE seq > ? AND type != 'TASK_CREATED' ORDER BY seq",
      before,
    )) {
      logEvent(pool.name, row);
    }
  }
  await arm(pool);
  for (const [held, answer] of woken) held.resolve(answer);
  // A change to a node (a release, an assignment) may let its held claim take work on another shard too.
  // What another shard refused its claim for may be what changed: its refusals are forgotten.
  if ((wakesClaims || wakesNode !== undefined) && pool.held.size > 0 && pool.shards > 1)
    forwardHeld(pool, wakesClaims ? null : wakesNode);
  // A node this change moved has its new passport at every shard its claims are in flight to, before the answer.
  await pushPassports(pool);
  // Outbox rows the change wrote for other shards leave now (src/pool/shards/outbox.ts); none at one shard.
  await sendWritten(pool, outboxBefore, () => arm(pool));
  // A round whose quorum the change met, or whose job it ended, is over: its run hears it now (docs/protocol.md §17).
  await tellRuns(pool);
}

/** Whether the ledger since `seq` queued work or closed a job: what a held claim waits for. */
function workAppeared(sql: SqlStorage, seq: number): boolean {
  return (
    sql
      .exec(
        `SELECT 1 FROM events WHERE seq > ?1
           AND type IN ('TASK_CREATED', 'TASK_REQUEUED', 'JOB_SUCCEEDED', 'JOB_FAILED')
         UNION ALL SELECT 1 FROM tasks_created WHERE first_seq > ?1 LIMIT 1`,
        seq,
      )
      .toArray().length > 0
  );
}
