// The shard's side of the pool summary (docs/sharding.md §6.2, §13.3): it
// sends Σ its digest (a delta against what Σ acknowledged) and applies Σ's
// reply to its copy of the rest of the pool (src/pool/summary-copy.ts). The
// ticks run in the alarm (src/pool/housekeeping.ts); a claim may refresh the
// copy, and a submission (or a fail, expiry or commit that puts work back)
// that brings a class Σ does not know tells Σ before it answers, both
// drawing on the on-demand allowance. Concurrent callers share one exchange
// in flight. An exchange never throws into a request: Σ
// unreachable keeps the copy (it ages out) and is logged once.
//
// At S = 1 none of this runs: every entry point answers at once, and
// nothing is read, counted or sent.

import { type DigestContents, digestDelta, newlyPending, nextDigest } from "../rules/digest";
import type { ExchangeReason } from "../rules/object-load";
import { type ExchangeReply, onDemandAllowance, type ShardDigest } from "../rules/summary";
import { summaryStub } from "../summary/address";
import { digestContents } from "./digest";
import { heldByClass } from "./held-gates";
import { storageOf } from "./metered-sql";
import type { Pool } from "./pool";
import { countTurns } from "./scheduling";

/** The tick while the shard has held claims, pending work or a recent change. */
export const TICK_BUSY_MS = 500;
/** The tick otherwise. */
export const TICK_QUIET_MS = 5_000;
/** A change this recent keeps the ticks busy. */
export const RECENT_CHANGE_MS = 5_000;
/** How long a request that brought new work waits for Σ to learn of it before it answers anyway. */
export const SUBMISSION_WAIT_MS = 500;
/**
 * A claim's refresh leaves a copy younger than this alone: none, so a claim
 * after another shard's submission answered sees its work whenever the
 * allowance has room (the allowance, not the age, bounds Σ's load).
 */
export const REFRESH_AGE_MS = 0;

/**
 * The on-demand allowance (§6.2): `rate` exchanges a second, with a
 * second's worth (at least one) in hand at most. In memory: a restart
 * refills it, which costs Σ at most one second's allowance.
 */
export class TokenBucket {
  private tokens: number | null = null;
  private lastMs = 0;

  /** Takes one token at `now` if one is there. */
  take(now: number, rate: number): boolean {
    const cap = Math.max(1, rate);
    this.tokens = Math.min(cap, this.tokens === null ? cap : this.tokens + ((now - this.lastMs) / 1000) * rate);
    this.lastMs = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/**
 * Where this shard's exchanges stand. In memory and rebuilt by the next
 * exchange: a new object sends its whole digest under a new instance.
 */
export class SummaryLink {
  /** Random per object start: Σ asks for a whole digest from a new instance. */
  get instance(): string {
    this.#instance ??= crypto.randomUUID();
    return this.#instance;
  }
  #instance: string | undefined;
  readonly bucket = new TokenBucket();
  /** The digest last read, and the one Σ acknowledged (null: send the whole digest next). */
  built: ShardDigest | null = null;
  acked: ShardDigest | null = null;
  /** Σ's version this shard last saw. */
  since = 0;
  /** When the last exchange started, and when Σ last answered one: the ticks are timed from the first. */
  startedMs = 0;
  answeredMs = 0;
  /** When a change was last seen: the digest's contents moved, or the ledger or the pending count (`seen`). */
  changedMs = 0;
  seen = "";
  inFlight: Promise<ExchangeReply | null> | null = null;
  /** Exchanges sent since the object started, answered or not, and of them whole digests (observability, tests). */
  sent = 0;
  wholeSent = 0;
  failing = false;
  /** The held claims per class last counted for the digest (`held.nodesByClass`), and when. */
  heldCounted: { at: number; byClass: Record<string, number> } | null = null;

  /** The digest now; a change of its contents is a change for the ticks. */
  read(contents: DigestContents, shard: number, now: number): ShardDigest {
    const next = nextDigest(this.built, shard, this.instance, contents);
    if (next.version !== this.built?.version) this.changedMs = now;
    this.built = next;
    return next;
  }
}

// The shards of pools with a summary in this isolate, by SQL handle: what a
// test reads a shard's copy through (runInDurableObject hands it the storage).
const joined = new WeakMap<SqlStorage, Pool>();

/**
 * A shard of a pool of more than one shard joins its summary at start: its
 * claims count their grants for the digest. Never called at S = 1.
 */
export function joinSummary(pool: Pool): void {
  joined.set(storageOf(pool.sql), pool);
  countTurns(pool.sql, (priority, tenant) => {
    pool.grants.add(priority, tenant);
    pool.summary.granted(priority, tenant, pool.settings.tenantWeights.get(tenant) ?? 1, pool.shard);
  });
}

/** The shard whose SQL handle is `sql`, if it joined a summary (undefined at S = 1). */
export function joinedShard(sql: SqlStorage): Pool | undefined {
  return joined.get(storageOf(sql));
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
 * A claim's refresh of the copy (§6.2): an exchange when the copy is older
 * than `maxAgeMs` and the on-demand allowance has room, else the exchange in
 * flight, else nothing (the ticks keep the copy within a second).
 */
export function refresh(pool: Pool, maxAgeMs = REFRESH_AGE_MS): Promise<ExchangeReply | null> {
  if (pool.shards === 1) return Promise.resolve(null);
  const link = pool.link;
  if (link.inFlight !== null) return link.inFlight;
  const now = Date.now();
  if (now - link.answeredMs < maxAgeMs) return Promise.resolve(null);
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
  // A change the digest may show: the ledger grew, or the pending count moved (a cancel records no event).
  const seen = pool.sql
    .exec<{ seq: number | null; pending: number | null }>(
      "SELECT (SELECT MAX(seq) FROM events) AS seq, (SELECT n FROM task_counts WHERE state = 'PENDING') AS pending",
    )
    .one();
  const mark = `${seen.seq ?? 0}|${seen.pending ?? 0}`;
  if (mark !== link.seen) {
    link.seen = mark;
    link.changedMs = now;
  }
  const busy = pool.held.size > 0 || now - link.changedMs < RECENT_CHANGE_MS || (seen.pending ?? 0) > 0;
  // An overdue tick (the alarm late, or lost) is due now, so a re-arm sets it again rather than keep a time past.
  return Math.max(now, link.startedMs + (busy ? TICK_BUSY_MS : TICK_QUIET_MS));
}

function contentsOf(pool: Pool, now: number): DigestContents {
  const link = pool.link;
  // The per-class counts cost a gate per held claim and class: counted at most once a busy tick.
  if (link.heldCounted === null || now - link.heldCounted.at >= TICK_BUSY_MS)
    link.heldCounted = { at: now, byClass: heldByClass(pool, now) };
  return digestContents(pool.sql, now, { claims: pool.held.size, nodesByClass: link.heldCounted.byClass }, pool.grants);
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
