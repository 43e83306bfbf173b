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
export type PoolLocationRule = { pattern: string; location: PoolLocation };

/**
 * `pattern=place[+place],…` → rules, or a message naming what is wrong. A
 * pattern is a pool name where `*` stands for any run of characters; a place
 * is a jurisdiction or a location hint (at most one of each). Empty or unset
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
    const pattern = eq < 0 ? "" : entry.slice(0, eq).trim();
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
    const location: PoolLocation = {};
    for (const place of places) {
      if (isOneOf(JURISDICTIONS, place) && location.jurisdiction === undefined) location.jurisdiction = place;
      else if (isOneOf(LOCATION_HINTS, place) && location.locationHint === undefined) location.locationHint = place;
      else {
        return `${where} names '${place}': use at most one jurisdiction (${JURISDICTIONS.join(", ")}) and one location hint (${LOCATION_HINTS.join(", ")})`;
      }
    }
    rules.push({ pattern, location });
  }
  return rules;
}

/** The location of the first rule whose pattern matches the whole pool name; {} when none does. */
export function poolLocation(rules: readonly PoolLocationRule[], pool: string): PoolLocation {
  return rules.find((rule) => globMatches(rule.pattern, pool))?.location ?? {};
}

/** Whether a `[a-z0-9*-]` pattern matches the whole name, `*` standing for any run. */
export function globMatches(pattern: string, name: string): boolean {
  // Patterns hold only [a-z0-9*-], so nothing but `*` needs translating.
  return new RegExp(`^${pattern.replaceAll("*", ".*")}$`).test(name);
}

function isOneOf<T extends string>(values: readonly T[], value: string): value is T {
  return (values as readonly string[]).includes(value);
}
