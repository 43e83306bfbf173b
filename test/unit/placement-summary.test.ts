// Placement explanations: grouping the gate's per-node answers into the
// summary an operator reads. Refusals come from the real gate, so a
// change of the gate that breaks the grouping fails here.

import { describe, expect, it } from "vitest";
import { gateFor } from "../../src/rules/placement";
import { replicaRefusal, summarizePlacement } from "../../src/rules/placement-summary";
import { type Refusal, refusalReason, taskSide } from "../../src/rules/refusals";

type Caps = { gpus?: unknown[]; pools?: unknown };

function view(nodeId: string, extra: Record<string, unknown> = {}, caps: Caps = {}) {
  return {
    node_id: nodeId,
    sandbox_capable: false,
    argv_capable: false,
    module_capable: true,
    unsandboxed_argv_capable: false,
    local_datasets: [],
    capabilities: { gpus: [], pools: [], ...caps },
    ...extra,
  };
}

const gpus = (n: number) => Array.from({ length: n }, (_, index) => ({ index }));

/** What the gate answers for one node: its refusal, or null when eligible. */
function placed(payload: unknown, node: ReturnType<typeof view>): Refusal | null {
  return gateFor(payload).refusal(node);
}

function refusal(payload: unknown, node: ReturnType<typeof view>): Refusal {
  const refused = placed(payload, node);
  if (refused === null) throw new Error("expected a refusal");
  return refused;
}

describe("taskSide", () => {
  it.each([
    ["a GPU shortfall, whatever the node has", { gpus: 2 }, view("a", {}, { gpus: gpus(1) }), "task needs 2 GPUs"],
    ["a GPU shortfall on a CPU node", { gpus: 2 }, view("a"), "task needs 2 GPUs"],
    ["a GPU shortfall of one", { gpus: 1 }, view("a"), "task needs 1 GPU"],
    [
      "a missing dataset",
      { local_inputs: ["patients"] },
      view("a", { local_datasets: ["labs"] }),
      "missing dataset 'patients'",
    ],
    [
      "datasets advertised as a bare string",
      { local_inputs: ["patients"] },
      view("a", { local_datasets: "patients" }),
      "task needs 1 local dataset, node offers none",
    ],
    [
      "argv on a node that is not argv-capable",
      { argv: ["run"] },
      view("a"),
      "task runs argv, node is not argv_capable",
    ],
    [
      "a module on a node that refuses modules",
      { module: "m" },
      view("a", { module_capable: false }),
      "node is not module_capable",
    ],
    ["an excluded node", { exclude_nodes: ["a"] }, view("a"), "node excluded by the task"],
    ["a node without a readable id", { exclude_nodes: ["a"] }, view(""), "node has no readable node_id"],
    [
      "a team pool the node is not in",
      { pool: "team-a" },
      view("a", {}, { pools: ["team-b"] }),
      "not in team pool 'team-a'",
    ],
    [
      "a node whose team pools are not a list",
      { pool: "team-a" },
      view("a", {}, { pools: "team-a" }),
      "not in team pool 'team-a'",
    ],
    [
      "a node whose team pool list is malformed",
      { pool: "team-a" },
      view("a", {}, { pools: ["team-a", 3] }),
      "node's team pool list is malformed",
    ],
    [
      "a sandboxed task on a plain node",
      { isolation: { tier: "sandboxed" } },
      view("a"),
      "task needs a sandboxed node",
    ],
    [
      "a malformed GPU count (same for every node)",
      { gpus: "2" },
      view("a"),
      "gpus must be a whole number of at least 0, got '2'",
    ],
    [
      "a payload that is not an object",
      [],
      view("a"),
      "the payload is a list, not a JSON object, so its requirements cannot be read",
    ],
  ])("keeps the task's side of %s", (_what, payload, node, expected) => {
    expect(taskSide(refusal(payload, node))).toBe(expected);
  });

  it("gives every node short of the same thing the same text", () => {
    const nodes = [
      view("a"),
      view("b", {}, { gpus: gpus(1) }),
      view("c", {}, { gpus: "lots" as unknown as unknown[] }),
    ];
    const texts = new Set(nodes.map((n) => taskSide(refusal({ gpus: 2 }, n))));
    expect([...texts]).toEqual(["task needs 2 GPUs"]);
  });
});

describe("a refusal renders both texts", () => {
  it("the reason is the gate's name, the sentence and the note; the task's side drops the note", () => {
    const notMember = refusal({ pool: "lab" }, view("a", {}, { pools: ["other"] }));
    expect(refusalReason(notMember)).toBe("pool: node is not a member of team pool 'lab'");
    const noted = { ...notMember, note: "assigned pools: none, by op at 2026-01-01T00:00:00.000Z" };
    expect(refusalReason(noted)).toBe(
      "pool: node is not a member of team pool 'lab' (assigned pools: none, by op at 2026-01-01T00:00:00.000Z)",
    );
    expect(taskSide(noted)).toBe(taskSide(notMember));
    expect(summarizePlacement([notMember, noted]).groups).toEqual([
      { gate: "pool", reason: "not in team pool 'lab'", nodes: 2 },
    ]);
  });

  it("a pool name that looks like a note is still the pool's whole name", () => {
    const odd = refusal({ pool: "a (assigned pools: b)" }, view("a"));
    const noted = { ...odd, note: "no team pools assigned by an operator" };
    expect(taskSide(noted)).toBe("not in team pool 'a (assigned pools: b)'");
  });
});

describe("summarizePlacement", () => {
  it("writes the issue's example: 0/3 nodes, grouped by gate and reason", () => {
    const payload = { gpus: 2, local_inputs: ["patients"] };
    const nodes = [
      view("cpu-1", { local_datasets: ["patients"] }),
      view("gpu-1", { local_datasets: ["patients"] }, { gpus: gpus(1) }),
      view("gpu-4"),
    ].map((n) => placed(payload, n));
    const s = summarizePlacement(nodes);
    expect(s).toEqual({
      eligible: 0,
      total: 3,
      unplaceable: true,
      groups: [
        { gate: "gpu", reason: "task needs 2 GPUs", nodes: 2 },
        { gate: "local_data", reason: "missing dataset 'patients'", nodes: 1 },
      ],
      summary: "0/3 nodes eligible: 2 × gpu (task needs 2 GPUs), 1 × local_data (missing dataset 'patients')",
    });
  });

  it.each([
    ["all eligible", [{ gpus: 0 }, [view("a"), view("b")]], "2/2 nodes eligible", false],
    [
      "some eligible",
      [{ gpus: 1 }, [view("a", {}, { gpus: gpus(1) }), view("b")]],
      "1/2 nodes eligible: 1 × gpu (task needs 1 GPU)",
      false,
    ],
    ["no node registered", [{}, []], "0/0 nodes eligible: no nodes registered", true],
  ] as const)("%s", (_what, [payload, nodes], summary, unplaceable) => {
    const s = summarizePlacement(nodes.map((n) => placed(payload, n)));
    expect(s.summary).toBe(summary);
    expect(s.unplaceable).toBe(unplaceable);
  });

  it("a node that could take the task makes it placeable, whatever else is refused", () => {
    const s = summarizePlacement([
      placed({ gpus: 1 }, view("gpu", {}, { gpus: gpus(1) })),
      placed({ gpus: 1 }, view("cpu")),
    ]);
    expect(s.unplaceable).toBe(false);
    expect(s.summary).toBe("1/2 nodes eligible: 1 × gpu (task needs 1 GPU)");
  });

  it("names the node set it was given a scope for", () => {
    expect(summarizePlacement([], { scope: "online" }).summary).toBe("0/0 online nodes eligible: no online nodes");
    expect(summarizePlacement([placed({ argv: [] }, view("a"))], { scope: "online" }).summary).toBe(
      "0/1 online nodes eligible: 1 × argv (task runs argv, node is not argv_capable)",
    );
  });

  it("puts the largest group first, equal groups in gate order", () => {
    const payload = { argv: ["x"], isolation: { tier: "sandboxed" } };
    const nodes = [
      view("a", { argv_capable: true }),
      view("b"),
      view("c", { argv_capable: true }),
      view("d", { argv_capable: true, sandbox_capable: true }),
      view("e"),
      view("f", { argv_capable: true }),
    ].map((n) => placed(payload, n));
    expect(summarizePlacement(nodes).summary).toBe(
      "1/6 nodes eligible: 3 × isolation (task needs a sandboxed node), 2 × argv (task runs argv, node is not argv_capable)",
    );
    const tie = [view("a"), view("b", { argv_capable: true })].map((n) => placed(payload, n));
    expect(summarizePlacement(tie).groups.map((g) => g.gate)).toEqual(["argv", "isolation"]);
  });

  it("names at most the largest groups and counts the rest", () => {
    const payload = { local_inputs: ["a", "b", "c", "d", "e", "f"] };
    const offering = ["a", "b", "c", "d", "e", "f"];
    // Node i offers every dataset but the i-th, so each is refused for a different one.
    const nodes = offering.map((_, i) =>
      placed(payload, view(`n${i}`, { local_datasets: offering.filter((_, j) => j !== i) })),
    );
    const s = summarizePlacement(nodes, { maxGroups: 2 });
    expect(s.groups).toHaveLength(6);
    expect(s.summary).toBe(
      "0/6 nodes eligible: 1 × local_data (missing dataset 'a'), 1 × local_data (missing dataset 'b'), and 4 more refused for 4 other reasons",
    );
  });

  it("keeps the summary to one line when a dataset name holds line breaks", () => {
    const s = summarizePlacement([placed({ local_inputs: ["a\nb"] }, view("n"))]);
    expect(s.summary).not.toMatch(/[\n\r]/);
  });
});

describe("the replica rule (docs/protocol.md §14)", () => {
  /** A node the gate accepts but that holds or ran these replicas of the task. */
  function ran(replicas: number[], live = false): Refusal {
    return replicaRefusal(replicas, live);
  }

  it.each([
    [[2], true, "replica: holds replica 2 of this task; each replica runs on a different node"],
    [[1], false, "replica: ran replica 1 of this task; each replica runs on a different node"],
    [[1, 4], false, "replica: ran replicas 1 and 4 of this task; each replica runs on a different node"],
    [[1, 3, 5], true, "replica: holds replicas 1, 3 and 5 of this task; each replica runs on a different node"],
  ])("names the replicas %j (live: %s)", (replicas, live, reason) => {
    expect(refusalReason(replicaRefusal(replicas, live))).toBe(reason);
    // Whichever replica, held or run, the task's side is the same: one group in the summary.
    expect(taskSide(replicaRefusal(replicas, live))).toBe("holds or ran a replica of this task");
  });

  it("groups nodes that hold or ran a replica, after the gates' refusals of the same size", () => {
    const nodes = [
      ran([1], true),
      ran([2]),
      placed({ gpus: 1 }, view("c")),
      placed({ gpus: 1 }, view("d", {}, { gpus: gpus(1) })),
    ];
    const s = summarizePlacement(nodes);
    expect(s.groups).toEqual([
      { gate: "replica", reason: "holds or ran a replica of this task", nodes: 2 },
      { gate: "gpu", reason: "task needs 1 GPU", nodes: 1 },
    ]);
    expect(s.summary).toBe(
      "1/4 nodes eligible: 2 × replica (holds or ran a replica of this task), 1 × gpu (task needs 1 GPU)",
    );
    const tie = summarizePlacement([ran([1]), placed({ gpus: 1 }, view("c"))]);
    expect(tie.groups.map((g) => g.gate)).toEqual(["gpu", "replica"]);
    expect(tie.unplaceable).toBe(true);
  });
});
