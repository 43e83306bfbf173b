// The command recipe through expandJob: argv expansion, placeholders, the
// payload forwards the placement gate reads, and the isolation rules.

import { describe, expect, it } from "vitest";
import { expandJob } from "../../src/recipes";
import { eligible } from "../../src/rules/placement";
import {
  commandSpec,
  firstPayload,
  IMAGE_REF,
  JOB_ID,
  problemsOf,
  STRICT,
  TRUSTED_FLEET,
  tasksOf,
} from "./recipes.fixtures";

const TRAIN = ["python", "train.py"];
const NEEDS_SANDBOX =
  'command jobs need isolation.tier "sandboxed", got "standard" (the coordinator allows other tiers only with FLASHML_ALLOW_UNSANDBOXED_ARGV=1)';
const NEEDS_POOL =
  'command jobs may set isolation.allowFallback only when placement.pool names a team pool (got "any"): unsandboxed argv is confined to team pools';

describe("command expansion", () => {
  it("expands one argv task per task_params entry with every shared field stamped", () => {
    const spec = commandSpec(
      {
        command: ["python", "train.py", "--lr", "{lr}", "--epochs={epochs}"],
        task_params: [
          { lr: 0.1, epochs: 3 },
          { lr: 0.01, epochs: 5 },
        ],
        env: { RUN_NAME: "lr-{lr}", MODE: "train" },
        inputs: { data: "artifact://datasets/iris.csv" },
        lease_seconds: 90,
      },
      { retryPolicy: { maxTaskAttempts: 5 } },
    );
    const tasks = tasksOf(expandJob(spec, JOB_ID, STRICT));

    expect(tasks.map((t) => t.task_id)).toEqual(["task-000", "task-001"]);
    expect(tasks[1]).toEqual({
      schema_version: "v1alpha1",
      task_id: "task-001",
      job_id: JOB_ID,
      commit_key: `jobs/${JOB_ID}/task-001/metrics.json`,
      max_attempts: 5,
      lease_seconds: 90,
      max_worker_losses: 10,
      payload: {
        argv: ["python", "train.py", "--lr", "0.01", "--epochs=5"],
        env: { RUN_NAME: "lr-0.01", MODE: "train" },
        inputs: { data: "artifact://datasets/iris.csv" },
        output_prefix: `jobs/${JOB_ID}/task-001/`,
        task_id: "task-001",
        image: IMAGE_REF,
        isolation: { tier: "sandboxed", allowFallback: false },
      },
    });
  });

  it("writes payload keys in the reference's order, optional ones last", () => {
    const spec = commandSpec(
      {
        command: TRAIN,
        inputs: { data: "artifact://d" },
        checkpoint: { every_steps: 10 },
        unpack_inputs: ["data"],
        local_inputs: ["patients"],
      },
      { resources: { gpuPerTask: 1, minimumWorkers: 1, maximumWorkers: 1 } },
    );
    expect(Object.keys(firstPayload(expandJob(spec, JOB_ID, STRICT)))).toEqual([
      "argv",
      "env",
      "inputs",
      "output_prefix",
      "task_id",
      "image",
      "isolation",
      "checkpoint",
      "unpack_inputs",
      "local_inputs",
      "gpus",
    ]);
  });

  it("runs a single task with empty env and inputs when only command is given", () => {
    const tasks = tasksOf(expandJob(commandSpec({ command: TRAIN }), JOB_ID, STRICT));
    expect(tasks).toHaveLength(1);
    expect(tasks[0]?.payload).toEqual({
      argv: TRAIN,
      env: {},
      inputs: {},
      output_prefix: `jobs/${JOB_ID}/task-000/`,
      task_id: "task-000",
      image: IMAGE_REF,
      isolation: { tier: "sandboxed", allowFallback: false },
    });
  });

  it("numbers tasks past 999 without truncating the id", () => {
    const taskParams = Array.from({ length: 1001 }, () => ({}));
    const tasks = tasksOf(expandJob(commandSpec({ command: TRAIN, task_params: taskParams }), JOB_ID, STRICT));
    expect(tasks.at(-1)?.task_id).toBe("task-1000");
  });
});

describe("command payload forwards the placement gate reads", () => {
  it("forwards local_inputs into every task payload", () => {
    const spec = commandSpec({ command: ["x", "{i}"], task_params: [{ i: 1 }, { i: 2 }], local_inputs: ["patients"] });
    const tasks = tasksOf(expandJob(spec, JOB_ID, STRICT));
    expect(tasks.map((t) => t.payload.local_inputs)).toEqual([["patients"], ["patients"]]);
  });

  it.each([
    ["not given", {}],
    ["null", { local_inputs: null }],
  ])("leaves local_inputs absent when %s", (_, extra) => {
    expect(firstPayload(expandJob(commandSpec({ command: TRAIN, ...extra }), JOB_ID, STRICT))).not.toHaveProperty(
      "local_inputs",
    );
  });

  it("forwards an empty local_inputs list as given", () => {
    expect(
      firstPayload(expandJob(commandSpec({ command: TRAIN, local_inputs: [] }), JOB_ID, STRICT)).local_inputs,
    ).toEqual([]);
  });

  it("forwards unpack_inputs, and leaves it absent when not given", () => {
    const inputs = { data: "artifact://d.tar.gz", labels: "artifact://l.csv" };
    const given = expandJob(commandSpec({ command: TRAIN, inputs, unpack_inputs: ["data"] }), JOB_ID, STRICT);
    expect(firstPayload(given).unpack_inputs).toEqual(["data"]);
    expect(firstPayload(expandJob(commandSpec({ command: TRAIN, inputs }), JOB_ID, STRICT))).not.toHaveProperty(
      "unpack_inputs",
    );
  });

  it.each([1, 2, 8])("forwards gpuPerTask %i as the integer gpus", (gpus) => {
    const spec = commandSpec(
      { command: TRAIN },
      { resources: { gpuPerTask: gpus, minimumWorkers: 1, maximumWorkers: 1 } },
    );
    const payload = firstPayload(expandJob(spec, JOB_ID, STRICT));
    expect(payload.gpus).toBe(gpus);
    expect(Number.isInteger(payload.gpus)).toBe(true);
  });

  it.each([
    ["the default", {}],
    ["an explicit 0", { resources: { gpuPerTask: 0 } }],
  ])("leaves gpus absent, never 0, for %s", (_, extra) => {
    expect(firstPayload(expandJob(commandSpec({ command: TRAIN }, extra), JOB_ID, STRICT))).not.toHaveProperty("gpus");
  });

  it("stamps the GPU requirement on every task of a sweep", () => {
    const spec = commandSpec(
      { command: ["python", "train.py", "--lr", "{lr}"], task_params: [{ lr: 0.1 }, { lr: 0.2 }, { lr: 0.3 }] },
      { resources: { gpuPerTask: 1, minimumWorkers: 1, maximumWorkers: 1 } },
    );
    expect(tasksOf(expandJob(spec, JOB_ID, STRICT)).map((t) => t.payload.gpus)).toEqual([1, 1, 1]);
  });

  it("adds exactly the gpus key and changes nothing else when a GPU is asked for", () => {
    const plain = firstPayload(expandJob(commandSpec({ command: TRAIN }), JOB_ID, STRICT));
    const withGpu = firstPayload(
      expandJob(commandSpec({ command: TRAIN }, { resources: { gpuPerTask: 1 } }), JOB_ID, STRICT),
    );
    const { gpus, ...rest } = withGpu;
    expect(gpus).toBe(1);
    expect(rest).toEqual(plain);
  });

  it("stamps pool for a team pool and leaves it absent for any", () => {
    const team = expandJob(commandSpec({ command: TRAIN }, { placement: { pool: "team-a" } }), JOB_ID, STRICT);
    expect(firstPayload(team).pool).toBe("team-a");
    expect(firstPayload(expandJob(commandSpec({ command: TRAIN }), JOB_ID, STRICT))).not.toHaveProperty("pool");
  });

  it.each([
    ["given", { checkpoint: { every_steps: 50 } }, { every_steps: 50 }],
    ["null", { checkpoint: null }, undefined],
    ["not given", {}, undefined],
  ])("forwards checkpoint only when %s", (_, extra, expected) => {
    const payload = firstPayload(expandJob(commandSpec({ command: TRAIN, ...extra }), JOB_ID, STRICT));
    if (expected === undefined) expect(payload).not.toHaveProperty("checkpoint");
    else expect(payload.checkpoint).toEqual(expected);
  });
});

describe("command payloads joined to the placement gate", () => {
  // Both ends of this hop have their own tests; these read what expandJob
  // wrote with the real gate, so a dropped forward cannot pass unnoticed.
  const node = (extra: Record<string, unknown>) => ({
    node_id: "n1",
    sandbox_capable: true,
    argv_capable: true,
    module_capable: true,
    unsandboxed_argv_capable: false,
    local_datasets: [],
    ...extra,
    capabilities: { gpus: [], pools: [], ...(extra.capabilities as object | undefined) },
  });

  it("places a one-GPU task on a GPU node and never on a CPU-only one", () => {
    const payload = firstPayload(
      expandJob(commandSpec({ command: TRAIN }, { resources: { gpuPerTask: 1 } }), JOB_ID, STRICT),
    );
    expect(eligible(payload, node({}))).toBe(false);
    expect(eligible(payload, node({ capabilities: { gpus: [{ index: 0 }] } }))).toBe(true);
  });

  it("places a local-data task only on a node advertising the dataset", () => {
    const payload = firstPayload(
      expandJob(commandSpec({ command: TRAIN, local_inputs: ["patients"] }), JOB_ID, STRICT),
    );
    expect(eligible(payload, node({}))).toBe(false);
    expect(eligible(payload, node({ local_datasets: ["patients"] }))).toBe(true);
  });

  it("places a team-pool task only on a node in that pool", () => {
    const payload = firstPayload(
      expandJob(commandSpec({ command: TRAIN }, { placement: { pool: "team-a" } }), JOB_ID, STRICT),
    );
    expect(eligible(payload, node({}))).toBe(false);
    expect(eligible(payload, node({ capabilities: { pools: ["team-a"] } }))).toBe(true);
  });
});

describe("command placeholders", () => {
  it.each([
    ["a string", "--model={name}", { name: "resnet" }, "--model=resnet"],
    ["an integer", "{n}", { n: 3 }, "3"],
    ["a decimal", "--lr={lr}", { lr: 0.001 }, "--lr=0.001"],
    ["a negative number", "{x}", { x: -2.5 }, "-2.5"],
    ["a whole float, as JSON writes it", "{x}", { x: 1.0 }, "1"],
    ["a tiny number, as JSON writes it", "{x}", { x: 1e-7 }, "1e-7"],
    ["true, as Python writes it", "{flag}", { flag: true }, "True"],
    ["false, as Python writes it", "{flag}", { flag: false }, "False"],
    ["two placeholders", "{a}-{b}", { a: 1, b: "z" }, "1-z"],
    ["an escaped brace pair", "{{x}}", {}, "{x}"],
    ["braces around a placeholder", "{{{n}}}", { n: 7 }, "{7}"],
    ["a lone escaped closing brace", "a}}b", {}, "a}b"],
    ["a key that is not an identifier", "{my-key}", { "my-key": "v" }, "v"],
    ["an empty string value", "[{x}]", { x: "" }, "[]"],
  ])("fills %s", (_, token, params, expected) => {
    const spec = commandSpec({ command: ["run", token], task_params: [params] });
    expect(firstPayload(expandJob(spec, JOB_ID, STRICT)).argv).toEqual(["run", expected]);
  });

  it("fills each task from its own params", () => {
    const spec = commandSpec({ command: ["run", "{lr}"], task_params: [{ lr: 1 }, { lr: 2 }, { lr: 3 }] });
    expect(tasksOf(expandJob(spec, JOB_ID, STRICT)).map((t) => t.payload.argv)).toEqual([
      ["run", "1"],
      ["run", "2"],
      ["run", "3"],
    ]);
  });

  it("fills env values but never env names", () => {
    const spec = commandSpec({
      command: TRAIN,
      env: { "LR_{lr}": "{lr}", SEED: "s{seed}" },
      task_params: [{ lr: 0.5, seed: 7 }],
    });
    expect(firstPayload(expandJob(spec, JOB_ID, STRICT)).env).toEqual({ "LR_{lr}": "0.5", SEED: "s7" });
  });

  it("treats {{ and }} as literal braces even when no task_params are given", () => {
    // Differs from the reference, which skips formatting entirely without
    // task_params and would pass "{{x}}" through doubled.
    const spec = commandSpec({ command: ["awk", "{{print $1}}"] });
    expect(firstPayload(expandJob(spec, JOB_ID, STRICT)).argv).toEqual(["awk", "{print $1}"]);
  });

  it.each([
    ["a missing name", "{lr}", { epochs: 1 }, "task 0: command token 1 references {lr} but task_params[0] has no 'lr'"],
    [
      "an inherited name",
      "{constructor}",
      {},
      "task 0: command token 1 references {constructor} but task_params[0] has no 'constructor'",
    ],
    [
      "an empty positional",
      "{}",
      {},
      "task 0: command token 1 has a positional placeholder {} (name it after a task_params key, e.g. {lr})",
    ],
    [
      "a numbered positional",
      "--x={0}",
      { 0: "a" },
      "task 0: command token 1 has a positional placeholder {0} (name it after a task_params key, e.g. {lr})",
    ],
    [
      "a lone opening brace",
      "x{y",
      {},
      "task 0: command token 1 has a lone '{' at position 1 (write {{ for a literal brace)",
    ],
    [
      "a lone closing brace",
      "x}",
      {},
      "task 0: command token 1 has a lone '}' at position 1 (write }} for a literal brace)",
    ],
    [
      "a nested brace",
      "{a{b}}",
      {},
      "task 0: command token 1 has a '{' inside the placeholder at position 0 (nested placeholders are not supported)",
    ],
    [
      "a format spec",
      "{lr:.3f}",
      { lr: 0.1 },
      "task 0: command token 1 uses a format spec in {lr:.3f}, which is not supported (put the formatted value in task_params)",
    ],
    [
      "a conversion",
      "{lr!r}",
      { lr: 0.1 },
      "task 0: command token 1 uses a conversion in {lr!r}, which is not supported",
    ],
    [
      "an attribute access",
      "{a.b}",
      { a: { b: 1 } },
      "task 0: command token 1 uses field access in {a.b}, which is not supported (use a plain {name})",
    ],
    [
      "an index access",
      "{a[0]}",
      { a: [1] },
      "task 0: command token 1 uses field access in {a[0]}, which is not supported (use a plain {name})",
    ],
  ])("refuses %s", (_, token, params, problem) => {
    const spec = commandSpec({ command: ["run", token], task_params: [params] });
    expect(problemsOf(expandJob(spec, JOB_ID, STRICT))).toEqual([problem]);
  });

  it.each([
    ["an object", { opts: { a: 1 } }, "an object"],
    ["a list", { opts: [1, 2] }, "a list"],
    ["null", { opts: null }, "null"],
  ])("refuses a placeholder whose value is %s", (_, params, kind) => {
    const spec = commandSpec({ command: ["run", "{opts}"], task_params: [params] });
    expect(problemsOf(expandJob(spec, JOB_ID, STRICT))).toEqual([
      `task 0: command token 1 references {opts} but task_params[0].opts is ${kind}; only a string, number or boolean can fill a placeholder`,
    ]);
  });

  it("names the index of the task whose params lack a placeholder", () => {
    const spec = commandSpec({
      command: ["python", "train.py", "--lr", "{lr}"],
      task_params: [{ lr: 1 }, { lr: 2 }, { lr: 3 }, { epochs: 4 }],
    });
    expect(problemsOf(expandJob(spec, JOB_ID, STRICT))).toEqual([
      "task 3: command token 3 references {lr} but task_params[3] has no 'lr'",
    ]);
  });

  it("names the env variable and task index of an unfilled env placeholder", () => {
    const spec = commandSpec({ command: TRAIN, env: { LR: "{lr}" }, task_params: [{ lr: 1 }, {}] });
    expect(problemsOf(expandJob(spec, JOB_ID, STRICT))).toEqual([
      "task 1: env 'LR' references {lr} but task_params[1] has no 'lr'",
    ]);
  });

  it("says no task_params were given when a placeholder has nothing to fill it", () => {
    expect(problemsOf(expandJob(commandSpec({ command: ["run", "{lr}"] }), JOB_ID, STRICT))).toEqual([
      "task 0: command token 1 references {lr} but no task_params were given (write {{ and }} for literal braces)",
    ]);
  });

  it("reports a malformed token once for all tasks, not once per task", () => {
    const spec = commandSpec({
      command: ["run", "{", "{lr}"],
      env: { A: "}" },
      task_params: [{ lr: 1 }, { lr: 2 }, {}],
    });
    expect(problemsOf(expandJob(spec, JOB_ID, STRICT))).toEqual([
      "tasks 0–2: command token 1 has a lone '{' at position 0 (write {{ for a literal brace)",
      "tasks 0–2: env 'A' has a lone '}' at position 0 (write }} for a literal brace)",
      "task 2: command token 2 references {lr} but task_params[2] has no 'lr'",
    ]);
  });

  it("refuses a token that fills past the length of one argv string", () => {
    const spec = commandSpec({ command: ["run", "{x}".repeat(40)], task_params: [{ x: "y".repeat(4096) }] });
    expect(problemsOf(expandJob(spec, JOB_ID, STRICT))).toEqual([
      "task 0: command token 1 is longer than 131072 characters once filled",
    ]);
  });

  it("refuses a task whose argv fills past the per-task payload limit", () => {
    const spec = commandSpec({
      command: Array.from({ length: 20 }, () => "{x}{x}"),
      task_params: [{ x: "y".repeat(40_000) }],
    });
    expect(problemsOf(expandJob(spec, JOB_ID, STRICT))).toEqual([
      "task 0: argv and env are longer than 1048576 characters once filled",
    ]);
  });
});

describe("command isolation rules", () => {
  it.each([
    { tier: "sandboxed", allowFallback: false, pool: "any", options: STRICT },
    { tier: "standard", allowFallback: false, pool: "any", options: TRUSTED_FLEET },
    { tier: "sandboxed", allowFallback: true, pool: "team-a", options: STRICT },
    { tier: "standard", allowFallback: true, pool: "team-a", options: TRUSTED_FLEET },
  ])(
    "expands tier $tier with allowFallback $allowFallback in pool $pool when allowUnsandboxedArgv is $options.allowUnsandboxedArgv",
    ({ tier, allowFallback, pool, options }) => {
      const spec = commandSpec({ command: TRAIN }, { isolation: { tier, allowFallback }, placement: { pool } });
      expect(firstPayload(expandJob(spec, JOB_ID, options)).isolation).toEqual({ tier, allowFallback });
    },
  );

  it.each([
    ["a standard tier without the coordinator's opt-in", { tier: "standard" }, "any", STRICT, [NEEDS_SANDBOX]],
    ["the default tier without the coordinator's opt-in", {}, "any", STRICT, [NEEDS_SANDBOX]],
    ["allowFallback without a team pool", { tier: "sandboxed", allowFallback: true }, "any", STRICT, [NEEDS_POOL]],
    [
      "allowFallback without a team pool on a trusted fleet",
      { tier: "standard", allowFallback: true },
      "any",
      TRUSTED_FLEET,
      [NEEDS_POOL],
    ],
    ["both at once", { tier: "standard", allowFallback: true }, "any", STRICT, [NEEDS_SANDBOX, NEEDS_POOL]],
  ])("refuses %s", (_, isolation, pool, options, problems) => {
    const spec = commandSpec({ command: TRAIN }, { isolation, placement: { pool } });
    expect(problemsOf(expandJob(spec, JOB_ID, options))).toEqual(problems);
  });

  it("carries the waiver and the pool together into the payload", () => {
    const spec = commandSpec(
      { command: TRAIN },
      { isolation: { tier: "sandboxed", allowFallback: true }, placement: { pool: "team-a" } },
    );
    const payload = firstPayload(expandJob(spec, JOB_ID, STRICT));
    expect(payload.isolation).toEqual({ tier: "sandboxed", allowFallback: true });
    expect(payload.pool).toBe("team-a");
  });
});

describe("command parameter refusals", () => {
  const inputs = { data: "artifact://d" };
  it.each([
    ["a missing command", {}, "'command' is required: a non-empty list of strings"],
    ["a null command", { command: null }, "'command' is required: a non-empty list of strings"],
    ["an empty command", { command: [] }, "'command' must be a non-empty list of strings, got an empty list"],
    [
      "a command string",
      { command: "python train.py" },
      `'command' must be a list of strings, got the string "python train.py"`,
    ],
    ["a non-string token", { command: ["python", 3] }, "'command[1]' must be a string, got the number 3"],
    [
      "task_params that is not a list",
      { command: TRAIN, task_params: { lr: 1 } },
      "'task_params' must be a list of objects, got an object",
    ],
    [
      "an empty task_params",
      { command: TRAIN, task_params: [] },
      "'task_params' must list at least one object (omit it for a single task)",
    ],
    [
      "a task_params entry that is not an object",
      { command: TRAIN, task_params: [{}, [1]] },
      "'task_params[1]' must be an object, got a list",
    ],
    ["env that is not an object", { command: TRAIN, env: ["A=1"] }, "'env' must be an object of strings, got a list"],
    ["a non-string env value", { command: TRAIN, env: { A: 1 } }, "'env.A' must be a string, got the number 1"],
    [
      "inputs that is not an object",
      { command: TRAIN, inputs: "artifact://d" },
      `'inputs' must be an object of name → artifact:// URI, got the string "artifact://d"`,
    ],
    [
      "an input that is not an artifact URI",
      { command: TRAIN, inputs: { data: "s3://bucket/d" } },
      `input 'data' must be an artifact:// URI, got the string "s3://bucket/d"`,
    ],
    [
      "an input with an empty key",
      { command: TRAIN, inputs: { data: "artifact://" } },
      `input 'data' must be an artifact:// URI, got the string "artifact://"`,
    ],
    [
      "unpack_inputs that is not a list",
      { command: TRAIN, inputs, unpack_inputs: "data" },
      `'unpack_inputs' must be a list of strings, got the string "data"`,
    ],
    [
      "a repeated unpack_inputs name",
      { command: TRAIN, inputs, unpack_inputs: ["data", "data"] },
      `'unpack_inputs' names "data" more than once (an input is unpacked at most once)`,
    ],
    [
      "an undeclared unpack_inputs name",
      { command: TRAIN, inputs, unpack_inputs: ["data", "model"] },
      `'unpack_inputs' names "model", not declared in 'inputs'`,
    ],
    [
      "an unpack_inputs name that only exists on Object.prototype",
      { command: TRAIN, inputs, unpack_inputs: ["toString"] },
      `'unpack_inputs' names "toString", not declared in 'inputs'`,
    ],
    [
      "local_inputs that is a bare string",
      { command: TRAIN, local_inputs: "patients" },
      `'local_inputs' must be a list of strings, got the string "patients"`,
    ],
    [
      "a non-string local_inputs entry",
      { command: TRAIN, local_inputs: ["patients", true] },
      "'local_inputs[1]' must be a string, got the boolean true",
    ],
  ])("refuses %s", (_, parameters, problem) => {
    expect(problemsOf(expandJob(commandSpec(parameters), JOB_ID, STRICT))).toEqual([problem]);
  });

  it("lists every problem together", () => {
    const spec = commandSpec(
      {
        command: [],
        env: { A: 1 },
        inputs: { data: "s3://d" },
        local_inputs: "patients",
        lease_seconds: 0,
      },
      { isolation: { tier: "standard" } },
    );
    expect(problemsOf(expandJob(spec, JOB_ID, STRICT))).toEqual([
      "'lease_seconds' must be a finite number > 0, got the number 0",
      NEEDS_SANDBOX,
      "'command' must be a non-empty list of strings, got an empty list",
      "'env.A' must be a string, got the number 1",
      `input 'data' must be an artifact:// URI, got the string "s3://d"`,
      `'local_inputs' must be a list of strings, got the string "patients"`,
    ]);
  });
});
