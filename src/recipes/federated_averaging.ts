// The federated_averaging recipe: one FedAvg round as one task per shard,
// each training locally from the round's broadcast weights (docs/protocol.md §6). The
// driver averages the deltas and submits the next round as a new job.
//
// The worker reads every one of its params unconditionally, so a missing or
// mistyped one is refused here: on a volunteer's machine it would surface as
// a crash that burns an attempt and reads as a node fault, not a bad spec.

import type { JobSpec } from "../protocol/jobs";
import { describe, given, isArtifactUri, readInteger } from "./parameters";
import type { Drafted, Recipe } from "./recipe";

const FEDAVG_MODULE = "flashml_workloads.fedavg_worker";

/** Params the submitter must give; the worker reads each of them. */
export const FEDAVG_WORKER_PARAM_KEYS = [
  "local_steps",
  "lr",
  "batch_size",
  "seed",
  "in_dim",
  "hidden",
  "out_dim",
  "dataset_size",
] as const;

/** Task ids are zero-padded to three digits and sort as strings, hence the cap. */
export const MAX_FEDAVG_SHARDS = 999;

export const federatedAveragingRecipe: Recipe = { defaultLeaseSeconds: 120, draft: draftFederatedAveragingTasks };

/** Task ids shard-000, shard-001, … */
export function shardTaskId(shard: number): string {
  return `shard-${String(shard).padStart(3, "0")}`;
}

/** Expand one FedAvg round: one task per shard, or every problem found. */
export function draftFederatedAveragingTasks(spec: JobSpec): Drafted {
  const p = spec.spec.workload.parameters;
  const problems: string[] = [];

  const numShardsValue = given(p, "num_shards");
  let numShards: number | undefined;
  if (numShardsValue === undefined) {
    problems.push(`'num_shards' is required: an integer from 1 to ${MAX_FEDAVG_SHARDS}`);
  } else numShards = readInteger(numShardsValue, "num_shards", { min: 1, max: MAX_FEDAVG_SHARDS }, problems);

  const missing = FEDAVG_WORKER_PARAM_KEYS.filter((key) => given(p, key) === undefined);
  if (missing.length > 0) {
    problems.push(`federated_averaging is missing required parameters: ${missing.join(", ")}`);
  }
  const workerParams: Record<string, number> = {};
  for (const key of FEDAVG_WORKER_PARAM_KEYS) {
    const value = given(p, key);
    if (value === undefined) continue;
    const checked =
      key === "lr"
        ? readLearningRate(value, problems)
        : readInteger(value, key, { min: key === "seed" ? 0 : 1 }, problems);
    if (checked !== undefined) workerParams[key] = checked;
  }
  const datasetSize = workerParams.dataset_size;
  if (datasetSize !== undefined && numShards !== undefined && datasetSize < numShards) {
    // The worker slices the data x[shard::num_shards]; a shard past the end
    // of the dataset would train on nothing and fail on the node.
    problems.push(
      `'dataset_size' (${datasetSize}) must be at least 'num_shards' (${numShards}): every shard needs a sample`,
    );
  }

  const roundValue = given(p, "round");
  const round = roundValue === undefined ? 0 : readInteger(roundValue, "round", { min: 0 }, problems);

  const weights = given(p, "weights");
  if (weights !== undefined && !isArtifactUri(weights)) {
    problems.push(`'weights' must be an artifact:// URI, got ${describe(weights)}`);
  }

  if (problems.length > 0 || numShards === undefined || round === undefined) return { ok: false, problems };
  // Round 0 may start from the seed alone, so `weights` stays absent, not null.
  const inputs = weights === undefined ? {} : { weights };
  const tasks = Array.from({ length: numShards }, (_, shard) => ({
    taskId: shardTaskId(shard),
    payload: {
      module: FEDAVG_MODULE,
      params: { ...workerParams, round, shard, num_shards: numShards },
      inputs,
    },
    extras: {},
  }));
  return { ok: true, tasks };
}

function readLearningRate(value: unknown, problems: string[]): number | undefined {
  if (typeof value === "number" && Number.isFinite(value) && value > 0) return value;
  problems.push(`'lr' must be a finite number > 0, got ${describe(value)}`);
  return undefined;
}
