// The placement report of a pool of shards (docs/sharding.md §10): the job's
// shard answers the task's facts, every shard its own registered nodes, and
// the Worker merges them into the one-shard body. Runs in the worker-shards
// project (4 shards); jobs and nodes are put on other shards through the
// object's own calls, as a spread pool will.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { storedNodeView } from "../../src/pool/nodes/registry";
import { NodeRegistrationSchema } from "../../src/protocol/nodes";
import type { PlacementReport } from "../../src/protocol/responses";
import { gateFor } from "../../src/rules/placement";
import { summarizePlacement } from "../../src/rules/placement-summary";
import { registryShard, shardOfHex } from "../../src/rules/shard-ids";
import { call, freshPool, json, register, registration, trialsJob } from "../worker/helpers";
import { shard, submitTo } from "./helpers";

const ONE_GPU = { resources: { gpuPerTask: 1 } };

/** Submits a one-task job straight to shard k; returns its job and task ids. */
async function submitOne(pool: string, k: number, job: unknown): Promise<{ jobId: string; taskId: string }> {
  const jobId = await submitTo(pool, k, job);
  const taskId = await runInDurableObject(
    shard(pool, k),
    (_o, state) =>
      state.storage.sql.exec<{ task_id: string }>("SELECT task_id FROM tasks WHERE job_id = ?", jobId).one().task_id,
  );
  return { jobId, taskId };
}

async function reportOf(pool: string, jobId: string, taskId: string): Promise<PlacementReport> {
  const r = await call(pool, "GET", `/jobs/${jobId}/tasks/${taskId}/placement`);
  expect(r.status).toBe(200);
  return json<PlacementReport>(r);
}

/** The summary line one node set says for nodes of these GPU counts, judged against the task's stored payload. */
async function oneShardSummary(pool: string, k: number, jobId: string, gpus: number[]): Promise<string> {
  const payload = await runInDurableObject(
    shard(pool, k),
    (_o, state) =>
      state.storage.sql.exec<{ payload: string }>("SELECT payload FROM tasks WHERE job_id = ?", jobId).one().payload,
  );
  const gate = gateFor(JSON.parse(payload));
  const view = (n: number) =>
    storedNodeView(JSON.stringify(NodeRegistrationSchema.parse(registration(`x${n}`, {}, n))), "assigned", null);
  return summarizePlacement(gpus.map((n) => gate.refusal(view(n)))).summary;
}

describe("the placement report at 4 shards", () => {
  it("a job on shard 2 is judged against the nodes registered at shard 0, as a one-shard pool says it", async () => {
    const pool = freshPool();
    const { jobId, taskId } = await submitOne(pool, 2, trialsJob(1, {}, ONE_GPU));
    expect(shardOfHex(pool, jobId)).toBe(2);
    await register(pool, "n-gpu", {}, 1);
    await register(pool, "n-cpu");
    const report = await reportOf(pool, jobId, taskId);
    expect(report.nodes.map((n) => [n.node_id, n.eligible, n.eligible ? null : n.gate])).toEqual([
      ["n-cpu", false, "gpu"],
      ["n-gpu", true, null],
    ]);
    const expected = await oneShardSummary(pool, 2, jobId, [0, 1]);
    expect(expected).toMatch(/^1\/2 nodes eligible: 1 × gpu \(/);
    expect(report).toMatchObject({ job_id: jobId, task_id: taskId, state: "PENDING", unplaceable: false });
    expect(report.summary).toBe(expected);
    expect(report.queue).toMatchObject({ eligible_held_back: 0 });
    expect(report.waiting).toBe("next in line");
  });

  it("counts nodes registered at every shard, listed by node_id across them", async () => {
    const pool = freshPool();
    const { jobId, taskId } = await submitOne(pool, 1, trialsJob(1, {}, ONE_GPU));
    // Homed at shards 2, 3 and 1 (jump hash at 4 shards).
    expect(["b-cpu", "a-gpu", "c-cpu"].map((id) => registryShard(id, 4))).toEqual([2, 3, 1]);
    await register(pool, "b-cpu");
    await register(pool, "a-gpu", {}, 1);
    await register(pool, "c-cpu");
    const report = await reportOf(pool, jobId, taskId);
    expect(report.nodes.map((n) => [n.node_id, n.eligible])).toEqual([
      ["a-gpu", true],
      ["b-cpu", false],
      ["c-cpu", false],
    ]);
    expect(report.summary).toBe(await oneShardSummary(pool, 1, jobId, [1, 0, 0]));
    expect(report.summary).toMatch(/^1\/3 nodes eligible: 2 × gpu \(/);
    expect(report.unplaceable).toBe(false);
  });

  it("a task no node of any shard can take is unplaceable, and an unknown task is a 404", async () => {
    const pool = freshPool();
    const { jobId, taskId } = await submitOne(pool, 3, trialsJob(1, {}, ONE_GPU));
    const empty = await reportOf(pool, jobId, taskId);
    expect(empty).toMatchObject({ nodes: [], unplaceable: true, summary: "0/0 nodes eligible: no nodes registered" });
    await register(pool, "n-cpu");
    expect(await reportOf(pool, jobId, taskId)).toMatchObject({ unplaceable: true });
    const missing = await call(pool, "GET", `/jobs/${jobId}/tasks/nope/placement`);
    expect(missing.status).toBe(404);
    expect(await json(missing)).toEqual({ detail: `unknown task nope in job ${jobId}` });
  });
});
