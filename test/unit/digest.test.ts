// A shard's digest over time (docs/sharding.md §6.1, §15.1): versions that
// count changes of the contents, deltas against what Σ acknowledged (checked
// against Σ's own merge), what a submission must tell Σ, and the tenants a
// digest names.

import { describe, expect, it } from "vitest";
import {
  type DigestContents,
  digestDelta,
  digestTenants,
  newlyPending,
  nextDigest,
  sameContents,
} from "../../src/rules/digest";
import { applyExchange, type DigestClass, freshSummary, type SummaryEntry } from "../../src/rules/summary";

const NO_WEIGHTS = new Map<string, number>();
const LOAD = { requests: 0, pending: 0, leased: 0, jobs: 0, homeNodes: 0, online: 0 };

const cls = (key: string, fresh: number, priority = 0, replicating = 0): DigestClass => ({
  key,
  requirement: `{"k":"${key}"}`,
  levels: [{ priority, fresh, replicating }],
});
const contents = (parts: Partial<DigestContents> = {}): DigestContents => ({
  classes: [],
  tenants: [],
  held: { claims: 0 },
  load: LOAD,
  ...parts,
});

describe("digest versions", () => {
  it("a digest read again with the same contents keeps its version; any change takes the next", () => {
    const first = nextDigest(null, 2, "i1", contents({ classes: [cls("a", 1)] }));
    expect(first.version).toBe(1);
    const same = nextDigest(first, 2, "i1", contents({ classes: [cls("a", 1)] }));
    expect(same.version).toBe(1);
    const more = nextDigest(same, 2, "i1", contents({ classes: [cls("a", 2)] }));
    expect(more.version).toBe(2);
    const loaded = nextDigest(more, 2, "i1", contents({ classes: [cls("a", 2)], load: { ...LOAD, leased: 1 } }));
    expect(loaded.version).toBe(3);
  });

  it("the order classes, levels and tenants are read in is no change", () => {
    const a = contents({
      classes: [
        cls("b", 1),
        { key: "a", requirement: "{}", levels: cls("a", 1, 0).levels.concat(cls("a", 2, 5).levels) },
      ],
      tenants: [
        { priority: 1, tenant: "y", granted: 0, pending: 1 },
        { priority: 0, tenant: "x", granted: 2, pending: 0 },
      ],
    });
    const b = contents({
      classes: [
        { key: "a", requirement: "{}", levels: cls("a", 2, 5).levels.concat(cls("a", 1, 0).levels) },
        cls("b", 1),
      ],
      tenants: [...a.tenants].reverse(),
    });
    const first = nextDigest(null, 0, "i", a);
    expect(nextDigest(first, 0, "i", b).version).toBe(first.version);
    expect(sameContents(first, nextDigest(null, 0, "i", b))).toBe(true);
  });

  it("a new instance counts from 1 again", () => {
    const old = nextDigest(nextDigest(null, 1, "i1", contents()), 1, "i1", contents({ held: { claims: 1 } }));
    expect(old.version).toBe(2);
    expect(nextDigest(old, 1, "i2", contents({ held: { claims: 1 } })).version).toBe(1);
  });
});

describe("digest deltas", () => {
  const acked = nextDigest(null, 3, "i", {
    classes: [cls("a", 2), cls("b", 1)],
    tenants: [
      { priority: 0, tenant: "t1", granted: 4, pending: 3 },
      { priority: 0, tenant: "t2", granted: 0, pending: 1 },
    ],
    held: { claims: 0 },
    load: LOAD,
  });

  it.each<
    [string, Partial<DigestContents>, { classes: string[]; removed: string[]; tenants: string[]; gone: string[] }]
  >([
    ["nothing changed", {}, { classes: [], removed: [], tenants: [], gone: [] }],
    [
      "a class gained tasks",
      { classes: [cls("a", 3), cls("b", 1)] },
      { classes: ["a"], removed: [], tenants: [], gone: [] },
    ],
    [
      "a class is new and another left",
      { classes: [cls("a", 2), cls("c", 1)] },
      { classes: ["c"], removed: ["b"], tenants: [], gone: [] },
    ],
    [
      "a tenant was granted a claim and another left",
      { tenants: [{ priority: 0, tenant: "t1", granted: 5, pending: 2 }] },
      { classes: [], removed: [], tenants: ["t1"], gone: ["t2"] },
    ],
  ])("%s: the delta carries exactly that", (_, change, want) => {
    const next = nextDigest(acked, 3, "i", { ...acked, ...change });
    const delta = digestDelta(acked, next);
    expect(delta.base).toBe(acked.version);
    expect(delta.version).toBe(next.version);
    expect(delta.classes.map((c) => c.key)).toEqual(want.classes);
    expect(delta.removed.classes).toEqual(want.removed);
    expect(delta.tenants.map((t) => t.tenant)).toEqual(want.tenants);
    expect(delta.removed.tenants.map((t) => t.tenant)).toEqual(want.gone);
  });

  it("Σ holds the same after a delta as after the whole digest it stands for", () => {
    const next = nextDigest(acked, 3, "i", {
      classes: [cls("a", 1, 0, 1), cls("c", 4, 7)],
      tenants: [{ priority: 0, tenant: "t1", granted: 6, pending: 2 }],
      held: { claims: 2 },
      load: { ...LOAD, pending: 7 },
    });
    const byDelta = freshSummary("s");
    applyExchange(byDelta, 3, acked, 0, 0, NO_WEIGHTS);
    applyExchange(byDelta, 3, digestDelta(acked, next), 0, 1, NO_WEIGHTS);
    const whole = freshSummary("s");
    applyExchange(whole, 3, next, 0, 1, NO_WEIGHTS);
    // Another shard's first exchange reads everything Σ holds of shard 3.
    const held = (state: ReturnType<typeof freshSummary>) =>
      applyExchange(state, 0, nextDigest(null, 0, "z", contents()), 0, 2, NO_WEIGHTS)
        .reply.entries.filter((e: SummaryEntry) => e.shard === 3)
        .map((e) => JSON.stringify(e))
        .sort();
    expect(held(byDelta)).toEqual(held(whole));
  });
});

describe("what a submission tells Σ", () => {
  const known = { classes: [cls("a", 2, 5)] };
  it.each<[string, DigestClass[], boolean]>([
    ["the same class at the same priority", [cls("a", 9, 5)], false],
    ["a class Σ does not know", [cls("a", 2, 5), cls("b", 1)], true],
    ["a class's top priority raised", [{ key: "a", requirement: "{}", levels: [...cls("a", 1, 9).levels] }], true],
    [
      "a lower priority of a known class",
      [{ ...cls("a", 2, 5), levels: [...cls("a", 2, 5).levels, ...cls("a", 1, 0).levels] }],
      false,
    ],
  ])("%s: %s", (_, classes, tell) => {
    expect(newlyPending(known, { classes })).toBe(tell);
  });

  it("anything pending is news to a Σ that holds nothing of the shard", () => {
    expect(newlyPending(null, { classes: [cls("a", 1)] })).toBe(true);
    expect(newlyPending(null, { classes: [] })).toBe(false);
  });
});

describe("a digest's tenants", () => {
  it("name every tenant with pending tasks and every one granted claims, with pending 0 once idle", () => {
    const tenants = digestTenants(
      [{ priority: 0, tenant: "busy", pending: 3 }],
      [
        { priority: 0, tenant: "busy", granted: 2 },
        { priority: 1, tenant: "idle", granted: 5 },
      ],
    );
    expect(tenants).toEqual(
      expect.arrayContaining([
        { priority: 0, tenant: "busy", granted: 2, pending: 3 },
        { priority: 1, tenant: "idle", granted: 5, pending: 0 },
      ]),
    );
    expect(tenants).toHaveLength(2);
  });
});
