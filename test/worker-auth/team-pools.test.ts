// Team-pool membership is a trust boundary (docs/protocol.md §9, gate 6): with tokens
// enforced, a node is a member of the pools an operator assigned — with
// PUT /nodes/{id}/pools, at the approval of its enrolment, or by sending
// its registration or heartbeat for it — never of those it reports for
// itself. Each test is an attacker's move and the pool's answer.

import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import app from "../../src/index";
import type { DashboardSummary } from "../../src/protocol/dashboard";
import type { PlacementReport } from "../../src/protocol/responses";
import type { Lease } from "../../src/protocol/tasks";
import { freshPool, registration, sleep, trialsJob } from "../worker/helpers";
import { bearer, call } from "./helpers";

const OPS = bearer("tok-ops");
const N1 = bearer("tok-n1");
const TEAM_JOB = trialsJob(1, {}, { placement: { pool: "team-a" } });

async function setUp(): Promise<{ pool: string; jobId: string }> {
  const pool = freshPool();
  expect((await call(pool, "POST", "/nodes/register", N1, registration("n1"))).status).toBe(200);
  const r = await call(pool, "POST", "/jobs", OPS, TEAM_JOB);
  expect(r.status).toBe(201);
  return { pool, jobId: (await r.json<{ job_id: string }>()).job_id };
}

const claimAs = (pool: string, headers: Record<string, string>, nodeId = "n1") =>
  call(pool, "POST", "/leases/claim", headers, { node_id: nodeId });
const assign = (pool: string, nodeId: string, pools: unknown, headers: Record<string, string> = OPS) =>
  call(pool, "PUT", `/nodes/${nodeId}/pools`, headers, { pools });

describe("team-pool membership with tokens enforced", () => {
  it("a node that names a team pool in its own heartbeat is not a member: the team's task is not leased to it", async () => {
    const { pool } = await setUp();
    const hb = await call(pool, "POST", "/nodes/n1/heartbeat", N1, { node_id: "n1", pools: ["team-a"] });
    expect(hb.status).toBe(200);
    expect((await claimAs(pool, N1)).status).toBe(204);
  });

  it("a node that names a team pool in its own registration is not a member either", async () => {
    const pool = freshPool();
    const reg = registration("n1", { capabilities: { pools: ["team-a"] } });
    expect((await call(pool, "POST", "/nodes/register", N1, reg)).status).toBe(200);
    expect((await call(pool, "POST", "/jobs", OPS, TEAM_JOB)).status).toBe(201);
    expect((await claimAs(pool, N1)).status).toBe(204);
  });

  it("once the operator assigns n1 the team pool its task is leased to it, and the assignment survives n1's registrations and heartbeats", async () => {
    const { pool } = await setUp();
    const r = await assign(pool, "n1", ["team-a"]);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ node_id: "n1", pools: ["team-a"], assigned_by: "ops" });
    // The agent keeps reporting no pools; that changes nothing.
    expect((await call(pool, "POST", "/nodes/register", N1, registration("n1"))).status).toBe(200);
    expect((await call(pool, "POST", "/nodes/n1/heartbeat", N1, { node_id: "n1", pools: [] })).status).toBe(200);
    const lease = await claimAs(pool, N1);
    expect(lease.status).toBe(200);
    expect(await lease.json<Lease>()).toMatchObject({ node_id: "n1", task_id: "trial-000" });
  });

  it("an assignment that drops the pool ends the membership", async () => {
    const { pool } = await setUp();
    expect((await assign(pool, "n1", ["team-a"])).status).toBe(200);
    expect((await assign(pool, "n1", [])).status).toBe(200);
    expect((await claimAs(pool, N1)).status).toBe(204);
  });

  it("an assignment wakes the node's held claim: it gets the team's task at once, not at the end of its hold", async () => {
    const { pool } = await setUp();
    const started = Date.now();
    const held = app.fetch(
      new Request(`http://x/pools/${pool}/v1alpha1/leases/claim`, {
        method: "POST",
        headers: { ...N1, "content-type": "application/json" },
        body: JSON.stringify({ node_id: "n1" }),
      }),
      { ...env, FLASHML_CLAIM_WAIT_SECONDS: "10" },
      createExecutionContext(),
    );
    await sleep(100);
    expect((await assign(pool, "n1", ["team-a"])).status).toBe(200);
    const r = await held;
    expect(r.status).toBe(200);
    expect(await r.json<Lease>()).toMatchObject({ node_id: "n1", task_id: "trial-000" });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it.each<[string, Record<string, string>, number]>([
    ["a node's own token", N1, 403],
    ["another node's token", bearer("tok-n2"), 403],
    ["an operator acting for the node", { ...OPS, "x-flashml-on-behalf-of": "n1" }, 200],
    ["no credential", {}, 401],
    ["a wrong token", bearer("tok-nope"), 401],
  ])("PUT /nodes/n1/pools with %s is $2", async (_who, headers, status) => {
    const { pool } = await setUp();
    expect((await assign(pool, "n1", ["team-a"], headers)).status).toBe(status);
    // Only an operator's call made n1 a member.
    expect((await claimAs(pool, N1)).status).toBe(status === 200 ? 200 : 204);
  });

  it("PUT for a node the pool does not know is 404 and assigns nothing", async () => {
    const { pool } = await setUp();
    const r = await assign(pool, "ghost", ["team-a"]);
    expect(r.status).toBe(404);
    expect(await r.json()).toEqual({ detail: "unknown node ghost" });
  });

  it.each<[string, unknown]>([
    ["no pools key", {}],
    ["pools that are not a list", { pools: "team-a" }],
    ["a pool that is not a string", { pools: [1] }],
    ["an empty pool name", { pools: [""] }],
    ["a null pools", { pools: null }],
    ["too many pools", { pools: Array.from({ length: 65 }, (_, i) => `p${i}`) }],
    ["a name that is too long", { pools: ["x".repeat(129)] }],
  ])("PUT with %s is 422 and assigns nothing", async (_what, body) => {
    const { pool } = await setUp();
    const r = await call(pool, "PUT", "/nodes/n1/pools", OPS, body);
    expect(r.status).toBe(422);
    expect((await claimAs(pool, N1)).status).toBe(204);
  });

  it("an operator acting for a node that heartbeats with pools assigns them, as the reference's proxy does", async () => {
    const { pool } = await setUp();
    const asN7 = { ...OPS, "x-flashml-on-behalf-of": "n7" };
    expect((await call(pool, "POST", "/nodes/register", asN7, registration("n7"))).status).toBe(200);
    expect((await claimAs(pool, asN7, "n7")).status).toBe(204);
    const hb = await call(pool, "POST", "/nodes/n7/heartbeat", asN7, { node_id: "n7", pools: ["team-a"] });
    expect(hb.status).toBe(200);
    expect(await (await claimAs(pool, asN7, "n7")).json<Lease>()).toMatchObject({ node_id: "n7" });
  });

  it("the placement report names the assignment, or its absence, in the team-pool refusal", async () => {
    const { pool, jobId } = await setUp();
    await call(pool, "POST", "/nodes/n1/heartbeat", N1, { node_id: "n1", pools: ["team-a"] });
    const report = async () => {
      const r = await call(pool, "GET", `/jobs/${jobId}/tasks/trial-000/placement`, OPS);
      expect(r.status).toBe(200);
      return r.json<PlacementReport>();
    };
    const before = (await report()).nodes[0]!;
    expect(before).toMatchObject({ node_id: "n1", eligible: false, gate: "pool" });
    expect(before.eligible === false && before.reason).toBe(
      "pool: node is not a member of team pool 'team-a' (no team pools assigned by an operator; pools a node reports count only on an open coordinator)",
    );
    expect((await assign(pool, "n1", ["team-b"])).status).toBe(200);
    const refused = await report();
    const node = refused.nodes[0]!;
    expect(node.eligible === false && node.reason).toMatch(
      /^pool: node is not a member of team pool 'team-a' \(assigned pools: "team-b", by ops at \d{4}-\d\d-\d\dT/,
    );
    // The summary groups refusals by the task's side, assignment left out.
    expect(refused.summary).toBe("0/1 nodes eligible: 1 × pool (not in team pool 'team-a')");
    expect((await assign(pool, "n1", ["team-a", "team-b"])).status).toBe(200);
    const eligible = (await report()).nodes[0]!;
    expect(eligible).toMatchObject({ node_id: "n1", eligible: true });
    expect(eligible.membership).toMatch(/^assigned pools: "team-a", "team-b", by ops at /);
  });

  it("the dashboard's node row shows the assigned pools, not the reported ones, and who assigned them", async () => {
    const { pool } = await setUp();
    await call(pool, "POST", "/nodes/n1/heartbeat", N1, { node_id: "n1", pools: ["team-x"] });
    const row = async () => {
      const r = await call(pool, "GET", "/dashboard", OPS);
      return (await r.json<DashboardSummary>()).nodes.items.find((n) => n.node_id === "n1")!;
    };
    expect(await row()).toMatchObject({ pools: [], pool_assignment: null });
    expect((await assign(pool, "n1", ["team-a"])).status).toBe(200);
    const after = await row();
    expect(after.pools).toEqual(["team-a"]);
    expect(after.pool_assignment).toMatchObject({ assigned_by: "ops" });
  });

  it("GET /nodes shows the pools a node is a member of, the operator's assignment, never the ones it reports", async () => {
    const pool = freshPool();
    const reg = registration("n1", { capabilities: { pools: ["team-a"] } });
    expect((await call(pool, "POST", "/nodes/register", N1, reg)).status).toBe(200);
    const listed = async () => {
      const r = await call(pool, "GET", "/nodes", OPS);
      expect(r.status).toBe(200);
      const nodes = await r.json<Array<{ node_id: string; capabilities: { pools: string[] } }>>();
      return nodes.find((n) => n.node_id === "n1")!.capabilities.pools;
    };
    // Reported, never assigned: a member of none, as the dashboard and the claim see it.
    expect(await listed()).toEqual([]);
    expect((await assign(pool, "n1", ["team-b", "team-c"])).status).toBe(200);
    expect(await listed()).toEqual(["team-b", "team-c"]);
    // The node reports again; the list still shows the assignment.
    expect((await call(pool, "POST", "/nodes/n1/heartbeat", N1, { node_id: "n1", pools: ["team-a"] })).status).toBe(
      200,
    );
    expect(await listed()).toEqual(["team-b", "team-c"]);
    expect((await assign(pool, "n1", [])).status).toBe(200);
    expect(await listed()).toEqual([]);
    const dashboard = await (await call(pool, "GET", "/dashboard", OPS)).json<DashboardSummary>();
    expect(dashboard.nodes.items.find((n) => n.node_id === "n1")!.pools).toEqual([]);
  });
});

describe("team pools named at the approval of an enrolment", () => {
  const MACHINE = { node_id: "laptop-7", hostname: "laptop-7.local", platform: "linux-x86_64" };

  async function enrolWith(pool: string, approval: Record<string, unknown>): Promise<string> {
    const code = await (await call(pool, "POST", "/device/code", { "cf-connecting-ip": "203.0.113.9" }, MACHINE)).json<{
      device_code: string;
      user_code: string;
    }>();
    const approved = await call(pool, "POST", "/device/approve", OPS, { user_code: code.user_code, ...approval });
    expect(approved.status).toBe(200);
    const r = await call(pool, "POST", "/device/token", {}, { device_code: code.device_code });
    expect(r.status).toBe(200);
    return (await r.json<{ token: string }>()).token;
  }

  it("an approval naming pools makes the machine a member once it redeems its code; one naming none does not", async () => {
    for (const [approval, status] of [
      [{ pools: ["team-a"] }, 200],
      [{}, 204],
    ] as const) {
      const pool = freshPool();
      const token = await enrolWith(pool, approval);
      expect((await call(pool, "POST", "/jobs", OPS, TEAM_JOB)).status).toBe(201);
      // The agent registers reporting no pools, as it always does.
      expect((await call(pool, "POST", "/nodes/register", bearer(token), registration("laptop-7"))).status).toBe(200);
      expect((await claimAs(pool, bearer(token), "laptop-7")).status, JSON.stringify(approval)).toBe(status);
    }
  });

  it("an approval with malformed pools is 422 and decides nothing", async () => {
    const pool = freshPool();
    const code = await (await call(pool, "POST", "/device/code", {}, MACHINE)).json<{ user_code: string }>();
    const r = await call(pool, "POST", "/device/approve", OPS, { user_code: code.user_code, pools: "team-a" });
    expect(r.status).toBe(422);
    const pending = await (await call(pool, "GET", "/device/pending", OPS)).json<{ user_code: string }[]>();
    expect(pending.map((p) => p.user_code)).toEqual([code.user_code]);
  });
});
