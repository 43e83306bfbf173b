import { abortAllDurableObjects } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Lease } from "../../../src/protocol/tasks";
import {
  call,
  claim,
  freshPool,
  json,
  register,
  registration,
  sha256,
  submitJob,
  summarized,
  trialsJob,
  upload,
} from "../helpers";

type NodeRow = Record<string, unknown> & { node_id: string };

describe("the node registry", () => {
  it("lists nodes sorted by id with liveness and their declared capabilities", async () => {
    const pool = freshPool();
    await register(pool, "zeta");
    await register(pool, "alpha", { local_datasets: ["ds"], sandbox_capable: true }, 2);
    const nodes = await json<NodeRow[]>(await call(pool, "GET", "/nodes"));
    expect(nodes.map((n) => n.node_id)).toEqual(["alpha", "zeta"]);
    expect(nodes[0]).toMatchObject({
      node_id: "alpha",
      hostname: "alpha.local",
      pool,
      status: "online",
      online: true,
      accepted_tasks: 0,
      local_datasets: ["ds"],
      sandbox_capable: true,
      argv_capable: false,
      module_capable: true,
    });
    expect((nodes[0]!.capabilities as { gpus: unknown[] }).gpus).toHaveLength(2);
    expect(nodes[0]!.last_heartbeat_age_s).toBeLessThan(2);
  });

  it("the URL's pool overwrites the registration's pool field", async () => {
    const pool = freshPool();
    await call(pool, "POST", "/nodes/register", registration("n1", { pool: "elsewhere" }));
    const [node] = await json<NodeRow[]>(await call(pool, "GET", "/nodes"));
    expect(node!.pool).toBe(pool);
  });

  it("a heartbeat for an unknown node is 404", async () => {
    const pool = freshPool();
    const r = await call(pool, "POST", "/nodes/ghost/heartbeat", { node_id: "ghost" });
    expect(r.status).toBe(404);
  });

  it("a heartbeat's pools list replaces the team pools, and null leaves them", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const job = await submitJob(pool, trialsJob(1, {}, { placement: { pool: "team-a" } }));
    expect((await claim(pool, "n1")).status).toBe(204);
    await call(pool, "POST", "/nodes/n1/heartbeat", { node_id: "n1", pools: ["team-a"] });
    await call(pool, "POST", "/nodes/n1/heartbeat", { node_id: "n1", pools: null });
    expect(await json(await claim(pool, "n1"))).toMatchObject({ job_id: job.job_id, payload: { pool: "team-a" } });
    // Open, the pools a node reports make it a member, and the list shows them.
    const [node] = await json<NodeRow[]>(await call(pool, "GET", "/nodes"));
    expect(node).toMatchObject({ capabilities: { pools: ["team-a"] } });
  });

  it("re-registering replaces the registration and keeps the accepted-task count", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitJob(pool, trialsJob(1));
    const lease = await json<Lease>(await claim(pool, "n1"));
    await upload(pool, `jobs/${lease.job_id}/${lease.task_id}/metrics.json`, "{}");
    const done = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, {
      output_sha256: await sha256("{}"),
    });
    expect(await json(done)).toEqual({ accepted: true });
    await register(pool, "n1", { hostname: "renamed", local_datasets: ["x"] });
    const [node] = await json<NodeRow[]>(await call(pool, "GET", "/nodes"));
    expect(node).toMatchObject({ hostname: "renamed", local_datasets: ["x"], accepted_tasks: 1 });
  });

  it("an invalid registration is a 422 naming the field and changes nothing", async () => {
    const pool = freshPool();
    const r = await call(pool, "POST", "/nodes/register", registration("n1", { sandbox_capable: "yes" }));
    expect(r.status).toBe(422);
    const body = await json<{ detail: Array<{ loc: unknown[] }> }>(r);
    expect(body.detail[0]!.loc).toEqual(["body", "sandbox_capable"]);
    expect(await json(await call(pool, "GET", "/nodes"))).toEqual([]);
  });

  it("state survives evicting the object", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitJob(pool, trialsJob(2));
    const lease = await json<Lease>(await claim(pool, "n1"));
    expect(lease.task_id).toBe("trial-000");
    await abortAllDurableObjects();
    const nodes = await json<NodeRow[]>(await call(pool, "GET", "/nodes"));
    expect(nodes.map((n) => n.node_id)).toEqual(["n1"]);
    expect((await call(pool, "POST", `/attempts/${lease.lease_id}/heartbeat`)).status).toBe(200);
    // In a pool of shards the summary restarted too: a claim may answer 204 until it has heard
    // from the job's shard again (docs/protocol.md §15), so this one waits a summary's age first.
    await summarized(pool);
    expect(await json(await claim(pool, "n1"))).toMatchObject({ task_id: "trial-001" });
  });
});

describe("pools", () => {
  it("two pools never see each other's nodes, tasks or artifacts", async () => {
    const a = freshPool();
    const b = freshPool();
    await register(a, "n1");
    await submitJob(a, trialsJob(1));
    await call(a, "PUT", "/artifacts/shared/data.bin", new Uint8Array([1, 2, 3]));
    expect(await json(await call(b, "GET", "/nodes"))).toEqual([]);
    expect(await json(await call(b, "GET", "/jobs"))).toEqual([]);
    expect((await claim(b, "n1")).status).toBe(403);
    await register(b, "n1");
    expect((await claim(b, "n1")).status).toBe(204);
    expect((await call(b, "GET", "/artifacts/shared/data.bin")).status).toBe(404);
    expect((await call(a, "GET", "/artifacts/shared/data.bin")).status).toBe(200);
    expect((await claim(a, "n1")).status).toBe(200);
  });

  it("/v1alpha1 is the pool named local", async () => {
    const { exports } = await import("cloudflare:workers");
    const r = await exports.default.fetch(
      new Request("http://x/v1alpha1/nodes/register", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(registration("local-node")),
      }),
    );
    expect(r.status).toBe(200);
    const nodes = await json<NodeRow[]>(await call("local", "GET", "/nodes"));
    expect(nodes.map((n) => n.node_id)).toContain("local-node");
  });

  it("an invalid pool name is 404", async () => {
    for (const bad of ["UPPER", "-lead", "a_b", "x".repeat(64)]) {
      const r = await call(bad, "GET", "/nodes");
      expect(r.status).toBe(404);
      expect((await json<{ detail: string }>(r)).detail).toContain("pool");
    }
  });
});
