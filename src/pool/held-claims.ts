// Claims waiting for work (SPEC §5, long-poll): connections held open, not
// state. Losing them (eviction, restart) loses nothing: each caller gets 204
// and claims again. This module keeps them in arrival order, answers each
// exactly once, and must never lease to a claim whose hold has ended: the
// object decides the hold's end itself, by its own clock, and a claim past
// it is answered with nothing instead of being tried. The Worker waits for
// that answer (src/routes/leases.ts), so no lease goes to a caller that
// already read 204.

import type { ClaimResult } from "./leases";

/** A claim waiting for work. */
export type HeldClaim = {
  readonly nodeId: string;
  readonly jobId: string | null;
  /** The hold's end on the object's clock: no lease to this claim at or after it. */
  readonly endsAt: number;
  readonly resolve: (result: ClaimResult) => void;
  readonly timer: ReturnType<typeof setTimeout>;
};

/** Claims answered by one try, to be taken off the list and answered once the change is durable. */
export type Answered = Array<[HeldClaim, ClaimResult]>;

const NOTHING: ClaimResult = { ok: false, reason: "nothing" };

/** Claims that may yet get a lease by waiting: nothing to take yet, or a node held back for now. */
export function worthWaiting(result: ClaimResult & { ok: false }): boolean {
  return result.reason === "nothing" || result.reason === "held_back";
}

export class HeldClaims {
  private readonly list: HeldClaim[] = [];

  get size(): number {
    return this.list.length;
  }

  /** Whether `nodeId` holds a claim open. */
  holds(nodeId: string): boolean {
    return this.list.some((held) => held.nodeId === nodeId);
  }

  /** Holds a claim from `now` for `waitMs`; its timer answers nothing when the hold ends. */
  hold(nodeId: string, jobId: string | null, now: number, waitMs: number): Promise<ClaimResult> {
    return new Promise((resolve) => {
      const held: HeldClaim = {
        nodeId,
        jobId,
        endsAt: now + waitMs,
        resolve,
        timer: setTimeout(() => this.release(held), waitMs),
      };
      this.list.push(held);
    });
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
