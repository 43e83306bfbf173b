// The sharded_kmeans recipe: one K-means iteration as one task per data
// shard, each computing partial sums against the broadcast centroids (docs/protocol.md
// §6). The driver reduces the partials and submits the next iteration as a
// new job, so the iteration number is part of every task id.

import type { JobSpec } from "../protocol/jobs";
import { describe, given, isArtifactUri, readInteger } from "./parameters";
import { type Drafted, MAX_TASKS_PER_JOB, type Recipe, tooManyTasks } from "./recipe";

const KMEANS_MODULE = "flashml_workloads.kmeans_shard";

export const shardedKmeansRecipe: Recipe = { defaultLeaseSeconds: 60, draft: draftShardedKmeansTasks };

/** Task ids it{iteration:02}-shard-{i:03}, e.g. it03-shard-007. */
export function kmeansTaskId(iteration: number, shard: number): string {
  return `it${String(iteration).padStart(2, "0")}-shard-${String(shard).padStart(3, "0")}`;
}

/** Expand one K-means iteration: one task per shard URI, or every problem found. */
export function draftShardedKmeansTasks(spec: JobSpec): Drafted {
  const p = spec.spec.workload.parameters;
  const problems: string[] = [];

  const shards = given(p, "shards");
  if (shards === undefined) problems.push("'shards' is required: a non-empty list of artifact:// URIs");
  else if (!Array.isArray(shards) || shards.length === 0) {
    problems.push(`'shards' must be a non-empty list of artifact:// URIs, got ${describe(shards)}`);
  } else if (shards.length > MAX_TASKS_PER_JOB) problems.push(tooManyTasks(shards.length));
  else {
    shards.forEach((uri, i) => {
      if (!isArtifactUri(uri)) problems.push(`'shards[${i}]' must be an artifact:// URI, got ${describe(uri)}`);
    });
  }

  // The reference refuses any falsy centroids; an empty list has no
  // clusters to assign points to.
  const centroids = given(p, "centroids");
  if (centroids === undefined) problems.push("'centroids' is required: a non-empty list");
  else if (!Array.isArray(centroids) || centroids.length === 0) {
    problems.push(`'centroids' must be a non-empty list, got ${describe(centroids)}`);
  }

  const iterationValue = given(p, "iteration");
  const iteration = iterationValue === undefined ? 0 : readInteger(iterationValue, "iteration", { min: 0 }, problems);

  if (problems.length > 0 || iteration === undefined || !Array.isArray(shards)) return { ok: false, problems };
  const tasks = shards.map((uri, i) => ({
    taskId: kmeansTaskId(iteration, i),
    payload: { module: KMEANS_MODULE, params: { centroids }, inputs: { shard: uri } },
    extras: {},
  }));
  return { ok: true, tasks };
}
