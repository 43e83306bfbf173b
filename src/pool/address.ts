// Where a pool's objects are (docs/protocol.md §2 and §15, docs/sharding.md §1):
// shard 0 of pool `P` is the object named "P" (the object every pool had
// before sharding), shard k ≥ 1 is "P/k". `/` never appears in a pool name,
// so a shard's name never collides with a pool's. The Worker and the
// objects address shards through this one module.

import type { PoolLocationRule } from "../rules/pool-location";
import { poolLocation } from "../rules/pool-location";
import type { ShardPeer } from "./contract";

/** The object name of shard `shard` of `pool`. */
export function shardName(pool: string, shard: number): string {
  return shard === 0 ? pool : `${pool}/${shard}`;
}

/** The pool and shard an object name stands for; a name without `/k` is shard 0. */
export function shardOfName(name: string): { pool: string; shard: number } {
  const match = /^(.*)\/([1-9]\d{0,2})$/.exec(name);
  return match ? { pool: match[1]!, shard: Number(match[2]) } : { pool: name, shard: 0 };
}

/**
 * The stub of one shard of `pool`, in the jurisdiction and near the location
 * its rule names. A jurisdiction is part of the object's identity: the same
 * pool name in another jurisdiction is another, empty object.
 */
export function shardStub(env: Env, rules: readonly PoolLocationRule[], pool: string, shard: number) {
  const { jurisdiction, locationHint } = poolLocation(rules, pool, shard);
  const namespace = jurisdiction ? env.POOL.jurisdiction(jurisdiction) : env.POOL;
  return namespace.get(namespace.idFromName(shardName(pool, shard)), locationHint ? { locationHint } : undefined);
}

/**
 * The peer surface of one shard of `pool` (src/pool/contract.ts): what one
 * object calls on another, and the Worker's credential check.
 */
export function shardPeer(env: Env, rules: readonly PoolLocationRule[], pool: string, shard: number): ShardPeer {
  // Typed as the contract the object's peer() target implements, not as the RPC stub of that class.
  return shardStub(env, rules, pool, shard).peer() as unknown as ShardPeer;
}

/** A shard's peers: one at a time, or every other shard at once with each answer as a value. */
export class ShardPeers {
  constructor(
    readonly env: Env,
    readonly rules: readonly PoolLocationRule[],
    readonly pool: string,
    readonly self: number,
    readonly count: number,
  ) {}

  /** Shard `shard`'s peer surface. */
  at(shard: number): ShardPeer {
    return shardPeer(this.env, this.rules, this.pool, shard);
  }

  /** Every shard of the pool but this one. */
  others(): number[] {
    return Array.from({ length: this.count }, (_, k) => k).filter((k) => k !== this.self);
  }

  /** `call` at each of `shards` at once; each shard's answer or failure as a value, in order. */
  all<T>(
    shards: readonly number[],
    call: (peer: ShardPeer, shard: number) => Promise<T>,
  ): Promise<Array<PromiseSettledResult<T> & { shard: number }>> {
    return Promise.all(
      shards.map((k) =>
        call(this.at(k), k).then(
          (value) => ({ status: "fulfilled" as const, value, shard: k }),
          (reason: unknown) => ({ status: "rejected" as const, reason, shard: k }),
        ),
      ),
    );
  }
}
