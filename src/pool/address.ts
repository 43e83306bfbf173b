// Where a pool's objects are (docs/protocol.md §2 and §15, docs/sharding.md §1):
// shard 0 of pool `P` is the object named "P" (the object every pool had
// before sharding), shard k ≥ 1 is "P/k". `/` never appears in a pool name,
// so a shard's name never collides with a pool's. The Worker and the
// objects address shards through this one module.

import type { PoolLocationRule } from "../rules/pool-location";
import { poolLocation } from "../rules/pool-location";
import type { PoolObject } from "./object";

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
export function shardStub(
  env: Env,
  rules: readonly PoolLocationRule[],
  pool: string,
  shard: number,
): DurableObjectStub<PoolObject> {
  const { jurisdiction, locationHint } = poolLocation(rules, pool, shard);
  const namespace = jurisdiction ? env.POOL.jurisdiction(jurisdiction) : env.POOL;
  return namespace.get(namespace.idFromName(shardName(pool, shard)), locationHint ? { locationHint } : undefined);
}
