// Job expansion: a JobSpec → its tasks, or every problem found, listed
// together (docs/protocol.md §6). Dispatches on workload.type to a recipe, then stamps
// the fields every task shares and enforces the per-job limits in one place.
// Pure: no I/O, no clock, no throw for anything a submitter can send.

import type { JobSpec } from "../protocol/jobs";
import type { TaskSpec } from "../protocol/tasks";
import { gpuLabelFields } from "../rules/gpu";
import { commandRecipe } from "./command";
import { federatedAveragingRecipe } from "./federated_averaging";
import { hyperparameterSearchRecipe } from "./hyperparameter_search";
import { shorten } from "./parameters";
import { type ExpandOptions, MAX_TASKS_PER_JOB, type Recipe, tooManyTasks } from "./recipe";
import { shardedKmeansRecipe } from "./sharded_kmeans";
import { readLeaseSeconds, stampTasks } from "./stamp";

export { ALLOWED_TASK_MODULES } from "./hyperparameter_search";
export { type ExpandOptions, MAX_TASKS_PER_JOB } from "./recipe";
export { MAX_JOB_PAYLOAD_BYTES, MAX_TASK_PAYLOAD_BYTES } from "./stamp";

/** At most this many problems are listed; the rest are counted. */
export const MAX_LISTED_PROBLEMS = 50;

const RECIPES: ReadonlyMap<string, Recipe> = new Map([
  ["command", commandRecipe],
  ["hyperparameter_search", hyperparameterSearchRecipe],
  ["sharded_kmeans", shardedKmeansRecipe],
  ["federated_averaging", federatedAveragingRecipe],
]);

/** The workload types a job may name. */
export const WORKLOAD_TYPES: readonly string[] = [...RECIPES.keys()];

export type Expansion = { ok: true; tasks: TaskSpec[] } | { ok: false; problems: string[] };

/**
 * Expand a job into its tasks. Either every task, each stamped with
 * output_prefix, task_id, image, isolation, (for a team pool) pool and
 * (for a GPU job) gpus with the kind of GPU its labels ask for, its
 * commit_key, max_attempts and lease_seconds — or every problem found, for
 * one 422. Never both, never a partial job.
 */
export function expandJob(spec: JobSpec, jobId: string, options: ExpandOptions): Expansion {
  const type = spec.spec.workload.type;
  const recipe = RECIPES.get(type);
  if (recipe === undefined) {
    return {
      ok: false,
      problems: [`unknown workload type ${JSON.stringify(shorten(type))}; known types: ${WORKLOAD_TYPES.join(", ")}`],
    };
  }
  const problems: string[] = [];
  const lease = readLeaseSeconds(spec.spec.workload.parameters, recipe.defaultLeaseSeconds);
  if (!lease.ok) problems.push(lease.problem);
  const gpuKind = gpuLabelFields(spec.metadata.labels, spec.spec.resources.gpuPerTask);
  if (!gpuKind.ok) problems.push(...gpuKind.problems);
  const drafted = recipe.draft(spec, options);
  if (!drafted.ok) problems.push(...drafted.problems);
  else if (drafted.tasks.length > MAX_TASKS_PER_JOB) problems.push(tooManyTasks(drafted.tasks.length));
  if (problems.length > 0 || !drafted.ok || !lease.ok) return refuse(problems);

  const stamped = stampTasks(spec, jobId, drafted.tasks, lease.seconds, options.maxWorkerLosses);
  return stamped.ok ? stamped : refuse(stamped.problems);
}

function refuse(problems: string[]): Expansion {
  if (problems.length <= MAX_LISTED_PROBLEMS) return { ok: false, problems };
  const rest = problems.length - MAX_LISTED_PROBLEMS;
  return { ok: false, problems: [...problems.slice(0, MAX_LISTED_PROBLEMS), `… and ${rest} more problems`] };
}
