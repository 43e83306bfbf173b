// Where a pool's Durable Object lives (docs/protocol.md §2), pure. Agents are worldwide
// and an object is created near its first caller; an operator pins pools by
// name pattern in `FLASHML_POOL_LOCATIONS`, read here and applied by the
// Worker when it addresses the object. A setting that cannot be read
// refuses every request: a typo must never create an `eu` pool outside the
// EU.

/** Jurisdictions keep an object's data inside a region (and change its id). */
export const JURISDICTIONS = ["eu", "fedramp", "fedramp-high"] as const;
/** Location hints place a new object near a region (no effect once it exists). */
export const LOCATION_HINTS = ["wnam", "enam", "sam", "weur", "eeur", "apac", "oc", "afr", "me"] as const;

export type Jurisdiction = (typeof JURISDICTIONS)[number];
export type LocationHint = (typeof LOCATION_HINTS)[number];
export type PoolLocation = { jurisdiction?: Jurisdiction; locationHint?: LocationHint };
/** A rule's shards, from and to (inclusive); a rule without one holds every shard of its pools. */
export type ShardRange = { from: number; to: number };
export type PoolLocationRule = { pattern: string; shards?: ShardRange; location: PoolLocation };

/**
 * `pattern[/shards]=place[+place],…` → rules, or a message naming what is
 * wrong. A pattern is a pool name where `*` stands for any run of
 * characters; `/shards` (`/k` or `/from-to`, 0–255) narrows the rule to
 * those shards of a pool of shards (docs/protocol.md §15); a place is a
 * jurisdiction or a location hint (at most one of each). Empty or unset
 * means no rules: every pool lives near its first caller.
 */
export function parsePoolLocations(raw: string | undefined): PoolLocationRule[] | string {
  if (raw === undefined || raw.trim() === "") return [];
  const rules: PoolLocationRule[] = [];
  const entries = raw.split(",");
  for (let i = 0; i < entries.length; i++) {
    const where = `FLASHML_POOL_LOCATIONS entry ${i + 1}`;
    const entry = entries[i]!.trim();
    const eq = entry.indexOf("=");
    const [pattern = "", range] = (eq < 0 ? "" : entry.slice(0, eq).trim()).split("/", 2);
    const places =
      eq < 0
        ? []
        : entry
            .slice(eq + 1)
            .split("+")
            .map((p) => p.trim());
    if (!/^[a-z0-9*-]{1,63}$/.test(pattern) || places.length === 0) {
      return `${where} is not pattern=place (a pool name pattern with '*', then a jurisdiction or location hint)`;
    }
    const shards = range === undefined ? undefined : shardRange(range);
    if (shards === null) {
      return `${where} has shards '${range}': use /k or /from-to, from 0 to 255, from no later than to`;
    }
    const location: PoolLocation = {};
    for (const place of places) {
      if (isOneOf(JURISDICTIONS, place) && location.jurisdiction === undefined) location.jurisdiction = place;
      else if (isOneOf(LOCATION_HINTS, place) && location.locationHint === undefined) location.locationHint = place;
      else {
        return `${where} names '${place}': use at most one jurisdiction (${JURISDICTIONS.join(", ")}) and one location hint (${LOCATION_HINTS.join(", ")})`;
      }
    }
    rules.push(shards === undefined ? { pattern, location } : { pattern, shards, location });
  }
  return rules;
}

/** `k` or `from-to` as a shard range, or null. */
function shardRange(text: string): ShardRange | null {
  const m = /^(\d{1,3})(?:-(\d{1,3}))?$/.exec(text);
  if (m === null) return null;
  const from = Number(m[1]);
  const to = m[2] === undefined ? from : Number(m[2]);
  return from <= to && to <= 255 ? { from, to } : null;
}

/**
 * The location of shard `shard` of `pool` (0 for a pool of one object, and
 * for what lives with shard 0): the first rule whose pattern matches the
 * whole pool name and whose shards, if it names any, hold the shard; {}
 * when none does.
 */
export function poolLocation(rules: readonly PoolLocationRule[], pool: string, shard = 0): PoolLocation {
  const holds = (rule: PoolLocationRule) =>
    rule.shards === undefined || (rule.shards.from <= shard && shard <= rule.shards.to);
  return rules.find((rule) => globMatches(rule.pattern, pool) && holds(rule))?.location ?? {};
}

/** Whether a `[a-z0-9*-]` pattern matches the whole name, `*` standing for any run. */
export function globMatches(pattern: string, name: string): boolean {
  // Patterns hold only [a-z0-9*-], so nothing but `*` needs translating.
  return new RegExp(`^${pattern.replaceAll("*", ".*")}$`).test(name);
}

function isOneOf<T extends string>(values: readonly T[], value: string): value is T {
  return (values as readonly string[]).includes(value);
}
