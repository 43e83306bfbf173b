// @ts-check
// The demo's cast: the simulated fleet (what each node says about itself,
// and how it misbehaves), the cheater that joins for the verified-results
// step, the operator, this run's tokens, and the jobs, each showing off a
// placement gate.

import { randomBytes } from "node:crypto";

/** @import { JobSpec } from "../../test/support/index.mjs" */

/**
 * @typedef {object} FleetNode
 * @property {string} node_id
 * @property {string} note
 * @property {{ cpu_cores: number, gpus?: Gpu[] }} capabilities
 * @property {boolean} [dies]
 * @property {boolean} [broken] fails every task it takes
 * @property {boolean} [cheats] commits made-up metrics without doing the work
 * @property {boolean} [argv_capable]
 * @property {boolean} [sandbox_capable]
 * @property {string[]} [local_datasets]
 */

/** @typedef {{ index: number, name: string, memory_total_mb: number, compute_capability: string, driver_version: string }} Gpu */

/**
 * `n` GPUs as the agent's probe reports them.
 * @param {number} n
 * @param {string} name
 * @param {number} memoryMb
 * @param {string} capability
 * @returns {Gpu[]}
 */
export const gpu = (n, name, memoryMb, capability) =>
  Array.from({ length: n }, (_, index) => ({
    index,
    name,
    memory_total_mb: memoryMb,
    compute_capability: capability,
    driver_version: "550.54.15",
  }));

/**
 * What each simulated node says about itself on registration.
 * @type {FleetNode[]}
 */
export const FLEET = [
  { node_id: "cpu-1", note: "CPU only", capabilities: { cpu_cores: 8 } },
  { node_id: "cpu-2", note: "CPU only — dies mid-task", capabilities: { cpu_cores: 4 }, dies: true },
  {
    node_id: "gpu-1",
    note: "1 × NVIDIA H100 80 GB — a data-centre card",
    capabilities: { cpu_cores: 32, gpus: gpu(1, "NVIDIA H100 80GB HBM3", 81920, "9.0") },
  },
  {
    node_id: "gpu-broken",
    note: "1 × GeForce RTX 3060, 12 GB — a consumer card, faulty: fails every task it takes",
    capabilities: { cpu_cores: 8, gpus: gpu(1, "NVIDIA GeForce RTX 3060", 12288, "8.6") },
    broken: true,
  },
  {
    node_id: "gpu-2",
    note: "2 × NVIDIA A100 40 GB, runs argv but has no sandbox",
    capabilities: { cpu_cores: 32, gpus: gpu(2, "NVIDIA A100-SXM4-40GB", 40960, "8.0") },
    argv_capable: true,
  },
  {
    node_id: "data-1",
    note: "offers local dataset 'patients', sandboxed argv",
    capabilities: { cpu_cores: 8 },
    local_datasets: ["patients"],
    argv_capable: true,
    sandbox_capable: true,
  },
  {
    node_id: "sandbox-1",
    note: "sandboxed argv",
    capabilities: { cpu_cores: 8 },
    argv_capable: true,
    sandbox_capable: true,
  },
];

/**
 * Joins for the verified-results step only, so the steps before it never
 * see it. Its id is no fleet node's.
 * @type {FleetNode}
 */
export const CHEATER = {
  node_id: "cheat-1",
  note: "CPU only — commits made-up metrics without doing the work",
  capabilities: { cpu_cores: 8 },
  cheats: true,
};

/**
 * Who sends a request: the operator (the demo submitting jobs and watching
 * them), or a node (its agent, FleetNode).
 * @typedef {{ operator: string } | FleetNode} Caller
 */
/** The demo as the operator `demo` (FLASHML_OPERATOR_TOKENS). */
export const OPERATOR = { operator: "demo" };

/**
 * This run's tokens (docs/protocol.md §9), made fresh each run and given to the
 * coordinator it starts: one per node it simulates, the cheater included,
 * and one for the operator.
 */
export const TOKENS = {
  operator: randomBytes(24).toString("hex"),
  nodes: new Map([...FLEET, CHEATER].map((n) => [n.node_id, randomBytes(24).toString("hex")])),
};

/** What the broken node's agent reports for every attempt. */
export const BROKEN_REASON = "CUDA error: an illegal memory access was encountered";
/** The label that ranks a job in the claim order (docs/protocol.md §13). */
export const PRIORITY_LABEL = "flashml.dev/priority";
/** The labels that ask for a kind of GPU (docs/protocol.md §4 gate 4). */
export const GPU_MEMORY_LABEL = "flashml.dev/gpu-memory-mb";
export const GPU_CAPABILITY_LABEL = "flashml.dev/gpu-compute-capability";
/** The label that runs each task of a job on this many nodes (docs/protocol.md §14). */
export const REPLICAS_LABEL = "flashml.dev/replicas";
/** The replicas the cheater tries to copy from: r1 to r{COPY_REPLICAS}, but its own. */
export const COPY_REPLICAS = 4;
/** What the cheater reports for every task, whatever the task. */
export const FAKE_METRICS = { accuracy: 0.99 };
/** The run time the cheater's first commit claims: far more than passes. */
export const LIE_SECONDS = 30;

/**
 * @param {string} name
 * @param {{ type: string, parameters: { local_inputs?: string[], [name: string]: unknown } }} workload
 * @param {{ resources?: { gpuPerTask: number }, isolation?: { tier: string } }} [spec]
 * @param {Record<string, string>} [labels]
 */
export function jobSpec(name, workload, spec = {}, labels = {}) {
  return {
    apiVersion: "flashml.dev/v1alpha1",
    kind: "Job",
    metadata: { name, labels: /** @type {Record<string, string>} */ ({ demo: "fleet", ...labels }) },
    spec: {
      execution: { backend: "leases" },
      image: { repository: "ghcr.io/flashml/runner", tag: "0.4.1" },
      workload,
      // A task the broken node failed goes to another node while one is
      // idle (docs/protocol.md §13 rule 4); when every other GPU node is busy it may come
      // back to the broken node, which is held back after 5 failures in a
      // row: 6 attempts let no task run out on the broken node alone.
      retryPolicy: { maxTaskAttempts: 6 },
      ...spec,
    },
  };
}

/**
 * Submitted in this order; `gate` is what the job shows off. A `later` job
 * is submitted once the fleet is busy and the broken node is held back; a
 * `verified` job once the fleet's jobs are done, for the cheater's step.
 * @type {{ gate: string, unplaceable?: boolean, later?: boolean, verified?: boolean, spec: ReturnType<typeof jobSpec> }[]}
 */
export const JOBS = [
  {
    gate: "gpu: only nodes with a GPU",
    spec: jobSpec(
      "gpu-training",
      {
        type: "hyperparameter_search",
        parameters: { trials: [{ lr: 0.1 }, { lr: 0.03 }, { lr: 0.01 }, { lr: 0.003 }], lease_seconds: 10 },
      },
      { resources: { gpuPerTask: 1 } },
    ),
  },
  {
    gate: "local_data: only the node that holds 'patients'",
    spec: jobSpec(
      "patient-stats",
      {
        type: "command",
        parameters: {
          command: ["python", "-m", "stats", "--shard", "{shard}"],
          task_params: [{ shard: 0 }, { shard: 1 }, { shard: 2 }],
          local_inputs: ["patients"],
          lease_seconds: 10,
        },
      },
      { isolation: { tier: "sandboxed" } },
    ),
  },
  {
    gate: "argv + isolation: only sandbox-capable argv nodes",
    spec: jobSpec(
      "sandboxed-eval",
      {
        type: "command",
        parameters: {
          command: ["./evaluate.sh", "--case", "{case}"],
          task_params: [{ case: "a" }, { case: "b" }, { case: "c" }, { case: "d" }],
          lease_seconds: 10,
        },
      },
      { isolation: { tier: "sandboxed" } },
    ),
  },
  {
    gate: "none: any node",
    spec: jobSpec("plain-search", {
      type: "hyperparameter_search",
      parameters: { grid: { C: [0.1, 1, 10], kernel: ["linear", "rbf"], seed: [1, 2] }, lease_seconds: 6 },
    }),
  },
  {
    gate: "gpu: ≥ 64 GB and compute capability 8.0 per GPU — only the 80 GB card",
    spec: jobSpec(
      "llm-finetune",
      {
        type: "hyperparameter_search",
        parameters: { trials: [{ lr: 2e-5 }, { lr: 1e-5 }, { lr: 5e-6 }], lease_seconds: 10 },
      },
      { resources: { gpuPerTask: 1 } },
      { [GPU_MEMORY_LABEL]: "65536", [GPU_CAPABILITY_LABEL]: "8.0" },
    ),
  },
  {
    gate: "gpu: 2 GPUs with ≥ 80 GB each — no node has that",
    unplaceable: true,
    spec: jobSpec(
      "needs-2x80g",
      { type: "hyperparameter_search", parameters: { trials: [{}, {}] } },
      { resources: { gpuPerTask: 2 } },
      { [GPU_MEMORY_LABEL]: "81920" },
    ),
  },
  {
    gate: "gpu: needs 8 GPUs — no node has them",
    unplaceable: true,
    spec: jobSpec(
      "needs-8-gpus",
      { type: "hyperparameter_search", parameters: { trials: [{}] } },
      { resources: { gpuPerTask: 8 } },
    ),
  },
  {
    gate: "none: any node, priority 10",
    later: true,
    spec: jobSpec(
      "urgent-eval",
      {
        type: "hyperparameter_search",
        parameters: { trials: [{ ckpt: 1 }, { ckpt: 2 }, { ckpt: 3 }], lease_seconds: 6 },
      },
      {},
      { [PRIORITY_LABEL]: "10" },
    ),
  },
  {
    gate: `none: any node, each task on 2 of them (${REPLICAS_LABEL}: "2")`,
    verified: true,
    spec: jobSpec(
      "verified-eval",
      {
        type: "hyperparameter_search",
        parameters: { trials: Array.from({ length: 8 }, (_, i) => ({ seed: i + 1 })), lease_seconds: 10 },
      },
      {},
      { [REPLICAS_LABEL]: "2" },
    ),
  },
];
