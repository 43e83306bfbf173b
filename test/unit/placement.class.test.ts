// Requirement classes: the pool object stores requirementOf(payload) once per
// requirementClass(payload) and runs the gate once per class at claim time.
// Payloads the gate cannot tell apart should share a class; payloads it can
// tell apart must never share one.

import { describe, expect, it } from "vitest";
import { eligible, requirementClass, requirementOf } from "../../src/rules/placement";

const MALFORMED: [string, unknown][] = [
  ["gpus true", { gpus: true }],
  ['gpus "1"', { gpus: "1" }],
  ["gpus -1", { gpus: -1 }],
  ["local_inputs as a bare string", { local_inputs: "patients" }],
  ["exclude_nodes with a non-string member", { exclude_nodes: ["node-a", 7] }],
  ["pool as the empty string", { pool: "" }],
  ["isolation as a string", { isolation: "sandboxed" }],
  ["a list instead of a payload", ["python", "train.py"]],
  ["null instead of a payload", null],
  ["a payload with argv and gpus 1.5", { argv: ["x"], gpus: 1.5 }],
];

describe("payloads that share a class", () => {
  it.each([
    ["local_inputs absent and null", {}, { local_inputs: null }],
    ["gpus absent and null", {}, { gpus: null }],
    ["exclude_nodes absent and null", {}, { exclude_nodes: null }],
    ["pool absent and null", {}, { pool: null }],
    ["isolation absent and null", {}, { isolation: null }],
    ["gpus absent and 0", {}, { gpus: 0 }],
    ["gpus 0 and -0", { gpus: 0 }, { gpus: -0 }],
    ["gpus 1 and 1.0 as parsed from JSON", { gpus: 1 }, JSON.parse('{"gpus": 1.0}')],
    ["local_inputs absent and empty", {}, { local_inputs: [] }],
    ["exclude_nodes absent and empty", {}, { exclude_nodes: [] }],
    ["local_inputs in another order", { local_inputs: ["a", "b"] }, { local_inputs: ["b", "a"] }],
    ["local_inputs with a duplicate", { local_inputs: ["a"] }, { local_inputs: ["a", "a"] }],
    [
      "local_inputs elements with keys in another order",
      { local_inputs: [{ a: 1, b: { c: 2, d: 3 } }] },
      { local_inputs: [{ b: { d: 3, c: 2 }, a: 1 }] },
    ],
    ["local_inputs 0 and -0", { local_inputs: [0] }, { local_inputs: [-0] }],
    [
      "exclude_nodes in another order, with a duplicate",
      { exclude_nodes: ["a", "b"] },
      { exclude_nodes: ["b", "a", "b"] },
    ],
    ["argv with different values", { argv: ["python", "a.py"] }, { argv: null }],
    ["module with different values", { module: "a" }, { module: false }],
    ["isolation absent and {}", {}, { isolation: {} }],
    ['isolation absent and tier ""', {}, { isolation: { tier: "" } }],
    ["isolation absent and tier standard", {}, { isolation: { tier: "standard" } }],
    ["a non-true allowFallback and none", {}, { isolation: { tier: "standard", allowFallback: "true" } }],
    ["tier Sandboxed and sandboxed", { isolation: { tier: "Sandboxed" } }, { isolation: { tier: "sandboxed" } }],
    [
      "a waived sandboxed tier and a waiver alone",
      { isolation: { tier: "sandboxed", allowFallback: true } },
      { isolation: { allowFallback: true } },
    ],
    [
      "extra isolation keys and none",
      { isolation: { tier: "sandboxed", network: "none" } },
      { isolation: { tier: "sandboxed" } },
    ],
    ["keys the gate does not read", { gpus: 1, seed: 1, workload: "a" }, { gpus: 1, seed: 2 }],
    ["payload key order", { pool: "p-1", gpus: 2, argv: [] }, { argv: [], gpus: 2, pool: "p-1" }],
  ])("%s", (_, a, b) => {
    expect(requirementClass(a)).toBe(requirementClass(b));
  });

  it.each(MALFORMED)("a payload with %s is in the one class that places nowhere", (_, payload) => {
    expect(requirementOf(payload)).toEqual({ isolation: "unplaceable" });
    expect(requirementClass(payload)).toBe(requirementClass({ isolation: "unplaceable" }));
  });
});

describe("payloads the gate tells apart never share a class", () => {
  it.each([
    ["argv present and absent", { argv: null }, {}],
    ["module present and absent", { module: null }, {}],
    ["1 GPU and 2", { gpus: 1 }, { gpus: 2 }],
    ["different datasets", { local_inputs: ["a"] }, { local_inputs: ["b"] }],
    ["a dataset true and 1", { local_inputs: [true] }, { local_inputs: [1] }],
    ['a dataset "a" and ["a"]', { local_inputs: ["a"] }, { local_inputs: [["a"]] }],
    [
      "an object dataset with and without a __proto__ member",
      JSON.parse('{"local_inputs": [{"__proto__": 1}]}'),
      { local_inputs: [{}] },
    ],
    ["different excluded nodes", { exclude_nodes: ["a"] }, { exclude_nodes: ["b"] }],
    ['exclude_nodes [""] and []', { exclude_nodes: [""] }, { exclude_nodes: [] }],
    ["different pools", { pool: "p-1" }, { pool: "p-2" }],
    ["sandboxed and standard", { isolation: { tier: "sandboxed" } }, { isolation: { tier: "standard" } }],
    ["a waiver and no waiver on a standard tier", { isolation: { allowFallback: true } }, { isolation: {} }],
    [
      "a waiver and a non-true waiver",
      { isolation: { tier: "sandboxed", allowFallback: true } },
      { isolation: { tier: "sandboxed", allowFallback: 1 } },
    ],
    ["a well-formed requirement and the class that places nowhere", { gpus: 1e308 }, { gpus: 1.5 }],
  ])("%s", (_, a, b) => {
    expect(requirementClass(a)).not.toBe(requirementClass(b));
  });
});

describe("requirementOf", () => {
  it("keeps only what the gate reads, canonically", () => {
    const payload = {
      argv: ["python", "train.py"],
      module: null,
      local_inputs: ["patients", "labs", "patients"],
      gpus: 2,
      exclude_nodes: ["node-b", "node-a"],
      pool: "p-1",
      isolation: { tier: "sandboxed", allowFallback: true, network: "none" },
      seed: 7,
      inputs: { data: "artifact://x" },
    };
    expect(requirementOf(payload)).toEqual({
      argv: true,
      module: true,
      local_inputs: ["labs", "patients"],
      gpus: 2,
      exclude_nodes: ["node-a", "node-b"],
      pool: "p-1",
      isolation: { allowFallback: true },
    });
    expect(requirementClass(payload)).toBe(
      '{"argv":true,"exclude_nodes":["node-a","node-b"],"gpus":2,"isolation":{"allowFallback":true},' +
        '"local_inputs":["labs","patients"],"module":true,"pool":"p-1"}',
    );
  });

  it("reduces a payload that requires nothing to the empty requirement", () => {
    const payload = {
      gpus: 0,
      local_inputs: [],
      exclude_nodes: [],
      pool: null,
      isolation: { tier: "standard" },
      seed: 1,
    };
    expect(requirementOf(payload)).toEqual({});
    expect(requirementClass(payload)).toBe("{}");
  });

  it("keeps a sandboxed tier without a waiver as sandboxed", () => {
    expect(requirementOf({ isolation: { tier: "gvisor", allowFallback: "yes" } })).toEqual({
      isolation: { tier: "sandboxed" },
    });
  });

  it("keeps a parsed __proto__ member of a dataset as data, through the pool object's JSON round trip", () => {
    const payload: unknown = JSON.parse('{"local_inputs": [{"__proto__": {"x": 1}}]}');
    const holder = { node_id: "n", local_datasets: JSON.parse('[{"__proto__": {"x": 1}}]') };
    const stored: unknown = JSON.parse(JSON.stringify(requirementOf(payload)));
    expect(eligible(payload, holder)).toBe(true);
    expect(eligible(stored, holder)).toBe(true);
    expect(eligible(stored, { node_id: "n", local_datasets: [{}] })).toBe(false);
  });

  it("never throws, even for a payload that throws on every read", () => {
    const hostile = new Proxy(
      {},
      {
        getOwnPropertyDescriptor() {
          throw new Error("boom");
        },
      },
    );
    expect(requirementOf(hostile)).toEqual({ isolation: "unplaceable" });
    expect(eligible(hostile, {})).toBe(false);
  });

  it("returns a fresh object each time, so a caller's edit cannot leak into another class", () => {
    const a = requirementOf(null);
    a.isolation = undefined;
    expect(requirementOf(null)).toEqual({ isolation: "unplaceable" });
  });
});
