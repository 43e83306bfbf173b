// What a recipe is: a pure function from a JobSpec to task drafts, or to
// every problem it found. A recipe never stamps the fields every task shares
// (output_prefix, task_id, image, isolation, pool, commit_key, attempts,
// lease) — `expandJob` does that in one place, so no recipe can forget one.
// Never any I/O here, and never a throw for bad input: a wrong parameter is a
// problem string, and the submitter gets all of them at once.

import type { JobSpec } from "../protocol/jobs";
import { describe, isPlainObject } from "./parameters";

/** A job may expand to at most this many tasks (docs/protocol.md §6). */
export const MAX_TASKS_PER_JOB = 10_000;

export interface ExpandOptions {
  /** The coordinator's FLASHML_ALLOW_UNSANDBOXED_ARGV=1 opt-in, never the submitter's. */
  readonly allowUnsandboxedArgv: boolean;
  /** The coordinator's FLASHML_MAX_WORKER_LOSSES (docs/protocol.md §13); DEFAULT_MAX_WORKER_LOSSES when absent. */
  readonly maxWorkerLosses?: number;
}

/** One task as a recipe produces it, before the shared stamp. */
export interface TaskDraft {
  readonly taskId: string;
  /** Workload keys, written before the stamped ones (argv/env/inputs or module/params/inputs). */
  readonly payload: Record<string, unknown>;
  /** Keys present only when given (checkpoint, unpack_inputs, …), written after the stamped ones. */
  readonly extras: Record<string, unknown>;
}

export type Drafted = { ok: true; tasks: TaskDraft[] } | { ok: false; problems: string[] };

export interface Recipe {
  /** Lease window when the workload sets no `lease_seconds`. */
  readonly defaultLeaseSeconds: number;
  draft(spec: JobSpec, options: ExpandOptions): Drafted;
}

/** The refusal for a job that would expand past `MAX_TASKS_PER_JOB`. */
export function tooManyTasks(count: number): string {
  return `job would expand to ${count} tasks, more than the limit of ${MAX_TASKS_PER_JOB} tasks per job`;
}

/**
 * A parameter listing one object per task (`task_params`, `trials`): a
 * non-empty list of objects, at most `MAX_TASKS_PER_JOB` long. Anything else
 * adds its problems and gives undefined; `whenEmpty` says what to do instead.
 */
export function readTaskObjects(
  value: unknown,
  name: string,
  whenEmpty: string,
  problems: string[],
): Record<string, unknown>[] | undefined {
  if (!Array.isArray(value)) {
    problems.push(`'${name}' must be a list of objects, got ${describe(value)}`);
    return undefined;
  }
  if (value.length === 0) {
    problems.push(`'${name}' must list at least one object (${whenEmpty})`);
    return undefined;
  }
  if (value.length > MAX_TASKS_PER_JOB) {
    problems.push(tooManyTasks(value.length));
    return undefined;
  }
  const before = problems.length;
  value.forEach((item, i) => {
    if (!isPlainObject(item)) problems.push(`'${name}[${i}]' must be an object, got ${describe(item)}`);
  });
  return problems.length === before ? (value as Record<string, unknown>[]) : undefined;
}
