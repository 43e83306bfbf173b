// Claims whose home restarted while their forward was out (docs/sharding.md
// §13.1): the Worker asked the claim again under a new id, and the new home
// took over here whatever the old one had left (`claimLost`). A ticket of a
// lost claim that lands afterwards leases nothing: its home is gone, and
// the node's claim is being served again. In memory, as tickets are: a
// restart of this shard drops the tickets that were in flight to it too.

/** How long a claim stays lost: past the latest `notAfter` any of its tickets can carry (a 13 s hold + 1 s). */
export const LOST_KEPT_MS = 30_000;

export class LostClaims {
  private readonly until = new Map<string, number>();

  /** Claim `claimId` is lost from `now`. */
  add(claimId: string, now: number): void {
    for (const [id, until] of this.until) if (until <= now) this.until.delete(id);
    this.until.set(claimId, now + LOST_KEPT_MS);
  }

  has(claimId: string, now: number): boolean {
    return (this.until.get(claimId) ?? 0) > now;
  }
}
