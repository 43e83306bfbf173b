// GET /v1alpha1/jobs/{job}/tasks/{task}/placement (docs/protocol.md §11): every
// registered node's gate answer for one task, through the real Worker; for
// a replicated task (docs/protocol.md §14) its replicas, and the nodes that may not run
// another one.

import { describe, expect, it } from "vitest";
import type { Lease } from "../../../src/protocol/tasks";
import type { Report } from "../../fixtures/placement-report";
import {
  ARGV_NODE,
  call,
  claim,
  commandJob,
  freshPool,
  insertTasks,
  json,
  register,
  submitJob,
  task,
  trialsJob,
} from "../helpers";

async function placement(pool: string, jobId: string, taskId: string) {
  return call(pool, "GET", `/jobs/${encodeURIComponent(jobId)}/tasks/${encodeURIComponent(taskId)}/placement`);
}

describe("placement explanations", () => {
  it("a 2-GPU task needing a dataset is explained node by node, grouped in the summary", async () => {
    const pool = freshPool();
    // Argv nodes: a command job is what carries local_inputs, and its argv must not be the refusal.
    await register(pool, "cpu-1", { ...ARGV_NODE, local_datasets: ["patients"] });
    await register(pool, "gpu-1", { ...ARGV_NODE, local_datasets: ["patients"] }, 1);
    await register(pool, "gpu-4", ARGV_NODE, 4);
    const job = await submitJob(pool, commandJob({ local_inputs: ["patients"] }, { resources: { gpuPerTask: 2 } }));

    const r = await placement(pool, job.job_id, "task-000");
    expect(r.status).toBe(200);
    expect(await json<Report>(r)).toEqual({
      job_id: job.job_id,
      task_id: "task-000",
      state: "PENDING",
      nodes: [
        {
          node_id: "cpu-1",
          online: true,
          status: "online",
          eligible: false,
          gate: "gpu",
          reason: "gpu: task needs 2 GPUs, node advertises 0",
        },
        {
          node_id: "gpu-1",
          online: true,
          status: "online",
          eligible: false,
          gate: "gpu",
          reason: "gpu: task needs 2 GPUs, node advertises 1",
        },
        {
          node_id: "gpu-4",
          online: true,
          status: "online",
          eligible: false,
          gate: "local_data",
          reason: "local_data: node does not offer dataset 'patients'",
        },
      ],
      unplaceable: true,
      summary: "0/3 nodes eligible: 2 × gpu (task needs 2 GPUs), 1 × local_data (missing dataset 'patients')",
      // Nothing is ahead of it in the claim order: only the gate holds it (docs/protocol.md §13).
      queue: {
        priority: 0,
        tenant: "default",
        higher_priority: 0,
        earlier_in_job: 0,
        other_tenants: 0,
        other_jobs: 0,
        failed_on: [],
        eligible_held_back: 0,
      },
      waiting: "next in line",
      replicas: null,
    });
  });

  it("a task some node can take is not unplaceable, and the eligible node carries no gate", async () => {
    const pool = freshPool();
    await register(pool, "cpu-1");
    await register(pool, "gpu-1", {}, 1);
    const job = await submitJob(pool, trialsJob(1, {}, { resources: { gpuPerTask: 1 } }));
    const report = await json<Report>(await placement(pool, job.job_id, "trial-000"));
    expect(report.unplaceable).toBe(false);
    expect(report.summary).toBe("1/2 nodes eligible: 1 × gpu (task needs 1 GPU)");
    expect(report.nodes[1]).toEqual({ node_id: "gpu-1", online: true, status: "online", eligible: true });
  });

  it("agrees with the claim path: the node it calls eligible is the one that gets the lease", async () => {
    const pool = freshPool();
    await register(pool, "plain");
    await register(pool, "sandbox", ARGV_NODE);
    const job = await submitJob(pool, commandJob());
    const report = await json<Report>(await placement(pool, job.job_id, "task-000"));
    expect(report.nodes.filter((n) => n.eligible).map((n) => n.node_id)).toEqual(["sandbox"]);
    expect((await claim(pool, "plain")).status).toBe(204);
    const lease = await json<Lease>(await claim(pool, "sandbox"));
    expect(lease).toMatchObject({ job_id: job.job_id, task_id: "task-000" });
    // The report shows the task's current state.
    expect((await json<Report>(await placement(pool, job.job_id, "task-000"))).state).toBe("LEASED");
  });

  it("with no node registered the task is unplaceable", async () => {
    const pool = freshPool();
    const job = await submitJob(pool, trialsJob(1));
    const report = await json<Report>(await placement(pool, job.job_id, "trial-000"));
    expect(report).toMatchObject({ nodes: [], unplaceable: true, summary: "0/0 nodes eligible: no nodes registered" });
  });

  it("a draining node is reported with its status, still judged by the gate alone", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await call(pool, "POST", "/nodes/n1/heartbeat", { node_id: "n1", status: "draining" });
    const job = await submitJob(pool, trialsJob(1));
    const report = await json<Report>(await placement(pool, job.job_id, "trial-000"));
    expect(report.nodes).toEqual([{ node_id: "n1", online: true, status: "draining", eligible: true }]);
  });

  it("explains a task of a submitted job from its stored payload", async () => {
    const pool = freshPool();
    await register(pool, "cpu-1");
    const job = await submitJob(pool, trialsJob(1, {}, { resources: { gpuPerTask: 4 } }));
    const report = await json<Report>(await placement(pool, job.job_id, "trial-000"));
    expect(report.summary).toBe("0/1 nodes eligible: 1 × gpu (task needs 4 GPUs)");
  });

  it.each([
    ["an unknown job", "nope", "t1", "no such job: nope"],
    ["an unknown task of a known job", "JOB", "t9", "unknown task t9 in job JOB"],
  ])("404 for %s", async (_what, jobId, taskId, detail) => {
    const pool = freshPool();
    const job = await submitJob(pool, trialsJob(1));
    const realJob = jobId === "JOB" ? job.job_id : jobId;
    const r = await placement(pool, realJob, taskId);
    expect(r.status).toBe(404);
    expect(await json(r)).toEqual({ detail: detail.replace("JOB", job.job_id) });
  });

  it("a job and task id with spaces and non-ASCII characters round-trip through the URL", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    // No JobSpec makes such ids (job ids are hex, task ids the recipe's): insert the task.
    await insertTasks(pool, [task("j 1", "tâche-1")]);
    const r = await placement(pool, "j 1", "tâche-1");
    expect(r.status).toBe(200);
    expect(await json<Report>(r)).toMatchObject({ job_id: "j 1", task_id: "tâche-1", unplaceable: false });
  });
});
