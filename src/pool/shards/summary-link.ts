// Where a shard's exchanges with the pool summary stand (docs/sharding.md
// §6.2), in memory: the allowance, the digests built and acknowledged, the
// ticks' times. The exchanges themselves are in src/pool/shards/exchange.ts.

import { type DigestContents, nextDigest } from "../../rules/digest";
import type { ExchangeReply, ShardDigest } from "../../rules/summary";
import type { StoredDigest } from "./digest";

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
  /** What the digest last read from SQL, when, and the object's rows written then (src/pool/shards/exchange.ts). */
  stored: { at: number; written: number; digest: StoredDigest } | null = null;

  /** The digest now; a change of its contents is a change for the ticks. */
  read(contents: DigestContents, shard: number, now: number): ShardDigest {
    const next = nextDigest(this.built, shard, this.instance, contents);
    if (next.version !== this.built?.version) this.changedMs = now;
    this.built = next;
    return next;
  }
}
