// Where a new node is homed in a pool spread over locations (src/rules/homing.ts).

import { describe, expect, it } from "vitest";
import { locationGroups, nearestHints, nearestHome } from "../../src/rules/homing";
import { LOCATION_HINTS, type PoolLocationRule, parsePoolLocations } from "../../src/rules/pool-location";
import { jump } from "../../src/rules/shard-ids";

const rules = (raw: string) => parsePoolLocations(raw) as PoolLocationRule[];

describe("locationGroups", () => {
  it("groups a pool's shards by their hint, in the order the hints first appear", () => {
    expect(locationGroups(rules("big/0-1=enam,big/2-3=weur,big/4=enam"), "big", 6)).toEqual([
      { hint: "enam", shards: [0, 1, 4] },
      { hint: "weur", shards: [2, 3] },
    ]);
  });

  it("has none with one hint or none: no shard is nearer than another", () => {
    expect(locationGroups(rules("big=enam"), "big", 4)).toEqual([]);
    expect(locationGroups(rules("big/0-3=enam"), "big", 4)).toEqual([]);
    expect(locationGroups([], "big", 4)).toEqual([]);
    // Another pool's ranges are not this pool's.
    expect(locationGroups(rules("big/0-1=enam,big/2-3=weur"), "small", 4)).toEqual([]);
  });

  it("counts only the shards the pool has", () => {
    expect(locationGroups(rules("big/0-1=enam,big/2-3=weur"), "big", 2)).toEqual([]);
  });
});

describe("nearestHints", () => {
  it.each([
    [{ continent: "NA", longitude: -74 }, "enam"],
    [{ continent: "NA", longitude: -122.4 }, "wnam"],
    [{ continent: "NA", longitude: null }, "wnam"],
    [{ continent: "SA", longitude: -46 }, "sam"],
    [{ continent: "EU", longitude: 2.3 }, "weur"],
    [{ continent: "EU", longitude: 37.6 }, "eeur"],
    [{ continent: "AF", longitude: 3.4 }, "afr"],
    [{ continent: "AS", longitude: 55.3 }, "me"],
    [{ continent: "AS", longitude: 139.7 }, "apac"],
    [{ continent: "OC", longitude: 151.2 }, "oc"],
  ])("%j → %s first, every hint once", (locale, first) => {
    const order = nearestHints(locale);
    expect(order?.[0]).toBe(first);
    expect([...(order ?? [])].sort()).toEqual([...LOCATION_HINTS].sort());
  });

  it.each(["AN", "T1", "", "XX"])("%j names no place", (continent) => {
    expect(nearestHints({ continent, longitude: 0 })).toBeNull();
  });
});

describe("nearestHome", () => {
  const groups = locationGroups(rules("*/0-1=enam,*/2-3=weur"), "p", 4);
  const paris = { continent: "EU", longitude: 2.3 };

  it("homes a node in the nearest group, at its id's shard within it", () => {
    for (const id of ["a", "b", "c", "node-17", "rig-0042"]) {
      expect(nearestHome(id, paris, groups)).toBe([2, 3][jump(id, 2)]);
      expect(nearestHome(id, { continent: "NA", longitude: -74 }, groups)).toBe([0, 1][jump(id, 2)]);
    }
  });

  it("falls to the next nearest group when its own location has no shard", () => {
    // Tokyo: apac, oc and me have none here; eeur comes before weur, enam after.
    expect([2, 3]).toContain(nearestHome("rig", { continent: "AS", longitude: 139.7 }, groups));
    expect([0, 1]).toContain(nearestHome("rig", { continent: "SA", longitude: -46 }, groups));
  });

  it("has no answer without groups or without a place: the registry shard then homes it", () => {
    expect(nearestHome("rig", paris, [])).toBeNull();
    expect(nearestHome("rig", null, groups)).toBeNull();
    expect(nearestHome("rig", { continent: "T1", longitude: null }, groups)).toBeNull();
  });
});
