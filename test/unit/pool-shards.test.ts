import { describe, expect, it } from "vitest";
import { MAX_POOL_SHARDS, parsePoolShards, shardCount } from "../../src/rules/pool-shards";
import { readSettings } from "../../src/rules/settings";

describe("FLASHML_POOL_SHARDS (docs/protocol.md §15)", () => {
  it("is no rules when unset or empty, so every pool has one shard", () => {
    for (const raw of [undefined, "", "  "]) {
      const rules = parsePoolShards(raw);
      expect(rules).toEqual([]);
      expect(shardCount(rules as [], "default")).toBe(1);
    }
  });

  it("gives the first matching pattern's count, the whole name matched", () => {
    const rules = parsePoolShards("big=16, big-*=4, *=2");
    expect(rules).toEqual([
      { pattern: "big", shards: 16 },
      { pattern: "big-*", shards: 4 },
      { pattern: "*", shards: 2 },
    ]);
    if (typeof rules === "string") throw new Error(rules);
    expect(shardCount(rules, "big")).toBe(16);
    expect(shardCount(rules, "big-eu")).toBe(4);
    expect(shardCount(rules, "bigger")).toBe(2);
    expect(shardCount(parsePoolShards("big=16") as [], "small")).toBe(1);
  });

  it("accepts counts from 1 to 256", () => {
    expect(parsePoolShards("a=1")).toEqual([{ pattern: "a", shards: 1 }]);
    expect(parsePoolShards(`a=${MAX_POOL_SHARDS}`)).toEqual([{ pattern: "a", shards: 256 }]);
  });

  it.each([
    ["a=0", 1],
    ["a=257", 1],
    ["a=016", 1],
    ["a=1.5", 1],
    ["a=-2", 1],
    ["a= ", 1],
    ["a", 1],
    ["=4", 1],
    ["A=4", 1],
    ["a/1=4", 1],
    ["a=4,,b=2", 2],
    ["a=4,b=x", 2],
  ])("refuses %j naming entry %i", (raw, entry) => {
    expect(parsePoolShards(raw)).toBe(
      `FLASHML_POOL_SHARDS entry ${entry} is not pattern=count (a pool name pattern with '*', then a shard count from 1 to 256)`,
    );
  });

  it("refuses the coordinator's settings when malformed, and reads them otherwise", () => {
    expect(readSettings({ FLASHML_POOL_SHARDS: "big=0" })).toEqual({
      ok: false,
      detail: expect.stringContaining("FLASHML_POOL_SHARDS entry 1"),
    });
    const read = readSettings({ FLASHML_POOL_SHARDS: "big=4" });
    expect(read.ok && read.settings.poolShards).toEqual([{ pattern: "big", shards: 4 }]);
  });
});
