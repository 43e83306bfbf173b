// The hyperparameter_search recipe through expandJob: trials, grids, the
// module allowlist and the forwards of docs/protocol.md §6.

import { describe, expect, it } from "vitest";
import { ALLOWED_TASK_MODULES, expandJob } from "../../src/recipes";
import { firstPayload, IMAGE_REF, JOB_ID, jobSpec, problemsOf, STRICT, tasksOf } from "./recipes.fixtures";

const search = (parameters: Record<string, unknown>, spec: Record<string, unknown> = {}) =>
  jobSpec("hyperparameter_search", parameters, spec);

describe("hyperparameter_search expansion", () => {
  it("expands one module task per trial with every shared field stamped", () => {
    const spec = search(
      {
        trials: [
          { C: 0.1, kernel: "rbf" },
          { C: 1.0, kernel: "linear" },
        ],
        module: "flashml_workloads.sgd_trainer",
        inputs: { train: "artifact://datasets/train.csv" },
        checkpoint: { every_steps: 100 },
        lease_seconds: 45,
      },
      { isolation: { tier: "sandboxed", allowFallback: true }, retryPolicy: { maxTaskAttempts: 2 } },
    );
    const tasks = tasksOf(expandJob(spec, JOB_ID, STRICT));
    expect(tasks.map((t) => t.task_id)).toEqual(["trial-000", "trial-001"]);
    expect(tasks[0]).toEqual({
      schema_version: "v1alpha1",
      task_id: "trial-000",
      job_id: JOB_ID,
      commit_key: `jobs/${JOB_ID}/trial-000/metrics.json`,
      max_attempts: 2,
      lease_seconds: 45,
      max_worker_losses: 10,
      payload: {
        module: "flashml_workloads.sgd_trainer",
        params: { C: 0.1, kernel: "rbf" },
        inputs: { train: "artifact://datasets/train.csv" },
        output_prefix: `jobs/${JOB_ID}/trial-000/`,
        task_id: "trial-000",
        image: IMAGE_REF,
        isolation: { tier: "sandboxed", allowFallback: true },
        checkpoint: { every_steps: 100 },
      },
    });
  });

  it("expands a grid as the cartesian product over sorted keys, the last key varying fastest", () => {
    const spec = search({ grid: { max_depth: [2, 4], criterion: ["gini", "entropy"], bootstrap: [true] } });
    expect(tasksOf(expandJob(spec, JOB_ID, STRICT)).map((t) => t.payload.params)).toEqual([
      { bootstrap: true, criterion: "gini", max_depth: 2 },
      { bootstrap: true, criterion: "gini", max_depth: 4 },
      { bootstrap: true, criterion: "entropy", max_depth: 2 },
      { bootstrap: true, criterion: "entropy", max_depth: 4 },
    ]);
  });

  it("defaults the module to sklearn_trial and inputs to {}", () => {
    const payload = firstPayload(expandJob(search({ trials: [{}] }), JOB_ID, STRICT));
    expect(payload.module).toBe("flashml_workloads.sklearn_trial");
    expect(payload.inputs).toEqual({});
  });

  it.each(ALLOWED_TASK_MODULES)("accepts the allowlisted module %s", (module) => {
    expect(firstPayload(expandJob(search({ trials: [{}], module }), JOB_ID, STRICT)).module).toBe(module);
  });

  it("leaves checkpoint absent when not given", () => {
    expect(firstPayload(expandJob(search({ trials: [{}] }), JOB_ID, STRICT))).not.toHaveProperty("checkpoint");
  });

  it("forwards gpuPerTask as gpus on module jobs too, so a GPU trial never lands on a CPU-only node", () => {
    const spec = search({ trials: [{}] }, { resources: { gpuPerTask: 1 } });
    expect(firstPayload(expandJob(spec, JOB_ID, STRICT)).gpus).toBe(1);
    expect(firstPayload(expandJob(search({ trials: [{}] }), JOB_ID, STRICT))).not.toHaveProperty("gpus");
  });

  it("needs no sandbox: module jobs expand with the default standard tier", () => {
    const payload = firstPayload(expandJob(search({ trials: [{}] }), JOB_ID, STRICT));
    expect(payload.isolation).toEqual({ tier: "standard", allowFallback: false });
  });
});

describe("hyperparameter_search refusals", () => {
  const allowed = ALLOWED_TASK_MODULES.join(", ");
  it.each([
    [
      "neither trials nor grid",
      {},
      "hyperparameter_search needs 'trials' (a list of objects) or 'grid' (an object of lists)",
    ],
    ["both trials and grid", { trials: [{}], grid: { a: [1] } }, "give either 'trials' or 'grid', not both"],
    ["trials that is not a list", { trials: { C: 1 } }, "'trials' must be a list of objects, got an object"],
    ["an empty trials list", { trials: [] }, "'trials' must list at least one object (or give a grid)"],
    ["a trial that is not an object", { trials: [{}, 3] }, "'trials[1]' must be an object, got the number 3"],
    ["a grid that is not an object", { grid: [[1, 2]] }, "'grid' must be an object of lists, got a list"],
    ["an empty grid", { grid: {} }, "'grid' must name at least one parameter"],
    [
      "a grid axis that is not a list",
      { grid: { a: 1 } },
      "'grid.a' must be a non-empty list of values, got the number 1",
    ],
    ["an empty grid axis", { grid: { a: [1], b: [] } }, "'grid.b' must be a non-empty list of values, got a list"],
    [
      "a module off the allowlist",
      { trials: [{}], module: "os" },
      `'module' must be one of ${allowed}; got the string "os"`,
    ],
    [
      "a module that is not a string",
      { trials: [{}], module: ["x"] },
      `'module' must be one of ${allowed}; got a list`,
    ],
    [
      "an input that is not an artifact URI",
      { trials: [{}], inputs: { d: "/etc/passwd" } },
      `input 'd' must be an artifact:// URI, got the string "/etc/passwd"`,
    ],
  ])("refuses %s", (_, parameters, problem) => {
    expect(problemsOf(expandJob(search(parameters), JOB_ID, STRICT))).toEqual([problem]);
  });

  it("lists every problem together", () => {
    const spec = search({ grid: { a: [] }, module: "evil", inputs: { d: 1 }, lease_seconds: -1 });
    expect(problemsOf(expandJob(spec, JOB_ID, STRICT))).toEqual([
      "'lease_seconds' must be a finite number > 0, got the number -1",
      "'grid.a' must be a non-empty list of values, got a list",
      `'module' must be one of ${allowed}; got the string "evil"`,
      "input 'd' must be an artifact:// URI, got the number 1",
    ]);
  });
});
