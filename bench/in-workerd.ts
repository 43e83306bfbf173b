// What the in-workerd benches share: a stored registration, and timing in
// workerd, whose clock moves in 1 ms steps during synchronous code.

import { type NodeRegistration, NodeRegistrationSchema } from "../src/protocol/nodes";
import type { TaskSpec } from "../src/protocol/tasks";

/** A registration as the register route stores it: parsed, defaults applied. */
export function registration(nodeId: string, gpus: number): NodeRegistration {
  return NodeRegistrationSchema.parse({
    node_id: nodeId,
    kubernetes_node: "",
    hostname: `${nodeId}.bench`,
    capabilities: {
      cpu_cores: 8,
      memory_bytes: 16e9,
      gpus: Array.from({ length: gpus }, (_, index) => ({
        index,
        name: "A10G",
        memory_total_mb: 22731,
        compute_capability: "8.6",
        driver_version: "535.54.03",
      })),
      os: "linux",
      architecture: "amd64",
    },
    pool: "bench",
  });
}

/** Waits for the next 1 ms clock step, so a timed batch starts on an edge. */
export function alignToClockStep(): number {
  const edge = performance.now();
  let t = edge;
  while (t === edge) t = performance.now();
  return t;
}

/** One decimal place. */
export const round = (x: number) => Math.round(x * 10) / 10;

/** A hyperparameter trial as a recipe stamps it: task `trial-{i}` of `jobId`, a module task, optionally needing GPUs. */
export function trialTask(jobId: string, i: number, gpus = 0): TaskSpec {
  const taskId = `trial-${String(i).padStart(6, "0")}`;
  return {
    schema_version: "v1alpha1",
    task_id: taskId,
    job_id: jobId,
    payload: {
      module: "flashml_workloads.sklearn_trial",
      params: { C: (i % 97) / 10, kernel: "rbf", seed: i },
      inputs: {},
      output_prefix: `jobs/${jobId}/${taskId}/`,
      task_id: taskId,
      image: "r:1",
      isolation: { tier: "standard", allowFallback: false },
      ...(gpus > 0 ? { gpus } : {}),
    } as TaskSpec["payload"],
    commit_key: `jobs/${jobId}/${taskId}/metrics.json`,
    max_attempts: 3,
    lease_seconds: 60,
    max_worker_losses: 0,
  };
}

export type Kind = "plain" | "gpu" | "gpu-memory" | "local";
export const KIND_OF_SLOT: readonly Kind[] = [
  "plain",
  "plain",
  "plain",
  "plain",
  "plain",
  "plain",
  "plain",
  "gpu",
  "gpu-memory",
  "local",
];

export function kindOf(payload: Record<string, unknown>): Kind {
  if (payload.gpus === 1) return payload.gpu_memory_mb === undefined ? "gpu" : "gpu-memory";
  return payload.local_inputs ? "local" : "plain";
}

/**
 * The mix: 70% plain, 20% `gpus: 1`, 10% `local_inputs: ["ds-a"]`,
 * interleaved. Of the GPU tasks (issue 26), half need compute capability
 * 8.0, half 16 GB, capability 8.0 and driver 535 on each GPU: two classes
 * the bench's A10G serves.
 */
export function mixedTask(jobId: string, i: number, kind: Kind = KIND_OF_SLOT[i % 10]!): TaskSpec {
  const task = trialTask(jobId, i, kind === "gpu" || kind === "gpu-memory" ? 1 : 0);
  if (kind === "gpu") task.payload.gpu_compute_capability = "8.0";
  if (kind === "gpu-memory") {
    Object.assign(task.payload, { gpu_memory_mb: 16384, gpu_compute_capability: "8.0", gpu_driver_version: "535" });
  }
  if (kind === "local") task.payload.local_inputs = ["ds-a"];
  return task;
}

/** Mean µs per call of `op` over `n` calls, timed as one batch. */
export function timeBatch(n: number, op: (i: number) => void): number {
  const t0 = alignToClockStep();
  for (let i = 0; i < n; i++) op(i);
  return ((performance.now() - t0) * 1000) / n;
}
