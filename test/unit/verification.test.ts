// Verified results' pure rules (docs/protocol.md §14): the replication labels, when two
// replicas' metrics agree, the task's verdict, adaptive replication, and the
// wall-time lie check.

import { describe, expect, it } from "vitest";
import { parseMetrics } from "../../src/rules/strict-json";
import {
  agree,
  DEFAULT_TOLERANCE_ABS,
  EXACT,
  EXTRA_REPLICAS,
  evidenceLies,
  jobReplication,
  LOST_VERDICTS_LIMIT,
  MAX_AGREE_DEPTH,
  QUORUM_LABEL,
  REPLICAS_LABEL,
  type ReplicaResult,
  recordVerdict,
  replicasFor,
  replicatedCheckpoints,
  SINGLE_REPLICA,
  SPOT_CHECK_RATE,
  TOLERANCE_ABS_LABEL,
  TOLERANCE_LABEL,
  TRUST_AFTER_VALID,
  trusted,
  VERDICT_WINDOW,
  type Verdict,
  verdict,
  WALL_SLACK_S,
} from "../../src/rules/verification";

/** A relative tolerance alone, as the older cases were written. */
const relative = (tolerance: number) => ({ relative: tolerance, absolute: 0 });

describe("the replication labels", () => {
  it.each([
    ["no labels", {}, { replicas: 1, quorum: 1, tolerance: 0 }],
    ["replicas 1", { [REPLICAS_LABEL]: "1" }, { replicas: 1, quorum: 1, tolerance: 0 }],
    ["replicas 3, quorum defaults to all 3", { [REPLICAS_LABEL]: "3" }, { replicas: 3, quorum: 3, tolerance: 0 }],
    ["replicas 5, the most", { [REPLICAS_LABEL]: "5" }, { replicas: 5, quorum: 5, tolerance: 0 }],
    ["leading zeros read as the number", { [REPLICAS_LABEL]: "03" }, { replicas: 3, quorum: 3, tolerance: 0 }],
    ["quorum 2 of 3", { [REPLICAS_LABEL]: "3", [QUORUM_LABEL]: "2" }, { replicas: 3, quorum: 2, tolerance: 0 }],
    [
      "quorum equal to replicas",
      { [REPLICAS_LABEL]: "2", [QUORUM_LABEL]: "2" },
      { replicas: 2, quorum: 2, tolerance: 0 },
    ],
    ["tolerance 0", { [TOLERANCE_LABEL]: "0" }, { replicas: 1, quorum: 1, tolerance: 0 }],
    ["tolerance 0.01", { [TOLERANCE_LABEL]: "0.01" }, { replicas: 1, quorum: 1, tolerance: 0.01 }],
    ["tolerance just under 1", { [TOLERANCE_LABEL]: "0.999" }, { replicas: 1, quorum: 1, tolerance: 0.999 }],
    [
      "all three",
      { [REPLICAS_LABEL]: "4", [QUORUM_LABEL]: "3", [TOLERANCE_LABEL]: "0.5" },
      { replicas: 4, quorum: 3, tolerance: 0.5 },
    ],
    ["other labels are ignored", { "flashml.dev/priority": "9" }, { replicas: 1, quorum: 1, tolerance: 0 }],
    [
      "an absolute tolerance beside a relative one",
      { [TOLERANCE_LABEL]: "0.01", [TOLERANCE_ABS_LABEL]: "0.001" },
      { replicas: 1, quorum: 1, tolerance: 0.01, toleranceAbs: 0.001 },
    ],
    [
      "an absolute tolerance of 0",
      { [TOLERANCE_LABEL]: "0.01", [TOLERANCE_ABS_LABEL]: "0" },
      { replicas: 1, quorum: 1, tolerance: 0.01, toleranceAbs: 0 },
    ],
  ])("%s", (_name, labels: Record<string, string>, value) => {
    expect(jobReplication(labels)).toEqual({ ok: true, value: { toleranceAbs: DEFAULT_TOLERANCE_ABS, ...value } });
  });

  it.each<[string, Record<string, string>, string]>([
    ["without a relative tolerance", { [TOLERANCE_ABS_LABEL]: "0.001" }, "needs a relative tolerance"],
    [
      "beside a tolerance of 0",
      { [TOLERANCE_LABEL]: "0", [TOLERANCE_ABS_LABEL]: "0.001" },
      "needs a relative tolerance",
    ],
    ...["1", "-0.1", "1e-3", "", "NaN"].map(
      (raw) =>
        [
          `of ${JSON.stringify(raw)}`,
          { [TOLERANCE_LABEL]: "0.1", [TOLERANCE_ABS_LABEL]: raw },
          "must be a decimal number from 0 up to but not including 1",
        ] as [string, Record<string, string>, string],
    ),
  ])("the absolute tolerance label %s is refused, naming it", (_name, labels, problem) => {
    const read = jobReplication(labels);
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.problem).toContain(`label '${TOLERANCE_ABS_LABEL}' ${problem}`);
  });

  it.each([
    ...["0", "6", "10", "-1", "+2", "2.0", "1e0", " 2", "2 ", "", "two", "0x3", "99999999999999999999"].map(
      (raw) => [REPLICAS_LABEL, { [REPLICAS_LABEL]: raw }, raw, "must be an integer from 1 to 5"] as const,
    ),
    ...["1", "0", "4", "-2", "2.0", "", " 2", "two"].map(
      (raw) =>
        [
          QUORUM_LABEL,
          { [REPLICAS_LABEL]: "3", [QUORUM_LABEL]: raw },
          raw,
          "must be an integer from 2 to 3 (the replicas)",
        ] as const,
    ),
    ...["1", "2", "0", "junk"].map(
      (raw) =>
        [QUORUM_LABEL, { [QUORUM_LABEL]: raw }, raw, `needs at least 2 replicas ('${REPLICAS_LABEL}' is 1)`] as const,
    ),
    [
      QUORUM_LABEL,
      { [REPLICAS_LABEL]: "1", [QUORUM_LABEL]: "1" },
      "1",
      `needs at least 2 replicas ('${REPLICAS_LABEL}' is 1)`,
    ] as const,
    ...["-0.1", "1", "1.0", "2", "1e-3", ".5", "0.", "0,5", "", " 0.1", "NaN", "Infinity", "0x1"].map(
      (raw) =>
        [
          TOLERANCE_LABEL,
          { [TOLERANCE_LABEL]: raw },
          raw,
          "must be a decimal number from 0 up to but not including 1",
        ] as const,
    ),
  ])("label %s refuses %j", (name, labels: Record<string, string>, raw, rule) => {
    const read = jobReplication(labels);
    expect(read).toEqual({ ok: false, problem: `label '${name}' ${rule}, got ${JSON.stringify(raw)}` });
  });

  it.each([
    [REPLICAS_LABEL, 3],
    [QUORUM_LABEL, 2],
    [TOLERANCE_LABEL, 0.1],
    [TOLERANCE_LABEL, null],
  ])("a %s value that is not a string (%j) is refused, not coerced", (name, value) => {
    const labels = { [REPLICAS_LABEL]: "3", [name]: value } as unknown as Record<string, string>;
    const read = jobReplication(labels);
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.problem).toContain(`label '${name}'`);
  });

  it("a label inherited from the prototype is not a label", () => {
    const labels = Object.create({ [REPLICAS_LABEL]: "9" }) as Record<string, string>;
    expect(jobReplication(labels)).toEqual({ ok: true, value: SINGLE_REPLICA });
  });
});

describe("exact comparison (docs/protocol.md §14 against adversaries)", () => {
  const parsed = (text: string) => {
    const p = parseMetrics(text);
    if (!p.ok) throw new Error(p.problem);
    return p.value;
  };

  it.each([
    ["integers past 2^53 that differ by one", '{"n": 9007199254740993}', '{"n": 9007199254740992}', false],
    [
      "integers past 2^64 that differ in the last digit",
      '{"n": 123456789012345678901}',
      '{"n": 123456789012345678902}',
      false,
    ],
    ["the same huge integer", '{"n": 123456789012345678901}', '{"n": 123456789012345678901}', true],
    ["a huge integer and its rounded double", '{"n": 9007199254740993}', '{"n": 9007199254740992.0}', false],
    ["the largest safe integer", '{"n": 9007199254740991}', '{"n": 9007199254740991}', true],
    ["negative huge integers", '{"n": -99999999999999999999}', '{"n": -99999999999999999999}', true],
  ])("%s agree at tolerance 0: %s", (_name, a, b, agrees) => {
    expect(agree(parsed(a), parsed(b), EXACT)).toBe(agrees);
    expect(agree(parsed(b), parsed(a), EXACT)).toBe(agrees);
  });

  it.each([
    ["a duplicate key, the last one agreeing", '{"loss": 999, "loss": 0.25}', "appears twice"],
    ["a duplicate key inside a list", '{"epochs": [{"a": 1, "a": 1}]}', "appears twice"],
    ["a duplicate __proto__ key", '{"__proto__": 1, "__proto__": 2}', "appears twice"],
    ["a number that overflows to Infinity", '{"loss": 1e999}', "is not finite"],
    ["a negative overflow", '{"loss": -1e400}', "is not finite"],
    ["a list, not an object", "[1, 2]", "one JSON object"],
    ["trailing text", '{"a": 1} {"a": 2}', "trailing text"],
    ["NaN", '{"a": NaN}', "not JSON"],
    ["a bad escape", '{"a": "\\x41"}', "malformed string"],
    [
      "nesting past the bound",
      `{"a": ${"[".repeat(MAX_AGREE_DEPTH + 1)}${"]".repeat(MAX_AGREE_DEPTH + 1)}}`,
      "nested deeper",
    ],
  ])("%s is invalid output", (_name, text, problem) => {
    const read = parseMetrics(text);
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.problem).toContain(problem);
  });

  it("the parser reads what JSON.parse reads for ordinary metrics, a __proto__ key included", () => {
    const text =
      '{"loss": 0.25, "acc": [0.9, -1.5e-3], "ok": true, "none": null, "s": "\\u00e9\\n", "__proto__": {"x": 1}}';
    expect(agree(parsed(text), JSON.parse(text), EXACT)).toBe(true);
    expect(Object.keys(parsed(text))).toContain("__proto__");
  });

  it.each([
    ["values near zero within the absolute slack", 1e-15, -1e-15, { relative: 0.01, absolute: 1e-12 }, true],
    ["values near zero past it", 1e-9, -1e-9, { relative: 0.01, absolute: 1e-12 }, false],
    ["no slack without a relative tolerance", 1e-15, -1e-15, { relative: 0, absolute: 1e-12 }, false],
    ["exact zero and negative zero", 0, -0, EXACT, true],
    ["relative as before", 100, 100.5, { relative: 0.01, absolute: 1e-12 }, true],
  ])("%s", (_name, a, b, tolerance, agrees) => {
    expect(agree({ v: a }, { v: b }, tolerance)).toBe(agrees);
  });
});

describe("the lie threshold", () => {
  const run = (verdicts: boolean[]) => {
    let window = "";
    let distrust = false;
    for (const lost of verdicts) ({ window, distrust } = recordVerdict(window, lost));
    return { window, distrust };
  };
  it(`${LOST_VERDICTS_LIMIT} lost among the last ${VERDICT_WINDOW} verdicts distrust a node`, () => {
    expect(run([true, false, true, false, true]).distrust).toBe(true);
    expect(run([true, false, true]).distrust).toBe(false);
  });
  it("losses that slid out of the window no longer count", () => {
    const old = [true, true, ...Array<boolean>(VERDICT_WINDOW - 1).fill(false)];
    expect(run(old)).toEqual({ window: "v".repeat(VERDICT_WINDOW - 1).padStart(VERDICT_WINDOW, "i"), distrust: false });
    expect(run([...old, true]).distrust).toBe(false);
    expect(run([...old, true, true]).distrust).toBe(false);
    expect(run([...old, true, false, true, true]).distrust).toBe(true);
  });
});

/** `depth` arrays around `inner`: [[…[inner]…]]. */
function nested(depth: number, inner: unknown): unknown {
  let value = inner;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

describe("agreement between two metrics values", () => {
  it.each([
    // numbers and the tolerance
    ["equal numbers, exact", 1, 1, 0, true],
    ["one ulp apart, exact", 1, 1.0000000000000002, 0, false],
    ["zero and negative zero", 0, -0, 0, true],
    ["3 and 4 at 0.25: the difference is exactly 0.25 of the larger", 3, 4, 0.25, true],
    ["3 and 4 at 0.24", 3, 4, 0.24, false],
    ["the tolerance is relative to the larger magnitude, either order", 4, 3, 0.25, true],
    ["negative numbers", -3, -4, 0.25, true],
    ["opposite signs", 3, -3, 0.5, false],
    ["zero against a small number is never within a relative tolerance", 0, 1e-12, 0.5, false],
    ["1.0 and 1.001 at 0.01", 1.0, 1.001, 0.01, true],
    ["1.0 and 1.1 at 0.01", 1.0, 1.1, 0.01, false],
    ["huge opposite numbers do not overflow into agreement", 1e308, -1e308, 0.999, false],
    ["NaN never agrees, not even with itself", Number.NaN, Number.NaN, 0.5, false],
    ["Infinity is not JSON and never agrees", Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY, 0, false],
    // strings, booleans, null
    ["equal strings", "ok", "ok", 0, true],
    ["strings are never within a tolerance", "1.0", "1.00", 0.5, false],
    ["equal booleans", true, true, 0, true],
    ["different booleans", true, false, 0, false],
    ["null and null", null, null, 0, true],
    // type confusion
    ["a number and its string", 1, "1", 0.5, false],
    ["a string and its number", "1", 1, 0.5, false],
    ["null and zero", null, 0, 0.5, false],
    ["zero and null", 0, null, 0.5, false],
    ["null and false", null, false, 0, false],
    ["false and zero", false, 0, 0, false],
    ["an empty array and an empty object", [], {}, 0, false],
    ["an empty object and an empty array", {}, [], 0, false],
    ["an array and its object twin", [1], { 0: 1 }, 0, false],
    ["a string and an array", "a", ["a"], 0, false],
    ["undefined is not JSON", undefined, undefined, 0, false],
    ["a Map is not a plain object", new Map([["a", 1]]), new Map([["a", 2]]), 0, false],
    ["a Date is not a plain object", new Date(0), new Date(1), 0, false],
    // arrays
    ["equal arrays", [1, "a", null], [1, "a", null], 0, true],
    ["arrays of different length", [1, 2], [1, 2, 3], 0, false],
    ["arrays in a different order", [1, 2], [2, 1], 0, false],
    ["arrays within the tolerance elementwise", [1, 100], [1.001, 100.1], 0.01, true],
    ["one element past the tolerance", [1, 100], [1.001, 102], 0.01, false],
    // objects
    ["key order does not matter", { loss: 0.5, acc: 0.9 }, { acc: 0.9, loss: 0.5 }, 0, true],
    ["a missing key", { loss: 0.5, acc: 0.9 }, { loss: 0.5 }, 0, false],
    ["an extra key", { loss: 0.5 }, { loss: 0.5, acc: 0.9 }, 0, false],
    ["same count, different keys", { loss: 0.5 }, { lost: 0.5 }, 0, false],
    ["a key present as null is not a missing key", { loss: null }, {}, 0, false],
    ["a null-prototype object is a plain object", Object.assign(Object.create(null), { a: 1 }), { a: 1 }, 0, true],
    // nesting
    [
      "nested objects and arrays within the tolerance",
      {
        epochs: [
          { loss: 1.0, tags: ["a"] },
          { loss: 0.5, tags: [] },
        ],
        ok: true,
      },
      {
        ok: true,
        epochs: [
          { tags: ["a"], loss: 1.001 },
          { tags: [], loss: 0.5005 },
        ],
      },
      0.01,
      true,
    ],
    [
      "a difference deep inside",
      { epochs: [{ loss: 1.0, tags: ["a"] }], ok: true },
      { epochs: [{ loss: 1.0, tags: ["b"] }], ok: true },
      0.01,
      false,
    ],
    ["a nested object confused with an array", { model: { layers: [] } }, { model: { layers: {} } }, 0, false],
  ])("%s: %j and %j at %d → %s", (_name, a, b, tolerance, agrees) => {
    expect(agree(a, b, relative(tolerance))).toBe(agrees);
    expect(agree(b, a, relative(tolerance))).toBe(agrees);
  });

  it("a __proto__ key from JSON is compared as a key", () => {
    const a = JSON.parse('{"__proto__": {"x": 1}, "y": 2}');
    expect(agree(a, JSON.parse('{"y": 2, "__proto__": {"x": 1}}'), EXACT)).toBe(true);
    expect(agree(a, JSON.parse('{"__proto__": {"x": 2}, "y": 2}'), EXACT)).toBe(false);
    expect(agree(a, { y: 2 }, EXACT)).toBe(false);
    // Read without an own-key check, b.__proto__ would be Object.prototype: a keyless plain object, like {}.
    expect(agree(JSON.parse('{"__proto__": {}, "y": 2}'), { y: 2, z: 2 }, EXACT)).toBe(false);
  });

  it.each([
    [MAX_AGREE_DEPTH, true],
    [MAX_AGREE_DEPTH + 1, false],
    [100_000, false],
  ])("values nested %d levels deep agree: %s", (depth, agrees) => {
    expect(agree(nested(depth, 1), nested(depth, 1), EXACT)).toBe(agrees);
  });

  it("objects count toward the depth like arrays", () => {
    let value: unknown = 1;
    for (let i = 0; i < MAX_AGREE_DEPTH + 1; i++) value = { v: value };
    expect(agree(value, value, EXACT)).toBe(false);
    expect(agree((value as { v: unknown }).v, (value as { v: unknown }).v, EXACT)).toBe(true);
  });
});

const r = (id: string, value: unknown, node = `node-${id}`): ReplicaResult => ({ id, node, value });

describe("a task's verdict", () => {
  const honest = { loss: 0.25, acc: 0.9 };
  const cheat = { loss: 0, acc: 1 };

  it.each<[string, ReplicaResult[], number, number, number, number, Verdict]>([
    // [name, results, live, quorum, maxTotal, tolerance, verdict]
    [
      "two honest replicas agree",
      [r("a", honest), r("b", { acc: 0.9, loss: 0.25 })],
      0,
      2,
      2 + EXTRA_REPLICAS,
      0,
      { kind: "accepted", winners: ["a", "b"], losers: [] },
    ],
    ["the first of two waits for the other", [r("a", honest)], 1, 2, 4, 0, { kind: "waiting", more: 0 }],
    [
      "a cheater is outvoted 2 of 3",
      [r("a", honest), r("c", cheat), r("b", honest)],
      0,
      2,
      3 + EXTRA_REPLICAS,
      0,
      { kind: "accepted", winners: ["a", "b"], losers: ["c"] },
    ],
    [
      "a cheater committing first is outvoted too",
      [r("c", cheat), r("a", honest), r("b", honest)],
      0,
      2,
      5,
      0,
      { kind: "accepted", winners: ["a", "b"], losers: ["c"] },
    ],
    [
      "a cheater is outvoted while the third replica still runs",
      [r("a", honest), r("c", cheat), r("b", honest)],
      1,
      2,
      5,
      0,
      { kind: "accepted", winners: ["a", "b"], losers: ["c"] },
    ],
    [
      "a 1:1 disagreement at quorum 2 issues one more",
      [r("a", honest), r("c", cheat)],
      0,
      2,
      4,
      0,
      { kind: "waiting", more: 1 },
    ],
    [
      "a 1:1 disagreement with a replica still live waits for it",
      [r("a", honest), r("c", cheat)],
      1,
      2,
      4,
      0,
      { kind: "waiting", more: 0 },
    ],
    [
      "all different with replicas + 2 issued fails",
      [r("a", 1), r("b", 2), r("c", 3), r("d", 4)],
      0,
      2,
      4,
      0,
      { kind: "failed" },
    ],
    [
      "the last replica that could still make the quorum is waited for",
      [r("a", 1), r("b", 2), r("c", 3)],
      1,
      2,
      4,
      0,
      { kind: "waiting", more: 0 },
    ],
    [
      "a live replica that cannot make the quorum alone does not save it",
      [r("a", 1), r("b", 2), r("c", 3), r("d", 4)],
      1,
      3,
      5,
      0,
      { kind: "failed" },
    ],
    [
      "quorum 3 of 3 lacking two issues the room it has",
      [r("a", 1), r("b", 2), r("c", 3)],
      0,
      3,
      5,
      0,
      { kind: "waiting", more: 2 },
    ],
    [
      "live replicas count toward what is lacking",
      [r("a", 1), r("b", 2), r("c", 3)],
      1,
      3,
      5,
      0,
      { kind: "waiting", more: 1 },
    ],
    [
      "lacking more than the room left fails at once",
      [r("a", 1), r("b", 2), r("c", 3)],
      0,
      3,
      4,
      0,
      { kind: "failed" },
    ],
    [
      "a tie between quorate groups goes to the earliest formed",
      [r("a", 1), r("b", 2), r("c", 2), r("d", 1)],
      0,
      2,
      4,
      0,
      { kind: "accepted", winners: ["a", "d"], losers: ["b", "c"] },
    ],
    [
      "a tie below the quorum waits",
      [r("a", 1), r("b", 2), r("c", 1), r("d", 2)],
      0,
      3,
      5,
      0,
      { kind: "waiting", more: 1 },
    ],
    [
      "quorum 1 accepts a single result",
      [r("a", honest)],
      0,
      1,
      3,
      0,
      { kind: "accepted", winners: ["a"], losers: [] },
    ],
    [
      "results within the tolerance agree",
      [r("a", { loss: 1.0 }), r("b", { loss: 1.001 })],
      0,
      2,
      4,
      0.01,
      { kind: "accepted", winners: ["a", "b"], losers: [] },
    ],
    [
      "a group is judged by its first member, so near values cannot chain past the tolerance",
      [r("a", 10), r("b", 10.9), r("c", 11.8)],
      0,
      3,
      5,
      0.1,
      { kind: "waiting", more: 1 },
    ],
    ["no results yet waits for the live ones", [], 2, 2, 4, 0, { kind: "waiting", more: 0 }],
  ])("%s", (_name, results, live, quorum, maxTotal, tolerance, expected) => {
    expect(verdict(results, live, quorum, maxTotal, relative(tolerance))).toEqual(expected);
  });
});

describe("adaptive replication", () => {
  const three = { replicas: 3, quorum: 2, tolerance: 0, toleranceAbs: 0 };
  const one = { replicas: 1, quorum: 1, tolerance: 0, toleranceAbs: 0 };

  it.each([
    ["an untrusted node gets every replica", three, TRUST_AFTER_VALID - 1, 0.99, 3],
    ["a new node gets every replica", three, 0, 0.5, 3],
    ["a trusted node gets one", three, TRUST_AFTER_VALID, 0.5, 1],
    ["a long-trusted node gets one", three, 1000, 0.999, 1],
    ["the spot check replicates a trusted node's task", three, TRUST_AFTER_VALID, 0, 3],
    ["just under the spot-check rate is a spot check", three, TRUST_AFTER_VALID, SPOT_CHECK_RATE - 1e-9, 3],
    ["the spot-check rate itself is not", three, TRUST_AFTER_VALID, SPOT_CHECK_RATE, 1],
    ["a NaN random number replicates in full", three, TRUST_AFTER_VALID, Number.NaN, 3],
    ["a NaN record is not trusted", three, Number.NaN, 0.5, 3],
    ["an unreplicated job gets one from an untrusted node", one, 0, 0.5, 1],
    ["an unreplicated job gets one on a spot check", one, TRUST_AFTER_VALID, 0, 1],
    ["a distrusted node is never trusted, whatever its record", three, Number.POSITIVE_INFINITY, 0.99, 3, "lied"],
  ])("%s", (_name, replication, consecutiveValid, random, replicas, distrusted: string | null = null) => {
    expect(replicasFor(replication, trusted({ consecutive_valid: consecutiveValid, distrusted }), random)).toBe(
      replicas,
    );
  });
});

describe("the wall-time lie", () => {
  it.each([
    ["within the elapsed time", { wall_seconds: 4 }, 5000, false],
    ["exactly the elapsed time plus the slack", { wall_seconds: 5 + WALL_SLACK_S }, 5000, false],
    ["just past the slack", { wall_seconds: 5 + WALL_SLACK_S + 0.001 }, 5000, true],
    ["far past it", { wall_seconds: 3600 }, 5000, true],
    ["any positive claim over a zero-length lease past the slack", { wall_seconds: 1.5 }, 0, true],
    ["zero seconds", { wall_seconds: 0 }, 5000, false],
    ["a negative claim is no lie about time spent", { wall_seconds: -100 }, 5000, false],
    ["other evidence alongside", { wall_seconds: 7, stdout_tail: "done" }, 5000, true],
    ["absent wall_seconds", { stdout_tail: "done" }, 5000, false],
    ["empty evidence", {}, 5000, false],
    ["a numeric string is no claim", { wall_seconds: "3600" }, 5000, false],
    ["null is no claim", { wall_seconds: null }, 5000, false],
    ["a boolean is no claim", { wall_seconds: true }, 5000, false],
    ["a nested number is no claim", { wall_seconds: [3600] }, 5000, false],
    ["NaN is no claim", { wall_seconds: Number.NaN }, 5000, false],
    ["Infinity is no claim", { wall_seconds: Number.POSITIVE_INFINITY }, 5000, false],
    ["no evidence", undefined, 5000, false],
    ["null evidence", null, 5000, false],
    ["a number as evidence", 3600, 5000, false],
    ["a string as evidence", '{"wall_seconds": 3600}', 5000, false],
    ["an array as evidence", [{ wall_seconds: 3600 }], 5000, false],
    ["an inherited wall_seconds", Object.create({ wall_seconds: 3600 }), 5000, false],
  ])("%s: %j after %d ms → %s", (_name, evidence, elapsedMs, lies) => {
    expect(evidenceLies(evidence, elapsedMs)).toBe(lies);
  });
});

describe("replicatedCheckpoints", () => {
  const plain = { payload: { module: "m" } };
  const checkpointed = { payload: { module: "m", checkpoint: { every_steps: 10 } } };
  it.each<[string, number, Array<{ payload: Record<string, unknown> }>, boolean]>([
    ["an unreplicated job may checkpoint", 1, [checkpointed], true],
    ["a replicated job without checkpoints", 2, [plain, plain], true],
    ["a replicated job with one checkpointing task", 3, [plain, checkpointed], false],
  ])("%s", (_what, replicas, tasks, allowed) => {
    const problem = replicatedCheckpoints(
      { replicas, quorum: Math.max(1, replicas), tolerance: 0, toleranceAbs: 0 },
      tasks,
    );
    expect(problem === null).toBe(allowed);
    if (!allowed) expect(problem).toContain("cannot use checkpoints");
  });
});
