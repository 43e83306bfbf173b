// The gate as a home asks it of its held claims' nodes (docs/sharding.md
// §5.3, §6.3): whether each may take a class's work, for the forwards of
// held claims (src/pool/claims/forwarding.ts) and for the counts the digest tells
// the other homes (src/pool/shards/exchange.ts).

import { mostPending } from "../../rules/summary";
import { claimant, storedNodeView } from "../nodes/registry";
import type { Pool } from "../pool";
import { classGate } from "../scheduling/scheduling";

/** Whether this node passes the gate of a class's requirement, or null for a node unknown here. */
export type NodeGate = ((requirement: string) => boolean) | null;

export function gateOf(pool: Pool, nodeId: string): NodeGate {
  const { membership, owners } = pool.settings;
  const node = claimant(pool.sql, nodeId, owners);
  if (node === undefined) return null;
  const view = storedNodeView(node.registration, membership, node.assigned_pools);
  return (requirement) => classGate(requirement).eligible(view);
}

/**
 * How many classes pending elsewhere the digest counts held claims for: the
 * ones with the most pending tasks, where a burst draws the most forwards.
 * A class left out counts, at the other homes, as accepted by every held
 * claim here (fewer forwards, never more), and the digest stays O(1) in
 * the pool's classes: Σ sends it to every shard.
 */
export const COUNTED_CLASSES = 16;

/**
 * The claims held here for any job that accept each of the classes most
 * pending at other shards, by class key in key order, zeros included (a key
 * missing says "not counted"): the digest's `held.nodesByClass` (§6.1).
 */
export function heldByClass(pool: Pool, now: number): Record<string, number> {
  // With no claims held, a missing count and a zero say the same: nothing.
  if (pool.held.size === 0) return {};
  const counted = mostPending(pool.summary.classes(now), COUNTED_CLASSES);
  // No work elsewhere, nothing to count: an idle pool's ticks read no held claim's node (docs/protocol.md §16).
  if (counted.length === 0) return {};
  const gates = pool.held
    .waiting()
    .filter((held) => held.jobId === null)
    .map((held) => gateOf(pool, held.nodeId));
  const counts: Record<string, number> = {};
  for (const { key, requirement } of counted) counts[key] = gates.filter((accepts) => accepts?.(requirement)).length;
  return counts;
}
