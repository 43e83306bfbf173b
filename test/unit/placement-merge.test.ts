// A sharded pool's placement report (docs/sharding.md §10) is summed from
// each shard's counts and merged from each shard's sorted node list; the sum
// must say what one node set says for the same nodes. Refusals come from the
// real gate.

import { describe, expect, it } from "vitest";
import { gateFor } from "../../src/rules/placement";
import {
  addCounts,
  countRefusals,
  mergePlacement,
  NO_COUNTS,
  type NodePlacement,
  type PlacementAnswers,
  type PlacementFacts,
  summarizeCounts,
  summarizePlacement,
} from "../../src/rules/placement-summary";
import type { Refusal } from "../../src/rules/refusals";

function view(nodeId: string, gpus: number, datasets: string[] = []) {
  return {
    node_id: nodeId,
    sandbox_capable: false,
    argv_capable: false,
    module_capable: true,
    unsandboxed_argv_capable: false,
    local_datasets: datasets,
    capabilities: { gpus: Array.from({ length: gpus }, (_, index) => ({ index })), pools: [] },
  };
}

const PAYLOAD = { gpus: 2, local_inputs: ["patients"] };
const NODES = [
  view("a", 2, ["patients"]),
  view("b", 0),
  view("c", 1, ["patients"]),
  view("d", 2),
  view("e", 2, ["labs"]),
  view("f", 4, ["patients"]),
  view("g", 0, ["patients"]),
];
const refusals: (Refusal | null)[] = NODES.map((node) => gateFor(PAYLOAD).refusal(node));

/** The refusals cut into consecutive parts at `cuts`, as shards would hold them. */
function parts(cuts: number[]): (Refusal | null)[][] {
  const bounds = [0, ...cuts, refusals.length];
  return bounds.slice(1).map((end, i) => refusals.slice(bounds[i], end));
}

describe("placement counts summed over shards", () => {
  it.each([
    ["one shard", []],
    ["two shards", [3]],
    ["four shards, one empty", [1, 1, 5]],
    ["every node on its own shard", [1, 2, 3, 4, 5, 6]],
  ])("%s: the summary is one node set's", (_name, cuts) => {
    const summed = parts(cuts)
      .map((p) => countRefusals(p))
      .reduce(addCounts, NO_COUNTS);
    expect(summarizeCounts(summed)).toEqual(summarizePlacement(refusals));
    expect(summarizeCounts(summed, { maxGroups: 1 }).summary).toBe(
      summarizePlacement(refusals, { maxGroups: 1 }).summary,
    );
  });

  it("no nodes on any shard is no nodes registered", () => {
    const summed = [countRefusals([]), countRefusals([])].reduce(addCounts, NO_COUNTS);
    expect(summarizeCounts(summed)).toMatchObject({
      unplaceable: true,
      summary: "0/0 nodes eligible: no nodes registered",
    });
  });
});

const node = (id: string): NodePlacement => ({ node_id: id, online: true, status: "idle", eligible: true });
const answers = (ids: string[], heldBack = 0, owners: string[] = []): PlacementAnswers => ({
  nodes: ids.map(node),
  counts: countRefusals(ids.map(() => null)),
  held_back: heldBack,
  owners,
});
const FACTS: PlacementFacts = {
  job_id: "j",
  task_id: "t",
  state: "PENDING",
  pending: true,
  payload: "{}",
  replicas: null,
  queue: {
    priority: 0,
    tenant: "default",
    higher_priority: 0,
    earlier_in_job: 0,
    other_tenants: 0,
    other_jobs: 0,
    failed_on: [],
    eligible_held_back: 0,
  },
};

describe("mergePlacement", () => {
  it("lists every shard's nodes once, by node_id, and sums the held-back nodes into the queue", () => {
    const report = mergePlacement(FACTS, [
      answers(["b", "e"], 1),
      answers([]),
      answers(["a", "c", "f"], 2),
      answers(["d"]),
    ]);
    expect(report.nodes.map((n) => n.node_id)).toEqual(["a", "b", "c", "d", "e", "f"]);
    expect(report.summary).toBe("6/6 nodes eligible");
    expect(report.queue?.eligible_held_back).toBe(3);
    expect(report.waiting).toBe("next in line; 3 eligible nodes are held back after failing");
  });

  it("places a pending task in the whole pool's claim order: higher priorities and tenants anywhere, its own job once", () => {
    const own = { ...FACTS.queue!, higher_priority: 2, other_tenants: 1, other_jobs: 0, earlier_in_job: 4 };
    const report = mergePlacement({ ...FACTS, queue: own }, [
      { ...answers([]), queue: { higher_priority: 2, tenants: ["team-b"], other_jobs: 1 } }, // the task's shard
      { ...answers([]), queue: { higher_priority: 3, tenants: ["team-b", "team-c"], other_jobs: 2 } },
      answers([]), // a shard that brought no part: counted as nothing
    ]);
    expect(report.queue).toMatchObject({ higher_priority: 5, other_tenants: 2, other_jobs: 2, earlier_in_job: 4 });
    expect(report.waiting).toBe(
      "waits for 5 pending tasks of higher priority than 0; tenant default's turn (3 tenants take turns at priority 0); its job's turn (3 jobs of default take turns); 4 earlier tasks of its own job",
    );
  });

  it("counts an owner once across shards, with the owners that ran a replica", () => {
    const facts: PlacementFacts = {
      ...FACTS,
      replicas: {
        wanted: 3,
        quorum: 2,
        needed: 3,
        items: [{ replica: 1, node_id: "a", owner: "alice", state: "live", output_sha256: null, verdict: null }],
      },
    };
    const report = mergePlacement(facts, [answers(["a"], 0, ["alice"]), answers(["b"], 0, ["alice"])]);
    expect(report.replicas?.owners).toEqual({ eligible: 1, needed: 3, short: true });
    expect(report.summary).toBe("2/2 nodes eligible; only 1 distinct owner can run its replicas, 3 needed");
    expect(report.waiting).toContain("a node that has not run a replica of it (a holds or ran one)");
  });
});
