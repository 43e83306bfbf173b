// How many Durable Objects ("shards") one pool spans (docs/protocol.md §15,
// docs/sharding.md §3), pure. `FLASHML_POOL_SHARDS` is `pattern=count,…`
// with the patterns of FLASHML_POOL_LOCATIONS; the first match wins and a
// pool no rule matches has one shard, which is today's pool exactly. A
// value that cannot be read refuses every request: a typo must never
// address a pool over a different set of objects than it was written to.

import { globMatches } from "./pool-location";
import { nameValueList } from "./setting-lists";

/** The most shards one pool may span: a shard's index fits one byte of its ids (src/rules/shard-ids.ts). */
export const MAX_POOL_SHARDS = 256;

export type PoolShardRule = { pattern: string; shards: number };

/** `pattern=count,…` → rules, or a message naming the entry that is wrong. Empty or unset: no rules. */
export function parsePoolShards(raw: string | undefined): PoolShardRule[] | string {
  const entries = nameValueList(raw, "=");
  if ("bad" in entries) return refusal(entries.bad);
  const wrong = entries.findIndex((e) => !validEntry(e.name, e.value));
  if (wrong >= 0) return refusal(wrong + 1);
  return entries.map((e) => ({ pattern: e.name, shards: Number(e.value) }));
}

function refusal(entry: number): string {
  return `FLASHML_POOL_SHARDS entry ${entry} is not pattern=count (a pool name pattern with '*', then a shard count from 1 to ${MAX_POOL_SHARDS})`;
}

function validEntry(pattern: string, count: string): boolean {
  return /^[a-z0-9*-]{1,63}$/.test(pattern) && /^[1-9]\d{0,2}$/.test(count) && Number(count) <= MAX_POOL_SHARDS;
}

/** The shard count of the first rule whose pattern matches the whole pool name; 1 when none does. */
export function shardCount(rules: readonly PoolShardRule[], pool: string): number {
  return rules.find((rule) => globMatches(rule.pattern, pool))?.shards ?? 1;
}
