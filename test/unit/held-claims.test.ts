// Held claims (src/pool/claims/held-claims.ts): answered once each, in arrival
// order, and never leased once their hold has ended, whatever the timers do.

import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ClaimResult } from "../../src/pool/claims/claim-result";
import { HeldClaims } from "../../src/pool/claims/held-list";

const LEASE = { ok: true, lease: { lease_id: "ls-000000000001" } } as unknown as ClaimResult;
const NOTHING: ClaimResult = { ok: false, reason: "nothing" };

describe("held claims", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a claim whose hold has ended is answered with nothing, never tried, even before its timer fires", async () => {
    const held = new HeldClaims();
    const answer = held.hold("n1", null, 1_000, 500);
    const tried: string[] = [];
    const claim = (h: { nodeId: string }) => {
      tried.push(h.nodeId);
      return LEASE;
    };
    // Work appears just as the hold ends, but the timer is late (a busy object).
    const answered = held.retry(1_500, claim, () => true);
    expect(tried).toEqual([]);
    expect(answered.map(([h, r]) => [h.nodeId, r])).toEqual([["n1", NOTHING]]);
    held.take(answered);
    for (const [h, r] of answered) h.resolve(r);
    expect(await answer).toEqual(NOTHING);
    expect(held.size).toBe(0);
  });

  it("a claim still inside its hold is tried and leased; its timer then answers nothing more", async () => {
    const held = new HeldClaims();
    const answer = held.hold("n1", null, 1_000, 500);
    const answered = held.retry(
      1_499,
      () => LEASE,
      () => true,
    );
    held.take(answered);
    for (const [h, r] of answered) h.resolve(r);
    vi.advanceTimersByTime(1_000);
    expect(await answer).toBe(LEASE);
  });

  it("a change to one node tries that node's claims only", () => {
    const held = new HeldClaims();
    void held.hold("a", null, 0, 10_000);
    void held.hold("b", null, 0, 10_000);
    const tried: string[] = [];
    const claim = (h: { nodeId: string }) => {
      tried.push(h.nodeId);
      return NOTHING;
    };
    held.retry(1, claim, () => true, "b");
    expect(tried).toEqual(["b"]);
  });

  it("claims are tried in the order they arrived, not the order their searches ended", () => {
    const held = new HeldClaims();
    const a = held.arrive(); // a's search is slow: b arrives and is held first
    void held.hold("b", null, 0, 10_000);
    void held.hold("a", null, 0, 10_000, { arrived: a });
    void held.hold("c", null, 0, 10_000);
    const tried: string[] = [];
    held.retry(
      1,
      (h) => {
        tried.push(h.nodeId);
        return NOTHING;
      },
      () => true,
    );
    expect(tried).toEqual(["a", "b", "c"]);
    expect(held.waiting().map((h) => h.nodeId)).toEqual(["a", "b", "c"]);
  });

  it("a node's claims are answered with nothing when it is released (claimed again, revoked, replaced)", async () => {
    const held = new HeldClaims();
    const answer = held.hold("n1", null, 0, 10_000);
    expect(held.releaseNode("n1")).toBe(true);
    expect(held.releaseNode("n1")).toBe(false);
    expect(await answer).toEqual(NOTHING);
    expect(held.holds("n1")).toBe(false);
  });
});
