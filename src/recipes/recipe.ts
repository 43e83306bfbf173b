// What a recipe is: a pure function from a JobSpec to task drafts, or to
// every problem it found. A recipe never stamps the fields every task shares
// (output_prefix, task_id, image, isolation, pool, commit_key, attempts,
// lease) — `expandJob` does that in one place, so no recipe can forget one.
// Never any I/O here, and never a throw for bad input: a wrong parameter is a
// problem string, and the submitter gets all of them at once.

import type { JobSpec } from "../protocol/jobs";

/** A job may expand to at most this many tasks (SPEC §6). */
export const MAX_TASKS_PER_JOB = 10_000;

export interface ExpandOptions {
  /** The coordinator's FLASHML_ALLOW_UNSANDBOXED_ARGV=1 opt-in, never the submitter's. */
  readonly allowUnsandboxedArgv: boolean;
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
