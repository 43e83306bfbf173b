// GPU requirements beyond a count (docs/protocol.md §4 gate 4) through the real Worker:
// a job's GPU labels reach every task of every recipe, only a node whose
// GPUs qualify is leased them, the placement report says why, and a
// malformed label is a 422 naming it.

import { describe, expect, it } from "vitest";
import type { Lease } from "../../../src/protocol/tasks";
import {
  ARGV_NODE,
  call,
  claim,
  commandJob,
  freshPool,
  jobSpec,
  json,
  register,
  submitJob,
  trialsJob,
} from "../helpers";

const LABELS = {
  "flashml.dev/gpu-memory-mb": "40960",
  "flashml.dev/gpu-compute-capability": "8.0",
  "flashml.dev/gpu-driver-version": "535",
};
const STAMPED = { gpus: 1, gpu_memory_mb: 40960, gpu_compute_capability: "8.0", gpu_driver_version: "535" };

const RTX_3060 = {
  index: 0,
  name: "GeForce RTX 3060",
  memory_total_mb: 12288,
  compute_capability: "8.6",
  driver_version: "550.54",
};
const V100 = {
  index: 0,
  name: "Tesla V100-SXM2-32GB",
  memory_total_mb: 32768,
  compute_capability: "7.0",
  driver_version: "535.104",
};
const A100_80 = {
  index: 0,
  name: "A100-SXM4-80GB",
  memory_total_mb: 81920,
  compute_capability: "8.0",
  driver_version: "535.104.05",
};
const A100_OLD_DRIVER = { ...A100_80, driver_version: "470.82.01" };

/** Registers a node with these GPUs that passes every other gate (argv, sandbox). */
async function gpuNode(pool: string, nodeId: string, ...gpus: object[]) {
  await register(pool, nodeId, {
    ...ARGV_NODE,
    capabilities: {
      cpu_cores: 16,
      gpus: gpus.map((g, index) => ({ ...g, index })),
      os: "linux",
      architecture: "amd64",
    },
  });
}

function labelled(spec: ReturnType<typeof jobSpec>, labels: Record<string, string> = LABELS) {
  return { ...spec, metadata: { ...spec.metadata, labels } };
}

const ONE_GPU = { resources: { gpuPerTask: 1 } };
const RECIPES: Array<[string, ReturnType<typeof jobSpec>]> = [
  ["command", commandJob({}, { isolation: { tier: "sandboxed" }, ...ONE_GPU })],
  ["hyperparameter_search", trialsJob(2, {}, ONE_GPU)],
  [
    "sharded_kmeans",
    jobSpec(
      {
        type: "sharded_kmeans",
        parameters: { shards: ["artifact://kmeans/shard-0.csv"], centroids: [[0, 0]], iteration: 1 },
      },
      ONE_GPU,
    ),
  ],
  [
    "federated_averaging",
    jobSpec(
      {
        type: "federated_averaging",
        parameters: {
          local_steps: 1,
          lr: 0.1,
          batch_size: 8,
          seed: 1,
          in_dim: 2,
          hidden: 2,
          out_dim: 1,
          dataset_size: 16,
          num_shards: 1,
          round: 0,
          weights: "artifact://fedavg/round-0.json",
        },
      },
      ONE_GPU,
    ),
  ],
];

describe("a job's GPU labels", () => {
  it.each(RECIPES)(
    "%s: the tasks carry the fields, and only a node whose GPUs all qualify is leased one",
    async (_type, spec) => {
      const pool = freshPool();
      await gpuNode(pool, "consumer-12g", RTX_3060);
      await gpuNode(pool, "volta", V100);
      await gpuNode(pool, "old-driver", A100_OLD_DRIVER);
      await gpuNode(pool, "cpu-only");
      await gpuNode(pool, "dc-80g", A100_80);
      const job = await submitJob(pool, labelled(spec));
      for (const refused of ["consumer-12g", "volta", "old-driver", "cpu-only"]) {
        expect((await claim(pool, refused)).status, refused).toBe(204);
      }
      const r = await claim(pool, "dc-80g");
      expect(r.status).toBe(200);
      const lease = await json<Lease>(r);
      expect(lease.job_id).toBe(job.job_id);
      expect(lease.payload).toMatchObject(STAMPED);
    },
  );

  it("the placement report names the unmet requirement and how many GPUs qualify", async () => {
    const pool = freshPool();
    await gpuNode(pool, "consumer-12g", RTX_3060);
    await gpuNode(pool, "two-gpu-box", A100_80, RTX_3060);
    await gpuNode(pool, "volta", V100);
    const job = await submitJob(
      pool,
      labelled(commandJob({}, { resources: { gpuPerTask: 2 } }), { "flashml.dev/gpu-memory-mb": "40960" }),
    );
    const report = await json<{ nodes: Array<{ node_id: string; reason?: string }>; unplaceable: boolean }>(
      await call(pool, "GET", `/jobs/${job.job_id}/tasks/task-000/placement`),
    );
    expect(report.unplaceable).toBe(true);
    expect(Object.fromEntries(report.nodes.map((n) => [n.node_id, n.reason]))).toEqual({
      "consumer-12g": "gpu: task needs 2 GPUs, node advertises 1",
      "two-gpu-box": "gpu: task needs 2 GPUs with ≥ 40960 MB, node has 1 such of 2",
      volta: "gpu: task needs 2 GPUs, node advertises 1",
    });
  });

  it.each([
    ["flashml.dev/gpu-memory-mb", "", ONE_GPU, "must be a whole number of MB"],
    ["flashml.dev/gpu-memory-mb", "40 GB", ONE_GPU, "must be a whole number of MB"],
    ["flashml.dev/gpu-compute-capability", "8", ONE_GPU, 'must be a compute capability "M.m"'],
    ["flashml.dev/gpu-driver-version", "r535", ONE_GPU, "must be a driver version"],
    ["flashml.dev/gpu-memory-mb", "40960", {}, "spec.resources.gpuPerTask is 0"],
  ])("label %s = %j is a 422 naming it, and queues nothing", async (label, value, spec, says) => {
    const pool = freshPool();
    const r = await call(pool, "POST", "/jobs", labelled(trialsJob(1, {}, spec), { [label]: value }));
    expect(r.status).toBe(422);
    const { detail } = await json<{ detail: string }>(r);
    expect(detail).toContain(`label '${label}'`);
    expect(detail).toContain(says);
    const jobs = await json<unknown[]>(await call(pool, "GET", "/jobs"));
    expect(jobs).toEqual([]);
  });
});
