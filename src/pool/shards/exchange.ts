// The shard's side of the pool summary (docs/sharding.md §6.2, §13.3): it
// sends Σ its digest (a delta against what Σ acknowledged) and applies Σ's
// reply to its copy of the rest of the pool (src/pool/shards/summary-copy.ts). The
// ticks run in the alarm (src/pool/alarm/housekeeping.ts); a claim may refresh the
// copy, and a submission (or a fail, expiry or commit that puts work back)
// that brings a class Σ does not know tells Σ before it answers, both
// drawing on the on-demand allowance. Concurrent callers share one exchange
// in flight. An exchange never throws into a request: Σ
// unreachable keeps the copy (it ages out) and is logged once.
//
// At S = 1 none of this runs: every entry point answers at once, and
// nothing is read, counted or sent.

import { type DigestContents, digestDelta, newlyPending } from "../../rules/digest";
import type { ExchangeReason } from "../../rules/object-load";
import { type ExchangeReply, onDemandAllowance } from "../../rules/summary";
import { summaryStub } from "../../summary/address";
import { heldByClass } from "../claims/held-gates";
import { LAST_SEQ_SQL } from "../ledger/created";
import type { Pool } from "../pool";
import { digestContents, storedDigest } from "./digest";

/** The tick while the shard has held claims, pending work or a recent change. */
export const TICK_BUSY_MS = 500;
/** The tick otherwise. */
export const TICK_QUIET_MS = 5_000;
/** A change this recent keeps the ticks busy. */
export const RECENT_CHANGE_MS = 5_000;
/** How long a request that brought new work waits for Σ to learn of it before it answers anyway. */
export const SUBMISSION_WAIT_MS = 500;

/**
 * A claim here used `turn` (its lease's job's priority and tenant): in a
 * pool of shards it counts among this shard's grants for the digest and in
 * its copy of the pool (docs/sharding.md §6.1). Nothing at S = 1.
 */
export function countGrant(pool: Pool, turn: { priority?: number; tenant?: string }): void {
  const { priority, tenant } = turn;
  if (pool.shards === 1 || priority === undefined || tenant === undefined) return;
  pool.grants.add(priority, tenant);
  pool.summary.granted(priority, tenant, pool.settings.tenantWeights.get(tenant) ?? 1, pool.shard);
}

/**
 * One exchange with Σ now, or the one in flight: sends the digest (a delta
 * against what Σ acknowledged, else whole), applies the reply to the copy,
 * and when Σ could not place a delta (it restarted) sends the whole digest
 * at once. Answers the reply, or null when Σ did not answer (or S = 1).
 * `reason` tells Σ why, for its counts: an exchange shared is the first caller's.
 */
export function exchange(pool: Pool, reason: ExchangeReason = "tick"): Promise<ExchangeReply | null> {
  if (pool.shards === 1) return Promise.resolve(null);
  const link = pool.link;
  if (link.inFlight === null) {
    link.inFlight = run(pool, reason).finally(() => {
      link.inFlight = null;
    });
  }
  return link.inFlight;
}

/** An exchange that starts no earlier than this call (Σ's poke asks it): one in flight, sent before, is followed by another. */
export async function exchangeNow(pool: Pool): Promise<ExchangeReply | null> {
  const asked = Date.now();
  const reply = await exchange(pool, "poke");
  return pool.link.startedMs < asked ? exchange(pool, "poke") : reply;
}

/**
 * A claim's refresh of the copy (§6.2): the exchange in flight, else an
 * exchange when the on-demand allowance has room, else nothing (the ticks
 * keep the copy within a second). Whatever the copy's age: a claim after
 * another shard's submission answered sees its work whenever the allowance
 * has room (the allowance, not the age, bounds Σ's load).
 */
export function refresh(pool: Pool): Promise<ExchangeReply | null> {
  if (pool.shards === 1) return Promise.resolve(null);
  const link = pool.link;
  if (link.inFlight !== null) return link.inFlight;
  const now = Date.now();
  if (!link.bucket.take(now, onDemandAllowance(pool.shards))) return Promise.resolve(null);
  return exchange(pool, "on_demand");
}

/**
 * After a change that may bring work (§6.2: a submission; a fail, an
 * expiry or a commit that requeues a task or issues a replica): when it
 * made a class pending that Σ does not know of here, or raised a class's top priority,
 * one exchange from the allowance tells Σ, so a claim anywhere after the
 * answer can see the work. Waits at most SUBMISSION_WAIT_MS; without
 * allowance the next tick tells Σ.
 */
export async function afterNewWork(pool: Pool): Promise<void> {
  if (pool.shards === 1) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const waited = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, SUBMISSION_WAIT_MS);
  });
  try {
    await Promise.race([tellNewWork(pool), waited]);
  } finally {
    clearTimeout(timer);
  }
}

async function tellNewWork(pool: Pool): Promise<void> {
  // One in flight was sent before this submission's change: after it, look again.
  for (let round = 0; round < 2; round++) {
    const link = pool.link;
    const now = Date.now();
    if (!newlyPending(link.acked, link.read(contentsOf(pool, now), pool.shard, now))) return;
    if (link.inFlight === null && !link.bucket.take(now, onDemandAllowance(pool.shards))) return;
    await exchange(pool, "on_demand");
  }
}

/**
 * When the next tick is due, never before `now`: busy shards tick every
 * TICK_BUSY_MS after the last exchange began, quiet ones every
 * TICK_QUIET_MS. Null at S = 1.
 */
export function nextTick(pool: Pool, now: number): number | null {
  if (pool.shards === 1) return null;
  const link = pool.link;
  // A change the digest may show: the ledger grew, or pending work came or went (a cancel records no
  // event). A change of how much is pending needs no mark: the shard is busy while any is.
  const seen = pool.sql
    .exec<{ seq: number | null; pending: number }>(
      `SELECT ${LAST_SEQ_SQL} AS seq, EXISTS (SELECT 1 FROM job_queues WHERE queued = 1) AS pending`,
    )
    .one();
  const mark = `${seen.seq ?? 0}|${seen.pending}`;
  if (mark !== link.seen) {
    link.seen = mark;
    link.changedMs = now;
  }
  const busy = pool.held.size > 0 || now - link.changedMs < RECENT_CHANGE_MS || seen.pending === 1;
  // An overdue tick (the alarm late, or lost) is due now, so a re-arm sets it again rather than keep a time past.
  return Math.max(now, link.startedMs + (busy ? TICK_BUSY_MS : TICK_QUIET_MS));
}

/** What this shard's digest holds now: the held claims' count reused within a busy tick, the SQL's until a write. */
export function contentsOf(pool: Pool, now: number): DigestContents {
  const link = pool.link;
  // The per-class counts cost a gate per held claim and class: counted at most once a busy tick.
  if (link.heldCounted === null || now - link.heldCounted.at >= TICK_BUSY_MS)
    link.heldCounted = { at: now, byClass: heldByClass(pool, now) };
  // What the digest reads from SQL moves only with a write here, or with time as nodes go offline: read again
  // after any row the object wrote (every statement goes through Pool.sql, src/pool/metered-sql.ts), else every
  // TICK_QUIET_MS. So an idle shard's busy ticks read no row (docs/protocol.md §16).
  const written = pool.sql.totals().rowsWritten;
  let stored = link.stored;
  if (stored === null || stored.written !== written || now - stored.at >= TICK_QUIET_MS)
    stored = link.stored = { at: now, written, digest: storedDigest(pool.sql, now) };
  const held = { claims: pool.held.size, nodesByClass: link.heldCounted.byClass };
  return digestContents(stored.digest, held, pool.grants);
}

async function run(pool: Pool, reason: ExchangeReason): Promise<ExchangeReply | null> {
  const link = pool.link;
  const send = async (whole: boolean) => {
    const stub = summaryStub(pool.env, pool.settings.poolLocations, pool.poolName);
    const now = Date.now();
    const digest = link.read(contentsOf(pool, now), pool.shard, now);
    const sent = whole || link.acked === null ? digest : digestDelta(link.acked, digest);
    // Until Σ answers, what it holds of this shard is unknown: a lost reply is followed by a whole digest.
    link.acked = null;
    link.sent += 1;
    if (!("removed" in sent)) link.wholeSent += 1;
    const reply = await stub.exchange(pool.shard, sent, link.since, reason);
    link.since = reply.version;
    link.answeredMs = Date.now();
    if (!reply.full) link.acked = digest;
    pool.summary.apply(reply, link.answeredMs);
    return reply;
  };
  link.startedMs = Date.now();
  try {
    const reply = await send(false);
    const answer = reply.full ? await send(true) : reply;
    if (link.failing) pool.log({ event: "SUMMARY_REACHED" });
    link.failing = false;
    return answer;
  } catch (err) {
    if (!link.failing) {
      console.error(
        JSON.stringify({
          level: "error",
          pool: pool.poolName,
          shard: pool.shard,
          event: "SUMMARY_UNREACHABLE",
          error: String(err),
        }),
      );
    }
    link.failing = true;
    return null;
  }
}
