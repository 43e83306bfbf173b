// The arithmetic of one federated-averaging round (issue 43, hosted runs),
// ported to the last bit from the reference, Zolli-Labs/flashml at d5b29dd,
// flashruntime/flashml_workloads/:
//   parseWeights            the {"<param>": {"shape", "data"}} encoding, checked as
//                           fedavg_weights._require_same_params and require_finite check it
//   applyDelta              fedavg_weights.apply_delta
//   reduceDeltasWithReport  fedavg_weights.reduce_deltas_with_report (_l2_norm, _median, _scale_blob)
//   readTaskMetrics         what fedavg_driver._fetch reads from a task's metrics.json (_safe_delta_key)
//   reduceRound             run_fedavg's round after quorum: reduce, clip report, bootstrap or apply, mean loss
// The reference is plain Python, run on 3.11 (its service and API images pin
// it), whose sum() adds floats left to right with no compensation; so every
// sum here is a plain loop in the reference's order. Pure: no I/O. Malformed
// input is refused as a value naming the field, never coerced.
//
// Python reads a JSON integer as an exact int, and squares and sums it
// exactly; a double cannot always. Read a blob's text with strict-json's
// parseMetrics, which keeps an integer past 2^53 as a bigint (JSON.parse
// would round it unseen): such a datum is refused, as is a blob whose leading
// integers' squares stop summing exactly. Below 2^53 the two agree to the bit.

import { compareKeys } from "../protocol/archive";
import { shorten } from "./text";

/** How many times the round's median contribution norm one contribution may reach before it is scaled back. */
export const CLIP_FACTOR = 3.0;

export type WeightParam = { readonly shape: readonly number[]; readonly data: readonly number[] };
/** Parameters by name, in the blob's own order: the order its norm sums them in. */
export type Weights = ReadonlyMap<string, WeightParam>;

/** A contribution the cap scaled back; `index` is its position in the reduce's input. */
export type ClipEvent = { readonly index: number; readonly norm: number; readonly cap: number; readonly scale: number };

export type FedavgRefusalReason =
  | "clip_factor"
  | "no_contributions"
  | "negative_total"
  | "zero_total"
  | "samples_not_finite"
  | "samples_not_integer"
  | "samples_not_positive"
  | "samples_too_large"
  | "malformed_weights"
  | "shape_mismatch"
  | "not_finite"
  | "not_exact"
  | "malformed_metrics"
  | "unsafe_delta_file"
  | "duplicate_task";

export type FedavgRefusal = { readonly ok: false; readonly reason: FedavgRefusalReason; readonly message: string };

/** One committed task of a round: what its metrics.json said, and its delta blob as parsed JSON. */
export type CommittedTask = {
  readonly taskId: string;
  readonly samples: number;
  readonly loss: number;
  readonly delta: unknown;
};

export type RoundClip = {
  readonly taskId: string;
  readonly norm: number;
  readonly cap: number;
  readonly scale: number;
};

export type ReducedRound = {
  readonly ok: true;
  readonly weights: Weights;
  readonly participants: number;
  readonly meanLoss: number;
  readonly clipped: readonly RoundClip[];
};

// Integers a double holds exactly, and so sums of them too: past this the
// reference (which keeps a JSON integer as a Python int) and a double part.
const EXACT_INTEGERS = 2 ** 53;
// A plain filename in the task's own output prefix. JS `$` is the end of the
// text; Python's also matches before a final "\n", which is refused here.
const SAFE_DELTA_FILE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
// A name a JS object would move ahead of the others ("0", "17"): its place
// in the blob, and so the order of the norm's sum, would be lost.
const ARRAY_INDEX = /^(?:0|[1-9]\d*)$/;

type Unchecked = Map<string, { readonly shape: readonly number[]; readonly data: readonly unknown[] }>;

function refuse(reason: FedavgRefusalReason, message: string): FedavgRefusal {
  return { ok: false, reason, message };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function shown(value: unknown): string {
  if (typeof value === "number" || typeof value === "bigint") return String(value);
  // strict-json's bigints are shown as their digits: JSON.stringify would throw.
  const text = JSON.stringify(value, (_key, v: unknown) => (typeof v === "bigint" ? String(v) : v));
  return shorten(text ?? String(value), 40);
}

/**
 * A weights or delta blob, `{"<param>": {"shape": [int, ...], "data": [float, ...]}}`:
 * every shape a list of non-negative integers whose product is the length of
 * its data, every datum a finite number. `where` begins each message.
 */
export function parseWeights(value: unknown, where = "weights"): { ok: true; weights: Weights } | FedavgRefusal {
  const blob = readStructure(value, where);
  if (!(blob instanceof Map)) return blob;
  const mismatch = sameParams(blob, blob);
  if (mismatch !== undefined) return refuse("shape_mismatch", `${where}: ${mismatch}`);
  return requireFinite(blob, where);
}

/** The blob as JSON, parameters in its order. */
export function weightsToJson(weights: Weights): Record<string, { shape: number[]; data: number[] }> {
  // fromEntries defines own properties, so a "__proto__" parameter survives.
  return Object.fromEntries([...weights].map(([name, p]) => [name, { shape: [...p.shape], data: [...p.data] }]));
}

/** `base + scale × delta`, parameter by parameter; both must describe the same parameters, and the result must be finite. */
export function applyDelta(base: Weights, delta: Weights, scale = 1.0): { ok: true; weights: Weights } | FedavgRefusal {
  const mismatch = sameParams(base, delta);
  if (mismatch !== undefined) return refuse("shape_mismatch", `apply_delta: ${mismatch}`);
  const out: Unchecked = new Map();
  for (const [name, p] of base) {
    const d = delta.get(name)!.data;
    out.set(name, { shape: [...p.shape], data: p.data.map((b, i) => b + scale * d[i]!) });
  }
  return requireFinite(out, "apply_delta");
}

/**
 * The sample-weighted mean of the deltas, after every contribution whose L2
 * norm exceeds CLIP_FACTOR × the median norm has been scaled down to that
 * cap; the clip events say which. Sample counts must be positive integers,
 * every delta must describe the first one's parameters, and no value may be
 * NaN or infinite. The checks run in the reference's order, so the same
 * input fails on the same rule.
 */
export function reduceDeltasWithReport(
  contributions: readonly { readonly delta: unknown; readonly samples: number }[],
  clipFactor = CLIP_FACTOR,
): { ok: true; reduced: Weights; clipped: ClipEvent[] } | FedavgRefusal {
  if (!(Number.isFinite(clipFactor) && clipFactor > 0)) {
    return refuse("clip_factor", `reduce_deltas: clip_factor must be a finite number > 0, got ${clipFactor}`);
  }
  if (contributions.length === 0) return refuse("no_contributions", "reduce_deltas: no contributions");
  let total = 0;
  for (const { samples } of contributions) total += samples;
  if (total < 0) return refuse("negative_total", "reduce_deltas: negative total samples");
  if (total === 0) return refuse("zero_total", "reduce_deltas: zero total samples");
  for (const [i, { samples }] of contributions.entries()) {
    if (!Number.isFinite(samples)) {
      return refuse("samples_not_finite", `reduce_deltas: contribution ${i} has a non-finite sample count ${samples}`);
    }
    if (!Number.isInteger(samples)) {
      return refuse(
        "samples_not_integer",
        `reduce_deltas: contribution ${i} has a non-integer sample count ${samples}`,
      );
    }
    if (samples <= 0) {
      return refuse(
        "samples_not_positive",
        `reduce_deltas: contribution ${i} has non-positive sample count ${samples}`,
      );
    }
  }
  // Fail closed where the reference's Python ints would stay exact and a double would not.
  if (total >= EXACT_INTEGERS) {
    return refuse("samples_too_large", `reduce_deltas: the total sample count ${total} is past 2^53`);
  }

  const blobs: Weights[] = [];
  let first: Unchecked | undefined;
  for (const [i, { delta }] of contributions.entries()) {
    const where = `reduce_deltas: contribution ${i}`;
    const blob = readStructure(delta, where);
    if (!(blob instanceof Map)) return blob;
    first ??= blob;
    const mismatch = sameParams(first, blob);
    if (mismatch !== undefined) return refuse("shape_mismatch", `${where}: ${mismatch}`);
    const checked = requireFinite(blob, where);
    if (!checked.ok) return checked;
    blobs.push(checked.weights);
  }

  const norms: number[] = [];
  for (const [i, blob] of blobs.entries()) {
    const norm = l2Norm(blob, `reduce_deltas: contribution ${i}`);
    if (typeof norm !== "number") return norm;
    norms.push(norm);
  }
  const cap = median(norms) * clipFactor;
  const clipped = [...blobs];
  const events: ClipEvent[] = [];
  for (const [i, norm] of norms.entries()) {
    // Strict: a zero norm is never scaled, so cap / norm never divides by zero.
    if (norm > cap) {
      const scale = cap / norm;
      clipped[i] = scaleBlob(blobs[i]!, scale);
      events.push({ index: i, norm, cap, scale });
    }
  }

  const reduced = new Map<string, WeightParam>();
  for (const [name, p] of blobs[0]!) {
    const acc = new Array<number>(p.data.length).fill(0.0);
    for (const [j, blob] of clipped.entries()) {
      const w = contributions[j]!.samples / total;
      const data = blob.get(name)!.data;
      for (let i = 0; i < data.length; i++) acc[i] = acc[i]! + w * data[i]!;
    }
    reduced.set(name, { shape: [...p.shape], data: acc });
  }
  return { ok: true, reduced, clipped: events };
}

/**
 * What the reduce needs from a committed task's metrics.json, read at
 * `metricsKey`: its sample count, its loss, and the key of its delta, which
 * must be a plain filename beside the metrics (default `delta.json`).
 * Stricter than the reference's `int()`/`float()`: a sample count must be a
 * JSON integer (2.5 is refused, not truncated to 2) and the loss a finite number.
 */
export function readTaskMetrics(
  metricsKey: string,
  metrics: unknown,
): { ok: true; deltaKey: string; samples: number; loss: number } | FedavgRefusal {
  if (!isObject(metrics)) return refuse("malformed_metrics", `${metricsKey}: metrics must be an object`);
  const deltaFile = Object.hasOwn(metrics, "delta_file") ? metrics.delta_file : "delta.json";
  if (typeof deltaFile !== "string" || !SAFE_DELTA_FILE.test(deltaFile)) {
    return refuse(
      "unsafe_delta_file",
      `${metricsKey}: task declared an unsafe delta_file ${shown(deltaFile)}: must be a plain filename in the task's own output prefix`,
    );
  }
  const slash = metricsKey.lastIndexOf("/");
  const deltaKey = `${slash < 0 ? metricsKey : metricsKey.slice(0, slash)}/${deltaFile}`;
  const samples = metrics.samples;
  if (typeof samples !== "number" || !Number.isInteger(samples)) {
    return refuse("malformed_metrics", `${metricsKey}: 'samples' must be an integer, got ${shown(samples)}`);
  }
  const loss = metrics.loss;
  if (typeof loss !== "number" || !Number.isFinite(loss)) {
    return refuse("malformed_metrics", `${metricsKey}: 'loss' must be a finite number, got ${shown(loss)}`);
  }
  return { ok: true, deltaKey, samples, loss };
}

/**
 * One round after quorum: the committed tasks' deltas reduced (in the order
 * of their metrics keys, as the reference lists them), the clip report by
 * task id, and the new weights. With no weights yet the reduced
 * contribution is the first weights; otherwise it is applied to them.
 */
export function reduceRound(weights: Weights, committed: readonly CommittedTask[]): ReducedRound | FedavgRefusal {
  // Every metrics key is jobs/{job}/{task}/metrics.json, so the reference's
  // sorted(keys) orders them by "{task}/metrics.json", code point by code point.
  const ordered = [...committed].sort((a, b) => compareKeys(`${a.taskId}/metrics.json`, `${b.taskId}/metrics.json`));
  for (let i = 1; i < ordered.length; i++) {
    if (ordered[i]!.taskId === ordered[i - 1]!.taskId) {
      return refuse("duplicate_task", `task ${shown(ordered[i]!.taskId)} committed twice`);
    }
  }
  const result = reduceDeltasWithReport(ordered.map(({ delta, samples }) => ({ delta, samples })));
  if (!result.ok) return result;
  const clipped = result.clipped.map((e) => ({
    taskId: ordered[e.index]!.taskId,
    norm: e.norm,
    cap: e.cap,
    scale: e.scale,
  }));
  const next =
    weights.size === 0
      ? requireFinite(result.reduced, "round: bootstrap weights")
      : applyDelta(weights, result.reduced);
  if (!next.ok) return next;
  let totalSamples = 0;
  let weightedLoss = 0;
  for (const t of ordered) totalSamples += t.samples;
  for (const t of ordered) weightedLoss += t.loss * t.samples;
  return {
    ok: true,
    weights: next.weights,
    participants: ordered.length,
    meanLoss: weightedLoss / totalSamples,
    clipped,
  };
}

/** The blob's layout, its data not yet checked (the reference checks shapes before values). */
function readStructure(value: unknown, where: string): Unchecked | FedavgRefusal {
  if (!isObject(value)) return refuse("malformed_weights", `${where}: weights must be an object, got ${shown(value)}`);
  const blob: Unchecked = new Map();
  for (const name of Object.keys(value)) {
    const param = value[name];
    const at = `${where}: parameter '${name}'`;
    if (ARRAY_INDEX.test(name)) {
      return refuse("malformed_weights", `${at}: a name that is an array index loses its place in a JS object`);
    }
    if (!isObject(param)) return refuse("malformed_weights", `${at} must be an object with shape and data`);
    const { shape, data } = param;
    if (!Array.isArray(shape) || !shape.every((d) => typeof d === "number" && Number.isSafeInteger(d) && d >= 0)) {
      return refuse("malformed_weights", `${at} shape must be a list of non-negative integers, got ${shown(shape)}`);
    }
    if (!Array.isArray(data)) return refuse("malformed_weights", `${at} data must be a list, got ${shown(data)}`);
    blob.set(name, { shape: shape as number[], data });
  }
  return blob;
}

/** Why `b` does not describe `a`'s parameters, in the reference's order of checks; undefined when it does. */
function sameParams(a: Unchecked | Weights, b: Unchecked | Weights): string | undefined {
  if (a.size !== b.size || [...a.keys()].some((name) => !b.has(name))) {
    const names = (m: Unchecked | Weights) => JSON.stringify([...m.keys()].sort(compareKeys));
    return `parameter names differ: ${names(a)} vs ${names(b)}`;
  }
  for (const [name, pa] of a) {
    const pb = b.get(name)!;
    const shapeA = JSON.stringify(pa.shape);
    if (shapeA !== JSON.stringify(pb.shape))
      return `parameter '${name}' shape ${shapeA} vs ${JSON.stringify(pb.shape)}`;
    const expected = pa.shape.reduce((product, d) => product * d, 1);
    for (const data of [pa.data, pb.data]) {
      if (data.length !== expected) {
        return `parameter '${name}' declared shape ${shapeA} (product ${expected}) but data has length ${data.length}`;
      }
    }
  }
  return undefined;
}

function requireFinite(blob: Unchecked | Weights, where: string): { ok: true; weights: Weights } | FedavgRefusal {
  for (const [name, p] of blob) {
    for (const [i, v] of p.data.entries()) {
      if (typeof v === "bigint") {
        return refuse("not_exact", `${where}: parameter '${name}' index ${i} is an integer past 2^53 (${v})`);
      }
      // A boolean too: the reference would read true as 1.
      if (typeof v !== "number" || !Number.isFinite(v)) {
        return refuse("not_finite", `${where}: parameter '${name}' index ${i} is not a finite number (${shown(v)})`);
      }
    }
  }
  return { ok: true, weights: blob as Weights };
}

/**
 * √(Σ v²) over every datum in blob order, or a refusal where the reference's
 * answer cannot be known from doubles. The reference squares a JSON integer
 * exactly and, while a blob opens with integers, sums their squares exactly
 * too; JSON.parse reads `3` and `3.0` alike. So while the blob opens with
 * integer values below 2^53, each partial sum must be exact, whichever of
 * them were integers: past 2^53 it is checked against a bigint.
 */
function l2Norm(blob: Weights, where: string): number | FedavgRefusal {
  let sum = 0;
  let opening = true;
  let exact: bigint | undefined;
  for (const [name, p] of blob) {
    for (const [i, v] of p.data.entries()) {
      // At 2^53 or more a number was written with a fraction or an exponent
      // (a bigint otherwise, refused above): a float to the reference too.
      if (opening && !(Number.isInteger(v) && Math.abs(v) < EXACT_INTEGERS)) opening = false;
      const before = sum;
      sum += v * v;
      if (opening && sum >= EXACT_INTEGERS) {
        exact = (exact ?? BigInt(before)) + BigInt(v) * BigInt(v);
        if (BigInt(sum) !== exact) {
          return refuse(
            "not_exact",
            `${where}: the squares of its leading integers stop summing exactly at parameter '${name}' index ${i}`,
          );
        }
      }
    }
  }
  return Math.sqrt(sum);
}

/** The middle value, or the mean of the two middles. */
function median(values: readonly number[]): number {
  // No subtraction in the comparator: Infinity - Infinity is NaN.
  const ordered = [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const mid = Math.floor(ordered.length / 2);
  return ordered.length % 2 ? ordered[mid]! : (ordered[mid - 1]! + ordered[mid]!) / 2;
}

function scaleBlob(blob: Weights, scale: number): Weights {
  return new Map([...blob].map(([name, p]) => [name, { shape: [...p.shape], data: p.data.map((v) => scale * v) }]));
}
