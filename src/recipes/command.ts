// The command recipe: a JobSpec with workload.type "command" → one argv task
// per task_params entry (docs/protocol.md §6). Argv runs the submitter's code on someone
// else's machine, so the isolation rules here are the security control: the
// tier must be "sandboxed" unless the coordinator (never the submitter) opts
// in, and the allowFallback waiver is confined to team pools.
//
// Every forward the placement gate reads — local_inputs, gpus, pool — must
// survive this hop. Dropping one does not fail closed: the gate sees a task
// requiring nothing and places it anywhere. Absent stays absent (never [] or
// 0), so the no-requirement path keeps exercising the key-missing branch.

import type { JobSpec } from "../protocol/jobs";
import { describe, given, isPlainObject, type Parameters, readInputs, readStringList, shorten } from "./parameters";
import { fillTemplate, parseTemplate, type Template } from "./placeholders";
import { type Drafted, type ExpandOptions, type Recipe, readTaskObjects, type TaskDraft } from "./recipe";
import { MAX_JOB_PAYLOAD_BYTES, MAX_TASK_PAYLOAD_BYTES, teamPool } from "./stamp";

/** A string costs its quotes and a separator in JSON beyond its text. */
const JSON_STRING_OVERHEAD = 3;

export const commandRecipe: Recipe = { defaultLeaseSeconds: 60, draft: draftCommandTasks };

/** Task ids task-000, task-001, … (wider past 999, as Python's {:03d}). */
export function commandTaskId(index: number): string {
  return `task-${String(index).padStart(3, "0")}`;
}

/**
 * Expand a command job: argv from `command` with each task's `{name}`
 * placeholders filled, plus every problem found in the parameters and the
 * isolation settings, all at once.
 */
export function draftCommandTasks(spec: JobSpec, options: ExpandOptions): Drafted {
  const p = spec.spec.workload.parameters;
  const problems: string[] = isolationProblems(spec, options);

  const command = readCommand(p, problems);
  const taskParams = readTaskParams(p, problems);
  const env = readEnv(p, problems);
  const inputs = readInputs(p, problems);
  const unpackInputs = readUnpackInputs(p, inputs, problems);
  const localInputsValue = given(p, "local_inputs");
  const localInputs =
    localInputsValue === undefined ? undefined : readStringList(localInputsValue, "local_inputs", problems);
  const checkpoint = given(p, "checkpoint");

  const tasksLabel =
    taskParams === undefined
      ? "every task"
      : taskParams.sets.length === 1
        ? "task 0"
        : `tasks 0–${taskParams.sets.length - 1}`;
  const argvTemplates = command?.map((token, k) => parseOrReport(token, `${tasksLabel}: command token ${k}`, problems));
  const envTemplates =
    env === undefined
      ? undefined
      : Object.entries(env).map(
          ([name, value]) => [name, parseOrReport(value, `${tasksLabel}: env '${shorten(name)}'`, problems)] as const,
        );

  const extras: Record<string, unknown> = {};
  if (checkpoint !== undefined) extras.checkpoint = checkpoint;
  if (unpackInputs !== undefined) extras.unpack_inputs = unpackInputs;
  if (localInputs !== undefined) extras.local_inputs = localInputs;

  const tasks: TaskDraft[] = [];
  if (taskParams !== undefined && argvTemplates !== undefined && envTemplates !== undefined) {
    // Filling multiplies the spec by the task count, and a token by its
    // placeholders: count what is built (text plus JSON quoting per string)
    // and stop at the payload limits, before anything larger is built.
    let jobChars = 0;
    for (const [i, params] of taskParams.sets.entries()) {
      const source = taskParams.given ? `task_params[${i}]` : undefined;
      let taskChars = 0;
      let overBudget = false;
      const fill = (template: Template | undefined, where: string): string => {
        if (template === undefined || overBudget) return "";
        const filled = fillTemplate(template, params, { where, source });
        if (!filled.ok) {
          problems.push(...filled.problems);
          return "";
        }
        taskChars += filled.text.length + JSON_STRING_OVERHEAD;
        if (taskChars > MAX_TASK_PAYLOAD_BYTES || jobChars + taskChars > MAX_JOB_PAYLOAD_BYTES) overBudget = true;
        return filled.text;
      };
      const argv = argvTemplates.map((template, k) => fill(template, `task ${i}: command token ${k}`));
      const taskEnv: Record<string, string> = {};
      for (const [name, template] of envTemplates) taskEnv[name] = fill(template, `task ${i}: env '${shorten(name)}'`);
      if (taskChars > MAX_TASK_PAYLOAD_BYTES) {
        problems.push(`task ${i}: argv and env are longer than ${MAX_TASK_PAYLOAD_BYTES} characters once filled`);
      }
      jobChars += taskChars;
      if (jobChars > MAX_JOB_PAYLOAD_BYTES) {
        problems.push(
          `the job's argv and env are longer than ${MAX_JOB_PAYLOAD_BYTES} characters in total once filled`,
        );
        break;
      }
      tasks.push({ taskId: commandTaskId(i), payload: { argv, env: taskEnv, inputs }, extras });
    }
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, tasks };
}

function isolationProblems(spec: JobSpec, options: ExpandOptions): string[] {
  const { tier, allowFallback } = spec.spec.isolation;
  const problems: string[] = [];
  if (tier !== "sandboxed" && !options.allowUnsandboxedArgv) {
    problems.push(
      `command jobs need isolation.tier "sandboxed", got ${JSON.stringify(tier)} ` +
        "(the coordinator allows other tiers only with FLASHML_ALLOW_UNSANDBOXED_ARGV=1)",
    );
  }
  if (allowFallback && teamPool(spec) === undefined) {
    // The waiver lets argv reach an unsandboxed host; only a team pool's
    // opted-in hosts may be that host (gate 1's trusted-pool path).
    problems.push(
      "command jobs may set isolation.allowFallback only when placement.pool names a team pool " +
        '(got "any"): unsandboxed argv is confined to team pools',
    );
  }
  return problems;
}

function readCommand(p: Parameters, problems: string[]): string[] | undefined {
  const value = given(p, "command");
  if (value === undefined) {
    problems.push("'command' is required: a non-empty list of strings");
    return undefined;
  }
  const command = readStringList(value, "command", problems);
  if (command !== undefined && command.length === 0) {
    problems.push("'command' must be a non-empty list of strings, got an empty list");
    return undefined;
  }
  return command;
}

interface TaskParams {
  readonly sets: readonly Readonly<Record<string, unknown>>[];
  /** False when the submitter gave none and the one default task has {}. */
  readonly given: boolean;
}

function readTaskParams(p: Parameters, problems: string[]): TaskParams | undefined {
  const value = given(p, "task_params");
  if (value === undefined) return { sets: [{}], given: false };
  // The reference quietly runs one task for an empty list; an empty sweep is
  // far more likely a generator bug than a request for one unparameterised run.
  const sets = readTaskObjects(value, "task_params", "omit it for a single task", problems);
  return sets === undefined ? undefined : { sets, given: true };
}

function readEnv(p: Parameters, problems: string[]): Record<string, string> | undefined {
  const value = given(p, "env");
  if (value === undefined) return {};
  if (!isPlainObject(value)) {
    problems.push(`'env' must be an object of strings, got ${describe(value)}`);
    return undefined;
  }
  const before = problems.length;
  for (const [name, item] of Object.entries(value)) {
    if (typeof item !== "string") problems.push(`'env.${shorten(name)}' must be a string, got ${describe(item)}`);
  }
  return problems.length === before ? (value as Record<string, string>) : undefined;
}

/**
 * `unpack_inputs` decides which downloaded bytes get extracted on a
 * volunteer's machine, so it is checked here — distinct names, each a
 * declared input — rather than failing on the node after a lease is spent.
 */
function readUnpackInputs(
  p: Parameters,
  inputs: Record<string, string> | undefined,
  problems: string[],
): string[] | undefined {
  const value = given(p, "unpack_inputs");
  if (value === undefined) return undefined;
  const names = readStringList(value, "unpack_inputs", problems);
  if (names === undefined) return undefined;
  const before = problems.length;
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (const name of names) (seen.has(name) ? repeated : seen).add(name);
  const duplicates = [...repeated].sort();
  if (duplicates.length > 0) {
    problems.push(`'unpack_inputs' names ${quoteAll(duplicates)} more than once (an input is unpacked at most once)`);
  }
  if (inputs !== undefined) {
    const undeclared = [...new Set(names.filter((name) => !Object.hasOwn(inputs, name)))].sort();
    if (undeclared.length > 0) {
      problems.push(`'unpack_inputs' names ${quoteAll(undeclared)}, not declared in 'inputs'`);
    }
  }
  return problems.length === before ? names : undefined;
}

function parseOrReport(text: string, where: string, problems: string[]): Template | undefined {
  const parsed = parseTemplate(text);
  if (parsed.ok) return parsed.template;
  problems.push(...parsed.problems.map((problem) => `${where} ${problem}`));
  return undefined;
}

function quoteAll(names: readonly string[]): string {
  const shown = names.slice(0, 10).map((name) => JSON.stringify(shorten(name)));
  if (names.length > shown.length) shown.push(`and ${names.length - shown.length} more`);
  return shown.join(", ");
}
