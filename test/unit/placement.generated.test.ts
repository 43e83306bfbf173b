// Properties of the placement gate over a large deterministic set of nasty
// payload/node combinations: gateAnswer and eligible agree and never throw, the
// reduced requirement answers like the payload (also after the JSON round
// trip the pool object puts it through), and one requirement class never
// holds two payloads the gate tells apart.

import { describe, expect, it } from "vitest";
import { eligible, GATE_KEYS, gateAnswer, requirementClass, requirementOf } from "../../src/rules/placement";
import { Rng } from "../fixtures/rng";

const ABSENT = Symbol("absent");
type Pool = readonly unknown[];

// Per key: well-formed values, then nasty ones. Nasty values are drawn
// rarely, or nearly every payload would be malformed somewhere and the set
// would only ever test "refused everywhere". The GPU requirements are mostly
// absent for the same reason: without a GPU count they refuse everywhere.
const PAYLOAD_VALUES: Record<string, readonly [Pool, Pool]> = {
  argv: [
    [ABSENT, ABSENT, ABSENT, ["python", "train.py"]],
    [null, "", 0, false, []],
  ],
  module: [
    [ABSENT, ABSENT, "flashml_workloads.sklearn_trial"],
    [null, false],
  ],
  local_inputs: [
    [ABSENT, ABSENT, null, [], ["patients"], ["labs", "patients"], ["patients", "labs"], ["patients", "patients"]],
    [
      "patients",
      { patients: 1 },
      [1],
      [true],
      [null],
      [-0],
      [0],
      [[]],
      [{ a: 1, b: [2] }],
      [{ b: [2], a: 1 }],
      ["patients", 1],
      1,
      true,
      [Number.NaN],
      [undefined],
    ],
  ],
  gpus: [
    [ABSENT, ABSENT, null, 0, -0, 1, 2, 3],
    [1e308, -1, 1.5, true, false, "1", [1], { count: 1 }, Number.NaN, Number.POSITIVE_INFINITY, undefined],
  ],
  gpu_memory_mb: [
    [...Array<symbol>(12).fill(ABSENT), null, 1, 12288, 40960, 81920],
    [0, -1, 1.5, "40960", true, [], Number.NaN],
  ],
  gpu_compute_capability: [
    [...Array<symbol>(18).fill(ABSENT), null, "7.0", "8.0", "08.00", "8.6", "8.10", "9.0", "12.0"],
    ["8", "8.0.0", "", 8, " 8.0", "sm_80"],
  ],
  gpu_driver_version: [
    [...Array<symbol>(14).fill(ABSENT), null, "470", "535.54", "535.54.0", "550.54.15"],
    ["", "535.", "v535", 535, "535.54-1"],
  ],
  exclude_nodes: [
    [ABSENT, ABSENT, null, [], ["node-a"], ["node-b", "node-a"], ["node-a", "node-b", "node-a"]],
    [[""], ["node-a", null], "node-a", [7], {}, true],
  ],
  pool: [
    [ABSENT, ABSENT, ABSENT, null, "p-1", "p-2"],
    ["", 1, true, ["p-1"], { id: "p-1" }],
  ],
  isolation: [
    [
      ABSENT,
      ABSENT,
      null,
      {},
      { tier: "standard" },
      { tier: "sandboxed" },
      { tier: null },
      { tier: "" },
      { tier: "sandboxed", allowFallback: true },
      { allowFallback: true },
      { allowFallback: true, tier: "standard", network: "none" },
    ],
    [
      { tier: "Sandboxed" },
      { tier: 0 },
      { tier: "sandboxed", allowFallback: "true" },
      { tier: "sandboxed", allowFallback: 1 },
      "sandboxed",
      [],
      1,
    ],
  ],
  seed: [[ABSENT, 1, 2], []],
  parameters: [[ABSENT, { gpus: 4, pool: "p-9" }], []],
};

const NON_OBJECT_PAYLOADS: Pool = [null, "python train.py", [], ["python"], 1, true, undefined];

const RTX_3060 = { index: 0, memory_total_mb: 12288, compute_capability: "8.6", driver_version: "535.54.03" };
const A100 = { index: 0, memory_total_mb: 81920, compute_capability: "8.0", driver_version: "550.54.15" };
const V100 = { index: 0, memory_total_mb: 32768, compute_capability: "7.0", driver_version: "470.82" };
const H100 = { index: 0, memory_total_mb: 81559, compute_capability: "12.0", driver_version: "550.90" };
// Cards whose compared fields cannot be read: none qualifies for what it cannot show.
const ODD_GPUS: Pool = [
  { index: 0, memory_total_mb: null, compute_capability: "", driver_version: "" },
  { index: 0, memory_total_mb: "81920", compute_capability: 8.0, driver_version: 550 },
  { index: 0, memory_total_mb: 81920.5, compute_capability: "8.10", driver_version: "535.54-1" },
  null,
  "A100",
];

const CAPABILITY_GPUS: Pool = [
  ABSENT,
  [],
  [{ index: 0 }],
  [{ index: 0 }, { index: 1 }],
  [{}, {}, {}],
  [RTX_3060],
  [A100],
  [A100, A100],
  [RTX_3060, A100],
  [V100, H100],
  [H100, H100, RTX_3060],
  [ODD_GPUS[0], A100],
  [ODD_GPUS[1], ODD_GPUS[2]],
  [ODD_GPUS[3], ODD_GPUS[4], A100],
  null,
  "gpu",
  {},
  true,
  1,
];
const CAPABILITY_POOLS: Pool = [ABSENT, [], ["p-1"], ["p-1", "p-2"], ["p-2"], ["p-1", null], "p-1", [1], null];

const NODE_VALUES: Record<string, readonly [Pool, Pool]> = {
  node_id: [
    ["node-a", "node-b", "node-c"],
    [ABSENT, null, "", 7, ["node-a"]],
  ],
  sandbox_capable: [
    [ABSENT, true, false],
    [1, "true", null],
  ],
  argv_capable: [
    [ABSENT, true, false],
    [1, "true", null],
  ],
  module_capable: [
    [ABSENT, true, false],
    [null, 0, "false"],
  ],
  unsandboxed_argv_capable: [
    [ABSENT, true, false],
    [1, "true", null],
  ],
  local_datasets: [
    [ABSENT, [], ["patients"], ["patients", "labs"], ["labs"]],
    [null, "patients", { patients: "/srv" }, [1], [true], [null], [{ b: [2], a: 1 }], [-0], [[]]],
  ],
};

const NON_OBJECT_NODES: Pool = [null, "node-a", [], 1];

function build(rng: Rng, values: Record<string, readonly [Pool, Pool]>, nastiness: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, [good, nasty]] of Object.entries(values)) {
    const value = nasty.length > 0 && rng.chance(nastiness) ? rng.pick(nasty) : rng.pick(good);
    if (value !== ABSENT) out[key] = value;
  }
  return out;
}

function makePayload(rng: Rng): unknown {
  if (rng.chance(0.03)) return rng.pick(NON_OBJECT_PAYLOADS);
  return build(rng, PAYLOAD_VALUES, 0.07);
}

function makeNode(rng: Rng): unknown {
  if (rng.chance(0.04)) return rng.pick(NON_OBJECT_NODES);
  const view = build(rng, NODE_VALUES, 0.2);
  const shape = rng.next();
  if (shape < 0.08) view.capabilities = rng.pick([null, "8 cores", [], {}]);
  else if (shape > 0.12) {
    const capabilities: Record<string, unknown> = { cpu_cores: 8 };
    const gpus = rng.pick(CAPABILITY_GPUS);
    const pools = rng.pick(CAPABILITY_POOLS);
    if (gpus !== ABSENT) capabilities.gpus = gpus;
    if (pools !== ABSENT) capabilities.pools = pools;
    view.capabilities = capabilities;
  }
  return view;
}

/** A deep copy with every object's keys in a shuffled order. */
function shuffleKeys(value: unknown, rng: Rng): unknown {
  if (Array.isArray(value)) return value.map((item: unknown) => shuffleKeys(item, rng));
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(rng.shuffle(Object.entries(value)).map(([k, v]) => [k, shuffleKeys(v, rng)]));
}

const rng = new Rng(0x5eed_f1a5);
const PAYLOADS = Array.from({ length: 400 }, () => makePayload(rng));
const NODES = Array.from({ length: 60 }, () => makeNode(rng));

/** The gate's answers for one payload over the whole node set. */
function answers(payload: unknown): string {
  return NODES.map((view) => (eligible(payload, view) ? "1" : "0")).join("");
}

describe("over 24,000 generated payload/node combinations", () => {
  it("eligible equals gateAnswer().eligible and neither throws", () => {
    let mismatches = 0;
    for (const payload of PAYLOADS) {
      for (const view of NODES) {
        const explained = gateAnswer(payload, view);
        if (eligible(payload, view) !== explained.eligible) mismatches++;
      }
    }
    expect(mismatches).toBe(0);
  });

  it("every refusal names a gate and gives a one-line reason starting with that gate", () => {
    const gates = new Set<string>();
    const bad: string[] = [];
    for (const payload of PAYLOADS) {
      for (const view of NODES) {
        const explained = gateAnswer(payload, view);
        if (explained.eligible) continue;
        gates.add(explained.gate);
        const { gate, reason } = explained;
        if (!reason.startsWith(`${gate}: `) || /[\n\r\u2028\u2029]/.test(reason)) bad.push(reason);
      }
    }
    expect(bad).toEqual([]);
    // The set is only worth something if it reaches every gate.
    expect([...gates].sort()).toEqual(["argv", "exclusion", "gpu", "isolation", "local_data", "module", "pool"]);
  });

  it("the set reaches the GPU requirements beyond a count, met and unmet", () => {
    let met = 0;
    let unmet = 0;
    for (const payload of PAYLOADS) {
      const asks =
        typeof payload === "object" &&
        payload !== null &&
        ["gpu_memory_mb", "gpu_compute_capability", "gpu_driver_version"].some(
          (key) => Object.hasOwn(payload, key) && (payload as Record<string, unknown>)[key] != null,
        );
      if (!asks) continue;
      for (const view of NODES) {
        const explained = gateAnswer(payload, view);
        if (explained.eligible) met++;
        else if (/ such of /.test(explained.reason)) unmet++;
      }
    }
    expect(met).toBeGreaterThan(20);
    expect(unmet).toBeGreaterThan(20);
  });

  it("the set holds both answers in bulk, so the properties below can fail", () => {
    let yes = 0;
    for (const payload of PAYLOADS) for (const view of NODES) if (eligible(payload, view)) yes++;
    expect(yes).toBeGreaterThan(500);
    expect(PAYLOADS.length * NODES.length - yes).toBeGreaterThan(500);
  });

  it("the reduced requirement gets the payload's answer on every node, also after a JSON round trip", () => {
    const wrong: string[] = [];
    for (const payload of PAYLOADS) {
      const reduced = requirementOf(payload);
      const stored: unknown = JSON.parse(JSON.stringify(reduced));
      expect(stored).toEqual(reduced);
      for (const view of NODES) {
        const expected = eligible(payload, view);
        if (eligible(reduced, view) !== expected || eligible(stored, view) !== expected) {
          wrong.push(`${requirementClass(payload)} on ${JSON.stringify(view)}`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it("two payloads in one requirement class get the same answer on every node", () => {
    const byClass = new Map<string, string>();
    let shared = 0;
    for (const payload of PAYLOADS) {
      const key = requirementClass(payload);
      const seen = byClass.get(key);
      if (seen === undefined) byClass.set(key, answers(payload));
      else {
        shared++;
        expect(answers(payload), key).toBe(seen);
      }
    }
    // Classes must actually merge payloads (absent vs null, key order,
    // malformed requirements) and must not merge everything.
    expect(shared).toBeGreaterThan(50);
    expect(byClass.size).toBeGreaterThan(100);
  });

  it("a payload's class is the class of its own reduced requirement", () => {
    for (const payload of PAYLOADS) {
      expect(requirementClass(requirementOf(payload))).toBe(requirementClass(payload));
    }
  });

  it("shuffling key order at every depth never changes the class", () => {
    const shuffle = new Rng(7);
    for (const payload of PAYLOADS) {
      for (let round = 0; round < 3; round++) {
        expect(requirementClass(shuffleKeys(payload, shuffle))).toBe(requirementClass(payload));
      }
    }
  });

  it("keys outside GATE_KEYS never change the class", () => {
    for (const payload of PAYLOADS) {
      if (typeof payload !== "object" || payload === null || Array.isArray(payload)) continue;
      const extra = { ...payload, seed: 99, workload: { gpus: 8 }, tier: "sandboxed", allowFallback: true };
      expect(requirementClass(extra)).toBe(requirementClass(payload));
      const gateOnly = Object.fromEntries(
        Object.entries(payload).filter(([key]) => (GATE_KEYS as readonly string[]).includes(key)),
      );
      expect(requirementClass(gateOnly)).toBe(requirementClass(payload));
    }
  });
});
