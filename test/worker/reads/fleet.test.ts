// The fleet's GPUs and the demand no one can serve (issue 26), through the
// real Worker: GET /nodes/summary, the dashboard summary and metrics, with
// GET /nodes left the plain list it was.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { DEMAND_CLASSES_CHECKED } from "../../../src/pool/reads/fleet";
import { classHeadSql } from "../../../src/pool/reads/placement-report";
import type { Lease } from "../../../src/protocol/tasks";
import { call, claim, freshPool, insertTasks, json, register, stub, submitJob, task, trialsJob } from "../helpers";

const RTX_3060 = {
  name: "GeForce RTX 3060",
  memory_total_mb: 12288,
  compute_capability: "8.6",
  driver_version: "550.54",
};
const A100_80 = { name: "A100-SXM4-80GB", memory_total_mb: 81920, compute_capability: "8.0", driver_version: "550.54" };

async function gpuNode(pool: string, nodeId: string, ...gpus: object[]) {
  await register(pool, nodeId, {
    capabilities: {
      cpu_cores: 16,
      gpus: gpus.map((g, index) => ({ ...g, index })),
      os: "linux",
      architecture: "amd64",
    },
  });
}

function gpuJob(count: number, gpus: number, memoryMb: number) {
  const spec = trialsJob(count, {}, { resources: { gpuPerTask: gpus } });
  return { ...spec, metadata: { ...spec.metadata, labels: { "flashml.dev/gpu-memory-mb": String(memoryMb) } } };
}

type Summary = {
  gpus: { items: Array<Record<string, unknown>>; more: number };
  demand: {
    classes: Array<{ pending: number; needs: string; online_nodes_able: number; servable: boolean; summary: string }>;
    unservable_classes: number;
    unservable_tasks: number;
    classes_unchecked: number;
    nodes_unchecked: number;
  };
};

async function fleet(pool: string) {
  const r = await call(pool, "GET", "/nodes/summary");
  expect(r.status).toBe(200);
  return json<Summary>(r);
}

describe("the fleet's GPUs and the demand on them", () => {
  it("groups the GPUs by model, memory and capability, with nodes online and busy", async () => {
    const pool = freshPool();
    await gpuNode(pool, "consumer", RTX_3060);
    await gpuNode(pool, "dc", A100_80);
    await gpuNode(pool, "box", A100_80, A100_80);
    await gpuNode(pool, "cpu");
    await submitJob(pool, gpuJob(1, 2, 40960));
    expect((await claim(pool, "box")).status).toBe(200);
    const summary = await fleet(pool);
    expect(summary.gpus).toEqual({
      items: [
        {
          model: "A100-SXM4-80GB",
          memory_total_mb: 81920,
          compute_capability: "8.0",
          gpus: 3,
          nodes: 2,
          online: 2,
          busy: 1,
        },
        {
          model: "GeForce RTX 3060",
          memory_total_mb: 12288,
          compute_capability: "8.6",
          gpus: 1,
          nodes: 1,
          online: 1,
          busy: 0,
        },
      ],
      more: 0,
    });
    // GET /nodes is still the plain list of registrations.
    const nodes = await json<Array<{ node_id: string }>>(await call(pool, "GET", "/nodes"));
    expect(nodes.map((n) => n.node_id)).toEqual(["box", "consumer", "cpu", "dc"]);
  });

  it("says how many tasks wait per class and who could take them, and flags what no node has", async () => {
    const pool = freshPool();
    await gpuNode(pool, "consumer", RTX_3060);
    await gpuNode(pool, "dc", A100_80);
    await gpuNode(pool, "box", A100_80, RTX_3060);
    await submitJob(pool, gpuJob(18, 2, 40960));
    await submitJob(pool, gpuJob(3, 1, 40960));
    await submitJob(pool, trialsJob(2));
    const { demand } = await fleet(pool);
    expect(demand.classes.map((c) => [c.pending, c.needs, c.online_nodes_able, c.servable, c.summary])).toEqual([
      [18, "2 GPUs with ≥ 40960 MB", 0, false, "18 tasks need 2 GPUs with ≥ 40960 MB; no node has that"],
      [3, "1 GPU with ≥ 40960 MB", 2, true, "3 tasks need 1 GPU with ≥ 40960 MB; 2 online nodes can take them"],
      [2, "nothing in particular", 3, true, "2 tasks need nothing in particular; 3 online nodes can take them"],
    ]);
    expect(demand).toMatchObject({
      unservable_classes: 1,
      unservable_tasks: 18,
      classes_unchecked: 0,
      nodes_unchecked: 0,
    });

    // The dashboard carries the same, and metrics expose it for alerts.
    const dashboard = await json<Summary>(await call(pool, "GET", "/dashboard"));
    expect(dashboard.demand).toEqual(demand);
    expect(dashboard.gpus.items).toHaveLength(2);
    const metrics = (await (await call(pool, "GET", "/metrics")).text()).split("\n");
    expect(metrics).toContain(`flashedge_unservable_pending_tasks{pool="${pool}"} 18`);
    expect(metrics).toContain(`flashedge_unservable_requirement_classes{pool="${pool}"} 1`);
    expect(
      metrics.filter((l) => l.startsWith("flashedge_pending_tasks_by_class{")).map((l) => l.split("} ")[1]),
    ).toEqual(["18", "3", "2"]);
  });

  it("a task leased leaves the demand, and the demand reads only the classes with the most pending", async () => {
    const pool = freshPool();
    await gpuNode(pool, "dc", A100_80);
    await submitJob(pool, gpuJob(1, 1, 40960));
    const lease = await json<Lease>(await claim(pool, "dc"));
    expect(lease.payload.gpu_memory_mb).toBe(40960);
    expect((await fleet(pool)).demand.classes).toEqual([]);
    // More pending classes than are checked: one per team pool no node is in.
    const extra = DEMAND_CLASSES_CHECKED + 5;
    await insertTasks(
      pool,
      Array.from({ length: extra }, (_, i) => task("j", `t-${i}`, { pool: `p-${i}`, isolation: {} })),
    );
    const { demand } = await fleet(pool);
    expect(demand.classes).toHaveLength(DEMAND_CLASSES_CHECKED);
    expect(demand.classes_unchecked).toBe(5);
    expect(demand.unservable_classes).toBe(DEMAND_CLASSES_CHECKED);
  });

  it("refuses a limit out of range", async () => {
    expect((await call(freshPool(), "GET", "/nodes/summary?limit=0")).status).toBe(422);
  });

  // Schema step 32 dropped the index of pending tasks by class: a class's earliest pending task is sought per
  // (job, class) in the claim's two job indexes, never by a scan of the tasks.
  it("finds a class's earliest pending task by index seeks, with no scan of the tasks", async () => {
    const pool = freshPool();
    await submitJob(pool, trialsJob(3));
    const plan = await runInDurableObject(stub(pool), (_o, state) =>
      state.storage.sql
        .exec<{ detail: string }>(
          `EXPLAIN QUERY PLAN SELECT c.class_id, ${classHeadSql("c")} AS head FROM classes c WHERE c.queued = 1`,
        )
        .toArray()
        .map((r) => r.detail),
    );
    expect(plan.join("\n")).toMatch(/SEARCH t USING (COVERING )?INDEX tasks_fresh_job/);
    expect(plan.join("\n")).toMatch(/SEARCH t USING (COVERING )?INDEX tasks_replicating_job/);
    expect(plan.join("\n")).toMatch(/SEARCH q USING (COVERING )?INDEX queue_classes_level/);
    expect(plan.filter((d) => /^SCAN (t|tasks)\b/.test(d))).toEqual([]);
  });
});
