// The pool's alarm (docs/protocol.md §5, §12): one alarm, kept at the earliest of the
// live lease deadlines, the next collection and the next archiving due, and
// in a pool of more than one shard the next exchange with the pool summary
// (docs/sharding.md §6.2). When it fires it sweeps expired leases, exchanges
// when a tick is due (or tells the summary of the tasks an expiry requeued),
// writes the event tally down, deletes unreferenced R2 objects, archives
// jobs past retention and, at S > 1, forgets a page of passports no longer
// needed. Alarms are
// at-least-once: every step is idempotent. The fields here are a cache, a
// backoff and a place in a walk, never state.

import { collected, nextCollection, takeForCollection } from "../artifacts/collection";
import { earliestDeadline, sweep } from "../leases/leases";
import { logLine } from "../ledger/log";
import { eventTally, writeTally } from "../ledger/tally";
import { lastRequests } from "../nodes/liveness";
import { forgetPassports } from "../nodes/passports";
import type { Pool } from "../pool";
import { afterNewWork, exchange, nextTick } from "../shards/exchange";
import { deliverOutbox, outboxDue } from "../shards/outbox";
import { ARCHIVE_BATCH_TASKS, archiveObjects, finishArchive, nextArchive, startArchive } from "./archive";

/** How long archiving waits after R2 refused an archive write. */
const ARCHIVE_RETRY_MS = 60 * 1000;

/** Sweeps expired leases, exchanges with the summary when a tick is due, collects, archives, and re-arms. */
export async function alarm(pool: Pool): Promise<void> {
  pool.clock.armedAt = undefined; // the alarm that just fired is no longer set
  await deliverOutbox(pool);
  const now = Date.now();
  const tick = nextTick(pool, now) === now;
  // Timed from now, so the sweep's re-arm already counts the next tick from this one.
  if (tick) pool.link.startedMs = now;
  const expired = await pool.change((now) => sweep(pool.sql, now));
  if (tick) {
    await exchange(pool);
    await arm(pool);
  } else if (expired > 0) {
    // A requeued task is work that came back, as after a fail: Σ hears of it now, not at the next tick.
    await afterNewWork(pool);
  }
  if ((eventTally(pool.sql).due() ?? Number.POSITIVE_INFINITY) <= Date.now())
    pool.transaction(() => writeTally(pool.sql));
  await collect(pool);
  await archive(pool);
  forget(pool);
}

/**
 * Keeps the alarm at the earliest live lease deadline, a silent node's
 * liveness or the event tally to write down (src/pool/nodes/liveness.ts,
 * src/pool/ledger/tally.ts), collection, archiving
 * or (at S > 1 only) summary tick due, or unset when none is.
 */
export async function arm(pool: Pool): Promise<void> {
  const now = Date.now();
  const deadline = earliestDeadline(pool.sql);
  const due = nextArchive(pool.sql, now, pool.settings.jobRetentionMs);
  const archiving = due === null ? null : Math.max(due, pool.clock.archiveRetryAt);
  const tick = nextTick(pool, now);
  const settling = lastRequests(pool.sql).due();
  const tally = eventTally(pool.sql).due();
  const times = [deadline, settling, tally, nextCollection(pool.sql), archiving, outboxDue(pool), tick].filter(
    (t): t is number => t !== null,
  );
  const next = times.length === 0 ? null : Math.min(...times);
  if (next === pool.clock.armedAt && (tick === null || deadline === pool.clock.armedDeadline)) return;
  // The cache is updated in the same synchronous turn as the storage call
  // is issued, so concurrent arms leave it matching the last alarm set.
  pool.clock.armedAt = next;
  pool.clock.armedDeadline = deadline;
  if (next === null) await pool.ctx.storage.deleteAlarm();
  else await pool.ctx.storage.setAlarm(next);
}

/**
 * Archives jobs past retention to R2 (docs/protocol.md §12), oldest first, about a
 * batch of tasks per run: each job's objects are written one at a time
 * (other requests run meanwhile), then its rows deleted in one
 * transaction. A failed write leaves the job marked: the next run, armed
 * after the backoff, writes it again.
 */
async function archive(pool: Pool): Promise<void> {
  const retention = pool.settings.jobRetentionMs;
  const name = pool.storedName();
  if (name === null || Date.now() < pool.clock.archiveRetryAt) return;
  let tasks = 0;
  while (tasks < ARCHIVE_BATCH_TASKS) {
    const jobId = pool.transaction(() => startArchive(pool.sql, Date.now(), retention));
    if (jobId === null) return;
    try {
      for (const object of archiveObjects(pool.sql, name, jobId)) {
        pool.r2.count("A");
        await pool.env.ARTIFACTS.put(object.key, object.body, { httpMetadata: { contentType: "application/json" } });
      }
    } catch (err) {
      console.error(
        JSON.stringify({ level: "error", pool: name, event: "ARCHIVE_FAILED", job_id: jobId, error: String(err) }),
      );
      pool.clock.archiveRetryAt = Date.now() + ARCHIVE_RETRY_MS;
      await arm(pool);
      return;
    }
    const archived = await pool.change((now) => finishArchive(pool.sql, now, jobId));
    if (pool.logging) logLine({ pool: name, event: "JOB_ARCHIVED", job_id: jobId, tasks: archived });
    tasks += archived;
  }
}

/**
 * Deletes from R2 a batch of objects no key refers to (docs/protocol.md §12): whatever
 * the Worker's own deletes missed, and uploads never bound. The deletes run
 * between two transactions; an object taken here cannot be bound
 * meanwhile, and one R2 refused is tried again later.
 */
async function collect(pool: Pool): Promise<void> {
  const objects = pool.transaction(() => takeForCollection(pool.sql, Date.now()));
  if (objects.length === 0) return;
  const results = await Promise.allSettled(objects.map((object) => pool.env.ARTIFACTS.delete(object)));
  const deleted = objects.filter((_, i) => results[i]!.status === "fulfilled");
  const refused = objects.filter((_, i) => results[i]!.status === "rejected");
  await pool.change((now) => collected(pool.sql, now, deleted, refused));
}

/** At most one page of passports per this long: about one each quiet tick (docs/sharding.md §6.2). */
export const FORGET_EVERY_MS = 4_000;

/**
 * Forgets the passports no longer needed (docs/protocol.md §12), a page per
 * run at most every FORGET_EVERY_MS, walking the table round and round. It
 * arms nothing: at S > 1 the summary tick keeps the alarm coming (at most
 * 5 s apart), and at S = 1 there are no passports and nothing here runs.
 */
function forget(pool: Pool): void {
  const now = Date.now();
  if (pool.shards === 1 || now < pool.clock.forgetAt) return;
  pool.clock.forgetAt = now + FORGET_EVERY_MS;
  const walked = pool.transaction(() =>
    forgetPassports(pool.sql, now, pool.clock.forgetAfter, (nodeId) => pool.held.holds(nodeId)),
  );
  pool.clock.forgetAfter = walked.next;
}
