// Properties of the placement gate over a large deterministic set of nasty
// payload/node combinations: explain and eligible agree and never throw, the
// reduced requirement answers like the payload (also after the JSON round
// trip the pool object puts it through), and one requirement class never
// holds two payloads the gate tells apart.

import { describe, expect, it } from "vitest";
import { eligible, explain, GATE_KEYS, requirementClass, requirementOf } from "../../src/rules/placement";

/** mulberry32: a small seeded PRNG, so every run sees the same set. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ABSENT = Symbol("absent");
type Pool = readonly unknown[];

// Per key: well-formed values, then nasty ones. Nasty values are drawn
// rarely, or nearly every payload would be malformed somewhere and the set
// would only ever test "refused everywhere".
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

const CAPABILITY_GPUS: Pool = [
  ABSENT,
  [],
  [{ index: 0 }],
  [{ index: 0 }, { index: 1 }],
  [{}, {}, {}],
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

function pick<T>(random: () => number, pool: readonly T[]): T {
  return pool[Math.floor(random() * pool.length)] as T;
}

function build(
  random: () => number,
  values: Record<string, readonly [Pool, Pool]>,
  nastiness: number,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, [good, nasty]] of Object.entries(values)) {
    const value = nasty.length > 0 && random() < nastiness ? pick(random, nasty) : pick(random, good);
    if (value !== ABSENT) out[key] = value;
  }
  return out;
}

function makePayload(random: () => number): unknown {
  if (random() < 0.03) return pick(random, NON_OBJECT_PAYLOADS);
  return build(random, PAYLOAD_VALUES, 0.07);
}

function makeNode(random: () => number): unknown {
  if (random() < 0.04) return pick(random, NON_OBJECT_NODES);
  const view = build(random, NODE_VALUES, 0.2);
  const shape = random();
  if (shape < 0.08) view.capabilities = pick(random, [null, "8 cores", [], {}]);
  else if (shape > 0.12) {
    const capabilities: Record<string, unknown> = { cpu_cores: 8 };
    const gpus = pick(random, CAPABILITY_GPUS);
    const pools = pick(random, CAPABILITY_POOLS);
    if (gpus !== ABSENT) capabilities.gpus = gpus;
    if (pools !== ABSENT) capabilities.pools = pools;
    view.capabilities = capabilities;
  }
  return view;
}

/** A deep copy with every object's keys in a shuffled order. */
function shuffleKeys(value: unknown, random: () => number): unknown {
  if (Array.isArray(value)) return value.map((item: unknown) => shuffleKeys(item, random));
  if (typeof value !== "object" || value === null) return value;
  const entries = Object.entries(value);
  for (let i = entries.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const a = entries[i];
    const b = entries[j];
    if (a !== undefined && b !== undefined) [entries[i], entries[j]] = [b, a];
  }
  return Object.fromEntries(entries.map(([k, v]) => [k, shuffleKeys(v, random)]));
}

const random = prng(0x5eed_f1a5);
const PAYLOADS = Array.from({ length: 400 }, () => makePayload(random));
const NODES = Array.from({ length: 60 }, () => makeNode(random));

/** The gate's answers for one payload over the whole node set. */
function answers(payload: unknown): string {
  return NODES.map((view) => (eligible(payload, view) ? "1" : "0")).join("");
}

describe("over 24,000 generated payload/node combinations", () => {
  it("eligible equals explain().eligible and neither throws", () => {
    let mismatches = 0;
    for (const payload of PAYLOADS) {
      for (const view of NODES) {
        const explained = explain(payload, view);
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
        const explained = explain(payload, view);
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
    const shuffle = prng(7);
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
