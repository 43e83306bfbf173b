// The federated-averaging and k-means reduce of hosted runs (issue 43) against
// the reference itself: test/fixtures/reference-vectors.json holds inputs and
// what Zolli-Labs/flashml's own code returned or raised for them
// (scripts/reference-vectors.py). Every number must match to the bit
// (Object.is, so -0 is not 0), every refusal must be the reference's rule.
// The last tables are the refusals this port adds where the reference would
// coerce or could not be matched exactly.

import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  applyDelta,
  type CommittedTask,
  parseWeights,
  readTaskMetrics,
  reduceDeltasWithReport,
  reduceRound,
  weightsToJson,
} from "../../src/rules/fedavg";
import { reduceIteration, reducePartials } from "../../src/rules/kmeans";

type Refused = { reason: string; python: string; mentions: string[] };
type Expect<T> = T | { error: Refused };
type Blob = Record<string, { shape: number[]; data: unknown[] }>;
type Clip = { index: number; norm: number; cap: number; scale: number };
type RoundClip = { task_id: string; norm: number; cap: number; scale: number };
type Fixture = {
  reference: { commit: string };
  fedavg: {
    reduce: {
      name: string;
      clip_factor?: number;
      contributions: { delta: unknown; samples: number }[];
      expect: Expect<{ reduced: Blob; clipped: Clip[] }>;
    }[];
    apply: { name: string; base: unknown; delta: unknown; expect: Expect<{ weights: Blob }> }[];
    rounds: {
      name: string;
      weights: unknown;
      committed: { task_id: string; metrics: Record<string, unknown>; delta: unknown }[];
      expect: Expect<{ weights: Blob; participants: number; mean_loss: number; clipped: RoundClip[] }>;
    }[];
  };
  kmeans: {
    iterations: {
      name: string;
      centroids: unknown;
      shards: number;
      partials: { task_id: string; metrics: unknown }[];
      expect: Expect<{ centroids: number[][]; inertia: number }>;
    }[];
  };
};

const FLOATS: Record<string, number> = {
  nan: Number.NaN,
  inf: Number.POSITIVE_INFINITY,
  "-inf": Number.NEGATIVE_INFINITY,
};
const raw = readFileSync(new URL("../fixtures/reference-vectors.json", import.meta.url), "utf8");
const fixture = JSON.parse(raw, (_key, value: unknown) => {
  if (typeof value === "object" && value !== null && Object.hasOwn(value, "$float")) {
    return FLOATS[(value as { $float: string }).$float];
  }
  return value;
}) as Fixture;
const JOB = "job-000";

/** Where `actual` differs from `expected`: numbers by Object.is, object keys in order. */
function bitDifferences(actual: unknown, expected: unknown, path = "$"): string[] {
  const show = (v: unknown) => (Object.is(v, -0) ? "-0" : typeof v === "number" ? String(v) : JSON.stringify(v));
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length)
      return [`${path}: ${show(actual)} is not the list`];
    return expected.flatMap((e, i) => bitDifferences(actual[i], e, `${path}[${i}]`));
  }
  if (typeof expected === "object" && expected !== null) {
    if (typeof actual !== "object" || actual === null) return [`${path}: ${show(actual)} is not an object`];
    const keys = Object.keys(expected);
    if (JSON.stringify(Object.keys(actual)) !== JSON.stringify(keys)) return [`${path}: keys ${Object.keys(actual)}`];
    return keys.flatMap((k) =>
      bitDifferences((actual as Record<string, unknown>)[k], (expected as Record<string, unknown>)[k], `${path}.${k}`),
    );
  }
  return Object.is(actual, expected) ? [] : [`${path}: ${show(actual)}, the reference ${show(expected)}`];
}

function expectRefusal(result: { ok: boolean; reason?: string; message?: string }, error: Refused) {
  expect(result.ok, `the reference refused: ${error.python}`).toBe(false);
  expect(result.reason).toBe(error.reason);
  for (const mention of error.mentions) expect(result.message).toContain(mention);
}

const passed = <T extends { expect: object }>(cases: T[]) => cases.filter((c) => !("error" in c.expect));
const refused = <T extends { expect: object }>(cases: T[]) => cases.filter((c) => "error" in c.expect);

it("the vectors are the reference's at the pinned commit, and cover both outcomes", () => {
  expect(fixture.reference.commit).toBe("d5b29ddfe823487c2b26c9ffdddf9a18d7bca446");
  const tables: { expect: object }[][] = [
    fixture.fedavg.reduce,
    fixture.fedavg.apply,
    fixture.fedavg.rounds,
    fixture.kmeans.iterations,
  ];
  for (const cases of tables) {
    expect(passed(cases).length).toBeGreaterThan(0);
    expect(refused(cases).length).toBeGreaterThan(0);
  }
});

describe("reduceDeltasWithReport matches reduce_deltas_with_report bit for bit", () => {
  it.each(passed(fixture.fedavg.reduce))("$name", (c) => {
    const result = reduceDeltasWithReport(c.contributions, c.clip_factor);
    if (!result.ok) throw new Error(result.message);
    const expected = c.expect as { reduced: Blob; clipped: Clip[] };
    expect(bitDifferences(weightsToJson(result.reduced), expected.reduced)).toEqual([]);
    expect(bitDifferences(result.clipped, expected.clipped)).toEqual([]);
  });

  it.each(refused(fixture.fedavg.reduce))("refused as the reference refuses: $name", (c) => {
    expectRefusal(reduceDeltasWithReport(c.contributions, c.clip_factor), (c.expect as { error: Refused }).error);
  });
});

describe("applyDelta matches apply_delta bit for bit", () => {
  const apply = (base: unknown, delta: unknown) => {
    const b = parseWeights(base, "base");
    const d = parseWeights(delta, "delta");
    if (!b.ok) return b;
    return d.ok ? applyDelta(b.weights, d.weights) : d;
  };

  it.each(passed(fixture.fedavg.apply))("$name", (c) => {
    const result = apply(c.base, c.delta);
    if (!result.ok) throw new Error(result.message);
    expect(bitDifferences(weightsToJson(result.weights), (c.expect as { weights: Blob }).weights)).toEqual([]);
  });

  it.each(refused(fixture.fedavg.apply))("refused as the reference refuses: $name", (c) => {
    expectRefusal(apply(c.base, c.delta), (c.expect as { error: Refused }).error);
  });
});

/** A round as the driver runs it: each task's metrics read, its delta found where they say, then the reduce. */
function runRound(c: Fixture["fedavg"]["rounds"][number]) {
  const weights = parseWeights(c.weights);
  if (!weights.ok) return weights;
  const committed: CommittedTask[] = [];
  for (const t of c.committed) {
    const read = readTaskMetrics(`jobs/${JOB}/${t.task_id}/metrics.json`, t.metrics);
    if (!read.ok) return read;
    expect(read.deltaKey).toBe(`jobs/${JOB}/${t.task_id}/${t.metrics.delta_file ?? "delta.json"}`);
    committed.push({ taskId: t.task_id, samples: read.samples, loss: read.loss, delta: t.delta });
  }
  return reduceRound(weights.weights, committed);
}

describe("reduceRound matches a run_fedavg round bit for bit", () => {
  it.each(passed(fixture.fedavg.rounds))("$name", (c) => {
    const result = runRound(c);
    if (!result.ok) throw new Error(result.message);
    const actual = {
      weights: weightsToJson(result.weights),
      participants: result.participants,
      mean_loss: result.meanLoss,
      clipped: result.clipped.map((e) => ({ task_id: e.taskId, norm: e.norm, cap: e.cap, scale: e.scale })),
    };
    expect(bitDifferences(actual, c.expect)).toEqual([]);
  });

  it.each(refused(fixture.fedavg.rounds))("refused as the reference refuses: $name", (c) => {
    expectRefusal(runRound(c), (c.expect as { error: Refused }).error);
  });

  it("the order is load-bearing: the same tasks by task id alone, UTF-16 order, give other bits", () => {
    const c = fixture.fedavg.rounds.find((r) => r.name.startsWith("tasks are reduced in"))!;
    const byId = [...c.committed].sort((a, b) => (a.task_id < b.task_id ? -1 : 1));
    const result = reduceDeltasWithReport(byId.map((t) => ({ delta: t.delta, samples: t.metrics.samples as number })));
    if (!result.ok) throw new Error(result.message);
    const weights = parseWeights(c.weights);
    if (!weights.ok) throw new Error(weights.message);
    const applied = applyDelta(weights.weights, result.reduced);
    if (!applied.ok) throw new Error(applied.message);
    const expected = (c.expect as { weights: Blob }).weights;
    expect(bitDifferences(weightsToJson(applied.weights), expected).length).toBeGreaterThan(0);
  });
});

describe("reduceIteration matches a run_kmeans iteration bit for bit", () => {
  const iterate = (c: Fixture["kmeans"]["iterations"][number]) =>
    reduceIteration(
      c.partials.map((p) => ({ taskId: p.task_id, metrics: p.metrics })),
      c.centroids,
      c.shards,
    );

  it.each(passed(fixture.kmeans.iterations))("$name", (c) => {
    const result = iterate(c);
    if (!result.ok) throw new Error(result.message);
    expect(bitDifferences({ centroids: result.centroids, inertia: result.inertia }, c.expect)).toEqual([]);
  });

  it.each(refused(fixture.kmeans.iterations))("refused as the reference refuses: $name", (c) => {
    expectRefusal(iterate(c), (c.expect as { error: Refused }).error);
  });

  it("an empty cluster's centroid is the one given, not recomputed", () => {
    const c = fixture.kmeans.iterations.find((r) => r.name.startsWith("an empty cluster"))!;
    const result = iterate(c);
    if (!result.ok) throw new Error(result.message);
    expect(result.centroids[1]).toEqual([1000, -1000]);
  });
});

// Beyond the reference: where it would coerce, or where doubles cannot know its answer.
const W = (data: unknown[], shape: unknown = [data.length]) => ({ w: { shape, data } });

describe("the weights encoding refuses what the reference would coerce", () => {
  it.each([
    ["a boolean datum (the reference reads true as 1)", W([1.5, true]), "not_finite", "index 1"],
    [
      "a fractional dimension (the reference's product of [2.5, 2] is 5.0)",
      W([1, 2, 3, 4, 5], [2.5, 2]),
      "malformed_weights",
      "shape",
    ],
    [
      "a negative dimension (the reference's product of [-1, -2] is 2)",
      W([1, 2], [-1, -2]),
      "malformed_weights",
      "shape",
    ],
    [
      "data that is a string (the reference checks its characters)",
      { w: { shape: [3], data: "abc" } },
      "malformed_weights",
      "data",
    ],
    [
      "a parameter named like an array index, which a JS object moves first",
      { b: { shape: [1], data: [1] }, "0": { shape: [1], data: [2] } },
      "malformed_weights",
      "'0'",
    ],
    ["weights that are not an object", null, "malformed_weights", "weights"],
    ["a dimension past 2^53, read as a bigint", W([1], [2n ** 60n]), "malformed_weights", "1152921504606846976"],
  ])("%s", (_, value, reason, mention) => {
    const result = parseWeights(value);
    expect(result).toMatchObject({ ok: false, reason });
    expect(result.ok || result.message).toContain(mention);
  });

  it("a parameter's other keys are ignored, and its order kept", () => {
    const result = parseWeights({ z: { shape: [1], data: [1], dtype: "float32" }, a: { shape: [], data: [-0] } });
    if (!result.ok) throw new Error(result.message);
    expect(weightsToJson(result.weights)).toEqual({ z: { shape: [1], data: [1] }, a: { shape: [], data: [-0] } });
    expect(Object.keys(weightsToJson(result.weights))).toEqual(["z", "a"]);
  });
});

describe("the reduce refuses a norm doubles cannot match", () => {
  const one = (delta: unknown, samples = 1) => reduceDeltasWithReport([{ delta, samples }]);

  it.each([
    // As strict-json's parseMetrics reads "1152921504606846977": the reference squares that int exactly.
    ["an integer past 2^53, read as a bigint", W([0.5, 2n ** 60n + 1n])],
    // 94906267² twice is 18014398272500578, between two doubles: the reference's int sum keeps it.
    ["leading integers whose squares stop summing exactly", W([94906267, 94906267, 0.5])],
  ])("%s", (_, delta) => {
    expect(one(delta)).toMatchObject({ ok: false, reason: "not_exact" });
  });

  it.each([
    ["leading integers whose squares sum exactly past 2^53", W([2 ** 27, 2 ** 27, 0.5])],
    ["integers after a fraction, which the reference sums as doubles too", W([0.5, 94906267, 94906267])],
    ["a number past 2^53, which was written as a float", W([1e200, 3])],
  ])("%s pass", (_, delta) => {
    expect(one(delta).ok).toBe(true);
  });

  it("a total sample count past 2^53 is refused, not rounded", () => {
    const result = reduceDeltasWithReport([
      { delta: W([1]), samples: 2 ** 52 },
      { delta: W([1]), samples: 2 ** 52 },
    ]);
    expect(result).toMatchObject({ ok: false, reason: "samples_too_large" });
  });
});

describe("a task's metrics are read strictly", () => {
  const KEY = `jobs/${JOB}/shard-000/metrics.json`;
  it.each([
    [
      "a fractional sample count (the reference's int() makes 2.5 into 2)",
      { samples: 2.5, loss: 1 },
      "malformed_metrics",
    ],
    ["a sample count in a string (int('3') is 3)", { samples: "3", loss: 1 }, "malformed_metrics"],
    ["a boolean sample count (int(True) is 1)", { samples: true, loss: 1 }, "malformed_metrics"],
    ["a loss in a string (float('nan') is NaN)", { samples: 3, loss: "nan" }, "malformed_metrics"],
    ["a missing loss", { samples: 3 }, "malformed_metrics"],
    [
      "a delta_file with a final newline (Python's $ matches before it)",
      { samples: 3, loss: 1, delta_file: "delta.json\n" },
      "unsafe_delta_file",
    ],
    ["a null delta_file", { samples: 3, loss: 1, delta_file: null }, "unsafe_delta_file"],
    ["a delta_file that is a directory", { samples: 3, loss: 1, delta_file: ".." }, "unsafe_delta_file"],
    ["metrics that are a list", [3, 1], "malformed_metrics"],
  ])("%s", (_, metrics, reason) => {
    expect(readTaskMetrics(KEY, metrics)).toMatchObject({ ok: false, reason });
  });

  it("without a delta_file the delta is delta.json beside the metrics", () => {
    expect(readTaskMetrics(KEY, { samples: 3, loss: 0.25 })).toEqual({
      ok: true,
      deltaKey: `jobs/${JOB}/shard-000/delta.json`,
      samples: 3,
      loss: 0.25,
    });
  });

  it("a task committed twice is refused", () => {
    const task = { taskId: "shard-000", samples: 1, loss: 1, delta: W([1]) };
    expect(reduceRound(new Map(), [task, { ...task }])).toMatchObject({ ok: false, reason: "duplicate_task" });
  });
});

describe("the k-means partials are read strictly (the reference checks none)", () => {
  const CENTROIDS = [
    [0, 0],
    [5, 5],
  ];
  const partial = (over: Record<string, unknown>) => ({
    sums: [
      [1, 2],
      [10, 11],
    ],
    counts: [1, 2],
    inertia: 3.5,
    ...over,
  });

  it.each([
    ["a negative count", partial({ counts: [-1, 2] }), "counts[0]"],
    ["a fractional count", partial({ counts: [1.5, 2] }), "counts[0]"],
    ["more counts than clusters (the reference ignores the rest)", partial({ counts: [1, 2, 3] }), "counts"],
    [
      "a sums row longer than the centroids",
      partial({
        sums: [
          [1, 2, 3],
          [10, 11],
        ],
      }),
      "sums[0]",
    ],
    [
      "a cluster with no points but a sum",
      partial({
        counts: [0, 2],
        sums: [
          [1, 0],
          [10, 11],
        ],
      }),
      "sums[0]",
    ],
    ["a negative inertia", partial({ inertia: -1 }), "inertia"],
    ["a NaN inertia", partial({ inertia: Number.NaN }), "inertia"],
    [
      "a sum that is a boolean",
      partial({
        sums: [
          [true, 2],
          [10, 11],
        ],
      }),
      "sums[0][0]",
    ],
  ])("%s", (_, p, mention) => {
    const result = reducePartials([partial({}), p], CENTROIDS);
    expect(result).toMatchObject({ ok: false, reason: "malformed_partial" });
    expect(result.ok || result.message).toContain(mention);
  });

  it.each([
    ["no centroids", []],
    ["ragged centroids", [[0, 0], [1]]],
    [
      "a centroid that is not finite",
      [
        [0, 0],
        [Number.POSITIVE_INFINITY, 1],
      ],
    ],
  ])("%s", (_, centroids) => {
    expect(reducePartials([], centroids)).toMatchObject({ ok: false, reason: "malformed_centroids" });
  });

  it("sums that overflow are refused, not sent on as Infinity", () => {
    const big = partial({
      sums: [
        [1.7e308, 0],
        [0, 0],
      ],
      counts: [1, 0],
    });
    expect(reducePartials([big, big], CENTROIDS)).toMatchObject({ ok: false, reason: "not_finite" });
  });
});
