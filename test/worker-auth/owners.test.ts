// Independent replicas (docs/protocol.md §14): replicas of one task run on nodes of
// distinct owners, so one person's many machines cannot make a quorum
// alone. Through the real Worker with tokens configured (vitest.config.ts:
// m1 and m2 are both mallory's by FLASHML_NODE_OWNERS, n1 and n2 their own),
// and with machines enrolled under an owner the operator names.

import { describe, expect, it } from "vitest";
import type { Lease } from "../../src/protocol/tasks";
import { freshPool, registration, trialsJob } from "../worker/helpers";
import { bearer, call, enrol } from "./helpers";

const OPS = bearer("tok-ops");

async function replicatedJob(pool: string, replicas = 2): Promise<string> {
  const spec = trialsJob(1);
  const job = { ...spec, metadata: { ...spec.metadata, labels: { "flashml.dev/replicas": String(replicas) } } };
  const r = await call(pool, "POST", "/jobs", OPS, job);
  expect(r.status).toBe(201);
  return (await r.json<{ job_id: string }>()).job_id;
}

async function register(pool: string, token: string, nodeId: string) {
  expect((await call(pool, "POST", "/nodes/register", bearer(token), registration(nodeId))).status).toBe(200);
}

const claim = (pool: string, token: string, nodeId: string) =>
  call(pool, "POST", "/leases/claim", bearer(token), { node_id: nodeId });

/** A machine enrolled by the device-code flow, approved with `approval` (e.g. an owner): its token. */

type Report = {
  nodes: { node_id: string; eligible: boolean; gate?: string; reason?: string }[];
  summary: string;
  replicas: {
    items: { node_id: string; owner: string }[];
    owners: { eligible: number; needed: number; short: boolean };
  };
};

async function placement(pool: string, job: string): Promise<Report> {
  return (await call(pool, "GET", `/jobs/${job}/tasks/trial-000/placement`, OPS)).json();
}

describe("replicas of one task run on nodes of distinct owners", () => {
  it("two machines of one configured owner: the second gets nothing (204), a third owner's machine gets it", async () => {
    const pool = freshPool();
    const job = await replicatedJob(pool);
    for (const n of ["m1", "m2", "n1"]) await register(pool, `tok-${n}`, n);
    const first = await claim(pool, "tok-m1", "m1");
    expect(first.status).toBe(200);
    expect((await first.json<Lease>()).payload.output_prefix).toBe(`jobs/${job}/trial-000/r1/`);
    // mallory's other machine is not an independent replica.
    expect((await claim(pool, "tok-m2", "m2")).status).toBe(204);
    const second = await claim(pool, "tok-n1", "n1");
    expect(second.status).toBe(200);
    expect((await second.json<Lease>()).payload.output_prefix).toBe(`jobs/${job}/trial-000/r2/`);
  });

  it("an operator acting for a machine of that owner gets nothing either", async () => {
    const pool = freshPool();
    await replicatedJob(pool);
    for (const n of ["m1", "m2"]) await register(pool, `tok-${n}`, n);
    expect((await claim(pool, "tok-m1", "m1")).status).toBe(200);
    const delegated = await call(
      pool,
      "POST",
      "/leases/claim",
      { ...OPS, "x-flashml-on-behalf-of": "m2" },
      {
        node_id: "m2",
      },
    );
    expect(delegated.status).toBe(204);
  });

  it("two machines enrolled under one owner cannot make a quorum alone; another owner's can", async () => {
    const pool = freshPool();
    const job = await replicatedJob(pool);
    const a = await enrol(pool, "laptop-a", { owner: "eve" });
    const b = await enrol(pool, "laptop-b", { owner: "eve" });
    const c = await enrol(pool, "laptop-c");
    for (const [token, node] of [
      [a, "laptop-a"],
      [b, "laptop-b"],
      [c, "laptop-c"],
    ] as const)
      await register(pool, token, node);
    expect((await claim(pool, a, "laptop-a")).status).toBe(200);
    expect((await claim(pool, b, "laptop-b")).status).toBe(204);
    // laptop-c was approved with no owner: it is its own.
    expect((await claim(pool, c, "laptop-c")).status).toBe(200);
    const report = await placement(pool, job);
    expect(report.replicas.items.map((r) => [r.node_id, r.owner])).toEqual([
      ["laptop-a", "eve"],
      ["laptop-c", "laptop-c"],
    ]);
  });

  it("a lease keeps its owner: re-enrolling the machine under another owner frees nothing for the first owner", async () => {
    const pool = freshPool();
    await replicatedJob(pool, 3);
    const a = await enrol(pool, "laptop-a", { owner: "eve" });
    const b = await enrol(pool, "laptop-b", { owner: "eve" });
    await register(pool, a, "laptop-a");
    await register(pool, b, "laptop-b");
    expect((await claim(pool, a, "laptop-a")).status).toBe(200);
    // laptop-a is frank's now (its lease ends with the old credential): eve still ran replica 1 through it,
    // and laptop-a itself ran it.
    const again = await enrol(pool, "laptop-a", { owner: "frank" });
    expect((await claim(pool, again, "laptop-a")).status).toBe(204);
    expect((await claim(pool, b, "laptop-b")).status).toBe(204);
    await register(pool, "tok-n1", "n1");
    expect((await claim(pool, "tok-n1", "n1")).status).toBe(200);
  });
});

describe("owners are visible", () => {
  it("GET /nodes and the dashboard's credentials name each machine's owner", async () => {
    const pool = freshPool();
    const a = await enrol(pool, "laptop-a", { owner: "eve" });
    await register(pool, a, "laptop-a");
    for (const n of ["m1", "n1"]) await register(pool, `tok-${n}`, n);
    const nodes = await (await call(pool, "GET", "/nodes", OPS)).json<{ node_id: string; owner: string }[]>();
    // In a pool of shards the list goes home by home: the order is not what this asserts.
    const owners = nodes.map((n) => [n.node_id, n.owner]).sort(([a], [b]) => (a! < b! ? -1 : 1));
    expect(owners).toEqual([
      ["laptop-a", "eve"],
      ["m1", "mallory"],
      ["n1", "n1"],
    ]);
    const dashboard = await (await call(pool, "GET", "/dashboard", OPS)).json<{
      enrolment: { credentials: { items: { node_id: string; owner: string }[] } };
    }>();
    expect(dashboard.enrolment.credentials.items.map((c) => [c.node_id, c.owner])).toEqual([["laptop-a", "eve"]]);
  });

  it("the placement report names the owner whose machine ran a replica, and flags a task short of owners", async () => {
    const pool = freshPool();
    const job = await replicatedJob(pool);
    for (const n of ["m1", "m2"]) await register(pool, `tok-${n}`, n);
    expect((await claim(pool, "tok-m1", "m1")).status).toBe(200);
    const report = await placement(pool, job);
    expect(report.nodes).toMatchObject([
      { node_id: "m1", eligible: false, gate: "replica" },
      {
        node_id: "m2",
        eligible: false,
        gate: "replica",
        reason:
          "replica: a node of owner mallory holds replica 1 of this task; replicas run on nodes of distinct owners",
      },
    ]);
    expect(report.replicas.owners).toEqual({ eligible: 1, needed: 2, short: true });
    expect(report.summary).toBe(
      "0/2 nodes eligible: 1 × replica (a node of its owner holds or ran a replica of this task), " +
        "1 × replica (holds or ran a replica of this task); only 1 distinct owner can run its replicas, 2 needed",
    );
    // Another owner's machine lifts the flag.
    await register(pool, "tok-n1", "n1");
    expect((await placement(pool, job)).replicas.owners).toEqual({ eligible: 2, needed: 2, short: false });
  });
});

describe("an approval's owner", () => {
  it.each([
    ["empty", ""],
    ["only spaces", "   "],
    ["longer than 128 characters", "x".repeat(129)],
    ["not text", 7],
  ])("that is %s is a 422 naming owner, and the code stays pending", async (_what, owner) => {
    const pool = freshPool();
    const asked = await call(pool, "POST", "/device/code", {}, { node_id: "laptop-a" });
    const code = await asked.json<{ user_code: string }>();
    const r = await call(pool, "POST", "/device/approve", OPS, { user_code: code.user_code, owner });
    expect(r.status).toBe(422);
    const detail = (await r.json<{ detail: { loc: unknown[] }[] }>()).detail;
    expect(detail[0]!.loc).toEqual(["body", "owner"]);
    const pending = await (await call(pool, "GET", "/device/pending", OPS)).json<{ node_id: string }[]>();
    expect(pending.map((p) => p.node_id)).toEqual(["laptop-a"]);
  });

  it("is answered as stored: the one asked for, trimmed, else the node id", async () => {
    const pool = freshPool();
    for (const [node, approval, owner] of [
      ["laptop-a", { owner: "  eve " }, "eve"],
      ["laptop-b", {}, "laptop-b"],
      ["laptop-c", { owner: null }, "laptop-c"],
    ] as const) {
      const asked = await call(pool, "POST", "/device/code", {}, { node_id: node });
      const code = await asked.json<{ user_code: string }>();
      const r = await call(pool, "POST", "/device/approve", OPS, { user_code: code.user_code, ...approval });
      expect(await r.json()).toEqual({ approved: true, node_id: node, owner });
    }
  });
});
