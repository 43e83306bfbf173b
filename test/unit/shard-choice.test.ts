// Which shard serves a claim and which takes a submission (docs/sharding.md
// §7.1, §7.4, §15.1): strict priority, the local preference, the tenant
// furthest behind first, two weighted choices among equals and their
// tie-breaks, the `tried` exclusion, tenants' passes, and the two-choice
// placement bound of docs/protocol.md §15.

import { describe, expect, it } from "vitest";
import { chooseShard, type Offer, placeSubmission, shardOffers, twoDistinct } from "../../src/rules/shard-choice";
import { Rng } from "../fixtures/rng";

const offer = (shard: number, priority: number, tenantPass: number, eligible = 1, weight = 1): Offer => ({
  shard,
  priority,
  tenantPass,
  weight,
  eligible,
});
const NONE_TRIED: ReadonlySet<number> = new Set();
/** A `random` that answers these values in turn, then fails the test: every draw is accounted for. */
function draws(...values: number[]): () => number {
  return () => {
    const v = values.shift();
    if (v === undefined) throw new Error("chooseShard drew more than the test expected");
    return v;
  };
}
const seeded = (seed: number) => {
  const rng = new Rng(seed);
  return () => rng.next();
};

describe("strict priority across offers", () => {
  it("forwards past local work to a shard with higher-priority work, however far behind its tenant is", () => {
    const choice = chooseShard([offer(3, 5, 1000)], 0, offer(0, 0, 0), NONE_TRIED, draws());
    expect(choice).toEqual({ kind: "forward", shard: 3 });
  });

  it("serves locally when the home has the highest priority, whatever the other tenants' passes", () => {
    const choice = chooseShard([offer(1, 4, 0), offer(2, 4, 0)], 0, offer(0, 5, 1000), NONE_TRIED, draws());
    expect(choice).toEqual({ kind: "local" });
  });

  it("picks only among the shards at the top priority", () => {
    // Shard 1 at priority 1 has far more work and a lower pass, but shard 2 alone offers priority 2.
    const choice = chooseShard([offer(1, 1, 0, 500), offer(2, 2, 9, 1)], 0, null, NONE_TRIED, draws());
    expect(choice).toEqual({ kind: "forward", shard: 2 });
  });

  it("answers none when nothing anywhere is eligible", () => {
    expect(chooseShard([], 0, null, NONE_TRIED, draws())).toEqual({ kind: "none" });
    expect(chooseShard([offer(1, 3, 0, 0)], 0, offer(0, 3, 0, 0), NONE_TRIED, draws())).toEqual({ kind: "none" });
  });

  it("the home's exact offer replaces the summary's entry for it", () => {
    // The summary still shows the home with priority-9 work it no longer has.
    expect(chooseShard([offer(0, 9, 0, 50), offer(1, 2, 0)], 0, null, NONE_TRIED, draws(0))).toEqual({
      kind: "forward",
      shard: 1,
    });
    expect(chooseShard([offer(0, 9, 0, 50)], 0, null, NONE_TRIED, draws())).toEqual({ kind: "none" });
    // And a local offer the summary has not seen yet is served.
    expect(chooseShard([offer(0, 0, 0, 0)], 0, offer(0, 1, 0), NONE_TRIED, draws())).toEqual({ kind: "local" });
  });
});

describe("the local preference", () => {
  it.each([
    // local pass, its weight, lowest other pass, expected
    [1.0, 1, 0.5, "local"], // half a claim ahead: within one claim's worth
    [1.5, 1, 0.5, "local"], // exactly one claim ahead
    [1.51, 1, 0.5, "forward"], // more than one claim ahead
    [0.8, 4, 0.5, "forward"], // weight 4: a claim is worth 0.25
    [0.75, 4, 0.5, "local"],
    [0, 1, 3, "local"], // the home's tenant is behind
    [10, 0.1, 0.5, "local"], // weight 0.1: a claim is worth 10
  ])("local pass %f (weight %f) against a lowest other of %f: %s", (local, weight, other, kind) => {
    const choice = chooseShard(
      [offer(1, 0, other), offer(2, 0, other + 5)],
      0,
      offer(0, 0, local, 1, weight),
      NONE_TRIED,
      draws(0, 0),
    );
    expect(choice.kind).toBe(kind);
  });

  it("a tenant's work at another shard it has served less gets the claim, so the tenant's shards take turns", () => {
    const served = (o: Offer, n: number): Offer => ({ ...o, served: n });
    // Same tenant, same pass: the home got it 3 claims here and none at shard 2, so it forwards there.
    expect(chooseShard([served(offer(2, 0, 5), 0)], 0, served(offer(0, 0, 5), 3), NONE_TRIED, draws())).toEqual({
      kind: "forward",
      shard: 2,
    });
    // Served as much there as here: the home keeps the claim.
    expect(chooseShard([served(offer(2, 0, 5), 3)], 0, served(offer(0, 0, 5), 3), NONE_TRIED, draws())).toEqual({
      kind: "local",
    });
    // A tenant further ahead elsewhere is not owed the claim, however little it was served there.
    expect(chooseShard([served(offer(2, 0, 5.5), 0)], 0, served(offer(0, 0, 5), 3), NONE_TRIED, draws())).toEqual({
      kind: "local",
    });
    // Between two drawn shards at equal passes, the one served less.
    const two = [served(offer(1, 0, 5, 1), 4), served(offer(2, 0, 5, 1), 1)];
    expect(chooseShard(two, 0, null, NONE_TRIED, draws(0, 0))).toEqual({ kind: "forward", shard: 2 });
  });

  it("compares with the lowest pass among the others at the top priority only", () => {
    // A far-behind tenant at a lower priority does not pull the claim away.
    const choice = chooseShard([offer(1, -1, 0), offer(2, 0, 4.5)], 0, offer(0, 0, 5), NONE_TRIED, draws());
    expect(choice).toEqual({ kind: "local" });
  });
});

describe("two weighted choices", () => {
  it("forwards to the shard whose tenant is furthest behind, with no draw when only one is", () => {
    const offers = [offer(1, 0, 3), offer(2, 0, 1), offer(3, 0, 2)];
    expect(chooseShard(offers, 0, null, NONE_TRIED, draws())).toEqual({ kind: "forward", shard: 2 });
  });

  it("draws only among the shards whose tenants are furthest behind, so no sample lets a tenant run ahead", () => {
    // Shards 1 and 2 hold the tenant ahead, 5 and 6 the one behind; weighted draws 0, 0 would take shards 1 and 2.
    const offers = [offer(1, 0, 4, 100), offer(2, 0, 4, 100), offer(5, 0, 1, 1), offer(6, 0, 1, 1)];
    expect(chooseShard(offers, 0, null, NONE_TRIED, draws(0, 0))).toEqual({ kind: "forward", shard: 5 });
    // Sums of 1/weight that are equal in arithmetic are equal here, though not in floating point.
    const thirds = [offer(1, 0, 1 / 3 + 1 / 3 + 1 / 3, 1), offer(2, 0, 1, 5)];
    expect(chooseShard(thirds, 0, null, NONE_TRIED, draws(0, 0))).toEqual({ kind: "forward", shard: 2 });
  });

  it("at equal passes goes to the larger eligible count, then to the lower shard", () => {
    const counts = [offer(4, 0, 1, 2), offer(7, 0, 1, 6)];
    expect(chooseShard(counts, 0, null, NONE_TRIED, draws(0, 0))).toEqual({ kind: "forward", shard: 7 });
    expect(chooseShard(counts, 0, null, NONE_TRIED, draws(0.99, 0))).toEqual({ kind: "forward", shard: 7 });
    const equal = [offer(7, 0, 1, 3), offer(4, 0, 1, 3)];
    expect(chooseShard(equal, 0, null, NONE_TRIED, draws(0.99, 0))).toEqual({ kind: "forward", shard: 4 });
    expect(chooseShard(equal, 0, null, NONE_TRIED, draws(0, 0))).toEqual({ kind: "forward", shard: 4 });
  });

  it("draws candidates in proportion to their eligible counts", () => {
    // Equal passes: the larger count wins whenever it is drawn, so how often it wins shows how it is drawn.
    const offers = [offer(1, 0, 0, 1), offer(2, 0, 0, 1), offer(3, 0, 0, 98)];
    const random = seeded(27);
    let big = 0;
    for (let i = 0; i < 2000; i++) {
      const choice = chooseShard(offers, 0, null, NONE_TRIED, random);
      if (choice.kind === "forward" && choice.shard === 3) big++;
    }
    // Drawn by weight it is in nearly every pair (≈ 99.98%); drawn uniformly, in 2 of 3.
    expect(big / 2000).toBeGreaterThan(0.99);
  });

  it("a single candidate is forwarded to without a draw", () => {
    expect(chooseShard([offer(5, 0, 0, 3)], 0, null, NONE_TRIED, draws())).toEqual({ kind: "forward", shard: 5 });
  });
});

describe("the tried exclusion", () => {
  it("never forwards to a tried shard, even the only one with work", () => {
    expect(chooseShard([offer(1, 0, 0)], 0, null, new Set([1]), draws())).toEqual({ kind: "none" });
    const random = seeded(3);
    for (let i = 0; i < 200; i++) {
      const choice = chooseShard([offer(1, 0, 0, 50), offer(2, 0, 9), offer(3, 0, 9)], 0, null, new Set([1]), random);
      expect(choice.kind === "forward" && choice.shard !== 1).toBe(true);
    }
  });

  it("a tried shard's higher priority no longer outranks the home's own work", () => {
    const choice = chooseShard([offer(1, 7, 0)], 0, offer(0, 2, 50), new Set([1]), draws());
    expect(choice).toEqual({ kind: "local" });
  });

  it("a tried shard's low pass no longer keeps the claim from being served at home", () => {
    const choice = chooseShard([offer(1, 0, 0), offer(2, 0, 40)], 0, offer(0, 0, 30), new Set([1]), draws());
    expect(choice).toEqual({ kind: "local" });
  });
});

describe("tenants' passes decide", () => {
  // The home (shard 0) and three shards, all at priority 0; each shard's best tenant's global pass.
  // Draws 0, 0 take the first two candidates by shard order (weights equal).
  it.each([
    { local: 2, passes: [2, 2, 2], expected: "local" },
    { local: 3, passes: [2, 5, 5], expected: "local" }, // one claim ahead of shard 1's tenant
    { local: 3.5, passes: [2, 5, 5], expected: 1 },
    { local: 9, passes: [7, 1, 8], expected: 2 }, // shard 2's tenant is furthest behind
    { local: 9, passes: [1, 7, 8], expected: 1 },
    { local: null, passes: [4, 4, 1], expected: 3 }, // the draws would take shards 1 and 2: fair share comes first
    { local: null, passes: [4, 3, 1], expected: 3 },
    { local: null, passes: [1, 3, 1], expected: 1 }, // two equally behind: drawn, then the lower shard
  ])("home at $local, others at $passes: $expected", ({ local, passes, expected }) => {
    const offers = passes.map((pass, i) => offer(i + 1, 0, pass));
    const home = local === null ? null : offer(0, 0, local);
    const choice = chooseShard(offers, 0, home, NONE_TRIED, draws(0, 0));
    expect(choice).toEqual(expected === "local" ? { kind: "local" } : { kind: "forward", shard: expected });
  });
});

describe("placing a submission", () => {
  it.each([
    [{ shard: 3, load: 2 }, { shard: 1, load: 5 }, 3],
    [{ shard: 3, load: 5 }, { shard: 1, load: 2 }, 1],
  ])("%o against %o goes to shard %i", (a, b, shard) => {
    for (const coin of [0, 0.999]) {
      expect(placeSubmission(a, b, draws(coin))).toBe(shard);
      expect(placeSubmission(b, a, draws(coin))).toBe(shard);
    }
  });

  it("tosses a coin between equal loads, so shard 0 wins no more than its share of ties", () => {
    const a = { shard: 0, load: 4 };
    const b = { shard: 9, load: 4 };
    expect(placeSubmission(a, b, draws(0.2))).toBe(0);
    expect(placeSubmission(a, b, draws(0.7))).toBe(9);
    const random = seeded(5);
    let zero = 0;
    for (let i = 0; i < 10_000; i++) if (placeSubmission(a, b, random) === 0) zero++;
    expect(Math.abs(zero - 5_000)).toBeLessThan(300);
  });

  it("draws two distinct shards, every pair about equally often", () => {
    const random = seeded(11);
    const counts = new Map<string, number>();
    for (let i = 0; i < 12_000; i++) {
      const [a, b] = twoDistinct(4, random);
      expect(a).not.toBe(b);
      expect([a, b].every((s) => Number.isInteger(s) && s >= 0 && s < 4)).toBe(true);
      counts.set(`${a}${b}`, (counts.get(`${a}${b}`) ?? 0) + 1);
    }
    expect(counts.size).toBe(12);
    for (const n of counts.values()) expect(Math.abs(n - 1000)).toBeLessThan(150);
  });

  it("draws the two ends of the range", () => {
    expect(twoDistinct(256, draws(0, 0))).toEqual([0, 1]);
    expect(twoDistinct(256, draws(0.999999, 0.999999))).toEqual([255, 254]);
  });

  it.each([1, 0, 2.5])("refuses to draw two distinct shards of %f", (shards) => {
    expect(() => twoDistinct(shards, draws(0, 0))).toThrow(RangeError);
  });

  /** A burst of one-task jobs placed one after another; each placement's reservation counts at once. */
  function burst(
    shards: number,
    jobs: number,
    seed: number,
    choose: (loads: number[], r: () => number) => number,
    start: (r: () => number) => number = () => 0,
  ) {
    const random = seeded(seed);
    const loads = Array.from({ length: shards }, () => start(random));
    for (let i = 0; i < jobs; i++) loads[choose(loads, random)]! += 1;
    return loads;
  }
  const twoChoices = (loads: number[], random: () => number) => {
    const [a, b] = twoDistinct(loads.length, random);
    return placeSubmission({ shard: a, load: loads[a]! }, { shard: b, load: loads[b]! }, random);
  };

  it.each([4, 16, 64])("1,000 one-task jobs over %i shards: none holds more than 1.25 × N/S + 2", (shards) => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const loads = burst(shards, 1000, seed, twoChoices);
      expect(loads.reduce((a, b) => a + b, 0)).toBe(1000);
      expect(Math.max(...loads)).toBeLessThanOrEqual(1.25 * (1000 / shards) + 2);
    }
  });

  it.each([4, 16, 64])(
    "over %i shards already holding 0 to 20 pending tasks each, two choices level the loads",
    (shards) => {
      for (const seed of [6, 7, 8]) {
        const loads = burst(shards, 1000, seed, twoChoices, (r) => Math.floor(r() * 21));
        const mean = loads.reduce((a, b) => a + b, 0) / shards;
        expect(Math.max(...loads)).toBeLessThanOrEqual(1.25 * mean + 2);
      }
    },
  );

  it("one random choice breaks that bound at 64 shards: the two choices are what meet it", () => {
    const worst = Math.max(
      ...[1, 2, 3, 4, 5].map((seed) =>
        Math.max(...burst(64, 1000, seed, (loads, r) => Math.floor(r() * loads.length))),
      ),
    );
    expect(worst).toBeGreaterThan(1.25 * (1000 / 64) + 2);
  });
});

describe("shardOffers: each other shard's best for one node (§7.1 step 1)", () => {
  const level = (priority: number, fresh: number, replicating = 0) => ({ priority, fresh, replicating });
  const gpu = JSON.stringify({ gpus: 1 });
  const cpu = JSON.stringify({ gpus: 0 });
  const cpuOnly = (requirement: string) => requirement === cpu;
  const noPasses = () => undefined;
  const unit = () => 1;

  it("offers a shard's highest accepted priority and the count there; a refused class offers nothing", () => {
    const offers = shardOffers(
      [
        { shard: 1, requirement: gpu, levels: [level(100, 5)] },
        { shard: 1, requirement: cpu, levels: [level(0, 3), level(10, 2, 1)] },
        { shard: 2, requirement: cpu, levels: [level(10, 4)] },
        { shard: 2, requirement: cpu, levels: [level(10, 1)] },
        { shard: 3, requirement: gpu, levels: [level(50, 9)] },
      ],
      cpuOnly,
      [],
      noPasses,
      unit,
    );
    expect(offers.sort((a, b) => a.shard - b.shard)).toEqual([
      { shard: 1, priority: 10, eligible: 3, tenantPass: 0, weight: 1, served: 0 },
      { shard: 2, priority: 10, eligible: 5, tenantPass: 0, weight: 1, served: 0 },
    ]);
  });

  it("asks the gate once per distinct requirement", () => {
    const asked: string[] = [];
    shardOffers(
      [1, 2, 3].map((shard) => ({ shard, requirement: cpu, levels: [level(0, 1)] })),
      (r) => {
        asked.push(r);
        return true;
      },
      [],
      noPasses,
      unit,
    );
    expect(asked).toEqual([cpu]);
  });

  it("levels with nothing pending count for nothing", () => {
    expect(
      shardOffers([{ shard: 1, requirement: cpu, levels: [level(5, 0, 0)] }], cpuOnly, [], noPasses, unit),
    ).toEqual([]);
  });

  it("names the tenant furthest behind among those pending at the offered priority, with its weight", () => {
    const passes = new Map([
      ["10|a", 4],
      ["10|b", 2],
      ["0|c", 0],
    ]);
    const [offer] = shardOffers(
      [{ shard: 1, requirement: cpu, levels: [level(10, 2), level(0, 1)] }],
      cpuOnly,
      [
        { shard: 1, priority: 10, tenant: "a", pending: 1 },
        { shard: 1, priority: 10, tenant: "b", pending: 1 },
        { shard: 1, priority: 0, tenant: "c", pending: 1 }, // a lower priority: not the offer's
        { shard: 1, priority: 10, tenant: "d", pending: 0 }, // nothing pending
        { shard: 2, priority: 10, tenant: "e", pending: 1 }, // another shard
      ],
      (p, t) => passes.get(`${p}|${t}`),
      (t) => (t === "b" ? 3 : 1),
      (shard, p, t) => (shard === 1 && p === 10 && t === "b" ? 7 : 0),
    );
    expect(offer).toEqual({ shard: 1, priority: 10, eligible: 2, tenant: "b", tenantPass: 2, weight: 3, served: 7 });
  });
});
