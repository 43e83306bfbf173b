// The sharded_kmeans recipe through expandJob: one task per shard of one
// iteration, and its refusals.

import { describe, expect, it } from "vitest";
import { expandJob } from "../../src/recipes";
import { IMAGE_REF, JOB_ID, jobSpec, problemsOf, STRICT, tasksOf } from "./recipes.fixtures";

const kmeans = (parameters: Record<string, unknown>, spec: Record<string, unknown> = {}) =>
  jobSpec("sharded_kmeans", parameters, spec);
const SHARDS = ["artifact://kmeans/shard-0.csv", "artifact://kmeans/shard-1.csv"];
const CENTROIDS = [
  [0, 0],
  [5, 5],
];

describe("sharded_kmeans expansion", () => {
  it("expands one kmeans_shard task per shard with every shared field stamped", () => {
    const spec = kmeans({ shards: SHARDS, centroids: CENTROIDS, iteration: 3 }, { placement: { pool: "lab" } });
    const tasks = tasksOf(expandJob(spec, JOB_ID, STRICT));
    expect(tasks.map((t) => t.task_id)).toEqual(["it03-shard-000", "it03-shard-001"]);
    expect(tasks[1]).toEqual({
      schema_version: "v1alpha1",
      task_id: "it03-shard-001",
      job_id: JOB_ID,
      commit_key: `jobs/${JOB_ID}/it03-shard-001/metrics.json`,
      max_attempts: 4,
      lease_seconds: 60,
      max_worker_losses: 10,
      payload: {
        module: "flashml_workloads.kmeans_shard",
        params: { centroids: CENTROIDS },
        inputs: { shard: "artifact://kmeans/shard-1.csv" },
        output_prefix: `jobs/${JOB_ID}/it03-shard-001/`,
        task_id: "it03-shard-001",
        image: IMAGE_REF,
        isolation: { tier: "standard", allowFallback: false },
        pool: "lab",
      },
    });
  });

  it.each([
    [undefined, "it00-shard-000"],
    [0, "it00-shard-000"],
    [7, "it07-shard-000"],
    [42, "it42-shard-000"],
    [100, "it100-shard-000"],
  ])("names iteration %j tasks like %s", (iteration, taskId) => {
    const spec = kmeans({ shards: SHARDS.slice(0, 1), centroids: CENTROIDS, iteration });
    expect(tasksOf(expandJob(spec, JOB_ID, STRICT))[0]?.task_id).toBe(taskId);
  });
});

describe("sharded_kmeans refusals", () => {
  it.each([
    ["missing shards", { centroids: CENTROIDS }, "'shards' is required: a non-empty list of artifact:// URIs"],
    [
      "an empty shard list",
      { shards: [], centroids: CENTROIDS },
      "'shards' must be a non-empty list of artifact:// URIs, got a list",
    ],
    [
      "a bare shard string",
      { shards: "artifact://s", centroids: CENTROIDS },
      `'shards' must be a non-empty list of artifact:// URIs, got the string "artifact://s"`,
    ],
    [
      "a shard that is not an artifact URI",
      { shards: ["artifact://a", "https://x/b"], centroids: CENTROIDS },
      `'shards[1]' must be an artifact:// URI, got the string "https://x/b"`,
    ],
    ["missing centroids", { shards: SHARDS }, "'centroids' is required: a non-empty list"],
    ["empty centroids", { shards: SHARDS, centroids: [] }, "'centroids' must be a non-empty list, got a list"],
    [
      "centroids that are not a list",
      { shards: SHARDS, centroids: "k=3" },
      `'centroids' must be a non-empty list, got the string "k=3"`,
    ],
    [
      "a negative iteration",
      { shards: SHARDS, centroids: CENTROIDS, iteration: -1 },
      "'iteration' must be an integer >= 0, got the number -1",
    ],
    [
      "a fractional iteration",
      { shards: SHARDS, centroids: CENTROIDS, iteration: 1.5 },
      "'iteration' must be an integer >= 0, got the number 1.5",
    ],
    [
      "a string iteration",
      { shards: SHARDS, centroids: CENTROIDS, iteration: "2" },
      `'iteration' must be an integer >= 0, got the string "2"`,
    ],
    [
      "a boolean iteration",
      { shards: SHARDS, centroids: CENTROIDS, iteration: true },
      "'iteration' must be an integer >= 0, got the boolean true",
    ],
  ])("refuses %s", (_, parameters, problem) => {
    expect(problemsOf(expandJob(kmeans(parameters), JOB_ID, STRICT))).toEqual([problem]);
  });

  it("lists every problem together", () => {
    const spec = kmeans({ shards: ["s3://a", "artifact://b", 7], centroids: {}, iteration: "1" });
    expect(problemsOf(expandJob(spec, JOB_ID, STRICT))).toEqual([
      `'shards[0]' must be an artifact:// URI, got the string "s3://a"`,
      "'shards[2]' must be an artifact:// URI, got the number 7",
      "'centroids' must be a non-empty list, got an object",
      `'iteration' must be an integer >= 0, got the string "1"`,
    ]);
  });
});
