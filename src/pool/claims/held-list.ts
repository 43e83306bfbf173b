// The held claims' list (docs/protocol.md §5, long-poll): connections held
// open, in arrival order, each answered exactly once, none leased past its
// hold's end (the object decides the end by its own clock). In memory
// only: losing it loses nothing, each caller gets 204 and claims again.
// What the object does with it, claiming, holding and waking, is in
// src/pool/claims/held-claims.ts.

import { type ClaimResult, NOTHING, worthWaiting } from "./claim-result";

/** A claim waiting for work. */
export type HeldClaim = {
  /** Its place in arrival order (`HeldClaims.arrive`). */
  readonly arrived: number;
  /**
   * Parked: a claim held here, at a job's shard, for that job's work on
   * behalf of the node's home, which holds the claim too. Not parked: a
   * claim held at the node's home.
   */
  readonly parked: boolean;
  readonly nodeId: string;
  readonly jobId: string | null;
  /**
   * The claim's id (docs/sharding.md §13.1): the one its forwards carry, and
   * a parked claim's lease records; absent for a claim held at one shard.
   */
  readonly claimId?: string;
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
export type HoldOptions = { refused?: Refusals; arrived?: number; parked?: boolean; claimId?: string };

/** Claims answered by one try, to be taken off the list and answered once the change is durable. */
export type Answered = Array<[HeldClaim, ClaimResult]>;

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
    return this.list.filter((held) => !held.parked).length;
  }

  /**
   * Holds a claim from `now` for `waitMs`, in its place by `arrived` (now,
   * unless given); its timer answers nothing when the hold ends.
   * `parked`: a claim for one of this shard's jobs that the node's home
   * forwarded (src/pool/claims/forwarded-claims.ts), which the home holds too.
   */
  hold(
    nodeId: string,
    jobId: string | null,
    now: number,
    waitMs: number,
    { refused, arrived = this.arrive(), parked = false, claimId }: HoldOptions = {},
  ): Promise<ClaimResult> {
    return new Promise((resolve) =>
      this.insert(this.newHeld(arrived, nodeId, jobId, now, waitMs, resolve, { refused, parked, claimId })),
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
    { arrived = this.arrive(), claimId }: HoldOptions = {},
  ): Promise<ClaimResult> {
    return new Promise((resolve) => {
      const held = this.newHeld(arrived, nodeId, jobId, now, waitMs, resolve, { claimId });
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
    { refused = new Map(), parked = false, claimId }: HoldOptions,
  ): HeldClaim {
    const held: HeldClaim = {
      arrived,
      parked,
      nodeId,
      jobId,
      ...(claimId === undefined ? {} : { claimId }),
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

  /** Answers the claim `claimId` with nothing, now, if it is held here: its home restarted (docs/sharding.md §13.1). */
  releaseClaim(claimId: string): void {
    const held = this.list.find((h) => h.claimId === claimId);
    if (held) this.release(held);
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
