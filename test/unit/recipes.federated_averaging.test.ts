// The federated_averaging recipe through expandJob: one task per shard of
// one round, every worker param required and typed.

import { describe, expect, it } from "vitest";
import { expandJob } from "../../src/recipes";
import { IMAGE_REF, JOB_ID, jobSpec, problemsOf, STRICT, tasksOf } from "./recipes.fixtures";

const WORKER = {
  local_steps: 20,
  lr: 0.05,
  batch_size: 32,
  seed: 7,
  in_dim: 10,
  hidden: 16,
  out_dim: 2,
  dataset_size: 600,
};
const fedavg = (parameters: Record<string, unknown>, spec: Record<string, unknown> = {}) =>
  jobSpec("federated_averaging", parameters, spec);

describe("federated_averaging expansion", () => {
  it("expands one fedavg_worker task per shard with every shared field stamped", () => {
    const spec = fedavg({ ...WORKER, num_shards: 3, round: 2, weights: "artifact://fedavg/round-2.json" });
    const tasks = tasksOf(expandJob(spec, JOB_ID, STRICT));
    expect(tasks.map((t) => t.task_id)).toEqual(["shard-000", "shard-001", "shard-002"]);
    expect(tasks[2]).toEqual({
      schema_version: "v1alpha1",
      task_id: "shard-002",
      job_id: JOB_ID,
      commit_key: `jobs/${JOB_ID}/shard-002/metrics.json`,
      max_attempts: 4,
      lease_seconds: 120,
      max_worker_losses: 10,
      payload: {
        module: "flashml_workloads.fedavg_worker",
        params: { ...WORKER, round: 2, shard: 2, num_shards: 3 },
        inputs: { weights: "artifact://fedavg/round-2.json" },
        output_prefix: `jobs/${JOB_ID}/shard-002/`,
        task_id: "shard-002",
        image: IMAGE_REF,
        isolation: { tier: "standard", allowFallback: false },
      },
    });
  });

  it.each([
    ["not given", {}],
    ["null", { weights: null }],
  ])("starts round 0 from the seed with empty inputs when weights is %s", (_, extra) => {
    const [task] = tasksOf(expandJob(fedavg({ ...WORKER, num_shards: 1, ...extra }), JOB_ID, STRICT));
    expect(task?.payload.inputs).toEqual({});
    expect(task?.payload.params).toMatchObject({ round: 0, shard: 0, num_shards: 1 });
  });

  it.each([1, 999])("accepts %i shards", (numShards) => {
    const tasks = tasksOf(expandJob(fedavg({ ...WORKER, dataset_size: 1000, num_shards: numShards }), JOB_ID, STRICT));
    expect(tasks).toHaveLength(numShards);
    expect(tasks.at(-1)?.task_id).toBe(`shard-${String(numShards - 1).padStart(3, "0")}`);
  });

  it("forwards only the worker's params, not other workload parameters", () => {
    const spec = fedavg({ ...WORKER, num_shards: 1, lease_seconds: 300, note: "ignored" });
    const [task] = tasksOf(expandJob(spec, JOB_ID, STRICT));
    expect(Object.keys(task?.payload.params ?? {})).toEqual([...Object.keys(WORKER), "round", "shard", "num_shards"]);
    expect(task?.lease_seconds).toBe(300);
  });
});

describe("federated_averaging refusals", () => {
  const { lr: _lr, seed: _seed, ...withoutLrAndSeed } = WORKER;

  it("lists every missing worker param in one problem", () => {
    expect(problemsOf(expandJob(fedavg({ num_shards: 2 }), JOB_ID, STRICT))).toEqual([
      "federated_averaging is missing required parameters: local_steps, lr, batch_size, seed, in_dim, hidden, out_dim, dataset_size",
    ]);
  });

  it("names only the worker params that are missing", () => {
    expect(problemsOf(expandJob(fedavg({ ...withoutLrAndSeed, num_shards: 2 }), JOB_ID, STRICT))).toEqual([
      "federated_averaging is missing required parameters: lr, seed",
    ]);
  });

  it.each([
    ["missing num_shards", { ...WORKER }, "'num_shards' is required: an integer from 1 to 999"],
    ["0 shards", { ...WORKER, num_shards: 0 }, "'num_shards' must be an integer from 1 to 999, got the number 0"],
    [
      "1000 shards",
      { ...WORKER, dataset_size: 5000, num_shards: 1000 },
      "'num_shards' must be an integer from 1 to 999, got the number 1000",
    ],
    [
      "a string num_shards",
      { ...WORKER, num_shards: "3" },
      `'num_shards' must be an integer from 1 to 999, got the string "3"`,
    ],
    [
      "a fractional num_shards",
      { ...WORKER, num_shards: 2.5 },
      "'num_shards' must be an integer from 1 to 999, got the number 2.5",
    ],
    [
      "a boolean num_shards",
      { ...WORKER, num_shards: true },
      "'num_shards' must be an integer from 1 to 999, got the boolean true",
    ],
    ["a string lr", { ...WORKER, num_shards: 2, lr: "0.1" }, `'lr' must be a finite number > 0, got the string "0.1"`],
    ["a zero lr", { ...WORKER, num_shards: 2, lr: 0 }, "'lr' must be a finite number > 0, got the number 0"],
    [
      "a zero batch_size",
      { ...WORKER, num_shards: 2, batch_size: 0 },
      "'batch_size' must be an integer >= 1, got the number 0",
    ],
    [
      "a fractional in_dim",
      { ...WORKER, num_shards: 2, in_dim: 1.5 },
      "'in_dim' must be an integer >= 1, got the number 1.5",
    ],
    [
      "a boolean hidden",
      { ...WORKER, num_shards: 2, hidden: true },
      "'hidden' must be an integer >= 1, got the boolean true",
    ],
    ["a negative seed", { ...WORKER, num_shards: 2, seed: -1 }, "'seed' must be an integer >= 0, got the number -1"],
    ["a negative round", { ...WORKER, num_shards: 2, round: -1 }, "'round' must be an integer >= 0, got the number -1"],
    [
      "more shards than samples",
      { ...WORKER, num_shards: 8, dataset_size: 5 },
      "'dataset_size' (5) must be at least 'num_shards' (8): every shard needs a sample",
    ],
    [
      "weights that are not an artifact URI",
      { ...WORKER, num_shards: 2, weights: "round-1.json" },
      `'weights' must be an artifact:// URI, got the string "round-1.json"`,
    ],
  ])("refuses %s", (_, parameters, problem) => {
    expect(problemsOf(expandJob(fedavg(parameters), JOB_ID, STRICT))).toEqual([problem]);
  });

  it("reports a mistyped dataset_size once, not again against num_shards", () => {
    expect(problemsOf(expandJob(fedavg({ ...WORKER, num_shards: 2, dataset_size: 0 }), JOB_ID, STRICT))).toEqual([
      "'dataset_size' must be an integer >= 1, got the number 0",
    ]);
  });

  it("lists every problem together", () => {
    const spec = fedavg({
      ...withoutLrAndSeed,
      num_shards: 0,
      hidden: "16",
      round: 1.5,
      weights: 3,
      lease_seconds: true,
    });
    expect(problemsOf(expandJob(spec, JOB_ID, STRICT))).toEqual([
      "'lease_seconds' must be a finite number > 0, got the boolean true",
      "'num_shards' must be an integer from 1 to 999, got the number 0",
      "federated_averaging is missing required parameters: lr, seed",
      `'hidden' must be an integer >= 1, got the string "16"`,
      "'round' must be an integer >= 0, got the number 1.5",
      "'weights' must be an artifact:// URI, got the number 3",
    ]);
  });
});
