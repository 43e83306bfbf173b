// The placement gate, gate by gate (docs/protocol.md §4): each gate's accept and refuse
// cases, every type confusion on either side, the allowFallback waiver's
// reach, and the reasons gateAnswer() gives.

import { describe, expect, it } from "vitest";
import {
  eligible,
  GATE_KEYS,
  gateAnswer,
  jsonEqual,
  MAX_DEPTH,
  requirementClass,
  requirementOf,
} from "../../src/rules/placement";
import { Rng } from "../fixtures/rng";

type Json = Record<string, unknown>;

/** A node that advertises nothing beyond CPU: the registration defaults. */
function node(extra: Json = {}): Json {
  return {
    node_id: "node-a",
    sandbox_capable: false,
    argv_capable: false,
    module_capable: true,
    unsandboxed_argv_capable: false,
    local_datasets: [],
    capabilities: { cpu_cores: 8, gpus: [], pools: [] },
    ...extra,
  };
}

function withCaps(capabilities: Json, extra: Json = {}): Json {
  return node({ capabilities: { cpu_cores: 8, gpus: [], pools: [], ...capabilities }, ...extra });
}

function gpuNode(count: number): Json {
  return withCaps({ gpus: Array.from({ length: count }, (_, index) => ({ index, name: "NVIDIA A10G" })) });
}

/** A node that passes every gate for every well-formed requirement used here. */
const EVERYTHING = withCaps(
  { gpus: [{ index: 0 }, { index: 1 }, { index: 2 }, { index: 3 }], pools: ["p-1", "p-2"] },
  {
    node_id: "node-z",
    sandbox_capable: true,
    argv_capable: true,
    unsandboxed_argv_capable: true,
    local_datasets: ["patients", "labs"],
  },
);

const MODULE = { module: "flashml_workloads.sklearn_trial" };
const ARGV = { argv: ["python", "train.py"] };
const SANDBOXED = { tier: "sandboxed" };
const WAIVED = { tier: "sandboxed", allowFallback: true };

function refusal(payload: unknown, view: unknown): { gate: string; reason: string } | null {
  const answer = gateAnswer(payload, view);
  return answer.eligible ? null : { gate: answer.gate, reason: answer.reason };
}

describe("gate 1: argv (fail-closed)", () => {
  it.each([
    ["an argv task is placed on an argv_capable node", ARGV, node({ argv_capable: true }), true],
    ["an argv task is refused on a node that is not argv_capable", ARGV, node(), false],
    ["an argv task is refused when argv_capable is absent", ARGV, node({ argv_capable: undefined }), false],
    ["an argv task is refused when argv_capable is null", ARGV, node({ argv_capable: null }), false],
    ["argv_capable 1 does not count as capable", ARGV, node({ argv_capable: 1 }), false],
    ['argv_capable "true" does not count as capable', ARGV, node({ argv_capable: "true" }), false],
    ["an argv key with a null value still demands an argv runner", { argv: null }, node(), false],
    ["an argv key with an empty list still demands an argv runner", { argv: [] }, node(), false],
    ["a task without argv is placed on a node with no argv runner", MODULE, node(), true],
  ])("%s", (_, payload, view, expected) => {
    expect(eligible(payload, view)).toBe(expected);
    if (!expected) expect(refusal(payload, view)?.gate).toBe("argv");
  });
});

describe("gate 1: the trusted-pool argv path needs all three legs", () => {
  const trusted = withCaps({ pools: ["p-1"] }, { unsandboxed_argv_capable: true });
  const task = { ...ARGV, pool: "p-1", isolation: WAIVED };

  it("a pool argv task with the waiver is placed on an opted-in member without an argv runner", () => {
    expect(gateAnswer(task, trusted)).toEqual({ eligible: true });
  });

  it("a docker argv node still takes pool argv work", () => {
    expect(eligible(task, withCaps({ pools: ["p-1"] }, { argv_capable: true, sandbox_capable: true }))).toBe(true);
  });

  it.each([
    ["the task has no pool", { ...ARGV, isolation: WAIVED }, trusted],
    ["the task's pool is null", { ...ARGV, pool: null, isolation: WAIVED }, trusted],
    ["the task's pool is the empty string", { ...ARGV, pool: "", isolation: WAIVED }, trusted],
    ["the task's pool is not a string", { ...ARGV, pool: ["p-1"], isolation: WAIVED }, trusted],
    ["allowFallback is false", { ...task, isolation: { tier: "sandboxed", allowFallback: false } }, trusted],
    ["allowFallback is absent", { ...task, isolation: SANDBOXED }, trusted],
    ['allowFallback is "true"', { ...task, isolation: { tier: "sandboxed", allowFallback: "true" } }, trusted],
    ["allowFallback is 1", { ...task, isolation: { tier: "sandboxed", allowFallback: 1 } }, trusted],
    ["isolation is absent", { ...ARGV, pool: "p-1" }, trusted],
    ["isolation is not an object", { ...task, isolation: "allowFallback" }, trusted],
    ["the node did not opt in", task, withCaps({ pools: ["p-1"] })],
    ["the node's opt-in is 1", task, withCaps({ pools: ["p-1"] }, { unsandboxed_argv_capable: 1 })],
    ['the node\'s opt-in is "true"', task, withCaps({ pools: ["p-1"] }, { unsandboxed_argv_capable: "true" })],
    ["the node's opt-in is null", task, withCaps({ pools: ["p-1"] }, { unsandboxed_argv_capable: null })],
    ["the node's opt-in is [true]", task, withCaps({ pools: ["p-1"] }, { unsandboxed_argv_capable: [true] })],
  ])("the trusted path stays closed when %s", (_, payload, view) => {
    expect(refusal(payload, view)?.gate).toBe("argv");
  });

  it("an opted-in node outside the pool is still refused, by the pool gate", () => {
    const outsider = withCaps({ pools: ["p-2"] }, { unsandboxed_argv_capable: true });
    expect(refusal(task, outsider)?.gate).toBe("pool");
  });

  it("the argv refusal says which legs of the trusted path are missing", () => {
    expect(refusal({ ...ARGV, pool: "p-1", isolation: SANDBOXED }, node())?.reason).toBe(
      "argv: task carries argv and node is not argv_capable (argv_capable is false); trusted-pool path closed: " +
        "isolation.allowFallback is not true, the node has not opted in (unsandboxed_argv_capable is false)",
    );
  });
});

describe("gate 2: module (fail-open)", () => {
  it.each([
    ["a module task is refused on a node that says module_capable: false", node({ module_capable: false }), false],
    ["a module task is placed when module_capable is true", node({ module_capable: true }), true],
    ["a module task is placed when module_capable is absent", node({ module_capable: undefined }), true],
    ["a module task is placed when module_capable is null", node({ module_capable: null }), true],
    ["a module task is placed when module_capable is 0", node({ module_capable: 0 }), true],
    ['a module task is placed when module_capable is "false"', node({ module_capable: "false" }), true],
  ])("%s", (_, view, expected) => {
    expect(eligible(MODULE, view)).toBe(expected);
    if (!expected)
      expect(refusal(MODULE, view)).toEqual({
        gate: "module",
        reason: "module: task runs a module and node says module_capable: false",
      });
  });

  it("a task without a module key is placed on an argv-only node", () => {
    expect(eligible({ gpus: 0 }, node({ module_capable: false }))).toBe(true);
  });
});

describe("gate 3: local data (fail-closed)", () => {
  it.each([
    ["a node offering a superset", ["patients"], ["patients", "labs"], true],
    ["a node offering every required dataset", ["patients", "labs"], ["labs", "patients"], true],
    ["a node offering only some required datasets", ["patients", "labs"], ["patients"], false],
    ["a node offering a different dataset", ["patients"], ["labs"], false],
    ["a node offering nothing", ["patients"], [], false],
    ["a node advertising the name as a bare string", ["patients"], "patients", false],
    ["a node advertising a longer string containing the name", ["patients"], "patients,labs", false],
    ["a node advertising null", ["patients"], null, false],
    ["a node advertising a dict of paths", ["patients"], { patients: "/srv/data" }, false],
    ["a node advertising true", ["patients"], true, false],
    ["a node advertising a name that only extends the required one", ["patients"], ["patients-2024"], false],
    [
      "a required object matched with different key order",
      [{ name: "x", v: [1, 2] }],
      [{ v: [1, 2], name: "x" }],
      true,
    ],
    ["a required true against an advertised 1", [true], [1], false],
    ["a required 1 against an advertised '1'", [1], ["1"], false],
    ["a required list against an advertised string", [["patients"]], ["patients"], false],
    ["a required 0 against an advertised -0", [0], [-0], true],
  ])("local_inputs with %s", (_, required, advertised, expected) => {
    const payload = { ...MODULE, local_inputs: required };
    expect(eligible(payload, node({ local_datasets: advertised }))).toBe(expected);
    if (!expected) expect(refusal(payload, node({ local_datasets: advertised }))?.gate).toBe("local_data");
  });

  it("a node with no local_datasets field at all is refused", () => {
    const view = node();
    delete view.local_datasets;
    expect(refusal({ local_inputs: ["patients"] }, view)?.gate).toBe("local_data");
  });

  it.each([
    ["absent", {}],
    ["null", { local_inputs: null }],
    ["an empty list", { local_inputs: [] }],
  ])("local_inputs %s requires nothing, whatever the node advertises", (_, payload) => {
    for (const advertised of [undefined, null, "patients", [], ["labs"], 7]) {
      expect(eligible(payload, node({ local_datasets: advertised }))).toBe(true);
    }
  });

  it.each([
    ["a bare string", "patients"],
    ["a dict", { patients: 1 }],
    ["a number", 1],
    ["true", true],
    ["a list holding NaN", [Number.NaN]],
    ["a list holding undefined", [undefined]],
  ])("local_inputs as %s refuses everywhere, even on a node that holds the name", (_, required) => {
    const payload = { local_inputs: required };
    expect(refusal(payload, EVERYTHING)?.gate).toBe("local_data");
    expect(eligible(payload, node({ local_datasets: ["patients", 1, true] }))).toBe(false);
  });
});

describe("gate 4: GPU (fail-closed)", () => {
  it.each([
    [1, 0, false],
    [1, 1, true],
    [2, 1, false],
    [2, 2, true],
    [2, 4, true],
    [0, 0, true],
    [0, 2, true],
  ])("a %i-GPU task on a %i-GPU node is eligible: %s", (required, advertised, expected) => {
    expect(eligible({ ...MODULE, gpus: required }, gpuNode(advertised))).toBe(expected);
  });

  it.each([
    ["absent", {}],
    ["null", { gpus: null }],
    ["0", { gpus: 0 }],
    ["-0", { gpus: -0 }],
  ])("gpus %s requires nothing and places on CPU and GPU nodes alike", (_, payload) => {
    expect(eligible(payload, gpuNode(0))).toBe(true);
    expect(eligible(payload, gpuNode(4))).toBe(true);
    expect(eligible(payload, { node_id: "n1" })).toBe(true);
  });

  it("a GPU node still takes CPU work", () => {
    expect(eligible(MODULE, gpuNode(8))).toBe(true);
  });

  it("a task needing 1e308 GPUs is well-formed and simply never places", () => {
    expect(refusal({ gpus: 1e308 }, EVERYTHING)).toEqual({
      gate: "gpu",
      reason: "gpu: task needs 1e+308 GPUs, node advertises 4",
    });
  });

  it.each([
    ["true", true],
    ["false", false],
    ['"1"', "1"],
    ["-1", -1],
    ["1.5", 1.5],
    ["[1]", [1]],
    ["{count: 1}", { count: 1 }],
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["a bigint", 1n],
  ])("gpus %s refuses on every node and never throws", (_, required) => {
    for (const view of [gpuNode(0), gpuNode(8), EVERYTHING]) {
      expect(refusal({ gpus: required }, view)?.gate).toBe("gpu");
    }
  });

  it.each([
    ["capabilities absent", node({ capabilities: undefined })],
    ["capabilities null", node({ capabilities: null })],
    ["capabilities a string", node({ capabilities: "8 cores, 1 gpu" })],
    ["capabilities a list", node({ capabilities: [{ gpus: [{ index: 0 }] }] })],
    ["gpus absent", node({ capabilities: { cpu_cores: 8 } })],
    ["gpus []", withCaps({ gpus: [] })],
    ["gpus null", withCaps({ gpus: null })],
    ['gpus "gpu"', withCaps({ gpus: "gpu" })],
    ["gpus {}", withCaps({ gpus: {} })],
    ["gpus a dict of devices", withCaps({ gpus: { "0": "NVIDIA A10G" } })],
    ["gpus true", withCaps({ gpus: true })],
    ["gpus 1", withCaps({ gpus: 1 })],
  ])("a node with %s counts as having no GPUs", (_, view) => {
    expect(refusal({ gpus: 1 }, view)?.gate).toBe("gpu");
  });
});

describe("gate 5: node exclusion (fail-closed)", () => {
  it.each([
    ["the named node is refused", ["node-a"], "node-a", false],
    ["any other node still gets it", ["node-a"], "node-b", true],
    ["several nodes can be excluded at once", ["node-a", "node-b"], "node-b", false],
    ["a third node passes a two-node exclusion", ["node-a", "node-b"], "node-c", true],
    ["a name is matched whole, never as a prefix", ["node-a"], "node-a-2", true],
    ["a longer excluded name does not catch a shorter node id", ["node-a-2"], "node-a", true],
  ])("%s", (_, excluded, nodeId, expected) => {
    expect(eligible({ exclude_nodes: excluded }, node({ node_id: nodeId }))).toBe(expected);
  });

  it.each([
    ["absent", {}],
    ["null", { exclude_nodes: null }],
    ["an empty list", { exclude_nodes: [] }],
  ])("exclude_nodes %s excludes nobody, not even a node without an id", (_, payload) => {
    expect(eligible(payload, node())).toBe(true);
    expect(eligible(payload, {})).toBe(true);
  });

  it.each([
    ["a bare string", "node-a"],
    ["a dict", { node_id: "node-a" }],
    ["a number", 1],
    ["true", true],
    ["a list with a null member", ["node-a", null]],
    ["a list with a number member", ["node-a", 7]],
    ["a list with a nested list", [["node-b"]]],
    ["a list with a dict member", [{ node_id: "node-b" }]],
  ])("exclude_nodes as %s refuses on every node", (_, excluded) => {
    for (const id of ["node-a", "node-b", "node-z"]) {
      expect(refusal({ exclude_nodes: excluded }, node({ node_id: id }))?.gate).toBe("exclusion");
    }
  });

  it.each([
    ["absent", undefined],
    ["null", null],
    ["empty", ""],
    ["a number", 7],
    ["a list", ["node-b"]],
  ])("a node whose node_id is %s cannot prove it is not excluded", (_, nodeId) => {
    expect(refusal({ exclude_nodes: ["node-a"] }, node({ node_id: nodeId }))?.gate).toBe("exclusion");
  });
});

describe("gate 6: team pool (fail-closed)", () => {
  it.each([
    ["a member node takes the pool task", ["p-1", "p-2"], true],
    ["a non-member node is refused", ["p-2"], false],
    ["a node with an empty pool list is refused", [], false],
    ["a node whose pool list is null is refused", null, false],
    ["a node whose pool list is the bare name is refused", "p-1", false],
    ["a node whose pool list is a dict is refused", { "p-1": true }, false],
    ["a node whose pool list is a number is refused", 1, false],
    ["a node whose pool list holds null is refused", [null], false],
    ["a node whose pool list holds a number is refused", [1], false],
    ["a member whose pool list also holds a non-string is refused", ["p-1", null], false],
  ])("%s", (_, pools, expected) => {
    const view = withCaps({ pools });
    expect(eligible({ ...MODULE, pool: "p-1" }, view)).toBe(expected);
    if (!expected) expect(refusal({ pool: "p-1" }, view)?.gate).toBe("pool");
  });

  it.each([
    ["capabilities absent", node({ capabilities: undefined })],
    ["capabilities a string", node({ capabilities: "p-1" })],
    ["pools absent", node({ capabilities: { cpu_cores: 8 } })],
  ])("a node with %s is refused", (_, view) => {
    expect(refusal({ pool: "p-1" }, view)?.gate).toBe("pool");
  });

  it.each([
    ["the empty string", ""],
    ["a number", 1],
    ["true", true],
    ["a list", ["p-1"]],
    ["a dict", { id: "p-1" }],
  ])("pool as %s refuses on every node, members included", (_, pool) => {
    expect(refusal({ pool }, EVERYTHING)?.gate).toBe("pool");
  });

  it("a task without a pool places on pool members and non-members alike", () => {
    expect(eligible(MODULE, withCaps({ pools: ["p-1"] }))).toBe(true);
    expect(eligible({ pool: null }, node())).toBe(true);
  });
});

describe("gate 7: isolation tier", () => {
  it.each([
    ["absent", undefined],
    ["null", null],
    ["an empty object", {}],
    ["tier null", { tier: null }],
    ['tier ""', { tier: "" }],
    ['tier "standard"', { tier: "standard" }],
  ])("isolation %s is standard and places on a node without a sandbox", (_, isolation) => {
    expect(eligible({ ...MODULE, isolation }, node())).toBe(true);
  });

  it.each([
    ["sandboxed", "sandboxed"],
    ["an unknown spelling, Sandboxed", "Sandboxed"],
    ["an unknown spelling, SANDBOXED", "SANDBOXED"],
    ["an unknown tier name", "gvisor"],
    ["a number", 1],
    ["true", true],
    ["a list", ["standard"]],
  ])("tier %s needs a sandbox_capable node", (_, tier) => {
    const payload = { isolation: { tier } };
    expect(refusal(payload, node())?.gate).toBe("isolation");
    expect(eligible(payload, node({ sandbox_capable: true }))).toBe(true);
  });

  it.each([
    ["1", 1],
    ['"true"', "true"],
    ["null", null],
    ["absent", undefined],
  ])("sandbox_capable %s does not count as a sandbox", (_, capable) => {
    expect(refusal({ isolation: SANDBOXED }, node({ sandbox_capable: capable }))?.gate).toBe("isolation");
  });

  it.each([
    ['the string "sandboxed"', "sandboxed"],
    ['the string "standard"', "standard"],
    ["a number", 1],
    ["true", true],
    ["a list", [SANDBOXED]],
  ])("isolation as %s refuses everywhere, sandboxes included", (_, isolation) => {
    expect(refusal({ isolation }, EVERYTHING)?.gate).toBe("isolation");
  });

  it("allowFallback: true places a sandboxed task on a node without a sandbox", () => {
    expect(eligible({ isolation: WAIVED }, node())).toBe(true);
  });

  it.each([
    ['"true"', "true"],
    ["1", 1],
    ["null", null],
  ])("allowFallback %s is not a waiver", (_, allowFallback) => {
    expect(refusal({ isolation: { tier: "sandboxed", allowFallback } }, node())?.gate).toBe("isolation");
  });
});

describe("allowFallback waives the tier and nothing else", () => {
  it.each([
    ["argv without a team pool", { ...ARGV }, node(), "argv"],
    ["argv on a member node that did not opt in", { ...ARGV, pool: "p-1" }, withCaps({ pools: ["p-1"] }), "argv"],
    ["a local dataset the node does not offer", { local_inputs: ["patients"] }, node(), "local_data"],
    ["a GPU the node does not have", { gpus: 1 }, gpuNode(0), "gpu"],
    ["an excluded node", { exclude_nodes: ["node-a"] }, node(), "exclusion"],
    ["a pool the node is not in", { pool: "p-1" }, withCaps({ pools: ["p-2"] }), "pool"],
  ])("a waived task still refuses %s", (_, payload, view, gate) => {
    expect(refusal({ ...payload, isolation: WAIVED }, { ...view, sandbox_capable: true })?.gate).toBe(gate);
    expect(refusal({ ...payload, isolation: WAIVED }, view)?.gate).toBe(gate);
  });
});

describe("requirements that demand nothing", () => {
  it.each([
    ["an empty payload", {}],
    ["gpus: 0", { gpus: 0 }],
    ["an empty local_inputs", { local_inputs: [] }],
    ["an empty exclude_nodes", { exclude_nodes: [] }],
    ["all of them together", { gpus: 0, local_inputs: [], exclude_nodes: [], isolation: { tier: "standard" } }],
    ["keys the gate does not read", { seed: 7, parameters: { gpus: 4 }, local_datasets: ["x"], tier: "sandboxed" }],
  ])("%s places on a node that advertises nothing", (_, payload) => {
    expect(eligible(payload, {})).toBe(true);
    expect(eligible(payload, node())).toBe(true);
  });
});

describe("payloads and node views that are not objects", () => {
  it.each([
    ["null", null],
    ["undefined", undefined],
    ["a string", "python train.py"],
    ["a number", 1],
    ["true", true],
    ["an empty list", []],
    ["an argv-shaped list", ["python", "train.py"]],
  ])("a payload that is %s refuses even on a node that can do everything", (_, payload) => {
    expect(refusal(payload, EVERYTHING)?.gate).toBe("argv");
  });

  it.each([
    ["null", null],
    ["a string", "node-a"],
    ["a list", [node({ argv_capable: true })]],
    ["a number", 1],
  ])("a node view that is %s advertises nothing", (_, view) => {
    expect(eligible({}, view)).toBe(true);
    expect(eligible(MODULE, view)).toBe(true);
    for (const [payload, gate] of [
      [ARGV, "argv"],
      [{ local_inputs: ["patients"] }, "local_data"],
      [{ gpus: 1 }, "gpu"],
      [{ exclude_nodes: ["node-b"] }, "exclusion"],
      [{ pool: "p-1" }, "pool"],
      [{ isolation: SANDBOXED }, "isolation"],
    ] as const) {
      expect(refusal(payload, view)?.gate).toBe(gate);
    }
  });

  it("only own properties count, so a polluted prototype grants nothing", () => {
    const inherited = Object.create(node({ argv_capable: true, local_datasets: ["patients"] })) as Json;
    expect(refusal(ARGV, inherited)?.gate).toBe("argv");
    expect(refusal({ local_inputs: ["patients"] }, inherited)?.gate).toBe("local_data");
    const payload = Object.create({ gpus: 5 }) as Json;
    expect(eligible(payload, gpuNode(0))).toBe(true);
  });
});

describe("hostile values never make the gate throw", () => {
  const throwing = new Proxy(
    {},
    {
      get() {
        throw new Error("boom");
      },
      has() {
        throw new Error("boom");
      },
      getOwnPropertyDescriptor() {
        throw new Error("boom");
      },
      ownKeys() {
        throw new Error("boom");
      },
    },
  );
  const revoked = Proxy.revocable({}, {});
  revoked.revoke();
  const getter = (key: string): Json =>
    Object.defineProperty({}, key, {
      enumerable: true,
      get() {
        throw new Error("boom");
      },
    }) as Json;
  const cyclic: Json = { name: "x" };
  cyclic.self = cyclic;
  let deep: unknown = "patients";
  for (let i = 0; i < 100_000; i++) deep = [deep];

  it.each([
    ["a proxy that throws on every read", throwing],
    ["a revoked proxy", revoked.proxy],
    ["a payload whose gpus getter throws", getter("gpus")],
    ["a payload whose isolation getter throws", getter("isolation")],
  ])("a payload that is %s refuses, naming the first gate", (_, payload) => {
    expect(refusal(payload, EVERYTHING)).toEqual({ gate: "argv", reason: "argv: the payload could not be read" });
  });

  it("reads argv by presence only, so a throwing argv value is never touched", () => {
    expect(eligible(getter("argv"), node({ argv_capable: true }))).toBe(true);
    expect(refusal(getter("argv"), node())?.gate).toBe("argv");
  });

  it.each([
    ["a proxy that throws on every read", throwing],
    ["a revoked proxy", revoked.proxy],
    ["a view whose capabilities getter throws", getter("capabilities")],
  ])("a node view that is %s refuses the gate that needed it", (_, view) => {
    expect(refusal({ gpus: 1 }, view)).toEqual({ gate: "gpu", reason: "gpu: the node view could not be read" });
  });

  it("a task that requires nothing accepts a view that throws on every read: no gate reads it", () => {
    expect(eligible({}, throwing)).toBe(true);
    expect(eligible({ gpus: 0, isolation: { tier: "sandboxed", allowFallback: true } }, throwing)).toBe(true);
    expect(refusal({ module: "m" }, throwing)).toEqual({
      gate: "module",
      reason: "module: the node view could not be read",
    });
  });

  it("a cyclic local_inputs element refuses instead of recursing forever", () => {
    expect(refusal({ local_inputs: [cyclic] }, node({ local_datasets: [cyclic] }))?.gate).toBe("local_data");
  });

  it("a cyclic advertised dataset is compared safely and still matches a plain name", () => {
    expect(eligible({ local_inputs: ["patients"] }, node({ local_datasets: [cyclic, "patients"] }))).toBe(true);
    expect(eligible({ local_inputs: [{ name: "x" }] }, node({ local_datasets: [cyclic] }))).toBe(false);
  });

  it("a very deeply nested requirement refuses without overflowing the stack", () => {
    expect(refusal({ local_inputs: [deep] }, node({ local_datasets: [deep] }))?.gate).toBe("local_data");
  });

  it("a local_inputs element nested to exactly the depth limit can still match", () => {
    let atLimit: unknown = "x";
    for (let i = 0; i < MAX_DEPTH; i++) atLimit = [atLimit];
    const copy: unknown = JSON.parse(JSON.stringify(atLimit));
    expect(eligible({ local_inputs: [atLimit] }, node({ local_datasets: [copy] }))).toBe(true);
    expect(eligible({ local_inputs: [[atLimit]] }, node({ local_datasets: [[copy]] }))).toBe(false);
  });
});

describe("gateAnswer", () => {
  it.each([
    [{ gpus: 2 }, gpuNode(1), "gpu", "gpu: task needs 2 GPUs, node advertises 1"],
    [{ gpus: 1 }, gpuNode(0), "gpu", "gpu: task needs 1 GPU, node advertises 0"],
    [
      { gpus: 1 },
      withCaps({ gpus: "gpu" }),
      "gpu",
      "gpu: task needs 1 GPU, node advertises none (capabilities.gpus is 'gpu', not a list)",
    ],
    [{ gpus: "1" }, gpuNode(8), "gpu", "gpu: gpus must be a whole number of at least 0, got '1'"],
    [{ gpus: 1.5 }, gpuNode(8), "gpu", "gpu: gpus must be a whole number of at least 0, got 1.5"],
    [
      { local_inputs: ["patients", "labs"] },
      node({ local_datasets: ["labs"] }),
      "local_data",
      "local_data: node does not offer dataset 'patients'",
    ],
    [
      { local_inputs: ["patients"] },
      node({ local_datasets: "patients" }),
      "local_data",
      "local_data: task needs 1 local dataset, node's local_datasets is 'patients', not a list",
    ],
    [
      { local_inputs: "patients" },
      EVERYTHING,
      "local_data",
      "local_data: local_inputs must be a list of dataset names, got 'patients'",
    ],
    [{ exclude_nodes: ["node-a"] }, node(), "exclusion", "exclusion: task excludes node 'node-a'"],
    [{ exclude_nodes: ["node-a", 7] }, node(), "exclusion", "exclusion: exclude_nodes[1] is 7, not a node id"],
    [
      { exclude_nodes: ["x", "y"] },
      node({ node_id: "" }),
      "exclusion",
      "exclusion: task excludes 2 nodes and node has no readable node_id (node_id is '')",
    ],
    [{ pool: "p-1" }, withCaps({ pools: ["p-2"] }), "pool", "pool: node is not a member of team pool 'p-1'"],
    [
      { pool: "p-1" },
      withCaps({ pools: ["p-1", 3] }),
      "pool",
      "pool: node's capabilities.pools holds 3, not a pool name, so its membership cannot be trusted",
    ],
    [{ pool: "" }, EVERYTHING, "pool", "pool: pool must be a non-empty team pool name, got ''"],
    [
      { isolation: { tier: "Sandboxed" } },
      node({ sandbox_capable: 1 }),
      "isolation",
      "isolation: task needs a sandboxed node (tier 'Sandboxed') and node is not sandbox_capable (sandbox_capable is 1)",
    ],
    [{ isolation: "sandboxed" }, EVERYTHING, "isolation", "isolation: isolation must be an object, got 'sandboxed'"],
    [[], EVERYTHING, "argv", "argv: the payload is a list, not a JSON object, so its requirements cannot be read"],
  ])("explains %j on a node as the %s gate's refusal", (payload, view, gate, reason) => {
    expect(gateAnswer(payload, view)).toEqual({ eligible: false, gate, reason });
  });

  // A payload that fails every gate on a node that advertises nothing, then
  // the same payload with the failing requirements removed one at a time.
  const failing: [string, Json][] = [
    ["argv", ARGV],
    ["module", MODULE],
    ["local_data", { local_inputs: ["patients"] }],
    ["gpu", { gpus: 1 }],
    ["exclusion", { exclude_nodes: ["node-a"] }],
    ["pool", { pool: "p-1" }],
    ["isolation", { isolation: SANDBOXED }],
  ];
  it.each(failing.map(([gate], i) => [gate, i] as const))(
    "names %s when it is the first gate that refuses",
    (gate, i) => {
      const payload = Object.assign({}, ...failing.slice(i).map(([, part]) => part)) as Json;
      expect(refusal(payload, node({ module_capable: false }))?.gate).toBe(gate);
    },
  );

  it("keeps a reason on one line even when a name holds line breaks", () => {
    const name = "a\nb\u2028c\rd";
    const reason = refusal({ local_inputs: [name] }, node())?.reason ?? "";
    expect(reason).toMatch(/^local_data: /);
    expect(reason).not.toMatch(/[\n\r\u2028\u2029]/);
  });

  it("keeps a reason short when the offending value is huge", () => {
    const reason = refusal({ gpus: "9".repeat(10_000) }, node())?.reason ?? "";
    expect(reason.length).toBeLessThan(200);
  });
});

describe("jsonEqual", () => {
  it.each([
    ["a string and a list holding it", "patients", ["patients"], false],
    ["true and 1", true, 1, false],
    ["false and 0", false, 0, false],
    ["null and an empty object", null, {}, false],
    ["an empty list and an empty object", [], {}, false],
    ['"" and null', "", null, false],
    ["objects with the same members in different order", { a: 1, b: [true, null] }, { b: [true, null], a: 1 }, true],
    ["objects where one has an extra member", { a: 1 }, { a: 1, b: 2 }, false],
    ["lists in different order", [1, 2], [2, 1], false],
    ["0 and -0", 0, -0, true],
    ["NaN and itself", Number.NaN, Number.NaN, false],
    ["undefined and itself", undefined, undefined, false],
    ["objects holding undefined", { a: undefined }, { a: undefined }, false],
  ])("%s: %s", (_, a, b, expected) => {
    expect(jsonEqual(a, b)).toBe(expected);
    expect(jsonEqual(b, a)).toBe(expected);
  });

  it("sees a __proto__ member parsed from JSON as an ordinary member", () => {
    const a: unknown = JSON.parse('{"__proto__": 1}');
    expect(jsonEqual(a, JSON.parse('{"__proto__": 1}'))).toBe(true);
    expect(jsonEqual(a, {})).toBe(false);
  });
});

describe("GATE_KEYS is exactly the payload keys the gate reads", () => {
  type GateKey = (typeof GATE_KEYS)[number];
  const gateKeys: readonly string[] = GATE_KEYS;

  // Per gate key: a value that refuses `on`, a node the same payload without
  // the key (but with `base`) is placed on. The type demands one for every
  // key of GATE_KEYS. A GPU requirement applies only to a task asking for GPUs.
  const ONE_GPU = withCaps({
    gpus: [
      {
        index: 0,
        name: "GeForce RTX 3060",
        memory_total_mb: 12288,
        compute_capability: "8.6",
        driver_version: "535.54",
      },
    ],
  });
  const READS: Record<GateKey, { value: unknown; on: Json; base?: Json }> = {
    argv: { value: ["python", "train.py"], on: node() },
    module: { value: "flashml_workloads.sklearn_trial", on: node({ module_capable: false }) },
    local_inputs: { value: ["patients"], on: node() },
    gpus: { value: 1, on: gpuNode(0) },
    gpu_memory_mb: { value: 40960, on: ONE_GPU, base: { gpus: 1 } },
    gpu_compute_capability: { value: "9.0", on: ONE_GPU, base: { gpus: 1 } },
    gpu_driver_version: { value: "550", on: ONE_GPU, base: { gpus: 1 } },
    exclude_nodes: { value: ["node-a"], on: node() },
    pool: { value: "p-1", on: withCaps({ pools: ["p-2"] }) },
    isolation: { value: SANDBOXED, on: node() },
  };

  it.each(GATE_KEYS.map((key) => [key, READS[key]] as const))(
    "the gate reads %s: a value for it refuses a node that takes the payload without it",
    (key, { value, on, base = {} }) => {
      expect(gateAnswer(base, on)).toEqual({ eligible: true });
      expect(eligible({ ...base, [key]: value }, on)).toBe(false);
      // And the requirement the pool stores for it keeps the key.
      expect(Object.keys(requirementOf({ ...base, [key]: value })).sort()).toEqual([...Object.keys(base), key].sort());
    },
  );

  // Keys a payload, a node view or a JobSpec holds, near-misses of the gate's
  // own keys, and the gate keys themselves: whichever of these GATE_KEYS does
  // not list must change nothing.
  const CANDIDATES = [
    ...["argv", "module", "local_inputs", "gpus", "exclude_nodes", "pool", "isolation"],
    ...["params", "inputs", "env", "output_prefix", "task_id", "job_id", "image", "checkpoint", "unpack_inputs"],
    ...["command", "trials", "grid", "task_params", "lease_seconds", "max_attempts", "commit_key", "payload"],
    ...["node_id", "sandbox_capable", "argv_capable", "module_capable", "unsandboxed_argv_capable"],
    ...["local_datasets", "capabilities", "pools", "labels", "hostname", "status", "environment"],
    ...["tier", "allowFallback", "sandboxed", "gpu", "gpu_count", "gpuPerTask", "exclude", "excluded_nodes"],
    ...["exclude_node", "node", "nodes", "team", "team_pool", "placement", "resources", "isolation_tier"],
    ...["local_data", "datasets", "dataset", "requirements", "requires", "constraints", "affinity"],
    ...["Argv", "MODULE", "Pool", "GPUS", "architecture", "architectures", "os", "workload", "spec", "priority"],
    ...["seed", "parameters", "__proto__", "constructor", "toString", "hasOwnProperty", "", " ", "ñ", "😀"],
  ];
  const VALUES: unknown[] = [
    null,
    true,
    false,
    0,
    1,
    4,
    -1,
    1.5,
    "",
    "x",
    "sandboxed",
    "standard",
    "p-1",
    "node-a",
    "patients",
    [],
    ["node-a"],
    ["patients"],
    ["p-1"],
    [1],
    {},
    SANDBOXED,
    WAIVED,
    { gpus: 4, pool: "p-1", tier: "sandboxed" },
  ];
  const PAYLOADS: Json[] = [
    {},
    MODULE,
    ARGV,
    { gpus: 1 },
    { local_inputs: ["patients"] },
    { exclude_nodes: ["node-a"] },
    { pool: "p-1" },
    { isolation: SANDBOXED },
    { ...ARGV, pool: "p-1", isolation: WAIVED },
    { ...MODULE, gpus: 2, local_inputs: ["patients", "labs"], exclude_nodes: ["node-b"], pool: "p-2" },
  ];
  const VIEWS: unknown[] = [
    {},
    null,
    node(),
    node({ module_capable: false }),
    node({ argv_capable: true, sandbox_capable: true }),
    gpuNode(1),
    gpuNode(4),
    withCaps({ pools: ["p-1"] }, { unsandboxed_argv_capable: true }),
    withCaps({ pools: ["p-2"] }),
    node({ local_datasets: ["patients"], node_id: "node-b" }),
    EVERYTHING,
  ];

  /** The gate's every answer for a payload over VIEWS, and the class the pool stores it under. */
  const answers = (payload: Json) => ({
    class: requirementClass(payload),
    gateAnswer: VIEWS.map((view) => gateAnswer(payload, view)),
    eligible: VIEWS.map((view) => eligible(payload, view)),
  });

  function withKey(payload: Json, key: string, value: unknown): Json {
    const out = { ...payload };
    // An own property, even for __proto__.
    Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
    return out;
  }

  const others = CANDIDATES.filter((key) => !gateKeys.includes(key));

  it.each(others)("a payload key %j outside GATE_KEYS never changes an answer", (key) => {
    for (const payload of PAYLOADS) {
      const expected = answers(payload);
      for (const value of VALUES)
        expect(answers(withKey(payload, key, value)), JSON.stringify(value)).toEqual(expected);
    }
  });

  it("random payload keys outside GATE_KEYS never change an answer", () => {
    const rng = new Rng(0x6a7e);
    const alphabet = "abcdefghijklmnopqrstuvwxyz_-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ñ😀";
    const randomValue = (depth: number): unknown => {
      const roll = rng.below(depth > 2 ? 4 : 6);
      if (roll === 0) return rng.pick([null, true, false]);
      if (roll === 1) return rng.between(-3, 8);
      if (roll === 2) return rng.pick([...VALUES, "x", "p-1", "node-a"]);
      if (roll === 3) return rng.pick(CANDIDATES);
      if (roll === 4) return Array.from({ length: rng.below(3) }, () => randomValue(depth + 1));
      return Object.fromEntries(
        Array.from({ length: rng.below(3) }, () => [rng.pick(CANDIDATES), randomValue(depth + 1)]),
      );
    };
    let tried = 0;
    for (let i = 0; i < 500; i++) {
      const length = rng.between(1, 12);
      const key = Array.from({ length }, () => rng.pick([...alphabet])).join("");
      if (gateKeys.includes(key)) continue;
      const payload = rng.pick(PAYLOADS);
      const value = randomValue(0);
      const where = `seed ${rng.seed}, key ${JSON.stringify(key)} = ${JSON.stringify(value)} on ${JSON.stringify(payload)}`;
      expect(answers(withKey(payload, key, value)), where).toEqual(answers(payload));
      tried++;
    }
    expect(tried).toBeGreaterThan(450);
  });

  it("the table of other keys leaves something to test", () => {
    expect(others.length).toBeGreaterThan(60);
  });
});
