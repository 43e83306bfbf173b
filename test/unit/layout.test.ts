// The layout authority's rule (docs/sharding.md §11): what shard 0 does at
// start with the configured shard count over the pool's history.

import { describe, expect, it } from "vitest";
import {
  type Emptiness,
  type LayoutEpoch,
  layoutDecision,
  layoutRefusal,
  layoutRefusedMessage,
  upgrading,
  upgradingMessage,
} from "../../src/rules/layout";

const NOW = 1_800_000_000_000;
const epoch = (n: number, shards: number, lowered_from: number | null = null): LayoutEpoch => ({
  epoch: n,
  shards,
  since_ms: 1_700_000_000_000 + n,
  lowered_from,
});
const empty = (shard: number): Emptiness => ({
  shard,
  empty: true,
  jobs: 0,
  archivedJobs: 0,
  nodes: 0,
  credentials: 0,
  liveLeases: 0,
  pointers: 0,
  artifacts: 0,
  unreferenced: 0,
});
const emptyRange = (from: number, to: number) => Array.from({ length: to - from }, (_v, i) => empty(from + i));

describe("layoutDecision", () => {
  it("a first start records epoch 0 with the configured count", () => {
    expect(layoutDecision("big", [], 1, NOW)).toEqual({
      kind: "append",
      epoch: { epoch: 0, shards: 1, since_ms: NOW, lowered_from: null },
    });
    expect(layoutDecision("big", [], 16, NOW)).toEqual({
      kind: "append",
      epoch: { epoch: 0, shards: 16, since_ms: NOW, lowered_from: null },
    });
  });

  it.each([
    [[epoch(0, 1)], 1],
    [[epoch(0, 4), epoch(1, 16)], 16],
    [[epoch(0, 16), epoch(1, 4, 16)], 4],
  ])("the last epoch's count again changes nothing (%j, %i)", (history, configured) => {
    expect(layoutDecision("big", history, configured, NOW)).toEqual({ kind: "same" });
  });

  it("a raise appends the next epoch, lowering nothing and asking no shard", () => {
    expect(layoutDecision("big", [epoch(0, 1)], 4, NOW)).toEqual({
      kind: "append",
      epoch: { epoch: 1, shards: 4, since_ms: NOW, lowered_from: null },
    });
    expect(layoutDecision("big", [epoch(0, 1), epoch(1, 4)], 256, NOW, [])).toEqual({
      kind: "append",
      epoch: { epoch: 2, shards: 256, since_ms: NOW, lowered_from: null },
    });
  });

  it("a lower first asks the shards it would remove, and only those not yet answered", () => {
    expect(layoutDecision("big", [epoch(0, 16)], 4, NOW)).toEqual({
      kind: "check",
      shards: [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    });
    expect(layoutDecision("big", [epoch(0, 16)], 4, NOW, [...emptyRange(4, 10), empty(2)])).toEqual({
      kind: "check",
      shards: [10, 11, 12, 13, 14, 15],
    });
  });

  it("a lower over empty shards appends an epoch recording what it lowered from", () => {
    expect(layoutDecision("big", [epoch(0, 16)], 4, NOW, emptyRange(4, 16))).toEqual({
      kind: "append",
      epoch: { epoch: 1, shards: 4, since_ms: NOW, lowered_from: 16 },
    });
  });

  it("a lower over work is refused, naming the pool, the counts and what the busy shard holds", () => {
    const facts = emptyRange(4, 16).map((e) => (e.shard === 7 ? { ...e, empty: false, jobs: 3, nodes: 12 } : e));
    expect(layoutDecision("big", [epoch(0, 16)], 4, NOW, facts)).toEqual({
      kind: "refuse",
      detail:
        "pool 'big' cannot run on 4 shards: FLASHML_POOL_SHARDS lowers it from 16, and shards 4–15 are not empty (shard 7: 3 jobs, 12 nodes)",
    });
  });

  it("a refusal names every busy shard, archived jobs and live leases too, and one removed shard alone", () => {
    const facts = [
      { ...empty(2), empty: false, archivedJobs: 1 },
      { ...empty(3), empty: false, jobs: 1, liveLeases: 2 },
    ];
    expect(layoutDecision("team-a", [epoch(0, 4)], 2, NOW, facts)).toEqual({
      kind: "refuse",
      detail:
        "pool 'team-a' cannot run on 2 shards: FLASHML_POOL_SHARDS lowers it from 4, and shards 2–3 are not empty (shard 2: 1 archived job; shard 3: 1 job, 2 live leases)",
    });
    expect(layoutDecision("p", [epoch(0, 2)], 1, NOW, [{ ...empty(1), empty: false, nodes: 1 }])).toEqual({
      kind: "refuse",
      detail:
        "pool 'p' cannot run on 1 shard: FLASHML_POOL_SHARDS lowers it from 2, and shard 1 is not empty (shard 1: 1 node)",
    });
    // A pointer to a node homed elsewhere by location is found only at the shard that keeps it.
    expect(layoutDecision("p", [epoch(0, 2)], 1, NOW, [{ ...empty(1), empty: false, pointers: 3 }])).toEqual({
      kind: "refuse",
      detail:
        "pool 'p' cannot run on 1 shard: FLASHML_POOL_SHARDS lowers it from 2, and shard 1 is not empty (shard 1: 3 node pointers)",
    });
  });

  it.each<[Partial<Emptiness>, string]>([
    [{ credentials: 1 }, "1 enrolled credential"],
    [{ artifacts: 2 }, "2 artifacts"],
    [{ unreferenced: 1 }, "1 uncollected object"],
    [{ credentials: 1, artifacts: 1, unreferenced: 3 }, "1 enrolled credential, 1 artifact, 3 uncollected objects"],
  ])("a removed shard holding no job or node but %j refuses the lower, naming it", (held, named) => {
    expect(layoutDecision("p", [epoch(0, 2)], 1, NOW, [{ ...empty(1), empty: false, ...held }])).toEqual({
      kind: "refuse",
      detail: `pool 'p' cannot run on 1 shard: FLASHML_POOL_SHARDS lowers it from 2, and shard 1 is not empty (shard 1: ${named})`,
    });
  });

  it("lowering twice counts from the last epoch, not the first", () => {
    const history = [epoch(0, 16), epoch(1, 4, 16)];
    expect(layoutDecision("big", history, 2, NOW)).toEqual({ kind: "check", shards: [2, 3] });
    expect(layoutDecision("big", history, 2, NOW, emptyRange(2, 4))).toEqual({
      kind: "append",
      epoch: { epoch: 2, shards: 2, since_ms: NOW, lowered_from: 4 },
    });
    // The history's order is not its epochs' order: the newest epoch decides.
    expect(layoutDecision("big", [...history].reverse(), 4, NOW)).toEqual({ kind: "same" });
  });
});

describe("a layout refusal crossing RPC", () => {
  it("is read back from the message alone, and no other error is", () => {
    const message = layoutRefusedMessage("big", "pool 'big' cannot run on 4 shards: …");
    expect(layoutRefusal(new Error(message))).toBe(
      "coordinator refuses to serve pool 'big': pool 'big' cannot run on 4 shards: …",
    );
    expect(layoutRefusal(new Error("coordinator refuses to serve pool 'big': no marker"))).toBeNull();
    expect(layoutRefusal(message)).toBeNull();
  });
});

describe("a schema upgrade's refusal", () => {
  it("names the object, or this pool for one an alarm started, and is told from a layout's", () => {
    const named = layoutRefusal(new Error(upgradingMessage("big/2", 17, 40)));
    expect(named).toBe(
      "coordinator refuses to serve pool 'big/2': its schema is being upgraded (step 17 of 40); retry in a few seconds",
    );
    expect(upgrading(named!)).toBe(true);
    expect(layoutRefusal(new Error(upgradingMessage(undefined, 3, 40)))).toMatch(
      /^coordinator refuses to serve this pool: /,
    );
    expect(upgrading(layoutRefusal(new Error(layoutRefusedMessage("big", "shard 5 answers only …")))!)).toBe(false);
  });
});
