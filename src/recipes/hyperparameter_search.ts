// The hyperparameter_search recipe: one module task per trial, the trials
// listed explicitly or generated as the cartesian product of a grid (docs/protocol.md
// §6). The module must be on the coordinator's allowlist — the executor
// keeps its own list too, and both ends fail closed.
//
// Like every recipe's, its payloads get `gpus` and the job's GPU
// requirements from src/recipes/stamp.ts (docs/protocol.md §4).

import type { JobSpec } from "../protocol/jobs";
import { describe, given, isPlainObject, type Parameters, readInputs, shorten } from "./parameters";
import { type Drafted, MAX_TASKS_PER_JOB, type Recipe, readTaskObjects, type TaskDraft, tooManyTasks } from "./recipe";
import { MAX_JOB_PAYLOAD_BYTES } from "./stamp";

/** Task modules the coordinator hands out (docs/protocol.md §6). */
export const ALLOWED_TASK_MODULES: readonly string[] = [
  "flashml_workloads.sklearn_trial",
  "flashml_workloads.kmeans_shard",
  "flashml_workloads.sgd_trainer",
  "flashml_workloads.fedavg_worker",
];

const DEFAULT_MODULE = "flashml_workloads.sklearn_trial";

export const hyperparameterSearchRecipe: Recipe = { defaultLeaseSeconds: 60, draft: draftHyperparameterSearchTasks };

/** Task ids trial-000, trial-001, … */
export function trialTaskId(index: number): string {
  return `trial-${String(index).padStart(3, "0")}`;
}

/** Expand a hyperparameter search: one task per trial, or every problem found. */
export function draftHyperparameterSearchTasks(spec: JobSpec): Drafted {
  const p = spec.spec.workload.parameters;
  const problems: string[] = [];
  const trials = readTrials(p, problems);
  const module = readModule(p, problems);
  const inputs = readInputs(p, problems);
  const checkpoint = given(p, "checkpoint");
  if (problems.length > 0 || trials === undefined) return { ok: false, problems };

  const extras: Record<string, unknown> = checkpoint === undefined ? {} : { checkpoint };
  const tasks: TaskDraft[] = trials.map((params, i) => ({
    taskId: trialTaskId(i),
    payload: { module, params, inputs },
    extras,
  }));
  return { ok: true, tasks };
}

function readModule(p: Parameters, problems: string[]): string | undefined {
  const value = given(p, "module");
  if (value === undefined) return DEFAULT_MODULE;
  if (typeof value !== "string" || !ALLOWED_TASK_MODULES.includes(value)) {
    problems.push(`'module' must be one of ${ALLOWED_TASK_MODULES.join(", ")}; got ${describe(value)}`);
    return undefined;
  }
  return value;
}

function readTrials(p: Parameters, problems: string[]): Record<string, unknown>[] | undefined {
  const trials = given(p, "trials");
  const grid = given(p, "grid");
  if (trials !== undefined && grid !== undefined) {
    // The reference silently prefers a non-empty `trials`; one of the two
    // would be ignored without a word, so neither is guessed at here.
    problems.push("give either 'trials' or 'grid', not both");
    return undefined;
  }
  if (trials !== undefined) return readTaskObjects(trials, "trials", "or give a grid", problems);
  if (grid !== undefined) return readGrid(grid, problems);
  problems.push("hyperparameter_search needs 'trials' (a list of objects) or 'grid' (an object of lists)");
  return undefined;
}

/** The cartesian product over the grid's keys in sorted order, the last key varying fastest. */
function readGrid(value: unknown, problems: string[]): Record<string, unknown>[] | undefined {
  if (!isPlainObject(value)) {
    problems.push(`'grid' must be an object of lists, got ${describe(value)}`);
    return undefined;
  }
  const keys = Object.keys(value).sort();
  if (keys.length === 0) {
    problems.push("'grid' must name at least one parameter");
    return undefined;
  }
  const axes: unknown[][] = [];
  for (const key of keys) {
    const axis = value[key];
    if (!Array.isArray(axis) || axis.length === 0) {
      problems.push(`'grid.${shorten(key)}' must be a non-empty list of values, got ${describe(axis)}`);
    } else axes.push(axis);
  }
  if (axes.length < keys.length) return undefined;

  // Count before building: ten keys of ten values is 10^10 trials.
  const count = axes.reduce((product, axis) => product * axis.length, 1);
  if (count > MAX_TASKS_PER_JOB) {
    problems.push(tooManyTasks(count));
    return undefined;
  }
  // Every trial repeats every key: a few trial axes beside a hundred
  // thousand one-value axes is 10^9 cells. The JSON of each trial is at
  // least its quoted keys, so refuse what the stamp would refuse anyway.
  const keyBytes = keys.reduce((sum, key) => sum + key.length + 4, 0);
  if (count * keyBytes > MAX_JOB_PAYLOAD_BYTES) {
    problems.push(`the job's task payloads exceed ${MAX_JOB_PAYLOAD_BYTES} bytes of JSON in total`);
    return undefined;
  }
  let trials: Record<string, unknown>[] = [{}];
  keys.forEach((key, k) => {
    const axis = axes[k] ?? [];
    trials = trials.flatMap((trial) => axis.map((choice) => ({ ...trial, [key]: choice })));
  });
  return trials;
}
