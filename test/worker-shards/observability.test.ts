// The pool-wide reads of a pool of 4 shards (docs/sharding.md §10): the
// dashboard, metrics and the fleet read every shard and merge, and each
// shard's own series (its summary's age, its forwards, its outbox). Nodes live
// at their homes (by jump hash); the tests place jobs on other shards through
// the shards' own calls, as two-choice placement does.
// A task is stuck, a class unservable, only if no node of any shard takes it.

import { describe, expect, it, vi } from "vitest";
import type { DashboardSummary } from "../../src/protocol/dashboard";
import type { FleetSummary } from "../../src/protocol/responses";
import {
  call,
  claim,
  delivered,
  freshPool,
  homeShardOf,
  homeStub,
  json,
  register,
  sha256,
  sleep,
  summarized,
  trialsJob,
  upload,
} from "../worker/helpers";
import { submitTo } from "./helpers";

const gpuJob = (count: number) => trialsJob(count, {}, { resources: { gpuPerTask: 1 } });

async function dashboard(pool: string, limit?: number): Promise<DashboardSummary> {
  const r = await call(pool, "GET", `/dashboard${limit === undefined ? "" : `?limit=${limit}`}`);
  expect(r.status).toBe(200);
  return json<DashboardSummary>(r);
}

async function fleet(pool: string): Promise<FleetSummary> {
  const r = await call(pool, "GET", "/nodes/summary");
  expect(r.status).toBe(200);
  return json<FleetSummary>(r);
}

async function metrics(pool: string): Promise<string[]> {
  const r = await call(pool, "GET", "/metrics");
  expect(r.status).toBe(200);
  return (await r.text()).split("\n");
}

describe("the dashboard of a sharded pool", () => {
  it("counts and lists the jobs of every shard, and the nodes of their home", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await register(pool, "n2");
    const here = await submitTo(pool, 0, trialsJob(1));
    const there = await submitTo(pool, 2, trialsJob(2));
    const s = await dashboard(pool);
    expect(s.counts.nodes).toEqual({ total: 2, online: 2, offline: 0, not_accepting: 0, held_back: 0 });
    expect(s.counts.tasks).toMatchObject({ PENDING: 3, total: 3 });
    expect(s.counts.jobs.RUNNING).toBe(2);
    expect(s.counts.stuck_tasks).toBe(0);
    expect(new Set(s.jobs.items.map((j) => j.job_id))).toEqual(new Set([here, there]));
    expect(s.jobs.more).toBe(0);
    expect(s.nodes.items.map((n) => n.node_id)).toEqual(["n1", "n2"]);
    expect(new Set(s.events.items.map((e) => e.job_id))).toEqual(new Set([here, there]));
    expect(s.stuck).toEqual({ items: [], more: 0, classes_unchecked: 0 });

    // Cut to the limit, with the rest counted in `more`.
    const cut = await dashboard(pool, 1);
    expect(cut.jobs.items).toHaveLength(1);
    expect(cut.jobs.more).toBe(1);
    expect(cut.nodes).toMatchObject({ more: 1 });
    expect(cut.counts.tasks.PENDING).toBe(3);
  });

  it("a GPU task on shard 2 is not stuck while a GPU node at shard 0 could take it", async () => {
    const pool = freshPool();
    await register(pool, "gpu-1", {}, 1);
    const job = await submitTo(pool, 2, gpuJob(2));
    const s = await dashboard(pool);
    expect(s.counts.stuck_tasks).toBe(0);
    expect(s.stuck.items).toEqual([]);
    expect(s.jobs.items.find((j) => j.job_id === job)?.stuck).toBeNull();
    expect(s.demand).toMatchObject({ unservable_classes: 0, unservable_tasks: 0 });
    expect(s.demand.classes).toMatchObject([{ pending: 2, servable: true, online_nodes_able: 1 }]);
  });

  it("a GPU task on shard 2 is stuck when every node of the pool has only CPUs", async () => {
    const pool = freshPool();
    await register(pool, "cpu-1");
    await register(pool, "cpu-2");
    const job = await submitTo(pool, 2, gpuJob(2));
    await submitTo(pool, 1, trialsJob(1));
    const s = await dashboard(pool);
    expect(s.counts.stuck_tasks).toBe(2);
    // Explained by every shard's claimable nodes, not by shard 2's (none).
    expect(s.stuck.items).toEqual([
      {
        job_id: job,
        job_name: expect.any(String),
        task_id: "trial-000",
        pending: 2,
        summary: "0/2 online nodes eligible: 2 × gpu (task needs 1 GPU)",
      },
    ]);
    expect(s.stuck.more).toBe(0);
    expect(s.jobs.items.find((j) => j.job_id === job)?.stuck).toMatchObject({ pending: 2 });
    expect(s.demand).toMatchObject({ unservable_classes: 1, unservable_tasks: 2 });
  });
});

describe("the fleet of a sharded pool", () => {
  it("finds a GPU class on shard 2 servable by a GPU node at shard 0, and not by CPU nodes", async () => {
    const gpuPool = freshPool();
    await register(gpuPool, "gpu-1", {}, 1);
    await register(gpuPool, "cpu-1");
    await submitTo(gpuPool, 2, gpuJob(1));
    const served = await fleet(gpuPool);
    expect(served.demand).toMatchObject({ unservable_classes: 0, unservable_tasks: 0, nodes_unchecked: 0 });
    expect(served.demand.classes).toMatchObject([{ pending: 1, servable: true, online_nodes_able: 1 }]);
    expect(served.gpus.items).toMatchObject([{ gpus: 1, nodes: 1, online: 1 }]);

    const cpuPool = freshPool();
    await register(cpuPool, "cpu-1");
    await submitTo(cpuPool, 2, gpuJob(1));
    await submitTo(cpuPool, 3, gpuJob(2));
    const unserved = await fleet(cpuPool);
    // One class on two shards: one merged entry, its pending tasks summed.
    expect(unserved.demand).toMatchObject({ unservable_classes: 1, unservable_tasks: 3 });
    expect(unserved.demand.classes).toMatchObject([{ pending: 3, servable: false, online_nodes_able: 0 }]);
    expect(unserved.demand.classes[0]!.summary).toContain("3 tasks need");
  });
});

describe("the metrics of a sharded pool", () => {
  it("sums the shards' pending tasks and labels each shard's classes and storage", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, 0, trialsJob(1));
    await submitTo(pool, 2, trialsJob(2));
    const lines = await metrics(pool);
    const p = `pool="${pool}"`;
    expect(lines).toContain(`flashedge_tasks{${p},state="PENDING"} 3`);
    const byClass = lines.filter((l) => l.startsWith("flashedge_pending_tasks_by_class{"));
    expect(byClass).toHaveLength(2);
    expect(byClass[0]).toMatch(new RegExp(`^flashedge_pending_tasks_by_class\\{${p},shard="0",class="\\d+",.*\\} 1$`));
    expect(byClass[1]).toMatch(new RegExp(`^flashedge_pending_tasks_by_class\\{${p},shard="2",class="\\d+",.*\\} 2$`));
    const storage = lines.filter((l) => l.startsWith("flashedge_storage_bytes{"));
    expect(storage.map((l) => l.split(" ")[0])).toEqual(
      [0, 1, 2, 3].map((k) => `flashedge_storage_bytes{${p},shard="${k}"}`),
    );
    expect(lines).toContain(`flashedge_nodes{${p},online="true"} 1`);
    // n1 lives at its home alone.
    const homed = lines.filter((l) => l.startsWith("flashedge_nodes_homed{"));
    const home = await homeShardOf(pool, "n1");
    expect(homed).toEqual([0, 1, 2, 3].map((k) => `flashedge_nodes_homed{${p},shard="${k}"} ${k === home ? 1 : 0}`));
    expect(lines).toContain(`flashedge_unservable_pending_tasks{${p}} 0`);
  });

  it("counts a GPU task on shard 2 unservable only when no node of the pool has a GPU", async () => {
    const cpuPool = freshPool();
    await register(cpuPool, "cpu-1");
    await submitTo(cpuPool, 2, gpuJob(2));
    const unserved = await metrics(cpuPool);
    expect(unserved).toContain(`flashedge_unservable_pending_tasks{pool="${cpuPool}"} 2`);
    expect(unserved).toContain(`flashedge_unservable_requirement_classes{pool="${cpuPool}"} 1`);

    const gpuPool = freshPool();
    await register(gpuPool, "gpu-1", {}, 1);
    await submitTo(gpuPool, 2, gpuJob(2));
    const served = await metrics(gpuPool);
    expect(served).toContain(`flashedge_unservable_pending_tasks{pool="${gpuPool}"} 0`);
    expect(served).toContain(`flashedge_unservable_requirement_classes{pool="${gpuPool}"} 0`);
  });

  it("counts each shard's calls served and the summary's exchanges by reason", async () => {
    const pool = freshPool();
    const p = `pool="${pool}"`;
    const value = (lines: string[], series: string) =>
      Number(lines.find((l) => l.startsWith(`${series} `))?.split(" ")[1] ?? Number.NaN);
    const before = await metrics(pool);
    expect(before.filter((l) => l.startsWith("flashedge_requests_served_total{")).map((l) => l.split(" ")[0])).toEqual(
      [0, 1, 2, 3].map((k) => `flashedge_requests_served_total{${p},shard="${k}"}`),
    );
    const served = (lines: string[], k: number) => value(lines, `flashedge_requests_served_total{${p},shard="${k}"}`);
    const summary = (lines: string[], kind: string) =>
      value(lines, `flashedge_summary_requests_total{${p},kind="${kind}"}`);
    // A new class on shard 2 tells Σ before the submission answers: one on-demand exchange at least.
    await submitTo(pool, 2, trialsJob(2));
    const after = await metrics(pool);
    expect(served(after, 2)).toBeGreaterThan(served(before, 2));
    expect(summary(after, "on_demand")).toBeGreaterThan(summary(before, "on_demand"));
    // The first read asked Σ once (kind "other"), counted after it answered.
    expect(summary(after, "other")).toBeGreaterThanOrEqual(summary(before, "other") + 1);
    expect(value(after, `flashedge_summary_busy_seconds_total{${p}}`)).toBeGreaterThanOrEqual(0);
  });

  it("counts a claim held for a job on another shard once, though its home and the job's shard both hold it", async () => {
    const pool = freshPool();
    await register(pool, "n1"); // home: shard 0
    await register(pool, "n2");
    const job = await submitTo(pool, 2, trialsJob(1));
    expect((await claim(pool, "n2", job)).status).toBe(200); // the job's one task is out: n1's claim waits at shard 2
    const held = (await homeStub(pool, "n1")).claim("n1", job, 3_000);
    const claimsHeld = async () =>
      (await metrics(pool)).find((l) => l.startsWith("flashedge_claims_held{"))?.split(" ")[1];
    await vi.waitFor(async () => expect(await claimsHeld()).toBe("1"), { timeout: 2_000, interval: 20 });
    await sleep(300); // the forward has reached shard 2 and is held there too
    expect(await claimsHeld()).toBe("1");
    expect(await held).toEqual({ ok: false, reason: "nothing" });
    expect(await claimsHeld()).toBe("0");
  });

  it("says per shard how old its summary is, how many claims it forwarded, and the outcomes it still owes", async () => {
    const pool = freshPool();
    const p = `pool="${pool}"`;
    const series = (lines: string[], name: string) =>
      new Map(
        lines
          .filter((l) => l.startsWith(`${name}{`))
          .map((l) => [l.slice(0, l.lastIndexOf(" ")), Number(l.slice(l.lastIndexOf(" ") + 1))]),
      );
    const shardKeys = (name: string) => [0, 1, 2, 3].map((k) => `${name}{${p},shard="${k}"}`);
    await register(pool, "n1");
    await submitTo(pool, 2, trialsJob(1));
    await summarized(pool);
    // n1's home is shard 0, the work is on shard 2: its claim is forwarded there.
    const lease = await json<{ lease_id: string; job_id: string; task_id: string }>(await claim(pool, "n1"));
    await upload(pool, `jobs/${lease.job_id}/${lease.task_id}/metrics.json`, "{}");
    const done = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, {
      output_sha256: await sha256("{}"),
    });
    expect(await json(done)).toEqual({ accepted: true });
    await delivered(pool);
    const lines = await metrics(pool);
    const forwarded = series(lines, "flashedge_forwarded_claims_total");
    expect([...forwarded.keys()]).toEqual(shardKeys("flashedge_forwarded_claims_total"));
    expect(forwarded.get(`flashedge_forwarded_claims_total{${p},shard="0"}`)).toBeGreaterThanOrEqual(1);
    expect(forwarded.get(`flashedge_forwarded_claims_total{${p},shard="2"}`)).toBe(0);
    // The commit's outcome went home: nothing owed anywhere.
    expect([...series(lines, "flashedge_outbox_rows").values()]).toEqual([0, 0, 0, 0]);
    const ages = series(lines, "flashedge_summary_age_seconds");
    expect([...ages.keys()]).toEqual(shardKeys("flashedge_summary_age_seconds"));
    for (const age of ages.values()) expect(age).toBeLessThan(5); // each exchanged within its tick
  });
});
