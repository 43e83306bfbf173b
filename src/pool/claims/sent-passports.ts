// The passports a home has out at other shards while a claim they carry may
// still lease there (docs/sharding.md §8.1): one per forward in flight,
// held (parked at a job's shard for its hold) or not. A change at home that
// moves such a node's passport_version (a drain, a hold, distrust, its team
// pools, its credential) pushes the new passport to those shards before the
// change's caller is answered (src/pool/claims/forwarding.ts `pushPassports`), so
// no shard leases on a copy that an answered change has outdated. In
// memory: a forward does not outlive the object that sent it.

type Out = { version: number; forwards: number };

export class SentPassports {
  private readonly out = new Map<string, Map<number, Out>>();

  get size(): number {
    return this.out.size;
  }

  /** Whether a forward of `nodeId`'s claim is in flight. */
  has(nodeId: string): boolean {
    return this.out.has(nodeId);
  }

  /** A forward of `nodeId`'s claim to shard k with its passport at `version`; the returned call ends it (once). */
  add(nodeId: string, k: number, version: number): () => void {
    const shards = this.out.get(nodeId) ?? new Map<number, Out>();
    this.out.set(nodeId, shards);
    const out = shards.get(k) ?? { version, forwards: 0 };
    shards.set(k, out);
    out.version = Math.max(out.version, version);
    out.forwards += 1;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      out.forwards -= 1;
      if (out.forwards > 0) return;
      shards.delete(k);
      if (shards.size === 0) this.out.delete(nodeId);
    };
  }

  /**
   * The nodes whose passport at home (`versions`: node → passport_version)
   * is newer than one they have out, with the shards to push it to; those
   * shards count as holding it from now.
   */
  outdated(versions: ReadonlyMap<string, number>): Array<{ nodeId: string; shards: number[] }> {
    const stale: Array<{ nodeId: string; shards: number[] }> = [];
    for (const [nodeId, shards] of this.out) {
      const version = versions.get(nodeId);
      if (version === undefined) continue;
      const behind = [...shards].filter(([, out]) => out.version < version);
      for (const [, out] of behind) out.version = version;
      if (behind.length > 0) stale.push({ nodeId, shards: behind.map(([k]) => k) });
    }
    return stale;
  }

  /** The nodes with a forward in flight. */
  nodes(): string[] {
    return [...this.out.keys()];
  }
}
