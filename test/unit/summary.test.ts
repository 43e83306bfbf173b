// The pool summary's pure merge (docs/sharding.md §6, §7.2, §15.1): deltas,
// `since` versions, full digests after restarts, the log's trim, the global
// passes with weights and catch-up, the on-demand allowance and the allotment.

import { describe, expect, it } from "vitest";
import {
  allotment,
  applyExchange,
  type DigestClass,
  type DigestDelta,
  type ExchangeReply,
  freshSummary,
  type GlobalPass,
  mostPending,
  onDemandAllowance,
  passesSnapshot,
  type ShardDigest,
  type SummaryState,
  type TenantGrant,
} from "../../src/rules/summary";

const NO_WEIGHTS = new Map<string, number>();
const LOAD = { requests: 0, pending: 0, leased: 0, jobs: 0, homeNodes: 0, online: 0 };

const cls = (key: string, fresh: number, priority = 0): DigestClass => ({
  key,
  requirement: `{"k":"${key}"}`,
  levels: [{ priority, fresh, replicating: 0 }],
});
const grant = (tenant: string, granted: number, pending: number, priority = 0): TenantGrant => ({
  priority,
  tenant,
  granted,
  pending,
});

function digest(shard: number, instance: string, version: number, parts: Partial<ShardDigest> = {}): ShardDigest {
  return { shard, instance, version, classes: [], tenants: [], held: { claims: 0 }, load: LOAD, ...parts };
}
function delta(
  shard: number,
  instance: string,
  base: number,
  version: number,
  parts: Partial<Omit<DigestDelta, "removed">> & { removed?: Partial<DigestDelta["removed"]> } = {},
): DigestDelta {
  const { removed, ...rest } = parts;
  return {
    shard,
    instance,
    base,
    version,
    classes: [],
    tenants: [],
    held: { claims: 0 },
    load: LOAD,
    ...rest,
    removed: { classes: [], tenants: [], ...removed },
  };
}

/** One exchange; `weights` as FLASHML_TENANT_WEIGHTS would give them. */
function exchange(
  state: SummaryState,
  sent: DigestDelta | ShardDigest,
  since: number,
  now = 0,
  weights: ReadonlyMap<string, number> = NO_WEIGHTS,
): ExchangeReply {
  return applyExchange(state, sent.shard, sent, since, now, weights).reply;
}

const classesIn = (reply: ExchangeReply) =>
  reply.entries.flatMap((e) => (e.kind === "class" ? [`${e.shard}:${e.key}:${e.levels.map((l) => l.fresh)}`] : []));
const passOf = (state: SummaryState, tenant: string, priority = 0) => state.passes.get(`${priority}|${tenant}`)?.pass;

describe("merging digests and deltas", () => {
  it("a shard's first exchange gets every other shard's entries, never its own", () => {
    const state = freshSummary("sigma-1");
    exchange(state, digest(0, "a", 1, { classes: [cls("gpu", 3)] }), 0);
    const reply = exchange(state, digest(1, "b", 1, { classes: [cls("cpu", 5)] }), 0);
    expect(reply.fullCopy).toBe(true);
    expect(reply.full).toBeUndefined();
    expect(classesIn(reply)).toEqual(["0:gpu:3"]);
    expect(reply.entries.filter((e) => e.kind === "shard").map((e) => e.shard)).toEqual([0]);
    expect(reply.instance).toBe("sigma-1");
  });

  it("a delta changes, adds and removes classes, and others see only what changed since their version", () => {
    const state = freshSummary("s");
    exchange(state, digest(0, "a", 1, { classes: [cls("gpu", 3), cls("arm", 2)] }), 0);
    const seen = exchange(state, digest(1, "b", 1), 0).version;
    exchange(state, delta(0, "a", 1, 2, { classes: [cls("gpu", 7), cls("x86", 1)], removed: { classes: ["arm"] } }), 0);
    const reply = exchange(state, delta(1, "b", 1, 2), seen);
    expect(reply.fullCopy).toBeUndefined();
    expect(classesIn(reply).sort()).toEqual(["0:arm:", "0:gpu:7", "0:x86:1"]);
    // Nothing changed since this reply's version: the next asks get nothing but what moved.
    const again = exchange(state, delta(1, "b", 2, 3), reply.version);
    expect(classesIn(again)).toEqual([]);
  });

  it("a class whose levels are all empty is a removal, and an unchanged class is not sent again", () => {
    const state = freshSummary("s");
    exchange(state, digest(0, "a", 1, { classes: [cls("gpu", 3), cls("cpu", 1)] }), 0);
    const seen = exchange(state, digest(1, "b", 1), 0).version;
    exchange(state, delta(0, "a", 1, 2, { classes: [cls("gpu", 0), cls("cpu", 1)] }), 0);
    expect(classesIn(exchange(state, delta(1, "b", 1, 2), seen))).toEqual(["0:gpu:"]);
  });

  it("each applied delta sends the shard's new version, so a home's 'tried' mark lapses", () => {
    const state = freshSummary("s");
    exchange(state, digest(0, "a", 1), 0);
    const seen = exchange(state, digest(1, "b", 1), 0).version;
    exchange(state, delta(0, "a", 1, 5, { held: { claims: 2 } }), 0);
    const entry = exchange(state, delta(1, "b", 1, 2), seen).entries.find((e) => e.kind === "shard");
    expect(entry).toEqual({ kind: "shard", shard: 0, version: 5, held: { claims: 2 }, load: LOAD });
  });

  it("a delta from an older base than Σ holds still applies (its changes are values), an overtaken one does not", () => {
    const state = freshSummary("s");
    exchange(state, digest(0, "a", 1, { classes: [cls("gpu", 1)] }), 0);
    exchange(state, delta(0, "a", 1, 2, { classes: [cls("gpu", 2)] }), 0); // its reply was lost
    const resent = exchange(state, delta(0, "a", 1, 3, { classes: [cls("gpu", 3)] }), 0);
    expect(resent.full).toBeUndefined();
    exchange(state, delta(0, "a", 2, 2, { classes: [cls("gpu", 9)] }), 0); // a late duplicate of version 2
    expect(classesIn(exchange(state, digest(1, "b", 1), 0))).toEqual(["0:gpu:3"]);
  });

  it("a delta from a base Σ never acknowledged is not applied and asks for a full digest", () => {
    const state = freshSummary("s");
    exchange(state, digest(0, "a", 1, { classes: [cls("gpu", 1)] }), 0);
    const reply = exchange(state, delta(0, "a", 4, 5, { classes: [cls("gpu", 8)] }), 0);
    expect(reply.full).toBe(true);
    expect(classesIn(exchange(state, digest(1, "b", 1), 0))).toEqual(["0:gpu:1"]);
  });
});

describe("restarts", () => {
  it("a restarted Σ answers a delta with full: true and a full copy, and the full digest that follows fills it", () => {
    const old = freshSummary("sigma-1");
    exchange(old, digest(1, "b", 1, { classes: [cls("cpu", 4)] }), 0);
    const seen = exchange(old, digest(0, "a", 1, { classes: [cls("gpu", 3)] }), 0).version;

    const state = freshSummary("sigma-2");
    const first = exchange(state, delta(0, "a", 1, 2, { classes: [cls("gpu", 5)] }), seen);
    expect(first).toMatchObject({ full: true, fullCopy: true, instance: "sigma-2" });
    expect(classesIn(first)).toEqual([]);
    // Until shard 0 sends its digest, Σ shows none of its work: less than exists, never more.
    expect(classesIn(exchange(state, digest(1, "b", 1, { classes: [cls("cpu", 4)] }), seen))).toEqual([]);
    const second = exchange(state, digest(0, "a", 2, { classes: [cls("gpu", 5)] }), first.version);
    expect(second.full).toBeUndefined();
    expect(classesIn(second)).toEqual(["1:cpu:4"]);
    expect(classesIn(exchange(state, delta(1, "b", 1, 2), first.version))).toEqual(["0:gpu:5"]);
  });

  it("a restarted shard gets a full copy, and its old instance's classes leave the summary", () => {
    const state = freshSummary("s");
    exchange(state, digest(1, "b", 1, { classes: [cls("cpu", 4)] }), 0);
    exchange(state, digest(0, "a", 1, { classes: [cls("gpu", 3), cls("arm", 1)] }), 0);
    const seen = exchange(state, delta(1, "b", 1, 2), 0).version;
    const restarted = exchange(state, digest(0, "a2", 1, { classes: [cls("arm", 1)] }), seen);
    expect(restarted.fullCopy).toBe(true);
    expect(classesIn(restarted)).toEqual(["1:cpu:4"]);
    expect(classesIn(exchange(state, delta(1, "b", 2, 3), seen))).toEqual(["0:gpu:"]);
  });

  it("a delta from a restarted shard's new instance is refused: Σ needs its full digest", () => {
    const state = freshSummary("s");
    exchange(state, digest(0, "a", 1, { classes: [cls("gpu", 3)] }), 0);
    expect(exchange(state, delta(0, "a2", 1, 2), 1).full).toBe(true);
  });

  it("a `since` this Σ never handed out (another Σ's) gets a full copy", () => {
    const state = freshSummary("s");
    exchange(state, digest(0, "a", 1, { classes: [cls("gpu", 3)] }), 0);
    const v = exchange(state, digest(1, "b", 1), 0).version;
    const reply = exchange(state, delta(1, "b", 1, 2), v + 50);
    expect(reply.fullCopy).toBe(true);
    expect(classesIn(reply)).toEqual(["0:gpu:3"]);
  });
});

describe("the change log's trim", () => {
  it("serves a `since` from the last 10 s as changes, and an older one as a full copy", () => {
    const state = freshSummary("s");
    exchange(state, digest(0, "a", 1, { classes: [cls("gpu", 1)] }), 0, 0);
    const old = exchange(state, digest(1, "b", 1), 0, 0).version;
    exchange(state, delta(0, "a", 1, 2, { classes: [cls("gpu", 2)] }), 0, 1_000);
    const recent = state.version;

    const within = exchange(state, delta(1, "b", 1, 2), old, 10_500);
    expect(within.fullCopy).toBeUndefined();
    expect(classesIn(within)).toEqual(["0:gpu:2"]);

    // At 11.5 s the change of 1 s is trimmed: `old` cannot be answered from the log, `recent` still can.
    const trimmed = exchange(state, delta(1, "b", 2, 3), old, 11_500);
    expect(trimmed.fullCopy).toBe(true);
    expect(classesIn(trimmed)).toEqual(["0:gpu:2"]);
    const current = exchange(state, delta(1, "b", 3, 4), recent, 11_500);
    expect(current.fullCopy).toBeUndefined();
    expect(classesIn(current)).toEqual([]);
    expect(state.log.every((c) => c.at >= 11_500 - 10_000)).toBe(true);
  });
});

describe("global passes", () => {
  const WEIGHTS = new Map([["heavy", 3]]);

  it("add each (shard, instance)'s increase of granted, divided by the tenant's weight", () => {
    const state = freshSummary("s");
    exchange(state, digest(0, "a", 1, { tenants: [grant("heavy", 0, 9), grant("light", 0, 9)] }), 0, 0, WEIGHTS);
    exchange(state, digest(1, "b", 1, { tenants: [grant("light", 0, 9)] }), 0, 0, WEIGHTS);
    const seen = state.version;
    exchange(state, delta(0, "a", 1, 2, { tenants: [grant("heavy", 3, 6), grant("light", 2, 7)] }), 0, 0, WEIGHTS);
    exchange(state, delta(1, "b", 1, 2, { tenants: [grant("light", 1, 8)] }), seen, 0, WEIGHTS);
    expect(passOf(state, "heavy")).toBeCloseTo(1);
    expect(passOf(state, "light")).toBe(3);
    // Counts are cumulative: the same count again adds nothing, a higher one only its increase.
    exchange(state, delta(0, "a", 2, 3, { tenants: [grant("light", 2, 7), grant("heavy", 6, 3)] }), 0, 0, WEIGHTS);
    expect(passOf(state, "light")).toBe(3);
    expect(passOf(state, "heavy")).toBeCloseTo(2);
  });

  it("the changed passes ride in the reply, and a full copy carries them all", () => {
    const state = freshSummary("s");
    exchange(state, digest(0, "a", 1, { tenants: [grant("t1", 0, 5), grant("t2", 0, 5)] }), 0);
    const seen = exchange(state, digest(1, "b", 1), 0);
    expect(seen.passes.map((p) => p.tenant).sort()).toEqual(["t1", "t2"]);
    exchange(state, delta(0, "a", 1, 2, { tenants: [grant("t1", 4, 1)] }), 0);
    const reply = exchange(state, delta(1, "b", 1, 2), seen.version);
    expect(reply.passes).toEqual([{ priority: 0, tenant: "t1", pass: 4 }]);
  });

  it("a shard's restart counts its new instance from 0, without counting the old one twice", () => {
    const state = freshSummary("s");
    exchange(state, digest(0, "a", 1, { tenants: [grant("t", 0, 10)] }), 0);
    exchange(state, delta(0, "a", 1, 2, { tenants: [grant("t", 5, 5)] }), 0);
    expect(passOf(state, "t")).toBe(5);
    exchange(state, digest(0, "a2", 1, { tenants: [grant("t", 2, 3)] }), 0);
    expect(passOf(state, "t")).toBe(7);
    exchange(state, digest(0, "a2", 2, { tenants: [grant("t", 2, 3)] }), 0); // asked for again: the same count
    expect(passOf(state, "t")).toBe(7);
    exchange(state, delta(0, "a2", 2, 3, { tenants: [grant("t", 4, 1)] }), 0);
    expect(passOf(state, "t")).toBe(9);
  });

  it("a restarted Σ keeps its snapshot's passes, and shards' counts from before only set the baseline", () => {
    const before = freshSummary("s1");
    exchange(before, digest(0, "a", 1, { tenants: [grant("t", 0, 10), grant("u", 0, 10)] }), 0);
    exchange(before, delta(0, "a", 1, 2, { tenants: [grant("t", 6, 4)] }), 0);
    const snapshot: GlobalPass[] = passesSnapshot(before);
    expect(snapshot.sort((a, b) => a.tenant.localeCompare(b.tenant))).toEqual([
      { priority: 0, tenant: "t", pass: 6 },
      { priority: 0, tenant: "u", pass: 0 },
    ]);

    // A tenant with no work left anywhere is not kept.
    exchange(before, delta(0, "a", 2, 3, { tenants: [grant("u", 0, 0)] }), 0);
    expect(passesSnapshot(before)).toEqual([{ priority: 0, tenant: "t", pass: 6 }]);

    // A kept pass whose tenant is back nowhere is not kept again.
    const after = freshSummary("s2", [...snapshot, { priority: 0, tenant: "gone", pass: 3 }]);
    exchange(after, digest(0, "a", 3, { tenants: [grant("t", 6, 4), grant("u", 0, 10)] }), 0);
    expect(passOf(after, "t")).toBe(6);
    expect(passOf(after, "u")).toBe(0);
    exchange(after, delta(0, "a", 3, 4, { tenants: [grant("t", 7, 3)] }), 0);
    expect(passOf(after, "t")).toBe(7);
    expect(passesSnapshot(after).map((p) => p.tenant)).toEqual(["t", "u"]);
  });

  it("a tenant newly active at a priority starts at the lowest pass there, and an idle one banks nothing", () => {
    const state = freshSummary("s");
    exchange(state, digest(0, "a", 1, { tenants: [grant("a", 0, 5), grant("b", 0, 5), grant("hi", 0, 5, 9)] }), 0);
    exchange(state, delta(0, "a", 1, 2, { tenants: [grant("a", 4, 1), grant("b", 6, 1), grant("hi", 50, 1, 9)] }), 0);
    // New at priority 0 on another shard: it starts level with the lowest there (a: 4), not at 0.
    exchange(state, digest(1, "b", 1, { tenants: [grant("c", 0, 3)] }), 0);
    expect(passOf(state, "c")).toBe(4);
    // Alone at a priority, a tenant starts at 0, whatever the passes elsewhere.
    exchange(state, delta(1, "b", 1, 2, { tenants: [grant("d", 0, 3, -5)] }), 0);
    expect(passOf(state, "d", -5)).toBe(0);
    // 'a' runs out of work everywhere, the others run on; back, it starts at the lowest pass, not its old 4.
    exchange(state, delta(0, "a", 2, 3, { tenants: [grant("a", 5, 0), grant("b", 9, 1)] }), 0);
    expect(passOf(state, "a")).toBeUndefined();
    exchange(state, delta(1, "b", 2, 3, { tenants: [grant("c", 8, 1)] }), 0);
    exchange(state, delta(0, "a", 3, 4, { tenants: [grant("a", 5, 2)] }), 0);
    expect(passOf(state, "a")).toBe(9); // b at 6 + 3, c at 4 + 8
  });

  it("a tenant stays active while any shard has its work, and its removal from one digest is not its end", () => {
    const state = freshSummary("s");
    exchange(state, digest(0, "a", 1, { tenants: [grant("t", 0, 1), grant("u", 0, 1)] }), 0);
    exchange(state, digest(1, "b", 1, { tenants: [grant("t", 0, 1)] }), 0);
    exchange(state, delta(0, "a", 1, 2, { tenants: [grant("t", 3, 1)] }), 0);
    exchange(state, delta(0, "a", 2, 3, { removed: { tenants: [{ priority: 0, tenant: "t" }] } }), 0);
    expect(passOf(state, "t")).toBe(3);
    exchange(state, delta(1, "b", 1, 2, { tenants: [grant("t", 1, 0)] }), 0);
    expect(passOf(state, "t")).toBeUndefined();
  });
});

describe("the on-demand allowance", () => {
  it.each([
    [2, 398],
    [4, 198],
    [16, 48],
    [64, 10.5],
    [256, 1.125],
  ])("at S = %i each shard may spend %f exchanges a second", (shards, allowance) => {
    expect(onDemandAllowance(shards)).toBeCloseTo(allowance, 10);
  });

  it("is 0 at S = 1: there is no summary to exchange with", () => {
    expect(onDemandAllowance(1)).toBe(0);
  });

  it("fills Σ's 800 requests a second with the ticks, and never more, at every S from 2 to 256", () => {
    for (let s = 2; s <= 256; s++) {
      const allowance = onDemandAllowance(s);
      expect(allowance).toBeGreaterThan(0);
      expect(2 * s + s * allowance).toBeCloseTo(800, 9);
    }
  });

  it.each([0, 257, 1.5, -4, Number.NaN])("refuses a shard count of %f", (shards) => {
    expect(() => onDemandAllowance(shards)).toThrow(RangeError);
  });
});

describe("the allotment", () => {
  it.each([
    // n, myHeld, poolHeld, forwards
    [10, 5, 50, 2], // ceil(1) + 1
    [10, 6, 50, 3], // ceil(1.2) + 1
    [1, 1, 1000, 2], // ceil(0.001) + 1
    [100, 50, 50, 101], // every held claim is here
    [0, 5, 50, 1], // nothing new: one probe
    [10, 0, 50, 1], // nothing held here
    [10, 0, 0, 1], // nothing held anywhere
    [10, 8, 4, 11], // the pool's figure lags this home's: its share is at most all
  ])("%i new tasks, %i held here of %i in the pool: %i forwards", (n, mine, pool, forwards) => {
    expect(allotment(n, mine, pool)).toBe(forwards);
  });

  it("totals about n + S across the homes for one change, never one per held claim", () => {
    const held = [40, 3, 0, 17, 1, 99, 5, 12]; // per home
    const pool = held.reduce((a, b) => a + b, 0);
    const total = held.reduce((sum, mine) => sum + allotment(20, mine, pool), 0);
    expect(total).toBeLessThanOrEqual(20 + 2 * held.length);
    expect(total).toBeLessThan(pool);
  });
});

describe("the classes a home counts its held claims for", () => {
  const at = (key: string, fresh: number, replicating = 0) => ({
    key,
    requirement: `r-${key}`,
    levels: [{ priority: 0, fresh, replicating }],
  });

  it("are the ones with the most tasks pending pool-wide, each once, in key order", () => {
    // b is pending at two shards (3 + 4 = 7), more than c's 6 at one; d's replicas count too.
    const classes = [at("a", 1), at("b", 3), at("c", 6), at("b", 4), at("d", 0, 5)];
    expect(mostPending(classes, 3)).toEqual([
      { key: "b", requirement: "r-b" },
      { key: "c", requirement: "r-c" },
      { key: "d", requirement: "r-d" },
    ]);
  });

  it("break a tie by key, so every home counts the same classes from the same copy", () => {
    expect(mostPending([at("z", 2), at("y", 2), at("x", 2)], 2).map((c) => c.key)).toEqual(["x", "y"]);
    expect(mostPending([], 16)).toEqual([]);
  });
});
