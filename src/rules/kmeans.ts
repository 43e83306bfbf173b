// The arithmetic of one sharded K-means iteration (issue 43, hosted runs),
// ported to the last bit from the reference, Zolli-Labs/flashml at d5b29dd,
// flashruntime/flashml_workloads/:
//   reducePartials   kmeans_driver.reduce_partials: per-cluster sums and counts over the
//                    shards' partials, new centroid = sums / count, an empty cluster keeps
//                    its centroid, inertia summed
//   reduceIteration  run_kmeans's step after an iteration's job succeeded: one partial per
//                    shard, in the order its artifact listing gives them, then the reduce
// A partial is what kmeans_shard.run_shard commits as metrics.json:
// {"task_id", "sums": [[float]] (k × dims), "counts": [int] (k), "inertia", "n"}.
// The reference runs a fixed number of iterations: it has no tolerance and
// no convergence test, so neither has this. Its reduce is plain Python loops
// in the order mirrored here. It checks nothing; this refuses, naming the
// field, any partial or centroid that is not what a shard writes. Pure: no I/O.

import { compareKeys } from "../protocol/archive";

export type KmeansRefusalReason = "malformed_centroids" | "malformed_partial" | "partial_count" | "not_finite";

export type KmeansRefusal = { readonly ok: false; readonly reason: KmeansRefusalReason; readonly message: string };

export type ReducedIteration = {
  readonly ok: true;
  readonly centroids: readonly (readonly number[])[];
  readonly inertia: number;
};

/** One shard task's committed metrics.json. */
export type ShardPartial = { readonly taskId: string; readonly metrics: unknown };

type Partial = {
  readonly sums: readonly (readonly number[])[];
  readonly counts: readonly number[];
  readonly inertia: number;
};

function refuse(reason: KmeansRefusalReason, message: string): KmeansRefusal {
  return { ok: false, reason, message };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isFiniteNumber(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value);
}

/**
 * An iteration's new centroids and total inertia from its shards' partials:
 * exactly one partial per shard, reduced in task-id order (the order the
 * reference's listing of `jobs/{job}/{task}/metrics.json` gives, path
 * component by component).
 */
export function reduceIteration(
  partials: readonly ShardPartial[],
  centroids: unknown,
  shards: number,
): ReducedIteration | KmeansRefusal {
  if (partials.length !== shards) {
    return refuse("partial_count", `expected ${shards} partials, got ${partials.length}`);
  }
  const ordered = [...partials].sort((a, b) => compareKeys(a.taskId, b.taskId));
  return reducePartials(
    ordered.map((p) => p.metrics),
    centroids,
  );
}

/**
 * Sum the partials; each cluster's new centroid is its coordinate sums over
 * its count, and a cluster no shard assigned a point to keeps its previous
 * centroid. Every partial must have k count and k sum rows of the centroids'
 * dimension, counts non-negative integers, a cluster with no points no sum,
 * and a finite, non-negative inertia.
 */
export function reducePartials(partials: readonly unknown[], prevCentroids: unknown): ReducedIteration | KmeansRefusal {
  const prev = readCentroids(prevCentroids);
  if (!Array.isArray(prev)) return prev;
  const k = prev.length;
  const dims = prev[0]!.length;
  const checked: Partial[] = [];
  for (const [i, p] of partials.entries()) {
    const partial = readPartial(p, k, dims, `partial ${i}`);
    if (!("sums" in partial)) return partial;
    checked.push(partial);
  }

  const sums = Array.from({ length: k }, () => new Array<number>(dims).fill(0.0));
  const counts = new Array<number>(k).fill(0);
  let inertia = 0.0;
  for (const p of checked) {
    for (let j = 0; j < k; j++) {
      counts[j] = counts[j]! + p.counts[j]!;
      for (let d = 0; d < dims; d++) sums[j]![d] = sums[j]![d]! + p.sums[j]![d]!;
    }
    inertia += p.inertia;
  }
  for (const [j, count] of counts.entries()) {
    // Python's ints stay exact past 2^53; a double's would not.
    if (!Number.isSafeInteger(count))
      return refuse("malformed_partial", `cluster ${j}'s total count ${count} is past 2^53`);
  }
  const centroids = sums.map((row, j) => (counts[j] ? row.map((s) => s / counts[j]!) : [...prev[j]!]));
  for (const [j, row] of centroids.entries()) {
    if (!row.every(Number.isFinite)) return refuse("not_finite", `centroid ${j} is not finite: its sums overflowed`);
  }
  if (!Number.isFinite(inertia)) return refuse("not_finite", "the total inertia overflowed");
  return { ok: true, centroids, inertia };
}

function readCentroids(value: unknown): number[][] | KmeansRefusal {
  if (!Array.isArray(value) || value.length === 0) {
    return refuse("malformed_centroids", "centroids must be a non-empty list of points");
  }
  const dims = Array.isArray(value[0]) ? value[0].length : -1;
  for (const [j, row] of value.entries()) {
    if (!Array.isArray(row) || row.length !== dims) {
      return refuse("malformed_centroids", `centroids[${j}] must be a list of ${Math.max(dims, 0)} numbers`);
    }
    const bad = row.findIndex((v) => !isFiniteNumber(v));
    if (bad !== -1) return refuse("malformed_centroids", `centroids[${j}][${bad}] is not a finite number`);
  }
  return value as number[][];
}

function readPartial(value: unknown, k: number, dims: number, where: string): Partial | KmeansRefusal {
  const malformed = (field: string, what: string) => refuse("malformed_partial", `${where}: '${field}' ${what}`);
  if (!isObject(value)) return refuse("malformed_partial", `${where}: metrics must be an object`);
  const { sums, counts, inertia } = value;
  if (!Array.isArray(counts) || counts.length !== k) return malformed("counts", `must be a list of ${k} counts`);
  for (const [j, c] of counts.entries()) {
    if (typeof c !== "number" || !Number.isSafeInteger(c) || c < 0) {
      return malformed(`counts[${j}]`, "must be a non-negative integer");
    }
  }
  if (!Array.isArray(sums) || sums.length !== k) return malformed("sums", `must be a list of ${k} rows`);
  for (const [j, row] of sums.entries()) {
    if (!Array.isArray(row) || row.length !== dims) return malformed(`sums[${j}]`, `must be a list of ${dims} numbers`);
    const bad = row.findIndex((v) => !isFiniteNumber(v));
    if (bad !== -1) return malformed(`sums[${j}][${bad}]`, "is not a finite number");
    // A shard that assigned a cluster no point added nothing to its sums.
    if (counts[j] === 0 && row.some((v) => v !== 0)) return malformed(`sums[${j}]`, "must be zeros: counts[j] is 0");
  }
  if (!isFiniteNumber(inertia) || inertia < 0) return malformed("inertia", "must be a finite number >= 0");
  return { sums: sums as number[][], counts: counts as number[], inertia };
}
