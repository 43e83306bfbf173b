// The pool-wide reads of a sharded pool (docs/sharding.md §10): every shard
// visited in parallel, and the node answers that say, for the pending work
// of all shards, whether any shard's nodes can take it. Only called at S > 1:
// a one-shard pool makes its one call, as before sharding.

import { combineAnswers, type NodeAnswers } from "../rules/shard-merge";
import type { AppContext } from "./context";
import type { PoolCalls } from "./shards";

/** `read` of every shard, in parallel, in shard order. */
export function everyShard<T>(c: AppContext, read: (calls: PoolCalls, k: number) => Promise<T>): Promise<T[]> {
  return c.var.shards.every(read);
}

/**
 * What the pool's nodes say of every shard's pending classes, in two passes:
 * each shard names its pending classes (bounded), then each shard's nodes
 * answer for all of them. A task is stuck, a class unservable, only
 * if no node of any shard accepts it.
 */
export async function poolNodeAnswers(c: AppContext): Promise<NodeAnswers> {
  const pending = await everyShard(c, (calls) => calls.pendingClasses());
  // A class pending on several shards is asked about once.
  const classes = [...new Map(pending.flat().map((p) => [p.key, p])).values()];
  return combineAnswers(await everyShard(c, (calls) => calls.nodeAnswers(classes)));
}
