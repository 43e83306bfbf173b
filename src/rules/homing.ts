// Where a new node is homed in a pool whose shards span locations
// (docs/protocol.md §15, docs/sharding.md §4.2), pure: the shards fall into
// location groups by their location hint (FLASHML_POOL_LOCATIONS with
// shard ranges), and a node is homed in the group nearest its first
// request, at the shard its id hashes to within the group. No groups (one
// location, or none named) or no locale: its registry shard, as ever.

import { type LocationHint, type PoolLocationRule, poolLocation } from "./pool-location";
import { jump } from "./shard-ids";

/** Where a request came from, as Cloudflare tells the Worker (`request.cf`). */
export type Locale = { continent: string; longitude: number | null };

/** A pool's shards that share a location hint, in shard order. */
export type LocationGroup = { hint: LocationHint; shards: number[] };

/**
 * The location groups of `pool`'s `shards` shards: the shards with a hint,
 * by hint, in the order the hints first appear. None when fewer than two
 * hints are named: there is no nearer shard to choose.
 */
export function locationGroups(rules: readonly PoolLocationRule[], pool: string, shards: number): LocationGroup[] {
  const groups = new Map<LocationHint, number[]>();
  for (let k = 0; k < shards; k++) {
    const { locationHint } = poolLocation(rules, pool, k);
    if (locationHint !== undefined) groups.set(locationHint, [...(groups.get(locationHint) ?? []), k]);
  }
  return groups.size < 2 ? [] : [...groups].map(([hint, members]) => ({ hint, shards: members }));
}

/**
 * The location hints nearest first for a request from `locale`, every hint
 * once; null for a continent Cloudflare names that has no hint near it
 * (Antarctica, Tor) or one it does not know. North America and Europe split
 * at longitude -100 and 20.
 */
export function nearestHints(locale: Locale): LocationHint[] | null {
  const east = (split: number) => locale.longitude !== null && locale.longitude > split;
  switch (locale.continent) {
    case "NA":
      return east(-100)
        ? ["enam", "wnam", "sam", "weur", "eeur", "afr", "me", "apac", "oc"]
        : ["wnam", "enam", "sam", "apac", "oc", "weur", "eeur", "me", "afr"];
    case "SA":
      return ["sam", "enam", "wnam", "weur", "afr", "eeur", "me", "apac", "oc"];
    case "EU":
      return east(20)
        ? ["eeur", "weur", "me", "afr", "apac", "enam", "wnam", "sam", "oc"]
        : ["weur", "eeur", "afr", "me", "enam", "wnam", "sam", "apac", "oc"];
    case "AF":
      return ["afr", "weur", "me", "eeur", "sam", "enam", "apac", "wnam", "oc"];
    case "AS":
      // West of the Indus the Middle East is nearer than Asia-Pacific.
      return locale.longitude !== null && locale.longitude < 62
        ? ["me", "eeur", "afr", "weur", "apac", "oc", "enam", "wnam", "sam"]
        : ["apac", "oc", "me", "eeur", "wnam", "weur", "enam", "afr", "sam"];
    case "OC":
      return ["oc", "apac", "wnam", "enam", "sam", "me", "eeur", "weur", "afr"];
    default:
      return null;
  }
}

/**
 * The shard a node no shard holds is homed at, by its first request: in the
 * group nearest `locale`, `jump(node_id, |group|)` within it; null when the
 * pool has no groups or the locale names no place (then: its registry shard).
 */
export function nearestHome(nodeId: string, locale: Locale | null, groups: readonly LocationGroup[]): number | null {
  if (groups.length === 0 || locale === null) return null;
  const order = nearestHints(locale);
  if (order === null) return null;
  const group = order.map((hint) => groups.find((g) => g.hint === hint)).find((g) => g !== undefined);
  return group === undefined ? null : group.shards[jump(nodeId, group.shards.length)]!;
}
