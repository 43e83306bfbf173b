// The v1alpha1 schemas against what real clients send: defaults that fail
// closed, wrong types refused (never coerced) at the right loc, unknown
// fields ignored, and every JobSpec rule refused with a useful message.

import { describe, expect, it } from "vitest";
import type { z } from "zod";
import {
  ArtifactRecordSchema,
  CheckpointManifestSchema,
  ClaimRequestSchema,
  CommitCheckpointRequestSchema,
  CompleteRequestSchema,
  clampLeaseSeconds,
  EVENT_TYPES,
  EventSchema,
  EventTypeSchema,
  FailRequestSchema,
  JOB_STATES,
  JobRecordSchema,
  JobSpecSchema,
  LeaseSchema,
  NodeHeartbeatSchema,
  NodeRegistrationSchema,
  parseEvidence,
  parseRequest,
  RegisterPartRequestSchema,
  TASK_STATES,
  TaskSpecSchema,
  TaskStateSchema,
  TERMINAL_JOB_STATES,
  TERMINAL_TASK_STATES,
  type ValidationDetailEntry,
} from "../../src/protocol";

/** The 422 rows for `body`, or [] when it parses. */
function refusal(schema: z.ZodType, body: unknown): ValidationDetailEntry[] {
  const result = parseRequest(schema, body);
  return result.ok ? [] : result.detail;
}

function parsed<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const result = parseRequest(schema, body);
  if (!result.ok) throw new Error(`expected ${JSON.stringify(body)} to parse: ${JSON.stringify(result.detail)}`);
  return result.value;
}

/** The smallest registration the schema accepts. */
const minimalRegistration = { node_id: "node-a", kubernetes_node: "", hostname: "host-a", capabilities: {} };

/** A registration exactly as flashnode 0.4.1 serialises it (`model_dump_json()`), on the wire. */
const agentRegistrationJson = `{
  "schema_version": "v1alpha1",
  "node_id": "node-7f3a9c1e2b4d",
  "kubernetes_node": "",
  "hostname": "volunteer-laptop.local",
  "capabilities": {
    "cpu_cores": 8.0,
    "memory_bytes": 17179869184,
    "gpus": [
      {"index": 0, "name": "NVIDIA GeForce RTX 4090", "memory_total_mb": 24564, "driver_version": "550.54.14", "compute_capability": "8.9"},
      {"index": 1, "name": "NVIDIA A10G", "memory_total_mb": null, "driver_version": "550.54.14", "compute_capability": ""}
    ],
    "pools": [],
    "os": "linux",
    "architecture": "amd64"
  },
  "environment": "local",
  "sandbox_capable": true,
  "argv_capable": true,
  "module_capable": false,
  "unsandboxed_argv_capable": false,
  "local_datasets": ["mnist", "patients"],
  "pool": "local",
  "runtime_profile": "kubernetes",
  "labels": {"flashml.dev/pool": "team-a"},
  "agent_version": "0.4.1"
}`;

const minimalJob = {
  apiVersion: "flashml.dev/v1alpha1",
  kind: "Job",
  metadata: { name: "sweep-1" },
  spec: { image: { repository: "ghcr.io/zolli-labs/trainer", tag: "1.4.2" }, workload: { type: "command" } },
};

/** `minimalJob` with one spec block replaced. */
function jobWith(block: string, value: unknown): unknown {
  return { ...minimalJob, spec: { ...minimalJob.spec, [block]: value } };
}

describe("node registration", () => {
  it("parses a registration exactly as the Python flashnode agent sends it", () => {
    const reg = parsed(NodeRegistrationSchema, JSON.parse(agentRegistrationJson));
    expect(reg.node_id).toBe("node-7f3a9c1e2b4d");
    expect(reg.capabilities.cpu_cores).toBe(8);
    expect(reg.capabilities.gpus).toHaveLength(2);
    expect(reg.capabilities.gpus[1]).toEqual({
      index: 1,
      name: "NVIDIA A10G",
      memory_total_mb: null,
      driver_version: "550.54.14",
      compute_capability: "",
    });
    expect(reg.argv_capable).toBe(true);
    expect(reg.module_capable).toBe(false);
    expect(reg.local_datasets).toEqual(["mnist", "patients"]);
    expect(reg.labels).toEqual({ "flashml.dev/pool": "team-a" });
  });

  it("parses a registration from an agent older than gpus, local_datasets and team pools", () => {
    const old = {
      schema_version: "v1alpha1",
      node_id: "node-old",
      kubernetes_node: "k8s-node-3",
      hostname: "edge-box",
      capabilities: { cpu_cores: 4, memory_bytes: 8589934592, gpus: [], os: "linux", architecture: "arm64" },
      environment: "edge",
      sandbox_capable: false,
      argv_capable: false,
      module_capable: true,
      pool: "local",
      runtime_profile: "kubernetes",
      labels: {},
      agent_version: "0.2.0",
    };
    const reg = parsed(NodeRegistrationSchema, old);
    expect(reg.local_datasets).toEqual([]);
    expect(reg.capabilities.pools).toEqual([]);
    expect(reg.unsandboxed_argv_capable).toBe(false);
  });

  const defaults: [string, (r: z.output<typeof NodeRegistrationSchema>) => unknown, unknown][] = [
    ["an agent omitting argv_capable reads as not argv-capable", (r) => r.argv_capable, false],
    ["an agent omitting sandbox_capable reads as not sandbox-capable", (r) => r.sandbox_capable, false],
    ["an agent omitting unsandboxed_argv_capable is not a trusted pool host", (r) => r.unsandboxed_argv_capable, false],
    ["an agent omitting module_capable reads as module-capable", (r) => r.module_capable, true],
    ["an agent omitting local_datasets offers no local data", (r) => r.local_datasets, []],
    ["an agent omitting gpus advertises no GPUs", (r) => r.capabilities.gpus, []],
    ["an agent omitting team pools belongs to none", (r) => r.capabilities.pools, []],
    ["an agent omitting cpu_cores reports it as unknown", (r) => r.capabilities.cpu_cores, null],
    ["an agent omitting memory_bytes reports it as unknown", (r) => r.capabilities.memory_bytes, null],
    ["an omitted pool reads as local", (r) => r.pool, "local"],
    ["an omitted environment reads as local", (r) => r.environment, "local"],
    ["an omitted runtime_profile reads as kubernetes", (r) => r.runtime_profile, "kubernetes"],
    ["omitted labels read as none", (r) => r.labels, {}],
    ["an omitted agent_version reads as empty", (r) => r.agent_version, ""],
    ["an omitted schema_version reads as v1alpha1", (r) => r.schema_version, "v1alpha1"],
  ];
  it.each(defaults)("%s", (_name, read, expected) => {
    expect(read(parsed(NodeRegistrationSchema, minimalRegistration))).toEqual(expected);
  });

  it("fills GPU fields the probe could not read with their empty defaults", () => {
    const reg = parsed(NodeRegistrationSchema, { ...minimalRegistration, capabilities: { gpus: [{ index: 0 }] } });
    expect(reg.capabilities.gpus).toEqual([
      { index: 0, name: "", memory_total_mb: null, driver_version: "", compute_capability: "" },
    ]);
  });

  it("never shares a default list between two registrations", () => {
    const a = parsed(NodeRegistrationSchema, minimalRegistration);
    a.local_datasets.push("patients");
    a.capabilities.gpus.push({ index: 0, name: "", memory_total_mb: null, driver_version: "", compute_capability: "" });
    const b = parsed(NodeRegistrationSchema, minimalRegistration);
    expect(b.local_datasets).toEqual([]);
    expect(b.capabilities.gpus).toEqual([]);
  });

  const wrongTypes: [string, Record<string, unknown>, (string | number)[], string][] = [
    ['"sandbox_capable": "yes"', { sandbox_capable: "yes" }, ["body", "sandbox_capable"], "bool_type"],
    ['"argv_capable": 1', { argv_capable: 1 }, ["body", "argv_capable"], "bool_type"],
    ['"module_capable": "false"', { module_capable: "false" }, ["body", "module_capable"], "bool_type"],
    [
      '"unsandboxed_argv_capable": null',
      { unsandboxed_argv_capable: null },
      ["body", "unsandboxed_argv_capable"],
      "bool_type",
    ],
    ['"local_datasets": "patients"', { local_datasets: "patients" }, ["body", "local_datasets"], "list_type"],
    ['"local_datasets": [1]', { local_datasets: [1] }, ["body", "local_datasets", 0], "string_type"],
    ['"environment": "space"', { environment: "space" }, ["body", "environment"], "literal_error"],
    ['"labels": {"a": 1}', { labels: { a: 1 } }, ["body", "labels", "a"], "string_type"],
    ['"node_id": 42', { node_id: 42 }, ["body", "node_id"], "string_type"],
    ['"schema_version": "v1"', { schema_version: "v1" }, ["body", "schema_version"], "literal_error"],
    ['"capabilities": "big"', { capabilities: "big" }, ["body", "capabilities"], "model_type"],
    ['"capabilities": {"gpus": 2}', { capabilities: { gpus: 2 } }, ["body", "capabilities", "gpus"], "list_type"],
    [
      'a GPU with "index": "0"',
      { capabilities: { gpus: [{ index: "0" }] } },
      ["body", "capabilities", "gpus", 0, "index"],
      "int_type",
    ],
    [
      'a GPU with "index": 0.5',
      { capabilities: { gpus: [{ index: 0.5 }] } },
      ["body", "capabilities", "gpus", 0, "index"],
      "int_from_float",
    ],
    [
      "a GPU with no index",
      { capabilities: { gpus: [{ name: "A10G" }] } },
      ["body", "capabilities", "gpus", 0, "index"],
      "missing",
    ],
    [
      'a GPU with "memory_total_mb": "24GB"',
      { capabilities: { gpus: [{ index: 0, memory_total_mb: "24GB" }] } },
      ["body", "capabilities", "gpus", 0, "memory_total_mb"],
      "int_type",
    ],
    [
      '"memory_bytes": "16G"',
      { capabilities: { memory_bytes: "16G" } },
      ["body", "capabilities", "memory_bytes"],
      "int_type",
    ],
    ['"cpu_cores": "8"', { capabilities: { cpu_cores: "8" } }, ["body", "capabilities", "cpu_cores"], "float_type"],
    ['"pools": "team-a"', { capabilities: { pools: "team-a" } }, ["body", "capabilities", "pools"], "list_type"],
  ];
  it.each(wrongTypes)("refuses %s instead of coercing it", (_name, patch, loc, type) => {
    const body = { ...minimalRegistration, ...patch };
    expect(refusal(NodeRegistrationSchema, body)).toEqual([{ loc, msg: expect.any(String), type }]);
  });

  it.each(["node_id", "kubernetes_node", "hostname", "capabilities"])(
    "refuses a registration without %s as missing",
    (field) => {
      const body: Record<string, unknown> = { ...minimalRegistration };
      delete body[field];
      expect(refusal(NodeRegistrationSchema, body)).toEqual([
        { loc: ["body", field], msg: "Field required", type: "missing" },
      ]);
    },
  );

  it("ignores unknown fields at every level instead of refusing them", () => {
    const reg = parsed(NodeRegistrationSchema, {
      ...minimalRegistration,
      future_flag: true,
      capabilities: { tpu_count: 4, gpus: [{ index: 0, uuid: "GPU-1234" }] },
    });
    expect(reg).not.toHaveProperty("future_flag");
    expect(reg.capabilities).not.toHaveProperty("tpu_count");
    expect(reg.capabilities.gpus[0]).not.toHaveProperty("uuid");
  });
});

describe("node heartbeat", () => {
  it("parses the heartbeat the agent sends, with pydantic's microsecond timestamp", () => {
    const hb = parsed(
      NodeHeartbeatSchema,
      JSON.parse(
        '{"schema_version":"v1alpha1","node_id":"node-a","timestamp":"2026-11-29T13:43:49.123456Z","status":"online"}',
      ),
    );
    expect(hb).toEqual({
      schema_version: "v1alpha1",
      node_id: "node-a",
      timestamp: "2026-11-29T13:43:49.123456Z",
      status: "online",
      pools: null,
    });
  });

  it("defaults a bare heartbeat to online with no statement about pools", () => {
    const hb = parsed(NodeHeartbeatSchema, { node_id: "node-a" });
    expect(hb.status).toBe("online");
    expect(hb.pools).toBeNull();
    expect(hb.timestamp).toBeUndefined();
  });

  it("keeps an empty pools list distinct from null: it clears the team pools", () => {
    expect(parsed(NodeHeartbeatSchema, { node_id: "n", pools: [] }).pools).toEqual([]);
  });

  it.each(["2026-11-29T13:43:49+00:00", "2026-11-29T13:43:49.123Z", "2026-11-29T13:43:49.123456"])(
    "accepts the timestamp %s",
    (timestamp) => {
      expect(refusal(NodeHeartbeatSchema, { node_id: "n", timestamp })).toEqual([]);
    },
  );

  const refused: [string, Record<string, unknown>, (string | number)[], string][] = [
    ["a numeric timestamp", { timestamp: 1764423829 }, ["body", "timestamp"], "string_type"],
    ["a timestamp that is not a datetime", { timestamp: "yesterday" }, ["body", "timestamp"], "datetime_parsing"],
    ["a null timestamp", { timestamp: null }, ["body", "timestamp"], "string_type"],
    ["an unknown status", { status: "sleeping" }, ["body", "status"], "literal_error"],
    ["pools that are not a list", { pools: "team-a" }, ["body", "pools"], "list_type"],
  ];
  it.each(refused)("refuses %s", (_name, patch, loc, type) => {
    expect(refusal(NodeHeartbeatSchema, { node_id: "n", ...patch })).toEqual([{ loc, msg: expect.any(String), type }]);
  });
});

describe("tasks and leases", () => {
  const task = { task_id: "task-000", job_id: "0123456789ab", commit_key: "jobs/0123456789ab/task-000/metrics.json" };

  it("defaults max_attempts to 3, lease_seconds to 60, worker losses to none and the payload to {}", () => {
    expect(parsed(TaskSpecSchema, task)).toEqual({
      schema_version: "v1alpha1",
      ...task,
      payload: {},
      max_attempts: 3,
      lease_seconds: 60,
      max_worker_losses: 0,
    });
  });

  it("keeps the payload byte-for-byte, unknown keys and odd types included", () => {
    const payload = {
      argv: ["python", "-c", "1"],
      gpus: true,
      local_inputs: "patients",
      isolation: null,
      nested: { a: [1, {}] },
    };
    expect(parsed(TaskSpecSchema, { ...task, payload }).payload).toEqual(payload);
  });

  const refused: [string, Record<string, unknown>, (string | number)[], string][] = [
    ['"max_attempts": "3"', { max_attempts: "3" }, ["body", "max_attempts"], "int_type"],
    ['"max_attempts": 0', { max_attempts: 0 }, ["body", "max_attempts"], "greater_than_equal"],
    ['"max_attempts": 2.5', { max_attempts: 2.5 }, ["body", "max_attempts"], "int_from_float"],
    ['"max_attempts": true', { max_attempts: true }, ["body", "max_attempts"], "int_type"],
    ['"lease_seconds": 0', { lease_seconds: 0 }, ["body", "lease_seconds"], "greater_than_equal"],
    ['"lease_seconds": -5', { lease_seconds: -5 }, ["body", "lease_seconds"], "greater_than_equal"],
    ['"lease_seconds": 4.9 (below the floor)', { lease_seconds: 4.9 }, ["body", "lease_seconds"], "greater_than_equal"],
    ['"lease_seconds": "60"', { lease_seconds: "60" }, ["body", "lease_seconds"], "float_type"],
    ['"payload": []', { payload: [] }, ["body", "payload"], "dict_type"],
    ['"payload": null', { payload: null }, ["body", "payload"], "dict_type"],
  ];
  it.each(refused)("refuses a task with %s", (_name, patch, loc, type) => {
    expect(refusal(TaskSpecSchema, { ...task, ...patch })).toEqual([{ loc, msg: expect.any(String), type }]);
  });

  it("accepts a lease of exactly the 5-second floor", () => {
    expect(parsed(TaskSpecSchema, { ...task, lease_seconds: 5 }).lease_seconds).toBe(5);
  });

  it.each([
    [5, 5],
    [60, 60],
    [3600, 3600],
    [3601, 3600],
    [1e9, 3600],
  ])("clamps a lease of %s s to %s s", (asked, granted) => {
    expect(clampLeaseSeconds(asked)).toBe(granted);
  });

  it("accepts every task state and only those", () => {
    for (const state of TASK_STATES) expect(TaskStateSchema.safeParse(state).success).toBe(true);
    expect(TaskStateSchema.safeParse("pending").success).toBe(false);
    expect(TERMINAL_TASK_STATES).toEqual(["COMPLETED", "FAILED", "CANCELLED"]);
  });

  const lease = {
    schema_version: "v1alpha1",
    lease_id: "ls-0123456789ab",
    task_id: "task-000",
    job_id: "0123456789ab",
    node_id: "node-a",
    attempt_number: 1,
    deadline: "2026-11-29T13:43:49.123Z",
    payload: { module: "flashml_workloads.sklearn_trial" },
  };

  it("parses a lease as the coordinator serves it", () => {
    expect(parsed(LeaseSchema, lease)).toEqual(lease);
  });

  it.each([
    ["a lease id without the ls- prefix", { lease_id: "0123456789ab" }, "lease_id"],
    ["a lease id with uppercase hex", { lease_id: "ls-0123456789AB" }, "lease_id"],
    ["attempt number 0 (attempts are 1-based)", { attempt_number: 0 }, "attempt_number"],
    ["a deadline that is not a timestamp", { deadline: "soon" }, "deadline"],
  ])("refuses a lease with %s", (_name, patch, field) => {
    expect(refusal(LeaseSchema, { ...lease, ...patch }).map((d) => d.loc)).toEqual([["body", field]]);
  });
});

describe("attempt request bodies", () => {
  it("defaults a claim without job_id to any job", () => {
    expect(parsed(ClaimRequestSchema, { node_id: "node-a" })).toEqual({ node_id: "node-a", job_id: null });
    expect(parsed(ClaimRequestSchema, { node_id: "node-a", job_id: null }).job_id).toBeNull();
  });

  it.each([
    ["no node_id", {}, ["body", "node_id"], "missing"],
    ["a numeric job_id", { node_id: "n", job_id: 5 }, ["body", "job_id"], "string_type"],
  ])("refuses a claim with %s", (_name, body, loc, type) => {
    expect(refusal(ClaimRequestSchema, body)).toEqual([{ loc, msg: expect.any(String), type }]);
  });

  const sha = "0123456789abcdef".repeat(4);

  it("accepts a complete whose evidence block is badly typed: evidence never refuses a commit", () => {
    const req = parsed(CompleteRequestSchema, { output_sha256: sha, evidence: { wall_seconds: "fast" } });
    expect(req.output_sha256).toBe(sha);
    expect(parseEvidence(req.evidence)).toBeNull();
  });

  it("accepts a complete without evidence, as every older agent sends it", () => {
    expect(parsed(CompleteRequestSchema, { output_sha256: sha }).evidence).toBeUndefined();
  });

  it.each([
    ["no output_sha256", {}, "missing"],
    ["a numeric output_sha256", { output_sha256: 123 }, "string_type"],
    ["a 63-character output_sha256", { output_sha256: sha.slice(1) }, "string_pattern_mismatch"],
    ["a 65-character output_sha256", { output_sha256: `${sha}0` }, "string_pattern_mismatch"],
    ["an uppercase output_sha256", { output_sha256: sha.toUpperCase() }, "string_pattern_mismatch"],
    ["a non-hex output_sha256", { output_sha256: `${sha.slice(1)}g` }, "string_pattern_mismatch"],
    ["a prefixed output_sha256", { output_sha256: `sha256:${sha}` }, "string_pattern_mismatch"],
    ["an empty output_sha256", { output_sha256: "" }, "string_pattern_mismatch"],
  ])("refuses a complete with %s", (_name, body, type) => {
    expect(refusal(CompleteRequestSchema, body)).toEqual([
      { loc: ["body", "output_sha256"], msg: expect.any(String), type },
    ]);
  });

  it("requires a reason on fail, as the reference does", () => {
    expect(parsed(FailRequestSchema, { reason: "exit code 1" })).toEqual({ reason: "exit code 1" });
    expect(refusal(FailRequestSchema, {})).toEqual([
      { loc: ["body", "reason"], msg: "Field required", type: "missing" },
    ]);
    expect(refusal(FailRequestSchema, { reason: 1 })[0]?.type).toBe("string_type");
  });
});

describe("execution evidence", () => {
  const full = {
    wall_seconds: 12.5,
    cpu_percent_mean: 87.1,
    gpu_util_percent_mean: 0,
    image_digest: `sha256:${"a".repeat(64)}`,
    exit_code: 0,
  };

  it.each([
    ["absent evidence", undefined, null],
    ["null evidence", null, null],
    ["a string", "fast", null],
    ["a list", [12.5], null],
    ["a wrongly typed field", { wall_seconds: "12.5" }, null],
    ["a fractional exit code", { exit_code: 1.5 }, null],
    ["a boolean exit code", { exit_code: false }, null],
  ])("records %s as absent", (_name, value, expected) => {
    expect(parseEvidence(value)).toBe(expected);
  });

  it("keeps a complete block as reported", () => {
    expect(parseEvidence(full)).toEqual(full);
  });

  it("keeps a measured 0 distinct from an unmeasured null", () => {
    const evidence = parseEvidence({ gpu_util_percent_mean: 0, cpu_percent_mean: null });
    expect(evidence?.gpu_util_percent_mean).toBe(0);
    expect(evidence?.cpu_percent_mean).toBeNull();
  });

  it("reads an empty block as nothing measured", () => {
    expect(parseEvidence({})).toEqual({
      wall_seconds: null,
      cpu_percent_mean: null,
      gpu_util_percent_mean: null,
      image_digest: "",
      exit_code: null,
    });
  });

  it("records implausible readings rather than refusing them, and drops unknown fields", () => {
    expect(parseEvidence({ cpu_percent_mean: 400, wall_seconds: -1, extra: "x" })).toEqual({
      wall_seconds: -1,
      cpu_percent_mean: 400,
      gpu_util_percent_mean: null,
      image_digest: "",
      exit_code: null,
    });
  });
});

describe("job spec", () => {
  it("completes the smallest valid spec with every default docs/protocol.md §3.3 lists", () => {
    expect(parsed(JobSpecSchema, minimalJob)).toEqual({
      apiVersion: "flashml.dev/v1alpha1",
      kind: "Job",
      metadata: { name: "sweep-1", labels: {} },
      spec: {
        execution: { backend: "ray", environment: "auto" },
        image: { repository: "ghcr.io/zolli-labs/trainer", tag: "1.4.2" },
        workload: { type: "command", parameters: {} },
        resources: { minimumWorkers: 2, maximumWorkers: 3, cpuPerTask: 1, memoryPerTask: "512Mi", gpuPerTask: 0 },
        placement: { pool: "any", architectures: ["amd64"] },
        isolation: { tier: "standard", allowFallback: false },
        retryPolicy: { maxTaskAttempts: 4, retryWorkerLoss: true },
        artifacts: { outputPrefix: "artifact://jobs/{job_id}/" },
      },
    });
  });

  it("fills the rest of a block that is only partly given", () => {
    const spec = parsed(JobSpecSchema, jobWith("execution", { backend: "leases" }));
    expect(spec.spec.execution).toEqual({ backend: "leases", environment: "auto" });
  });

  it("defaults apiVersion and kind when they are omitted", () => {
    const spec = parsed(JobSpecSchema, { metadata: minimalJob.metadata, spec: minimalJob.spec });
    expect([spec.apiVersion, spec.kind]).toEqual(["flashml.dev/v1alpha1", "Job"]);
  });

  it("accepts a ray backend: refusing it is the route's decision, not the schema's", () => {
    expect(parsed(JobSpecSchema, jobWith("execution", { backend: "ray" })).spec.execution.backend).toBe("ray");
  });

  it("accepts a team pool and keeps workload parameters as given", () => {
    const parameters = {
      command: ["python", "train.py", "--lr", "{lr}"],
      task_params: [{ lr: 0.1 }],
      lease_seconds: 120,
    };
    const spec = parsed(JobSpecSchema, {
      ...minimalJob,
      spec: { ...minimalJob.spec, workload: { type: "command", parameters }, placement: { pool: "team-a" } },
    });
    expect(spec.spec.workload.parameters).toEqual(parameters);
    expect(spec.spec.placement.pool).toBe("team-a");
  });

  it("ignores unknown fields in every block", () => {
    const spec = parsed(JobSpecSchema, {
      ...minimalJob,
      status: "whatever",
      metadata: { name: "sweep-1", namespace: "x" },
      spec: { ...minimalJob.spec, priority: 5, resources: { gpuType: "A100" } },
    });
    expect(spec).not.toHaveProperty("status");
    expect(spec.metadata).not.toHaveProperty("namespace");
    expect(spec.spec).not.toHaveProperty("priority");
    expect(spec.spec.resources).not.toHaveProperty("gpuType");
  });

  const rules: [string, unknown, (string | number)[], string, RegExp][] = [
    [
      "a name with uppercase and an underscore",
      { ...minimalJob, metadata: { name: "My_Job" } },
      ["body", "metadata", "name"],
      "value_error",
      /DNS-1123/,
    ],
    [
      "a name starting with a hyphen",
      { ...minimalJob, metadata: { name: "-job" } },
      ["body", "metadata", "name"],
      "value_error",
      /DNS-1123/,
    ],
    [
      "a name ending with a hyphen",
      { ...minimalJob, metadata: { name: "job-" } },
      ["body", "metadata", "name"],
      "value_error",
      /DNS-1123/,
    ],
    [
      "a 64-character name",
      { ...minimalJob, metadata: { name: "a".repeat(64) } },
      ["body", "metadata", "name"],
      "value_error",
      /max 63/,
    ],
    [
      "a name with a trailing newline",
      { ...minimalJob, metadata: { name: "job\n" } },
      ["body", "metadata", "name"],
      "value_error",
      /DNS-1123/,
    ],
    [
      "an empty name",
      { ...minimalJob, metadata: { name: "" } },
      ["body", "metadata", "name"],
      "value_error",
      /DNS-1123/,
    ],
    [
      "the image tag latest",
      jobWith("image", { repository: "r", tag: "latest" }),
      ["body", "spec", "image", "tag"],
      "value_error",
      /'latest' is not allowed/,
    ],
    [
      "an empty image tag",
      jobWith("image", { repository: "r", tag: "" }),
      ["body", "spec", "image", "tag"],
      "value_error",
      /must not be empty/,
    ],
    [
      "an image without a tag",
      jobWith("image", { repository: "r" }),
      ["body", "spec", "image", "tag"],
      "missing",
      /Field required/,
    ],
    [
      "maximumWorkers below minimumWorkers",
      jobWith("resources", { minimumWorkers: 4, maximumWorkers: 3 }),
      ["body", "spec", "resources", "maximumWorkers"],
      "value_error",
      /maximumWorkers must be >= minimumWorkers/,
    ],
    [
      "maximumWorkers below the default minimumWorkers",
      jobWith("resources", { maximumWorkers: 1 }),
      ["body", "spec", "resources", "maximumWorkers"],
      "value_error",
      /maximumWorkers must be >= minimumWorkers/,
    ],
    [
      "minimumWorkers 0",
      jobWith("resources", { minimumWorkers: 0 }),
      ["body", "spec", "resources", "minimumWorkers"],
      "greater_than_equal",
      /greater than or equal to 1/,
    ],
    [
      "cpuPerTask 0",
      jobWith("resources", { cpuPerTask: 0 }),
      ["body", "spec", "resources", "cpuPerTask"],
      "greater_than",
      /greater than 0/,
    ],
    [
      "a negative gpuPerTask",
      jobWith("resources", { gpuPerTask: -1 }),
      ["body", "spec", "resources", "gpuPerTask"],
      "greater_than_equal",
      /greater than or equal to 0/,
    ],
    [
      "a fractional gpuPerTask",
      jobWith("resources", { gpuPerTask: 1.5 }),
      ["body", "spec", "resources", "gpuPerTask"],
      "int_from_float",
      /fractional/,
    ],
    [
      'gpuPerTask "1"',
      jobWith("resources", { gpuPerTask: "1" }),
      ["body", "spec", "resources", "gpuPerTask"],
      "int_type",
      /valid integer/,
    ],
    [
      "gpuPerTask true",
      jobWith("resources", { gpuPerTask: true }),
      ["body", "spec", "resources", "gpuPerTask"],
      "int_type",
      /valid integer/,
    ],
    [
      "maxTaskAttempts 0",
      jobWith("retryPolicy", { maxTaskAttempts: 0 }),
      ["body", "spec", "retryPolicy", "maxTaskAttempts"],
      "greater_than_equal",
      /greater than or equal to 1/,
    ],
    [
      'maxTaskAttempts "4"',
      jobWith("retryPolicy", { maxTaskAttempts: "4" }),
      ["body", "spec", "retryPolicy", "maxTaskAttempts"],
      "int_type",
      /valid integer/,
    ],
    [
      "an outputPrefix outside artifact://",
      jobWith("artifacts", { outputPrefix: "s3://bucket/out/" }),
      ["body", "spec", "artifacts", "outputPrefix"],
      "value_error",
      /artifact:\/\/ scheme/,
    ],
    [
      "an unknown architecture",
      jobWith("placement", { architectures: ["amd64", "x86"] }),
      ["body", "spec", "placement", "architectures", 1],
      "literal_error",
      /'amd64' or 'arm64'/,
    ],
    [
      "an empty placement pool",
      jobWith("placement", { pool: "" }),
      ["body", "spec", "placement", "pool"],
      "value_error",
      /team pool id or "any"/,
    ],
    [
      "an unknown backend",
      jobWith("execution", { backend: "k8s" }),
      ["body", "spec", "execution", "backend"],
      "literal_error",
      /'ray' or 'leases'/,
    ],
    [
      "an unknown environment",
      jobWith("execution", { environment: "aws" }),
      ["body", "spec", "execution", "environment"],
      "literal_error",
      /'auto', 'local' or 'alibaba-ack'/,
    ],
    [
      'the tier "Sandboxed"',
      jobWith("isolation", { tier: "Sandboxed" }),
      ["body", "spec", "isolation", "tier"],
      "literal_error",
      /'standard' or 'sandboxed'/,
    ],
    [
      'allowFallback "true"',
      jobWith("isolation", { allowFallback: "true" }),
      ["body", "spec", "isolation", "allowFallback"],
      "bool_type",
      /valid boolean/,
    ],
    [
      "workload parameters that are a list",
      jobWith("workload", { type: "command", parameters: [] }),
      ["body", "spec", "workload", "parameters"],
      "dict_type",
      /dictionary/,
    ],
    [
      "a workload without a type",
      jobWith("workload", {}),
      ["body", "spec", "workload", "type"],
      "missing",
      /Field required/,
    ],
    [
      "a wrong apiVersion",
      { ...minimalJob, apiVersion: "flashml.dev/v1" },
      ["body", "apiVersion"],
      "literal_error",
      /'flashml.dev\/v1alpha1'/,
    ],
    ["a wrong kind", { ...minimalJob, kind: "Pod" }, ["body", "kind"], "literal_error", /'Job'/],
    [
      "no image",
      { ...minimalJob, spec: { workload: minimalJob.spec.workload } },
      ["body", "spec", "image"],
      "missing",
      /Field required/,
    ],
    [
      "no metadata",
      { apiVersion: minimalJob.apiVersion, spec: minimalJob.spec },
      ["body", "metadata"],
      "missing",
      /Field required/,
    ],
  ];
  it.each(rules)("refuses %s with a useful message", (_name, body, loc, type, message) => {
    const detail = refusal(JobSpecSchema, body);
    expect(detail).toHaveLength(1);
    expect(detail[0]).toEqual({ loc, type, msg: expect.stringMatching(message) });
  });

  it("reports every problem of a spec at once", () => {
    const body = {
      ...minimalJob,
      metadata: { name: "Bad" },
      spec: { ...minimalJob.spec, image: { repository: "r", tag: "latest" }, resources: { gpuPerTask: -1 } },
    };
    expect(refusal(JobSpecSchema, body).map((d) => d.loc.join("."))).toEqual([
      "body.metadata.name",
      "body.spec.image.tag",
      "body.spec.resources.gpuPerTask",
    ]);
  });
});

describe("job records and events", () => {
  it("keeps the reference's full event type enum so any value round-trips", () => {
    expect(EVENT_TYPES).toHaveLength(33);
    for (const type of EVENT_TYPES) expect(EventTypeSchema.parse(type)).toBe(type);
    expect(EventTypeSchema.safeParse("TASK_TELEPORTED").success).toBe(false);
  });

  it.each([
    "JOB_ACCEPTED",
    "BACKEND_SELECTED",
    "JOB_SUCCEEDED",
    "JOB_FAILED",
    "TASK_CREATED",
    "LEASE_CLAIMED",
    "LEASE_RENEWED",
    "LEASE_EXPIRED",
    "TASK_REQUEUED",
    "TASK_COMMIT_ACCEPTED",
    "TASK_COMMIT_REJECTED",
    "TASK_ATTEMPT_FAILED",
    "TASK_EXHAUSTED",
    "CHECKPOINT_PARTS_REGISTERED",
    "CHECKPOINT_MANIFEST_COMMITTED",
    "CHECKPOINT_REJECTED",
  ])("includes the event type %s this coordinator emits", (type) => {
    expect(EVENT_TYPES).toContain(type);
  });

  it("defaults an event's message and data", () => {
    const event = parsed(EventSchema, {
      job_id: "0123456789ab",
      type: "LEASE_CLAIMED",
      timestamp: "2026-11-29T13:43:49.123Z",
      source: "flashruntime.leases",
    });
    expect(event).toMatchObject({ schema_version: "v1alpha1", message: "", data: {} });
  });

  it("lists the job states with the last three terminal", () => {
    expect(JOB_STATES).toEqual(["PENDING", "SUBMITTED", "RUNNING", "RECOVERING", "SUCCEEDED", "FAILED", "CANCELLED"]);
    expect(TERMINAL_JOB_STATES).toEqual(["SUCCEEDED", "FAILED", "CANCELLED"]);
  });

  const record = {
    job_id: "0123456789ab",
    spec: minimalJob,
    state: "RUNNING",
    deployment_profile: "team-a",
    created_at: "2026-11-29T13:43:49.123Z",
  };

  it("defaults a job record to the leases backend, no error and no artifacts", () => {
    expect(parsed(JobRecordSchema, record)).toMatchObject({
      schema_version: "v1alpha1",
      backend: "leases",
      runtime_execution_id: null,
      finished_at: null,
      error: null,
      artifacts: [],
    });
  });

  it.each(["0123456789AB", "0123456789a", "job-1", ""])("refuses the job id %j", (job_id) => {
    expect(refusal(JobRecordSchema, { ...record, job_id }).map((d) => d.loc)).toEqual([["body", "job_id"]]);
  });
});

describe("artifacts and checkpoints", () => {
  const part = { key: "shard-0.pt", sha256: "ab".repeat(32), size_bytes: 1024 };

  it("defaults a checkpoint commit to world size 1 with no framework or strategy", () => {
    expect(
      parsed(CommitCheckpointRequestSchema, {
        attempt_id: "ls-0123456789ab",
        step: 400,
        expected_parts: [part],
        storage_prefix: "ck/",
      }),
    ).toEqual({
      attempt_id: "ls-0123456789ab",
      step: 400,
      expected_parts: [part],
      storage_prefix: "ck/",
      world_size: 1,
      framework: "",
      strategy_family: "",
    });
  });

  it("accepts a commit with zero parts: the pool refuses it with 409, not the schema with 422", () => {
    expect(
      refusal(CommitCheckpointRequestSchema, { attempt_id: "a", step: 0, expected_parts: [], storage_prefix: "p" }),
    ).toEqual([]);
  });

  const commit = { attempt_id: "a", step: 1, expected_parts: [part], storage_prefix: "p" };
  it.each([
    ["world size 0", { world_size: 0 }, ["body", "world_size"], "greater_than_equal"],
    ["a negative step", { step: -1 }, ["body", "step"], "greater_than_equal"],
    ['step "1"', { step: "1" }, ["body", "step"], "int_type"],
    [
      "a part with a negative size",
      { expected_parts: [{ ...part, size_bytes: -1 }] },
      ["body", "expected_parts", 0, "size_bytes"],
      "greater_than_equal",
    ],
    [
      "a part without a hash",
      { expected_parts: [{ key: "k", size_bytes: 1 }] },
      ["body", "expected_parts", 0, "sha256"],
      "missing",
    ],
  ])("refuses a checkpoint commit with %s", (_name, patch, loc, type) => {
    expect(refusal(CommitCheckpointRequestSchema, { ...commit, ...patch })).toEqual([
      { loc, msg: expect.any(String), type },
    ]);
  });

  it("parses a part registration and refuses one without its part", () => {
    expect(parsed(RegisterPartRequestSchema, { attempt_id: "a", step: 0, part })).toEqual({
      attempt_id: "a",
      step: 0,
      part,
    });
    expect(refusal(RegisterPartRequestSchema, { attempt_id: "a", step: 0 })).toEqual([
      { loc: ["body", "part"], msg: "Field required", type: "missing" },
    ]);
  });

  const manifest = {
    manifest_id: "ck-0123456789ab",
    job_id: "0123456789ab",
    attempt_id: "a",
    step: 400,
    world_size: 4,
    storage_prefix: "p",
    parts: [part],
    validation: "hash_verified",
    created: "2026-11-29T13:43:49.123Z",
  };

  it("defaults a manifest's compatible world sizes to its own world size", () => {
    expect(parsed(CheckpointManifestSchema, manifest).compatible_world_sizes).toEqual([4]);
    expect(
      parsed(CheckpointManifestSchema, { ...manifest, compatible_world_sizes: [2, 4, 8] }).compatible_world_sizes,
    ).toEqual([2, 4, 8]);
  });

  it("refuses a manifest with an unknown validation state", () => {
    expect(refusal(CheckpointManifestSchema, { ...manifest, validation: "trusted" })[0]?.type).toBe("literal_error");
  });

  const artifact = {
    uri: "artifact://jobs/0123456789ab/task-000/metrics.json",
    backend: "local",
    bucket: "flashedge-artifacts",
    object_key: "jobs/0123456789ab/task-000/metrics.json",
    etag: '"abc"',
    sha256: "ab".repeat(32),
    size_bytes: 17,
    created_at: "2026-11-29T13:43:49.123Z",
  };

  it("parses an artifact record as the coordinator serves it", () => {
    expect(parsed(ArtifactRecordSchema, artifact)).toEqual({ schema_version: "v1alpha1", ...artifact });
  });

  it.each(["minio", "oss"])("refuses the artifact backend %s: the enum is closed to local", (backend) => {
    expect(refusal(ArtifactRecordSchema, { ...artifact, backend })[0]?.loc).toEqual(["body", "backend"]);
  });
});
