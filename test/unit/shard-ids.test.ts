import { describe, expect, it } from "vitest";
import { randomHex12 } from "../../src/protocol/ids";
import {
  fnv1a32,
  fnv1a64,
  homeCandidates,
  jump,
  mintShardHex,
  registryShard,
  shardOfHex,
  shardOfId,
} from "../../src/rules/shard-ids";
import { Rng } from "../fixtures/rng";

const hex = (rng: Rng, n: number) => Array.from({ length: n }, () => rng.below(16).toString(16)).join("");

describe("FNV-1a (the known answers)", () => {
  it("32 bits", () => {
    expect(fnv1a32("")).toBe(0x811c9dc5);
    expect(fnv1a32("a")).toBe(0xe40c292c);
    expect(fnv1a32("foobar")).toBe(0xbf9cf968);
  });
  it("64 bits", () => {
    expect(fnv1a64("")).toBe(0xcbf29ce484222325n);
    expect(fnv1a64("a")).toBe(0xaf63dc4c8601ec8cn);
    expect(fnv1a64("foobar")).toBe(0x85944171f73967e8n);
  });
});

describe("ids that name their shard (docs/sharding.md §4.1)", () => {
  it("round-trips every shard of several pools, in the 12-hex wire shape", () => {
    const rng = new Rng(41);
    for (const pool of ["default", "big", "a-very-long-pool-name-0123456789"]) {
      for (let k = 0; k < 256; k++) {
        const id = mintShardHex(pool, k, hex(rng, 8));
        expect(id).toMatch(/^[0-9a-f]{12}$/);
        expect(shardOfHex(pool, id)).toBe(k);
        expect(shardOfId(pool, `ls-${id}`, "ls-", 256)).toEqual({ shard: k, legacy: false });
      }
    }
  });

  it("binds the tag to the pool: another pool's id mostly reads as legacy", () => {
    const rng = new Rng(42);
    let checks = 0;
    for (let i = 0; i < 10_000; i++) if (shardOfHex("b", mintShardHex("a", 3, hex(rng, 8))) !== null) checks++;
    expect(checks).toBeLessThan(10_000 / 256 + 40);
  });

  it("lets about 1 in 256 random (legacy) ids pass the tag check", () => {
    const rng = new Rng(43);
    let passed = 0;
    const draws = 1_000_000;
    for (let i = 0; i < draws; i++) if (shardOfHex("big", hex(rng, 12)) !== null) passed++;
    expect(passed / (draws / 256)).toBeGreaterThan(0.85);
    expect(passed / (draws / 256)).toBeLessThan(1.15);
  });

  it("routes a legacy id, a shard past the count and a malformed id to shard 0", () => {
    const legacy = (() => {
      for (;;) {
        const id = randomHex12();
        if (shardOfHex("big", id) === null) return id;
      }
    })();
    expect(shardOfId("big", legacy, "", 4)).toEqual({ shard: 0, legacy: true });
    expect(shardOfId("big", mintShardHex("big", 7, "0badcafe"), "", 4)).toEqual({ shard: 0, legacy: true });
    expect(shardOfId("big", mintShardHex("big", 3, "0badcafe"), "", 4)).toEqual({ shard: 3, legacy: false });
    expect(shardOfId("big", `ck-${mintShardHex("big", 3, "0badcafe")}`, "ls-", 4)).toEqual({ shard: 0, legacy: true });
    expect(shardOfId("big", "not-an-id", "", 4)).toEqual({ shard: 0, legacy: true });
  });

  it("reads nothing off an id at one shard", () => {
    expect(shardOfId("big", mintShardHex("big", 3, "0badcafe"), "", 1)).toEqual({ shard: 0, legacy: false });
  });

  it("refuses to mint from a bad draw or for a shard that cannot exist", () => {
    expect(() => mintShardHex("p", 0, "xyz")).toThrow(RangeError);
    expect(() => mintShardHex("p", 256, "00000000")).toThrow(RangeError);
  });
});

describe("jump consistent hash (docs/sharding.md §4.2)", () => {
  it("moves a key only into the new buckets when the count grows", () => {
    const rng = new Rng(44);
    const keys = Array.from({ length: 2_000 }, () => `node-${hex(rng, 10)}`);
    for (const key of keys) {
      let before = jump(key, 1);
      expect(before).toBe(0);
      for (let s = 2; s <= 256; s++) {
        const now = jump(key, s);
        expect(now === before || now === s - 1).toBe(true);
        before = now;
      }
    }
  });

  it("spreads 100,000 node ids over 256 shards with max/mean ≤ 1.25", () => {
    const counts = new Array<number>(256).fill(0);
    for (let i = 0; i < 100_000; i++) counts[registryShard(`gpu-box-${i}`, 256)]!++;
    expect(Math.max(...counts) / (100_000 / 256)).toBeLessThanOrEqual(1.25);
    expect(Math.min(...counts)).toBeGreaterThan(0);
  });

  it("refuses a bucket count below 1", () => {
    expect(() => jump("x", 0)).toThrow(RangeError);
  });
});

describe("where a node may already live (docs/sharding.md §4.2)", () => {
  /** A node id whose registry shard is `k` in a pool of `shards`. */
  const nodeAt = (k: number, shards: number) => {
    for (let i = 0; ; i++) if (registryShard(`n-${i}`, shards) === k) return `n-${i}`;
  };

  it("a pool that never changed its count asks shard 0 only, and nobody when it is shard 0", () => {
    expect(homeCandidates(nodeAt(3, 4), [4])).toEqual([0]);
    expect(homeCandidates(nodeAt(0, 4), [4])).toEqual([]);
    expect(homeCandidates("anything", [1])).toEqual([]);
  });

  it("after raises, each earlier registry shard newest first, then shard 0, each once", () => {
    for (let i = 0; i < 2_000; i++) {
      const node = `box-${i}`;
      const chain = homeCandidates(node, [1, 4, 16, 64]);
      const expected = [jump(node, 16), jump(node, 4), 0].filter((k, j, all) => all.indexOf(k) === j);
      expect(chain).toEqual(expected.filter((k) => k !== jump(node, 64)));
      expect(chain.length).toBeLessThanOrEqual(3);
    }
  });

  it("leaves out shards a lowering removed: they were empty", () => {
    for (let i = 0; i < 2_000; i++) {
      const chain = homeCandidates(`box-${i}`, [16, 4]);
      expect(chain.every((k) => k < 4)).toBe(true);
      // Jump hash keeps a key below the new count where it was: nothing but shard 0 to ask.
      expect(chain).toEqual(jump(`box-${i}`, 4) === 0 ? [] : [0]);
    }
  });
});
