// A shard's in-memory side of the pool summary (docs/sharding.md §6.2,
// §13.3, §15.1): its copy of the rest of the pool (replies applied, entries
// aging out, full copies, new work told), and the on-demand allowance's
// token bucket.

import { describe, expect, it } from "vitest";
import { ENTRY_MAX_AGE_MS, SummaryCopy } from "../../src/pool/shards/summary-copy";
import { TokenBucket } from "../../src/pool/shards/summary-link";
import { type DigestClass, type ExchangeReply, onDemandAllowance, type SummaryEntry } from "../../src/rules/summary";

const LOAD = { requests: 0, pending: 0, leased: 0, jobs: 0, homeNodes: 0, online: 0 };
const cls = (key: string, fresh: number, priority = 0): DigestClass => ({
  key,
  requirement: `{"k":"${key}"}`,
  levels: [{ priority, fresh, replicating: 0 }],
});

describe("a shard's copy of the rest of the pool", () => {
  const shardEntry = (shard: number, version: number, claims = 0): SummaryEntry => ({
    kind: "shard",
    shard,
    version,
    held: { claims },
    load: LOAD,
  });
  const classEntry = (shard: number, c: DigestClass): SummaryEntry => ({ kind: "class", shard, ...c });
  const reply = (entries: SummaryEntry[], extra: Partial<ExchangeReply> = {}): ExchangeReply => ({
    version: 1,
    instance: "s",
    entries,
    passes: [],
    ...extra,
  });

  it("holds the classes replies bring, drops those that left, and says when work is new", () => {
    const copy = new SummaryCopy();
    expect(copy.apply(reply([shardEntry(2, 1), classEntry(2, cls("a", 1))]), 0).newWork).toBe(true);
    expect(copy.classes(0).map((c) => [c.shard, c.key])).toEqual([[2, "a"]]);
    expect(copy.version(2)).toBe(1);
    expect(copy.apply(reply([shardEntry(2, 2), classEntry(2, cls("a", 1))]), 10).newWork).toBe(false);
    expect(copy.apply(reply([shardEntry(2, 3), classEntry(2, cls("a", 4))]), 20).newWork).toBe(true);
    const left = classEntry(2, { key: "a", requirement: "{}", levels: [] });
    expect(copy.apply(reply([shardEntry(2, 4), left]), 30).newWork).toBe(false);
    expect(copy.classes(30)).toEqual([]);
  });

  it("treats entries older than 5 s as absent until a reply confirms them again", () => {
    const copy = new SummaryCopy();
    copy.apply(reply([shardEntry(1, 1), classEntry(1, cls("a", 1))]), 1000);
    expect(copy.classes(1000 + ENTRY_MAX_AGE_MS)).toHaveLength(1);
    expect(copy.classes(1001 + ENTRY_MAX_AGE_MS)).toEqual([]);
    expect(copy.age(1001 + ENTRY_MAX_AGE_MS)).toBe(ENTRY_MAX_AGE_MS + 1);
    // Σ answers again with nothing new: the entries it did not change are current.
    const back = copy.apply(reply([]), 9000);
    expect(copy.classes(9000)).toHaveLength(1);
    expect(back.newWork).toBe(true);
  });

  it("a full copy replaces everything, and the listeners hear of new work", () => {
    const copy = new SummaryCopy();
    let heard = 0;
    const stop = copy.onChange(() => heard++);
    copy.apply(reply([shardEntry(1, 1), classEntry(1, cls("a", 1)), shardEntry(3, 1), classEntry(3, cls("b", 1))]), 0);
    copy.apply(reply([shardEntry(3, 1), classEntry(3, cls("b", 1))], { fullCopy: true }), 5);
    expect(copy.classes(5).map((c) => c.shard)).toEqual([3]);
    expect(heard).toBe(1);
    stop();
    copy.apply(reply([classEntry(1, cls("c", 1))]), 6);
    expect(heard).toBe(1);
  });

  it("the listeners hear of a shard's new digest version though its counts stay (a task requeued after a lease)", () => {
    const copy = new SummaryCopy();
    let heard = 0;
    copy.onChange(() => heard++);
    copy.apply(reply([shardEntry(2, 1), classEntry(2, cls("a", 1))]), 0);
    expect(heard).toBe(1);
    copy.apply(reply([shardEntry(2, 1)]), 5); // the same version again: nothing to hear
    expect(heard).toBe(1);
    const requeued = copy.apply(reply([shardEntry(2, 2)]), 10);
    expect([requeued.newWork, heard, copy.version(2)]).toEqual([false, 2, 2]);
  });

  it("a tenant's pass is Σ's, and a tenant Σ has not named starts at the lowest pass of its priority", () => {
    const copy = new SummaryCopy();
    copy.apply(
      reply([], {
        passes: [
          { priority: 0, tenant: "a", pass: 3 },
          { priority: 0, tenant: "b", pass: 1.5 },
          { priority: 9, tenant: "a", pass: 7 },
        ],
      }),
      0,
    );
    expect(copy.pass(0, "a")).toBe(3);
    expect(copy.pass(0, "new")).toBe(1.5);
    expect(copy.pass(4, "new")).toBe(0);
    expect(copy.age(0)).toBeNull();
  });
});

describe("the on-demand allowance's bucket", () => {
  it.each([4, 16, 256])("at S = %i takes about the allowance a second, a second's worth at most in hand", (shards) => {
    const rate = onDemandAllowance(shards);
    const bucket = new TokenBucket();
    let taken = 0;
    // Ten seconds, asked every millisecond.
    for (let now = 0; now < 10_000; now += 1) if (bucket.take(now, rate)) taken++;
    expect(taken).toBeGreaterThanOrEqual(Math.floor(rate * 10));
    expect(taken).toBeLessThanOrEqual(Math.ceil(rate * 10 + Math.max(1, rate)));
  });
});
