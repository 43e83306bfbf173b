// Shared builders for the recipe tests: JobSpecs go through JobSpecSchema so
// every default applies exactly as it does for a submitted job.

import { expect } from "vitest";
import { type JobSpec, JobSpecSchema } from "../../src/protocol/jobs";
import type { TaskSpec } from "../../src/protocol/tasks";
import type { Expansion } from "../../src/recipes";

export const JOB_ID = "0123456789ab";
export const IMAGE = { repository: "ghcr.io/zolli-labs/flashml-python-slim", tag: "2026.08.1" };
export const IMAGE_REF = "ghcr.io/zolli-labs/flashml-python-slim:2026.08.1";

export const STRICT = { allowUnsandboxedArgv: false } as const;
export const TRUSTED_FLEET = { allowUnsandboxedArgv: true } as const;

/** A leases JobSpec for `type` with `parameters`; `spec` overrides other blocks. */
export function jobSpec(
  type: string,
  parameters: Record<string, unknown>,
  spec: Record<string, unknown> = {},
): JobSpec {
  return JobSpecSchema.parse({
    metadata: { name: "recipe-test" },
    spec: {
      execution: { backend: "leases" },
      image: IMAGE,
      workload: { type, parameters },
      ...spec,
    },
  });
}

/** A command JobSpec, sandboxed unless `spec` says otherwise. */
export function commandSpec(parameters: Record<string, unknown>, spec: Record<string, unknown> = {}): JobSpec {
  return jobSpec("command", parameters, { isolation: { tier: "sandboxed" }, ...spec });
}

/** The tasks of a successful expansion; fails the test with the problems otherwise. */
export function tasksOf(expansion: Expansion): TaskSpec[] {
  if (!expansion.ok) expect.fail(`expected tasks, got problems:\n${expansion.problems.join("\n")}`);
  return expansion.tasks;
}

/** The problems of a refused expansion; fails the test if it expanded. */
export function problemsOf(expansion: Expansion): string[] {
  if (expansion.ok) expect.fail(`expected problems, got ${expansion.tasks.length} tasks`);
  return expansion.problems;
}

/** The payload of the expansion's first task. */
export function firstPayload(expansion: Expansion): Record<string, unknown> {
  const [first] = tasksOf(expansion);
  if (first === undefined) expect.fail("expected at least one task");
  return first.payload;
}
