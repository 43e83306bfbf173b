// Where a pool's summary is (docs/sharding.md §2.2, §6.2): one PoolSummary per
// pool of more than one shard, named with the pool's name (the SUMMARY
// namespace holds nothing else, so it shares shard 0's name without
// colliding), in the jurisdiction and near the location of shard 0.

import type { PoolLocationRule } from "../rules/pool-location";
import { poolLocation } from "../rules/pool-location";
import type { PoolSummary } from "./object";

/** The stub of `pool`'s summary, placed as shard 0 is (src/pool/address.ts shardStub). */
export function summaryStub(
  env: Env,
  rules: readonly PoolLocationRule[],
  pool: string,
): DurableObjectStub<PoolSummary> {
  const { jurisdiction, locationHint } = poolLocation(rules, pool);
  const namespace = jurisdiction ? env.SUMMARY.jurisdiction(jurisdiction) : env.SUMMARY;
  return namespace.get(namespace.idFromName(pool), locationHint ? { locationHint } : undefined);
}
