import { describe, expect, it } from "vitest";
import { parsePoolLocations, poolLocation } from "../../src/rules/pool-location";

describe("parsePoolLocations", () => {
  it.each([undefined, "", "   "])("%j means no rules: every pool lives near its first caller", (raw) => {
    expect(parsePoolLocations(raw)).toEqual([]);
  });

  it("reads patterns, jurisdictions and hints, in order", () => {
    expect(parsePoolLocations("eu-*=eu+weur, gov-*=fedramp-high, team-a=apac")).toEqual([
      { pattern: "eu-*", location: { jurisdiction: "eu", locationHint: "weur" } },
      { pattern: "gov-*", location: { jurisdiction: "fedramp-high" } },
      { pattern: "team-a", location: { locationHint: "apac" } },
    ]);
  });

  it("reads a shard range after the pattern, one shard or from-to", () => {
    expect(parsePoolLocations("big/0-63=enam, big/64=weur+eu, big=apac")).toEqual([
      { pattern: "big", shards: { from: 0, to: 63 }, location: { locationHint: "enam" } },
      { pattern: "big", shards: { from: 64, to: 64 }, location: { jurisdiction: "eu", locationHint: "weur" } },
      { pattern: "big", location: { locationHint: "apac" } },
    ]);
  });

  it.each([
    ["big/=enam", "has shards ''"],
    ["big/9-3=enam", "has shards '9-3'"],
    ["big/0-256=enam", "has shards '0-256'"],
    ["big/-1=enam", "has shards '-1'"],
    ["big/1-2-3=enam", "has shards '1-2-3'"],
    ["big/a=enam", "has shards 'a'"],
    ["big/ 1=enam", "has shards ' 1'"],
    ["/0-3=enam", "is not pattern=place"],
  ])("refuses the shard range of %j (%s)", (raw, problem) => {
    const result = parsePoolLocations(raw);
    expect(typeof result).toBe("string");
    expect(result).toContain(problem);
  });

  it.each([
    ["eu-*", "is not pattern=place"],
    ["=eu", "is not pattern=place"],
    ["EU-*=eu", "is not pattern=place"],
    ["eu-*=europe", "names 'europe'"],
    ["eu-*=EU", "names 'EU'"],
    ["eu-*=eu+fedramp", "names 'fedramp'"],
    ["eu-*=weur+enam", "names 'enam'"],
    ["eu-*=eu+", "names ''"],
    ["a=eu,,b=apac", "entry 2 is not pattern=place"],
  ])("refuses %j (%s)", (raw, problem) => {
    const result = parsePoolLocations(raw);
    expect(typeof result).toBe("string");
    expect(result).toContain(problem);
  });
});

describe("poolLocation", () => {
  const rules = parsePoolLocations("eu-*=eu+weur,*-gpu=enam,shared=apac,*=oc") as Exclude<
    ReturnType<typeof parsePoolLocations>,
    string
  >;

  it.each([
    ["eu-team", { jurisdiction: "eu", locationHint: "weur" }],
    ["eu-", { jurisdiction: "eu", locationHint: "weur" }],
    ["eu-team-gpu", { jurisdiction: "eu", locationHint: "weur" }], // the first match wins
    ["us-gpu", { locationHint: "enam" }],
    ["shared", { locationHint: "apac" }],
    ["shared-2", { locationHint: "oc" }], // a pattern matches the whole name, not a prefix
    ["local", { locationHint: "oc" }],
  ])("%s → %j", (pool, location) => {
    expect(poolLocation(rules, pool)).toEqual(location);
  });

  it("places each shard by the first rule that holds it; shard 0 by default", () => {
    const spread = parsePoolLocations("big/0-1=enam,big/2=weur+eu,big=apac,*=oc") as Exclude<
      ReturnType<typeof parsePoolLocations>,
      string
    >;
    expect([0, 1, 2, 3, 200].map((k) => poolLocation(spread, "big", k))).toEqual([
      { locationHint: "enam" },
      { locationHint: "enam" },
      { jurisdiction: "eu", locationHint: "weur" },
      { locationHint: "apac" },
      { locationHint: "apac" },
    ]);
    expect(poolLocation(spread, "big")).toEqual({ locationHint: "enam" });
    // A range narrows its own rule only: another pool's shards fall through to the rules after it.
    expect(poolLocation(spread, "small", 1)).toEqual({ locationHint: "oc" });
  });

  it("a pool no rule names has no placement", () => {
    expect(poolLocation(parsePoolLocations("eu-*=eu") as never, "team-a")).toEqual({});
  });
});
