// The dashboard (docs/protocol.md §11): the page served at / and /pools/{pool}/, and the
// bounded JSON summary it polls, through the real Worker.

import { runInDurableObject } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, expectTypeOf, it } from "vitest";
import { DASHBOARD_HTML, DASHBOARD_SCRIPT, DASHBOARD_STYLE } from "../../../src/dashboard/page";
import type {
  FleetSummary,
  PageConfig,
  PlacementReport as PagePlacementReport,
  Summary,
} from "../../../src/dashboard/wire";
import { registerNode } from "../../../src/pool/nodes/registry";
import type { DashboardSummary } from "../../../src/protocol/dashboard";
import { POOL_NAME_RE } from "../../../src/protocol/keys";
import { DASHBOARD_LIMIT_DEFAULT } from "../../../src/protocol/limits";
import { NodeRegistrationSchema } from "../../../src/protocol/nodes";
import type { PlacementReport, FleetSummary as ServerFleetSummary } from "../../../src/protocol/responses";
import { type Lease, TASK_STATES } from "../../../src/protocol/tasks";
import { PRIORITY_LABEL, TENANT_LABEL } from "../../../src/rules/scheduling";
import {
  ageNode,
  call,
  claim,
  expireLeases,
  freshPool,
  insertTasks,
  json,
  register,
  registration,
  sha256,
  stub,
  submitJob,
  task,
  trialsJob,
  upload,
} from "../helpers";

const EVIL = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">`;

function root(path: string) {
  return exports.default.fetch(new Request(`http://flashedge.test${path}`));
}

async function summary(pool: string, query = ""): Promise<DashboardSummary> {
  const r = await call(pool, "GET", `/dashboard${query}`);
  if (r.status !== 200) throw new Error(`dashboard: ${r.status} ${await r.text()}`);
  return json<DashboardSummary>(r);
}

async function cspHash(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  return `'sha256-${btoa(String.fromCharCode(...digest))}'`;
}

function searchJob(
  name: string,
  trials: number,
  extra: Record<string, unknown> & { labels?: Record<string, string> } = {},
) {
  const { labels, ...spec } = extra;
  return {
    apiVersion: "flashml.dev/v1alpha1",
    kind: "Job",
    metadata: { name, labels: { team: EVIL, ...labels } },
    spec: {
      execution: { backend: "leases" },
      image: { repository: "r", tag: "1" },
      workload: {
        type: "hyperparameter_search",
        parameters: { trials: Array.from({ length: trials }, (_, i) => ({ c: i })) },
      },
      ...spec,
    },
  };
}

async function submit(pool: string, body: unknown): Promise<string> {
  const r = await call(pool, "POST", "/jobs", body);
  if (r.status !== 201) throw new Error(`submit: ${r.status} ${await r.text()}`);
  return (await json<{ job_id: string }>(r)).job_id;
}

/** Moves a node's last request into the past, past the online window. */
function silence(pool: string, nodeId: string, ms = 60_000) {
  return ageNode(pool, nodeId, ms);
}

/** The one element `tag` of a served page, its text exactly as served; fails unless there is exactly one. */
function inlineBlock(page: string, tag: "script" | "style"): string {
  const blocks = [...page.matchAll(new RegExp(`<${tag}\\b[^>]*>([\\s\\S]*?)</${tag}>`, "gi"))];
  expect(blocks).toHaveLength(1);
  return blocks[0]![1]!;
}

/** The JSON in the page's `flashedge-config` meta tag, as a browser would decode the attribute. */
function pageConfig(page: string): unknown {
  const content = /<meta name="flashedge-config" content="([^"]*)">/.exec(page)?.[1];
  if (content === undefined) throw new Error("no flashedge-config in the page");
  const decoded = content.replace(
    /&(quot|lt|gt|amp);/g,
    (_, name: string) => ({ quot: '"', lt: "<", gt: ">", amp: "&" })[name]!,
  );
  return JSON.parse(decoded);
}

describe("the dashboard page", () => {
  it.each(["/", "/pools/team-a/"])("GET %s serves the self-contained page under a strict CSP", async (path) => {
    const r = await root(path);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const page = await r.text();
    expect(page).toBe(DASHBOARD_HTML);
    const csp = r.headers.get("content-security-policy") ?? "";
    const directives = Object.fromEntries(
      csp.split(/;\s*/).map((d) => [d.split(" ")[0], d.split(" ").slice(1).join(" ")]),
    );
    // The hashes are of the inline blocks as served, read back from the page's bytes.
    expect(directives).toEqual({
      "default-src": "'none'",
      "script-src": await cspHash(inlineBlock(page, "script")),
      "style-src": await cspHash(inlineBlock(page, "style")),
      "connect-src": "'self'",
      "img-src": "data:",
      "base-uri": "'none'",
      "form-action": "'none'",
      "frame-ancestors": "'none'",
    });
    expect(r.headers.get("x-content-type-options")).toBe("nosniff");
    expect(r.headers.get("x-frame-options")).toBe("DENY");
    expect(r.headers.get("referrer-policy")).toBe("no-referrer");
    expect(r.headers.get("cache-control")).toBe("no-store");
  });

  it("inlines the page's script and style files byte for byte", async () => {
    const page = await (await root("/")).text();
    expect(inlineBlock(page, "script")).toBe(DASHBOARD_SCRIPT);
    expect(inlineBlock(page, "style")).toBe(DASHBOARD_STYLE);
    expect(DASHBOARD_SCRIPT).toMatch(/^\/\/ @ts-check\n/);
    expect(DASHBOARD_STYLE).toContain(".badge.RUNNING");
  });

  it("hands the script the server's own pool-name rule, page size and task states", async () => {
    const config = pageConfig(await (await root("/pools/team-a/")).text());
    expect(config).toEqual({
      pool_name: { source: POOL_NAME_RE.source, flags: POOL_NAME_RE.flags },
      page_size: DASHBOARD_LIMIT_DEFAULT,
      task_states: [...TASK_STATES],
      progress_states: ["COMPLETED", "FAILED", "LEASED", "CANCELLED"],
    });
  });

  it("the script's view of the JSON is a view of what the server sends", () => {
    // Compile-time: tsc fails here if the server's types drift from the script's (src/dashboard/wire.d.ts).
    expectTypeOf<DashboardSummary>().toExtend<Summary>();
    expectTypeOf<PlacementReport>().toExtend<PagePlacementReport>();
    expectTypeOf<ServerFleetSummary>().toExtend<FleetSummary>();
    expectTypeOf<{ task_states: typeof TASK_STATES }>().toExtend<Pick<PageConfig, "task_states">>();
  });

  it("holds no pool data: the page is the same bytes whatever the pool holds", async () => {
    const pool = freshPool();
    await register(pool, EVIL);
    const page = await (await root(`/pools/${pool}/`)).text();
    expect(page).toBe(DASHBOARD_HTML);
    expect(page).not.toContain("__pwned");
  });

  it("a pool URL without the trailing slash serves the page too; an invalid pool name is 404", async () => {
    const r = await root("/pools/team-a");
    expect(r.status).toBe(200);
    expect(await r.text()).toBe(DASHBOARD_HTML);
    for (const path of ["/pools/Team_A/", "/pools/%3Cscript%3E/", "/pools/%3Cscript%3E"]) {
      const bad = await root(path);
      expect(bad.status).toBe(404);
      expect(bad.headers.get("content-type")).toMatch(/^application\/json/);
    }
  });
});

describe("the dashboard summary", () => {
  it("shows nodes, jobs with task counts, live leases and recent events", async () => {
    const pool = freshPool();
    await register(pool, "gpu-1", { local_datasets: ["patients"], sandbox_capable: true, labels: { rack: "r1" } }, 1);
    await register(pool, "cpu-1");
    const jobId = await submit(pool, searchJob("trials", 3));
    const lease = await json<Lease>(await claim(pool, "gpu-1"));
    const bytes = JSON.stringify({ ok: true });
    await upload(pool, `jobs/${jobId}/${lease.task_id}/metrics.json`, bytes);
    await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, { output_sha256: await sha256(bytes) });
    const running = await json<Lease>(await claim(pool, "cpu-1"));

    const s = await summary(pool);
    expect(s.pool).toBe(pool);
    expect(s.counts).toEqual({
      nodes: { total: 2, online: 2, offline: 0, not_accepting: 0, held_back: 0 },
      tasks: { PENDING: 1, LEASED: 1, COMPLETED: 1, FAILED: 0, CANCELLED: 0, total: 3 },
      jobs: { PENDING: 0, SUBMITTED: 0, RUNNING: 1, RECOVERING: 0, SUCCEEDED: 0, FAILED: 0, CANCELLED: 0 },
      leases_live: 1,
      stuck_tasks: 0,
      enrolment: { enrolled: 0, revoked: 0, pending_requests: 0 },
    });
    expect(s.nodes.items.map((n) => n.node_id)).toEqual(["cpu-1", "gpu-1"]);
    expect(s.nodes.items[1]).toMatchObject({
      online: true,
      status: "online",
      gpu_count: 1,
      gpus: ["NVIDIA A10G"],
      local_datasets: ["patients"],
      sandbox_capable: true,
      argv_capable: false,
      module_capable: true,
      labels: { rack: "r1" },
      accepted_tasks: 1,
      live_leases: 0,
      consecutive_failures: 0,
      held_until: null,
      valid_results: 0,
      invalid_results: 0,
    });
    expect(s.nodes.items[0]).toMatchObject({ accepted_tasks: 0, live_leases: 1, gpu_count: 0 });
    expect(s.jobs).toEqual({
      items: [
        expect.objectContaining({
          job_id: jobId,
          name: "trials",
          state: "RUNNING",
          workload_type: "hyperparameter_search",
          task_counts: { PENDING: 1, LEASED: 1, COMPLETED: 1, FAILED: 0, CANCELLED: 0 },
          total_tasks: 3,
          labels: { team: EVIL },
          priority: 0,
          tenant: "default",
          worker_losses: 0,
          stuck: null,
        }),
      ],
      more: 0,
    });
    expect(s.leases.items).toEqual([
      expect.objectContaining({
        lease_id: running.lease_id,
        job_id: jobId,
        task_id: running.task_id,
        node_id: "cpu-1",
        attempt: 1,
        lease_seconds: 60,
        replica: 0,
      }),
    ]);
    expect(s.leases.items[0]!.seconds_left).toBeGreaterThan(50);
    expect(s.leases.items[0]!.seconds_left).toBeLessThanOrEqual(60);
    // Newest first.
    expect(s.events.items.slice(0, 3).map((e) => e.type)).toEqual([
      "LEASE_CLAIMED",
      "TASK_COMMIT_ACCEPTED",
      "LEASE_CLAIMED",
    ]);
    expect(s.events.items[0]!.seq).toBe(s.events.last_seq);
  });

  it("shows each job's priority and tenant from its labels", async () => {
    const pool = freshPool();
    const urgent = await submitJob(
      pool,
      searchJob("urgent", 1, { labels: { [PRIORITY_LABEL]: "5", [TENANT_LABEL]: "team-a" } }),
    );
    const plain = await submitJob(pool, searchJob("plain", 1));
    const s = await summary(pool);
    const jobs = Object.fromEntries(s.jobs.items.map((j) => [j.job_id, j]));
    expect(jobs[urgent.job_id]).toMatchObject({ priority: 5, tenant: "team-a", worker_losses: 0 });
    expect(jobs[plain.job_id]).toMatchObject({ priority: 0, tenant: "default", worker_losses: 0 });
  });

  it("shows a node held back after 5 failed attempts in a row, until an operator releases it", async () => {
    const pool = freshPool();
    await register(pool, "flaky");
    await register(pool, "steady");
    // Six tasks: each failed one goes to another node next, and the sixth is one flaky never failed.
    await submitJob(pool, trialsJob(6, {}, { retryPolicy: { maxTaskAttempts: 10 } }));
    const before = Date.now();
    for (let i = 0; i < 5; i++) {
      const lease = await json<Lease>(await claim(pool, "flaky"));
      const r = await call(pool, "POST", `/attempts/${lease.lease_id}/fail`, { reason: `boom ${i}` });
      expect(r.status).toBe(200);
    }
    const after = Date.now();
    expect((await claim(pool, "flaky")).status).toBe(204);

    const s = await summary(pool);
    expect(s.counts.nodes).toMatchObject({ total: 2, online: 2, held_back: 1 });
    const nodes = Object.fromEntries(s.nodes.items.map((n) => [n.node_id, n]));
    expect(nodes.steady).toMatchObject({ consecutive_failures: 0, held_until: null });
    expect(nodes.flaky!.consecutive_failures).toBe(5);
    // The first hold is 30 s from the fifth failure.
    const heldUntil = Date.parse(nodes.flaky!.held_until ?? "");
    expect(heldUntil).toBeGreaterThanOrEqual(before + 30_000);
    expect(heldUntil).toBeLessThanOrEqual(after + 30_000);

    expect((await call(pool, "POST", "/nodes/flaky/release")).status).toBe(200);
    const released = await summary(pool);
    expect(released.counts.nodes.held_back).toBe(0);
    expect(released.nodes.items.find((n) => n.node_id === "flaky")).toMatchObject({
      consecutive_failures: 0,
      held_until: null,
    });
  });

  it("counts a lease expiry as a worker loss of its job, unless the job says retryWorkerLoss: false", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const lossy = await submitJob(pool, searchJob("lossy", 1));
    const strict = await submitJob(pool, searchJob("strict", 1, { retryPolicy: { retryWorkerLoss: false } }));
    await claim(pool, "n1", lossy.job_id);
    await claim(pool, "n1", strict.job_id);
    expect(await expireLeases(pool)).toBe(true);

    const s = await summary(pool);
    const jobs = Object.fromEntries(s.jobs.items.map((j) => [j.job_id, j]));
    expect(jobs[lossy.job_id]).toMatchObject({ worker_losses: 1, task_counts: { PENDING: 1, LEASED: 0 } });
    expect(jobs[strict.job_id]).toMatchObject({ worker_losses: 0, task_counts: { PENDING: 1, LEASED: 0 } });
    // Either way the node's attempt failed.
    expect(s.nodes.items[0]).toMatchObject({ node_id: "n1", consecutive_failures: 2, held_until: null });
  });

  it("passes attacker-chosen strings through as data, unchanged, for the page to render as text", async () => {
    const pool = freshPool();
    await register(pool, EVIL, { hostname: EVIL, local_datasets: [EVIL], labels: { [EVIL]: EVIL } });
    await submit(pool, searchJob("evil-labels", 1));
    await claim(pool, EVIL);
    const raw = await (await call(pool, "GET", "/dashboard")).text();
    const s = JSON.parse(raw) as DashboardSummary;
    expect(s.nodes.items[0]).toMatchObject({
      node_id: EVIL,
      hostname: EVIL,
      local_datasets: [EVIL],
      labels: { [EVIL]: EVIL },
    });
    expect(s.leases.items[0]!.node_id).toBe(EVIL);
    expect(s.events.items[0]!.message).toContain(EVIL);
    expect(s.jobs.items[0]!.labels).toEqual({ team: EVIL });
  });

  it("clips a huge client-chosen string instead of sending it whole", async () => {
    const pool = freshPool();
    const long = "n".repeat(5000);
    await register(pool, long, { labels: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, "v"])) });
    const s = await summary(pool);
    expect(s.nodes.items[0]!.node_id.length).toBeLessThanOrEqual(200);
    expect(Object.keys(s.nodes.items[0]!.labels)).toHaveLength(8);
  });

  it("flags pending tasks no online node can take, with the reason, on the job too", async () => {
    const pool = freshPool();
    await register(pool, "cpu-1");
    await register(pool, "gpu-old", {}, 4);
    await silence(pool, "gpu-old"); // registered, could take it, but offline
    const gpuJob = await submit(pool, searchJob("needs-gpus", 2, { resources: { gpuPerTask: 2 } }));
    const cpuJob = await submit(pool, searchJob("plain", 2));

    const s = await summary(pool);
    expect(s.counts.nodes).toEqual({ total: 2, online: 1, offline: 1, not_accepting: 0, held_back: 0 });
    expect(s.counts.stuck_tasks).toBe(2);
    expect(s.stuck).toEqual({
      items: [
        {
          job_id: gpuJob,
          job_name: "needs-gpus",
          task_id: "trial-000",
          pending: 2,
          summary: "0/1 online nodes eligible: 1 × gpu (task needs 2 GPUs)",
        },
      ],
      more: 0,
      classes_unchecked: 0,
    });
    const jobs = Object.fromEntries(s.jobs.items.map((j) => [j.job_id, j]));
    expect(jobs[gpuJob]!.stuck).toMatchObject({ pending: 2, task_id: "trial-000" });
    expect(jobs[cpuJob]!.stuck).toBeNull();
    // The placement route still calls it placeable: a registered node could take it.
    const report = await json<{ unplaceable: boolean }>(
      await call(pool, "GET", `/jobs/${gpuJob}/tasks/trial-000/placement`),
    );
    expect(report.unplaceable).toBe(false);

    // The GPU node comes back: nothing is stuck any more.
    await call(pool, "POST", "/nodes/gpu-old/heartbeat", { node_id: "gpu-old" });
    const after = await summary(pool);
    expect(after.counts.stuck_tasks).toBe(0);
    expect(after.stuck.items).toEqual([]);
  });

  it("a draining node does not count as able to take a task", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await call(pool, "POST", "/nodes/n1/heartbeat", { node_id: "n1", status: "draining" });
    await submit(pool, searchJob("j", 1));
    const s = await summary(pool);
    expect(s.counts.nodes.not_accepting).toBe(1);
    expect(s.stuck.items[0]?.summary).toBe("0/0 online nodes eligible: no online nodes");
  });

  it("a node held back after failing does not count as able to take a task, until it is released", async () => {
    const pool = freshPool();
    await register(pool, "flaky");
    await submitJob(pool, trialsJob(3, {}, { retryPolicy: { maxTaskAttempts: 10 } }));
    for (let i = 0; i < 5; i++) {
      const lease = await json<Lease>(await claim(pool, "flaky"));
      expect((await call(pool, "POST", `/attempts/${lease.lease_id}/fail`, { reason: `boom ${i}` })).status).toBe(200);
    }
    expect((await claim(pool, "flaky")).status).toBe(204);
    const held = await summary(pool);
    expect(held.counts.nodes).toMatchObject({ online: 1, held_back: 1 });
    expect(held.counts.stuck_tasks).toBe(3);
    expect(held.stuck.items.map((i) => i.summary)).toEqual(["0/0 online nodes eligible: no online nodes"]);

    expect((await call(pool, "POST", "/nodes/flaky/release")).status).toBe(200);
    const released = await summary(pool);
    expect(released.counts.stuck_tasks).toBe(0);
    expect(released.stuck.items).toEqual([]);
  });

  it("refuses a limit outside 1..200", async () => {
    const pool = freshPool();
    for (const q of ["?limit=0", "?limit=201", "?limit=abc", "?limit=-1", "?limit=1.5"]) {
      const r = await call(pool, "GET", `/dashboard${q}`);
      expect(r.status).toBe(422);
      const detail = (await json<{ detail: Array<{ loc: string[] }> }>(r)).detail;
      expect(detail[0]!.loc).toEqual(["query", "limit"]);
    }
  });

  it("stays bounded and fast with 1,000 nodes and 10,000 tasks", async () => {
    const pool = freshPool();
    await runInDurableObject(stub(pool), (_o, state) => {
      const now = Date.now();
      for (let i = 0; i < 1000; i++) {
        const id = `node-${String(i).padStart(4, "0")}`;
        registerNode(
          state.storage.sql,
          now,
          NodeRegistrationSchema.parse(registration(id, { local_datasets: ["d1", "d2"] }, i % 10 === 0 ? 1 : 0)),
        );
      }
    });
    await submit(pool, searchJob("big", 9_700));
    // 300 tasks no node can take, in 300 requirement classes (each excludes a different node).
    await insertTasks(
      pool,
      Array.from({ length: 300 }, (_, i) => task("stuck-job", `s-${i}`, { gpus: 8, exclude_nodes: [`x-${i}`] })),
    );
    for (let i = 0; i < 40; i++) await claim(pool, `node-${String(i).padStart(4, "0")}`);

    const started = Date.now();
    const r = await call(pool, "GET", "/dashboard");
    const elapsed = Date.now() - started;
    const body = await r.text();
    const s = JSON.parse(body) as DashboardSummary;
    expect(s.counts.nodes.total).toBe(1000);
    expect(s.counts.tasks).toMatchObject({ total: 10_000, LEASED: 40, PENDING: 9_960 });
    expect(s.nodes).toMatchObject({ more: 975 });
    expect(s.nodes.items).toHaveLength(25);
    expect(s.leases.items).toHaveLength(25);
    expect(s.leases.more).toBe(15);
    expect(s.events.items).toHaveLength(25);
    expect(s.jobs.items).toHaveLength(1);
    // The stuck check looks at a bounded number of classes and says how many it skipped.
    expect(s.stuck.items).toHaveLength(25);
    expect(s.stuck.classes_unchecked).toBe(301 - 100);
    expect(s.stuck.items[0]).toMatchObject({ job_id: "stuck-job", task_id: "s-0", pending: 1 });
    expect(s.stuck.items[0]!.summary).toMatch(/^0\/1000 online nodes eligible: 1000 × gpu \(task needs 8 GPUs\)$/);
    expect(body.length).toBeLessThan(100_000);
    expect(elapsed).toBeLessThan(2_000);

    const wide = await summary(pool, "?limit=200");
    expect(wide.nodes.items).toHaveLength(200);
    expect(wide.nodes.more).toBe(800);
  }, 60_000);
});
