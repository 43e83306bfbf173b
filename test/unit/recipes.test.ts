// expandJob across every recipe: dispatch, the shared stamp, lease_seconds,
// the per-job limits, and payloads that never alias the spec.

import { describe, expect, it } from "vitest";
import { MIN_LEASE_SECONDS } from "../../src/protocol/limits";
import {
  expandJob,
  MAX_JOB_PAYLOAD_BYTES,
  MAX_LISTED_PROBLEMS,
  MAX_TASKS_PER_JOB,
  WORKLOAD_TYPES,
} from "../../src/recipes";
import { commandSpec, IMAGE_REF, JOB_ID, jobSpec, problemsOf, STRICT, tasksOf } from "./recipes.fixtures";

/** A minimal valid parameter set per recipe, and its default lease. */
const RECIPES = [
  { type: "command", parameters: { command: ["python", "train.py"] }, defaultLease: 60, firstId: "task-000" },
  {
    type: "hyperparameter_search",
    parameters: { trials: [{ C: 1 }] },
    defaultLease: 60,
    firstId: "trial-000",
  },
  {
    type: "sharded_kmeans",
    parameters: { shards: ["artifact://s0"], centroids: [[0, 0]] },
    defaultLease: 60,
    firstId: "it00-shard-000",
  },
  {
    type: "federated_averaging",
    parameters: {
      num_shards: 1,
      local_steps: 5,
      lr: 0.1,
      batch_size: 8,
      seed: 0,
      in_dim: 4,
      hidden: 8,
      out_dim: 2,
      dataset_size: 64,
    },
    defaultLease: 120,
    firstId: "shard-000",
  },
] as const;

/** A spec of this recipe; command jobs are sandboxed so they expand under STRICT. */
function specOf(
  recipe: (typeof RECIPES)[number],
  parameters: Record<string, unknown> = {},
  spec: Record<string, unknown> = {},
) {
  const isolation = recipe.type === "command" ? { isolation: { tier: "sandboxed" } } : {};
  return jobSpec(recipe.type, { ...recipe.parameters, ...parameters }, { ...isolation, ...spec });
}

describe("expandJob dispatch", () => {
  it("knows exactly the four workload types of docs/protocol.md §6", () => {
    expect([...WORKLOAD_TYPES].sort()).toEqual([
      "command",
      "federated_averaging",
      "hyperparameter_search",
      "sharded_kmeans",
    ]);
  });

  it.each(["training", "Command", "constructor", "__proto__", ""])(
    "refuses the unknown workload type %j, naming the known ones",
    (type) => {
      expect(problemsOf(expandJob(jobSpec(type, {}), JOB_ID, STRICT))).toEqual([
        `unknown workload type ${JSON.stringify(type)}; known types: command, hyperparameter_search, sharded_kmeans, federated_averaging`,
      ]);
    },
  );
});

describe("the shared stamp", () => {
  it.each(RECIPES)("stamps every $type task with its output prefix, id, image, isolation and commit key", (recipe) => {
    const spec = specOf(recipe, {}, { retryPolicy: { maxTaskAttempts: 7 } });
    const [task] = tasksOf(expandJob(spec, JOB_ID, STRICT));
    const taskId = recipe.firstId;
    expect(task).toMatchObject({
      schema_version: "v1alpha1",
      task_id: taskId,
      job_id: JOB_ID,
      commit_key: `jobs/${JOB_ID}/${taskId}/metrics.json`,
      max_attempts: 7,
      lease_seconds: recipe.defaultLease,
      payload: {
        output_prefix: `jobs/${JOB_ID}/${taskId}/`,
        task_id: taskId,
        image: IMAGE_REF,
        isolation: { tier: recipe.type === "command" ? "sandboxed" : "standard", allowFallback: false },
      },
    });
  });

  it.each(RECIPES)("stamps pool into a $type task for a team pool and leaves it absent for any", (recipe) => {
    const team = tasksOf(expandJob(specOf(recipe, {}, { placement: { pool: "team-a" } }), JOB_ID, STRICT));
    expect(team[0]?.payload.pool).toBe("team-a");
    const open = tasksOf(expandJob(specOf(recipe), JOB_ID, STRICT));
    expect(open[0]?.payload).not.toHaveProperty("pool");
  });

  it("takes max_attempts from the default retry policy when none is given", () => {
    expect(tasksOf(expandJob(commandSpec({ command: ["x"] }), JOB_ID, STRICT))[0]?.max_attempts).toBe(4);
  });
});

describe("lease_seconds", () => {
  it.each(RECIPES)("defaults to $defaultLease seconds for $type", (recipe) => {
    expect(tasksOf(expandJob(specOf(recipe), JOB_ID, STRICT))[0]?.lease_seconds).toBe(recipe.defaultLease);
  });

  it.each([
    [90, 90],
    [5, 5],
    [5.5, 5.5],
    [3600, 3600],
    [3601, 3600],
    [1e9, 3600],
    [null, 60],
  ])("turns %j into a lease of %s seconds", (given, expected) => {
    const spec = commandSpec({ command: ["x"], lease_seconds: given });
    expect(tasksOf(expandJob(spec, JOB_ID, STRICT)).map((t) => t.lease_seconds)).toEqual([expected]);
  });

  it.each(RECIPES)("clamps a $type lease to 3600 seconds", (recipe) => {
    expect(tasksOf(expandJob(specOf(recipe, { lease_seconds: 86_400 }), JOB_ID, STRICT))[0]?.lease_seconds).toBe(3600);
  });

  it.each([
    [0, "the number 0"],
    [-5, "the number -5"],
    ["60", 'the string "60"'],
    [true, "the boolean true"],
    [false, "the boolean false"],
    [[60], "a list"],
    [{ seconds: 60 }, "an object"],
    [Number.POSITIVE_INFINITY, "the number Infinity"],
    [Number.NaN, "the number NaN"],
  ])("refuses %j", (given, shown) => {
    const spec = commandSpec({ command: ["x"], lease_seconds: given });
    expect(problemsOf(expandJob(spec, JOB_ID, STRICT))).toEqual([
      `'lease_seconds' must be a finite number > 0, got ${shown}`,
    ]);
  });

  it.each(RECIPES)("refuses a zero lease for $type as well", (recipe) => {
    expect(problemsOf(expandJob(specOf(recipe, { lease_seconds: 0 }), JOB_ID, STRICT))).toEqual([
      "'lease_seconds' must be a finite number > 0, got the number 0",
    ]);
  });

  it.each([
    [4.9, "the number 4.9"],
    [1, "the number 1"],
    [0.5, "the number 0.5"],
    [Number.MIN_VALUE, "the number 5e-324"],
  ])("refuses %j: too short to ever be renewed", (given, shown) => {
    const spec = commandSpec({ command: ["x"], lease_seconds: given });
    expect(problemsOf(expandJob(spec, JOB_ID, STRICT))).toEqual([
      `'lease_seconds' must be at least ${MIN_LEASE_SECONDS} seconds (a lease shorter than that cannot be renewed in time), got ${shown}`,
    ]);
  });

  it.each(RECIPES)("holds a $type lease to the same floor", (recipe) => {
    expect(problemsOf(expandJob(specOf(recipe, { lease_seconds: 4.9 }), JOB_ID, STRICT))).toEqual([
      "'lease_seconds' must be at least 5 seconds (a lease shorter than that cannot be renewed in time), got the number 4.9",
    ]);
    expect(tasksOf(expandJob(specOf(recipe, { lease_seconds: 5 }), JOB_ID, STRICT))[0]?.lease_seconds).toBe(5);
  });
});

describe("the per-job task limit", () => {
  const limit = `more than the limit of ${MAX_TASKS_PER_JOB} tasks per job`;
  const many = (n: number) => Array.from({ length: n }, (_, i) => ({ i }));
  const shards = (n: number) => Array.from({ length: n }, (_, i) => `artifact://shards/${i}`);

  it.each([
    ["command task_params", "command", { command: ["x", "{i}"], task_params: many(10_000) }],
    ["hyperparameter trials", "hyperparameter_search", { trials: many(10_000) }],
    ["a 100 × 100 grid", "hyperparameter_search", { grid: { a: many(100), b: many(100) } }],
    ["k-means shards", "sharded_kmeans", { shards: shards(10_000), centroids: [[0]] }],
  ])("allows exactly 10,000 tasks from %s", (_, type, parameters) => {
    const spec = jobSpec(type, parameters, { isolation: { tier: "sandboxed" } });
    const tasks = tasksOf(expandJob(spec, JOB_ID, STRICT));
    expect(tasks).toHaveLength(MAX_TASKS_PER_JOB);
    expect(new Set(tasks.map((t) => t.task_id)).size).toBe(MAX_TASKS_PER_JOB);
  });

  it.each([
    ["command task_params", "command", { command: ["x", "{i}"], task_params: many(10_001) }, 10_001],
    ["hyperparameter trials", "hyperparameter_search", { trials: many(10_001) }, 10_001],
    ["a 100 × 101 grid", "hyperparameter_search", { grid: { a: many(100), b: many(101) } }, 10_100],
    [
      "a grid of 10^10 trials, without building it",
      "hyperparameter_search",
      { grid: Object.fromEntries(many(10).map((_, k) => [`k${k}`, many(10)])) },
      1e10,
    ],
    ["k-means shards", "sharded_kmeans", { shards: shards(10_001), centroids: [[0]] }, 10_001],
  ])("refuses 10,001 or more tasks from %s, naming the limit", (_, type, parameters, count) => {
    const spec = jobSpec(type, parameters, { isolation: { tier: "sandboxed" } });
    expect(problemsOf(expandJob(spec, JOB_ID, STRICT))).toEqual([`job would expand to ${count} tasks, ${limit}`]);
  });
});

describe("payload size limits", () => {
  it("refuses a job whose payloads add up past the per-job byte limit", () => {
    // 10,000 shards each carrying ~16 KB of centroids is ~160 MB of payloads.
    const centroids = [["x".repeat(16_000)]];
    const spec = jobSpec("sharded_kmeans", {
      shards: Array.from({ length: 10_000 }, (_, i) => `artifact://s/${i}`),
      centroids,
    });
    expect(problemsOf(expandJob(spec, JOB_ID, STRICT))).toEqual([
      `the job's task payloads exceed ${MAX_JOB_PAYLOAD_BYTES} bytes of JSON in total`,
    ]);
  });

  it("refuses a command job whose filled argv adds up past the per-job limit before building it all", () => {
    // 100 tasks × ~800 KB of argv each is ~80 MB; filling stops at the limit.
    const spec = commandSpec({
      command: Array.from({ length: 2000 }, () => "a".repeat(400)),
      task_params: Array.from({ length: 100 }, () => ({})),
    });
    expect(problemsOf(expandJob(spec, JOB_ID, STRICT))).toEqual([
      `the job's argv and env are longer than ${MAX_JOB_PAYLOAD_BYTES} characters in total once filled`,
    ]);
  });

  it("refuses a grid whose trials would repeat too many keys, without building them", () => {
    const axis = Array.from({ length: 100 }, (_, i) => i);
    const grid: Record<string, unknown[]> = { a: axis, b: axis };
    for (let k = 0; k < 5000; k++) grid[`k${k}`] = [0];
    expect(problemsOf(expandJob(jobSpec("hyperparameter_search", { grid }), JOB_ID, STRICT))).toEqual([
      `the job's task payloads exceed ${MAX_JOB_PAYLOAD_BYTES} bytes of JSON in total`,
    ]);
  });

  it("refuses a task whose payload is past the per-task byte limit", () => {
    const spec = jobSpec("hyperparameter_search", { trials: [{ blob: "x".repeat(1_100_000) }] });
    const [problem] = problemsOf(expandJob(spec, JOB_ID, STRICT));
    expect(problem).toMatch(/^trial-000: payload is \d+ bytes of JSON, more than the limit of 1048576 per task$/);
  });
});

describe("problem reporting", () => {
  it("lists problems from the lease and the recipe together", () => {
    const spec = jobSpec("sharded_kmeans", { lease_seconds: "60", iteration: -1 });
    expect(problemsOf(expandJob(spec, JOB_ID, STRICT))).toEqual([
      `'lease_seconds' must be a finite number > 0, got the string "60"`,
      "'shards' is required: a non-empty list of artifact:// URIs",
      "'centroids' is required: a non-empty list",
      "'iteration' must be an integer >= 0, got the number -1",
    ]);
  });

  it("cuts request text short in a message rather than echoing it whole", () => {
    const long = "x".repeat(100);
    expect(problemsOf(expandJob(jobSpec(long, {}), JOB_ID, STRICT))[0]).toBe(
      `unknown workload type "${"x".repeat(40)}…"; known types: command, hyperparameter_search, sharded_kmeans, federated_averaging`,
    );
    const spec = commandSpec({ command: ["run", `{${long}}`], task_params: [{}] });
    expect(problemsOf(expandJob(spec, JOB_ID, STRICT))).toEqual([
      `task 0: command token 1 references {${"x".repeat(40)}…} but task_params[0] has no '${"x".repeat(40)}…'`,
    ]);
  });

  it(`lists at most ${MAX_LISTED_PROBLEMS} problems and counts the rest`, () => {
    const spec = commandSpec({ command: ["x", "{lr}"], task_params: Array.from({ length: 80 }, () => ({})) });
    const problems = problemsOf(expandJob(spec, JOB_ID, STRICT));
    expect(problems).toHaveLength(MAX_LISTED_PROBLEMS + 1);
    expect(problems[0]).toBe("task 0: command token 1 references {lr} but task_params[0] has no 'lr'");
    expect(problems.at(-1)).toBe("… and 30 more problems");
  });
});

describe("payloads never alias the spec", () => {
  it("leaves command tasks unchanged when the spec is mutated after expansion", () => {
    const spec = commandSpec({
      command: ["python", "train.py"],
      env: { A: "1" },
      inputs: { data: "artifact://d" },
      unpack_inputs: ["data"],
      local_inputs: ["patients"],
      checkpoint: { every: { steps: 10 } },
    });
    const tasks = tasksOf(expandJob(spec, JOB_ID, STRICT));
    const before = structuredClone(tasks);
    const p = spec.spec.workload.parameters as {
      command: string[];
      env: Record<string, string>;
      inputs: Record<string, string>;
      unpack_inputs: string[];
      local_inputs: string[];
      checkpoint: { every: { steps: number } };
    };
    p.command.push("--evil");
    p.env.A = "2";
    p.inputs.data = "artifact://other";
    p.unpack_inputs.push("other");
    p.local_inputs.push("labs");
    p.checkpoint.every.steps = 1;
    expect(tasks).toEqual(before);
  });

  it.each([
    ["hyperparameter trials", "hyperparameter_search", { trials: [{ layers: [64, 32] }], checkpoint: { on: true } }],
    ["a hyperparameter grid", "hyperparameter_search", { grid: { layers: [[64, 32]] }, inputs: { d: "artifact://d" } }],
    ["k-means centroids", "sharded_kmeans", { shards: ["artifact://s"], centroids: [[1, 2]] }],
  ])("leaves tasks from %s unchanged when nested spec values are mutated", (_, type, parameters) => {
    const spec = jobSpec(type, parameters);
    const tasks = tasksOf(expandJob(spec, JOB_ID, STRICT));
    const before = structuredClone(tasks);
    const mutate = (value: unknown): void => {
      if (Array.isArray(value)) {
        value.forEach(mutate);
        value.push("mutated");
      } else if (typeof value === "object" && value !== null) {
        const record = value as Record<string, unknown>;
        Object.values(record).forEach(mutate);
        record.mutated = true;
      }
    };
    mutate(spec.spec.workload.parameters);
    expect(tasks).toEqual(before);
  });

  it("gives every task its own payload objects", () => {
    const spec = jobSpec("sharded_kmeans", { shards: ["artifact://a", "artifact://b"], centroids: [[1, 2]] });
    const [first, second] = tasksOf(expandJob(spec, JOB_ID, STRICT));
    (first!.payload.params as { centroids: number[][] }).centroids[0]!.push(99);
    (first!.payload.isolation as Record<string, unknown>).tier = "changed";
    expect(second?.payload.params).toEqual({ centroids: [[1, 2]] });
    expect(second?.payload.isolation).toEqual({ tier: "standard", allowFallback: false });
  });
});
