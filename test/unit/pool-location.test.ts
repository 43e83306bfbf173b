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

  it("a pool no rule names has no placement", () => {
    expect(poolLocation(parsePoolLocations("eu-*=eu") as never, "team-a")).toEqual({});
  });
});
