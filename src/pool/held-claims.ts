// Claims waiting for work (docs/protocol.md §5, long-poll): connections held open, not
// state. Losing them (eviction, restart) loses nothing: each caller gets 204
// and claims again. The object's side is here (claiming or holding, waking
// held claims after a change, cutting a machine off), then the list itself,
// which keeps them in arrival order, answers each exactly once, and must
// never lease to a claim whose hold has ended: the object decides the hold's
// end itself, by its own clock, and a claim past it is answered with nothing
// instead of being tried. The Worker waits for that answer
// (src/routes/leases.ts), so no lease goes to a caller that already read 204.

import { liveCredential } from "./enrolment";
import {
  type Credential,
  CUT_OFF,
  claimAcrossShards,
  holdElsewhere,
  jobElsewhere,
  type LocalClaim,
  releaseElsewhere,
} from "./forwarding";
import { arm } from "./housekeeping";
import { poolTaskCounts } from "./jobs";
import { type ClaimResult, claim, endLeasesOf } from "./leases";
import { type Passport, passportOf, upsertPassport } from "./passports";
import type { Pool } from "./pool";
import type { Turn } from "./scheduling";

// -- the object's side: claiming, holding, waking, ending ------------------

/**
 * Leases a task to the node, or, when nothing it may take is pending,
 * holds the claim up to `waitMs` (docs/protocol.md §5, long-poll): it is answered the
 * moment such a task appears, in the order the claims arrived, else with
 * nothing when the wait ends — by the object's clock, and never with a
 * lease after that. Each answer is its own claim transaction, so no task
 * is handed out twice. Held claims live in memory only: a restart drops
 * them, and the Worker answers a dropped claim with 204.
 */
export async function claimOrHold(
  pool: Pool,
  nodeId: string,
  jobId: string | null,
  waitMs: number,
): Promise<ClaimResult> {
  // Its place among the held claims is its arrival here, not the end of its search, whose exchange may be slow.
  const arrived = pool.held.arrive();
  // At S > 1 the claim awaits before it leases or holds (a summary refresh, a forward), so the credential its
  // session was checked with in this turn is checked again then: a revocation answered meanwhile cuts it off (§9).
  const credential: Credential = pool.shards > 1 ? liveCredential(pool.sql, nodeId) : undefined;
  const cutOffSince = () => credential !== undefined && liveCredential(pool.sql, nodeId) !== credential;
  // A node that claims again has given up on its earlier claim (its client
  // timed out): answer that one now, so no lease goes to a closed connection.
  // A lease a forward of it still brings is the node's, and comes here.
  // One held at another shard is answered there first, so its answer comes now.
  const forwarded = pool.held.forwardOf(nodeId);
  pool.held.releaseNode(nodeId);
  if (forwarded !== null) void releaseElsewhere(pool, forwarded.shard, nodeId);
  const taken = forwarded === null ? null : await forwarded.forwarding;
  if (taken?.ok) return taken;
  const local: LocalClaim = (floor, turn) =>
    pool.change((now) => (cutOffSince() ? CUT_OFF : claimFor(pool, now, nodeId, jobId, floor, turn)));
  const refused: Refusals = new Map();
  const result =
    pool.shards === 1 ? await local() : await claimAcrossShards(pool, nodeId, jobId, local, credential, refused);
  if (result.ok || !worthWaiting(result) || waitMs <= 0) return result;
  if (cutOffSince()) return CUT_OFF;
  // A claim for a job of another shard waits there, where the job's work and its close are.
  const elsewhere = jobId === null ? null : jobElsewhere(pool, jobId);
  if (elsewhere === null) {
    const held = pool.held.hold(nodeId, jobId, Date.now(), waitMs, { refused, arrived });
    // A shard holding a claim ticks busy (nextTick): an alarm set while it was quiet, up to 5 s off, comes forward,
    // so the summary learns of the claim in one tick and pokes this shard when work appears elsewhere.
    if (pool.shards > 1 && pool.held.size === 1) void arm(pool);
    return held;
  }
  return pool.held.holdForwarded(
    nodeId,
    jobId,
    Date.now(),
    waitMs,
    elsewhere,
    () => holdElsewhere(pool, elsewhere, nodeId, jobId!, waitMs, credential),
    arrived,
  );
}

/** One claim transaction's body, with the settings the gate and the scheduler read; `floor` and `turn` as claim's. */
function claimFor(pool: Pool, now: number, nodeId: string, jobId: string | null, floor?: number, turn?: Turn) {
  const { tenantWeights, retryElsewhereMs, owners, membership } = pool.settings;
  return claim(pool.sql, now, nodeId, jobId, tenantWeights, Math.random, retryElsewhereMs, owners, membership, {
    mint: pool.mintHex,
    floor,
    turn,
    idleElsewhere: pool.summary.idleElsewhere(now), // 0 at one shard: its copy is empty
  });
}

/**
 * Gives every held claim (only `nodeId`'s when given), oldest first,
 * another try in one transaction. Those that got a lease, will never get
 * one, or whose hold has ended are taken off the list at once (so their
 * timers cannot answer them too) and returned to be answered once the
 * change is durable and its alarm armed.
 */
export function answerHeld(pool: Pool, nodeId: string | null): Answered {
  const now = Date.now();
  const answered = pool.transaction(() =>
    pool.held.retry(
      now,
      (held) => claimFor(pool, now, held.nodeId, held.jobId),
      () => poolTaskCounts(pool.sql).PENDING > 0,
      nodeId,
    ),
  );
  pool.held.take(answered);
  return answered;
}

/**
 * A machine that can no longer commit (docs/protocol.md §9: its credential revoked or
 * replaced): its held claims are answered with nothing now — before the
 * change wakes held claims, so the tasks given back below cannot go to
 * them — and its live leases end as expiries do, requeued as worker
 * losses. Inside the change's transaction; answering a claim is only a
 * promise resolved, no await.
 */
export function cutOff(pool: Pool, now: number, nodeId: string, why: string): void {
  pool.held.releaseNode(nodeId);
  endLeasesOf(pool.sql, now, nodeId, why);
}

/**
 * At the node's home, after the change that cut it off: every other shard
 * of the pool cuts it off too (its claims held there, its leases there),
 * and keeps the revoked passport, at the version the revocation gave it,
 * before the operator is answered: a revoked machine's task goes to
 * another node now wherever it lives, and a forward of its claim still in
 * flight, carrying an older passport, is refused when it lands (an older
 * passport never replaces a newer one; a revoked one admits nothing). A
 * shard that cannot be reached keeps the lease to its deadline; the
 * credential is refused at home either way.
 */
export async function cutOffElsewhere(pool: Pool, nodeId: string, why: string): Promise<void> {
  if (pool.shards === 1) return;
  const passport = passportOf(pool.sql, nodeId, pool.settings.owners);
  await pool.peers.all(pool.peers.others(), async (peer) => peer.cutOffHere(nodeId, why, passport));
}

/** The far half of `cutOffElsewhere`, at one shard: one change. */
export function cutOffHere(pool: Pool, nodeId: string, why: string, passport: Passport | null): Promise<void> {
  return pool.change((now) => {
    cutOff(pool, now, nodeId, why);
    if (passport !== null) upsertPassport(pool.sql, passport, now);
    pool.sql.exec("UPDATE passports SET revoked = 1 WHERE node_id = ?", nodeId);
  });
}

// -- the list --------------------------------------------------------------

/** A claim waiting for work. */
export type HeldClaim = {
  /** Its place in arrival order (`HeldClaims.arrive`). */
  readonly arrived: number;
  /** Held here for a job of this shard on behalf of the node's home, which holds the claim too. */
  readonly forAnotherHome: boolean;
  readonly nodeId: string;
  readonly jobId: string | null;
  /** The hold's end on the object's clock: no lease to this claim at or after it. */
  readonly endsAt: number;
  readonly resolve: (result: ClaimResult) => void;
  readonly timer: ReturnType<typeof setTimeout>;
  /**
   * A forward of this claim to another shard in flight (docs/sharding.md
   * §5.3): while it is, the hold's end does not answer the claim; the
   * forward's answer does, and the other shard issues no lease past the
   * hold's end + 1 s.
   */
  forwarding: Promise<ClaimResult> | null;
  /** The shard that forward went to. */
  forwardedTo: number | null;
  /** The hold ended while a forward was in flight: its answer, lease or nothing, ends the claim. */
  ended: boolean;
  /** The shards that had nothing for it, each at the digest version the home's copy held then. */
  readonly refused: Refusals;
};

/**
 * Shard → the version of its digest at which a forward there found nothing
 * (docs/sharding.md §6.3's `tried` marks): not asked again until its version
 * moves, since work that came back (a requeue) can leave its counts as they were.
 */
export type Refusals = Map<number, number>;

/** How a claim is held: the shards that refused it, its place by arrival, whose claim it is. */
export type HoldOptions = { refused?: Refusals; arrived?: number; forAnotherHome?: boolean };

/** Claims answered by one try, to be taken off the list and answered once the change is durable. */
export type Answered = Array<[HeldClaim, ClaimResult]>;

const NOTHING: ClaimResult = { ok: false, reason: "nothing" };

/** Claims that may yet get a lease by waiting: nothing to take yet, or a node held back for now. */
export function worthWaiting(result: ClaimResult & { ok: false }): boolean {
  return result.reason === "nothing" || result.reason === "held_back";
}

export class HeldClaims {
  private readonly list: HeldClaim[] = [];
  private arrivals = 0;

  get size(): number {
    return this.list.length;
  }

  /** Whether `nodeId` holds a claim open. */
  holds(nodeId: string): boolean {
    return this.list.some((held) => held.nodeId === nodeId);
  }

  /** A claim's place in arrival order, taken when it arrives, before anything it awaits. */
  arrive(): number {
    return this.arrivals++;
  }

  /** The claims held for this shard's own nodes: not those held here for a job on behalf of their home. */
  get ownSize(): number {
    return this.list.filter((held) => !held.forAnotherHome).length;
  }

  /**
   * Holds a claim from `now` for `waitMs`, in its place by `arrived` (now,
   * unless given); its timer answers nothing when the hold ends.
   * `forAnotherHome`: a claim for one of this shard's jobs that the node's
   * home forwarded (src/pool/forwarded-claims.ts), which the home holds too.
   */
  hold(
    nodeId: string,
    jobId: string | null,
    now: number,
    waitMs: number,
    { refused, arrived = this.arrive(), forAnotherHome = false }: HoldOptions = {},
  ): Promise<ClaimResult> {
    return new Promise((resolve) =>
      this.insert(this.newHeld(arrived, nodeId, jobId, now, waitMs, resolve, refused, forAnotherHome)),
    );
  }

  /**
   * Holds a claim that waits at shard `k` (a claim for one of its jobs):
   * `start` is that forward, whose answer answers the claim.
   */
  holdForwarded(
    nodeId: string,
    jobId: string | null,
    now: number,
    waitMs: number,
    k: number,
    start: () => Promise<ClaimResult>,
    arrived = this.arrive(),
  ): Promise<ClaimResult> {
    return new Promise((resolve) => {
      const held = this.newHeld(arrived, nodeId, jobId, now, waitMs, resolve);
      this.insert(held);
      this.forward(held, start(), k, null);
    });
  }

  /** Into the list after every claim that arrived before it. */
  private insert(held: HeldClaim): void {
    let i = this.list.length;
    while (i > 0 && this.list[i - 1]!.arrived > held.arrived) i--;
    this.list.splice(i, 0, held);
  }

  private newHeld(
    arrived: number,
    nodeId: string,
    jobId: string | null,
    now: number,
    waitMs: number,
    resolve: (result: ClaimResult) => void,
    refused: Refusals = new Map(),
    forAnotherHome = false,
  ): HeldClaim {
    const held: HeldClaim = {
      arrived,
      forAnotherHome,
      nodeId,
      jobId,
      endsAt: now + waitMs,
      resolve,
      timer: setTimeout(() => this.end(held), waitMs),
      forwarding: null,
      forwardedTo: null,
      ended: false,
      refused,
    };
    return held;
  }

  /**
   * Answers every claim `nodeId` holds with nothing, now: the node claimed
   * again (its client gave up on the earlier one), or its credential was
   * revoked or replaced. True when there was one.
   */
  releaseNode(nodeId: string): boolean {
    const mine = this.list.filter((held) => held.nodeId === nodeId);
    for (const held of mine) this.release(held);
    return mine.length > 0;
  }

  /**
   * The forward a held claim of `nodeId` has in flight, if any: the node
   * claimed again, and a lease that forward brings is the node's, so it
   * goes to the claim that is still open (docs/sharding.md §5.3, "takes
   * over the forward"). Ask before `releaseNode` answers the old claim.
   */
  forwardOf(nodeId: string): { forwarding: Promise<ClaimResult>; shard: number } | null {
    const held = this.list.find((h) => h.nodeId === nodeId && h.forwarding !== null);
    return held ? { forwarding: held.forwarding!, shard: held.forwardedTo! } : null;
  }

  /** The held claims with no forward in flight, oldest first: those a change of the summary may send elsewhere. */
  waiting(): HeldClaim[] {
    return this.list.filter((held) => held.forwarding === null);
  }

  /**
   * Records the forward of a held claim to shard k, and answers the claim
   * with its result when that is a lease or a refusal waiting cannot mend
   * (its job closed), or when the hold ended meanwhile. A claim answered in
   * the meantime (its node claimed again) is left alone: the forward's
   * result went to the claim that took it over. One that stays held marks
   * k refused at `version`, the digest version the forward was chosen by.
   */
  forward(held: HeldClaim, forwarding: Promise<ClaimResult>, k: number, version: number | null): void {
    held.forwarding = forwarding;
    held.forwardedTo = k;
    const settle = (result: ClaimResult) => {
      if (!result.ok && version !== null) held.refused.set(k, version);
      this.settle(held, result);
    };
    void forwarding.then(settle, () => settle(NOTHING));
  }

  private settle(held: HeldClaim, result: ClaimResult): void {
    held.forwarding = null;
    held.forwardedTo = null;
    const i = this.list.indexOf(held);
    if (i < 0) return;
    if (!result.ok && worthWaiting(result) && !held.ended) return;
    this.list.splice(i, 1);
    clearTimeout(held.timer);
    held.resolve(result.ok || !worthWaiting(result) ? result : NOTHING);
  }

  /** The hold's end: nothing, unless a forward is in flight, whose answer then ends the claim. */
  private end(held: HeldClaim): void {
    if (held.forwarding !== null) held.ended = true;
    else this.release(held);
  }

  /**
   * Gives held claims, oldest first (only `nodeId`'s when given), another
   * try through `claim`, inside the caller's transaction; answers nothing to
   * any claim whose hold has ended, without trying it, so the timer that
   * has yet to fire can never be beaten by a lease. With nothing pending
   * (`pending`), only a claim for one job can change: its job may have
   * closed. Returns the claims answered; nothing is taken off the list here.
   */
  retry(
    now: number,
    claim: (held: HeldClaim) => ClaimResult,
    pending: () => boolean,
    nodeId: string | null = null,
  ): Answered {
    const out: Answered = [];
    let anything = pending();
    for (const held of this.list) {
      if (nodeId !== null && held.nodeId !== nodeId) continue;
      // A claim forwarded elsewhere waits for that answer; trying it here too could lease it twice.
      if (held.forwarding !== null) continue;
      if (now >= held.endsAt) {
        out.push([held, NOTHING]);
        continue;
      }
      if (!anything && held.jobId === null) continue;
      const result = claim(held);
      if (result.ok || !worthWaiting(result)) out.push([held, result]);
      if (result.ok) anything = pending();
    }
    return out;
  }

  /** Takes answered claims off the list, so their timers cannot answer them too. */
  take(answered: Answered): void {
    for (const [held] of answered) {
      const i = this.list.indexOf(held);
      if (i >= 0) this.list.splice(i, 1);
      clearTimeout(held.timer);
    }
  }

  /** Answers a held claim with nothing, unless it was answered already. */
  private release(held: HeldClaim): void {
    const i = this.list.indexOf(held);
    if (i < 0) return;
    this.list.splice(i, 1);
    clearTimeout(held.timer);
    held.resolve(NOTHING);
  }
}
