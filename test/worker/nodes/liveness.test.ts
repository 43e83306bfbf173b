// Liveness from every request of a node (docs/protocol.md §5): the agent sends no node
// heartbeats while a task runs, so any request proves a node alive, and a
// node holding a live lease is online however long the task takes. Time is
// moved by shifting a node's stored times into the past, as if its last
// request had been that long ago.

import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { LIVENESS_LEAD_MS, lastRequests } from "../../../src/pool/nodes/liveness";
import { migrate } from "../../../src/pool/schema/schema";
import type { Lease } from "../../../src/protocol/tasks";
import { jobSpec } from "../../fixtures/jobspec";
import {
  ageNode,
  agePassport,
  call,
  claim,
  delivered,
  expireLeases,
  freshPool,
  homeStub,
  json,
  register,
  sha256,
  shardOfJob,
  shardStubs,
  shardsOf,
  sleep,
  stub,
  upload,
} from "../helpers";
import { rewindSchema } from "../schema/schema-history";

const SHARDED = (env.FLASHML_POOL_SHARDS ?? "") !== "";

type NodeRow = { node_id: string; online: boolean; last_heartbeat_age_s: number };

/** Moves everything the pool knows about `nodeId`'s requests and leases `ms` into the past. */
async function age(pool: string, nodeId: string, ms: number) {
  await delivered(pool); // what the node did at other shards is in its home's record first
  // Its leases are in the shards that issued them, and what those shards saw of it in its passports there.
  for (const shard of shardStubs(pool)) {
    await runInDurableObject(shard, (_o, state) => {
      state.storage.sql.exec(
        "UPDATE leases SET issued_ms = issued_ms - ?1, deadline_ms = deadline_ms - ?1, check_ms = check_ms - ?1 WHERE node_id = ?2",
        ms,
        nodeId,
      );
      agePassport(state.storage.sql, nodeId, ms);
    });
  }
  await ageNode(pool, nodeId, ms);
}

async function node(pool: string, nodeId: string): Promise<NodeRow> {
  await delivered(pool);
  const nodes = await json<NodeRow[]>(await call(pool, "GET", "/nodes"));
  return nodes.find((n) => n.node_id === nodeId)!;
}

async function setUp(leaseSeconds = 600) {
  const pool = freshPool();
  await register(pool, "busy");
  await register(pool, "idle");
  const spec = jobSpec(
    { type: "hyperparameter_search", parameters: { trials: [{ a: 1 }, { a: 2 }], lease_seconds: leaseSeconds } },
    {},
    "long-task",
  );
  const r = await call(pool, "POST", "/jobs", spec);
  expect(r.status).toBe(201);
  return pool;
}

describe("liveness", () => {
  // A pool from before this schema step is a pool from before shards, whose leases all are in its one object.
  it.skipIf(SHARDED)(
    "a pool from before liveness-from-requests keeps its lease holders online after the upgrade",
    async () => {
      const pool = await setUp();
      const lease = await json<Lease>(await claim(pool, "busy"));
      const nodes = await runInDurableObject(stub(pool), (_o, state) => {
        const sql = state.storage.sql;
        rewindSchema(sql, 3);
        state.storage.transactionSync(() => migrate(sql));
        return sql
          .exec<{ node_id: string; last_heartbeat_ms: number; live_until_ms: number }>(
            "SELECT node_id, last_heartbeat_ms, live_until_ms FROM nodes ORDER BY node_id",
          )
          .toArray();
      });
      const [busy, idle] = nodes;
      expect(busy!.live_until_ms).toBe(Date.parse(lease.deadline)); // its lease, far past the online window
      expect(idle!.live_until_ms).toBe(idle!.last_heartbeat_ms + 15_000);
    },
  );

  it("a node 18 s into a task, with no heartbeat since its claim, is online; an idle silent node is not", async () => {
    const pool = await setUp();
    const lease = await json<Lease>(await claim(pool, "busy"));
    expect(lease.node_id).toBe("busy");
    await age(pool, "busy", 18_000);
    await age(pool, "idle", 18_000);

    const busy = await node(pool, "busy");
    expect(busy.online).toBe(true);
    expect(busy.last_heartbeat_age_s).toBeGreaterThanOrEqual(18);
    expect((await node(pool, "idle")).online).toBe(false);

    const metrics = await (await call(pool, "GET", "/metrics")).text();
    expect(metrics).toMatch(/^flashedge_nodes\{pool="[^"]+",online="true"\} 1$/m);
    const dashboard = await json<{ counts: { nodes: { online: number } }; stuck: { items: unknown[] } }>(
      await call(pool, "GET", "/dashboard"),
    );
    expect(dashboard.counts.nodes.online).toBe(1);
    // The other task is pending and the busy node could take it: not stuck.
    expect(dashboard.stuck.items).toEqual([]);
    const placement = await json<{ nodes: Array<{ node_id: string; online: boolean }> }>(
      await call(pool, "GET", `/jobs/${lease.job_id}/tasks/trial-001/placement`),
    );
    expect(placement.nodes.find((n) => n.node_id === "busy")?.online).toBe(true);
  });

  it("a refused request proves nothing: a heartbeat on a dead lease leaves a silent node offline", async () => {
    const pool = await setUp(5);
    const lease = await json<Lease>(await claim(pool, "busy"));
    await age(pool, "busy", 60_000);
    expect((await call(pool, "POST", `/attempts/${lease.lease_id}/heartbeat`)).status).toBe(410);
    expect((await node(pool, "busy")).online).toBe(false);
  });

  it("a node whose lease has passed its deadline is offline again once its last request is old", async () => {
    const pool = await setUp(30);
    await json<Lease>(await claim(pool, "busy"));
    await age(pool, "busy", 31_000);
    // At S > 1 a lease's shard tells the node's home once the lease expires there, which its alarm does at the
    // deadline; a home held the node a minute past the deadline it heard till then (docs/sharding.md §8.3).
    for (const shard of SHARDED ? shardStubs(pool) : []) await runDurableObjectAlarm(shard);
    expect((await node(pool, "busy")).online).toBe(false);
  });

  it.each<[string, (pool: string, lease: Lease) => Promise<Response>]>([
    [
      "commits",
      async (pool, lease) => {
        const key = `jobs/${lease.job_id}/${lease.task_id}/metrics.json`;
        expect((await upload(pool, key, "{}")).status).toBe(200);
        return call(pool, "POST", `/attempts/${lease.lease_id}/complete`, { output_sha256: await sha256("{}") });
      },
    ],
    ["fails", (pool, lease) => call(pool, "POST", `/attempts/${lease.lease_id}/fail`, { reason: "crashed" })],
    ["is cancelled with its job", (pool, lease) => call(pool, "POST", `/jobs/${lease.job_id}/cancel`)],
  ])(
    "a node whose hour-long lease %s is online for its last request + 15 s, not until the deadline",
    async (_, end) => {
      const pool = await setUp(3600);
      const lease = await json<Lease>(await claim(pool, "busy"));
      expect((await end(pool, lease)).status).toBe(200);
      await age(pool, "busy", 16_000);
      expect((await node(pool, "busy")).online).toBe(false);
    },
  );

  it("a node whose lease expires is offline at once when its last request is old", async () => {
    const pool = await setUp(3600);
    await json<Lease>(await claim(pool, "busy"));
    await age(pool, "busy", 20_000);
    expect(await expireLeases(pool)).toBe(true);
    expect((await node(pool, "busy")).online).toBe(false);
  });

  it("a node that still holds another live lease stays online when one of its leases ends", async () => {
    const pool = await setUp(3600);
    const first = await json<Lease>(await claim(pool, "busy"));
    await json<Lease>(await claim(pool, "busy"));
    expect((await call(pool, "POST", `/attempts/${first.lease_id}/fail`, { reason: "oom" })).status).toBe(200);
    await age(pool, "busy", 60_000);
    expect((await node(pool, "busy")).online).toBe(true);
  });

  // An attempt heartbeat at another shard than the node's home reaches the home only when the deadline the home
  // knows would lapse first (docs/sharding.md §8.3): there it proves the node alive through its lease.
  it.each<[string, (pool: string, lease: Lease) => Promise<Response>]>([
    ["a node heartbeat", (pool) => call(pool, "POST", "/nodes/busy/heartbeat", { node_id: "busy" })],
    ["a claim that gets nothing", (pool) => claim(pool, "busy", "0000000000ff")],
    ["an attempt heartbeat", (pool, lease) => call(pool, "POST", `/attempts/${lease.lease_id}/heartbeat`)],
    ["a fail", (pool, lease) => call(pool, "POST", `/attempts/${lease.lease_id}/fail`, { reason: "crashed" })],
    [
      "an upload and a commit",
      async (pool, lease) => {
        const key = `jobs/${lease.job_id}/${lease.task_id}/metrics.json`;
        expect((await upload(pool, key, '{"loss": 0.1}')).status).toBe(200);
        return call(pool, "POST", `/attempts/${lease.lease_id}/complete`, {
          output_sha256: await sha256('{"loss": 0.1}'),
        });
      },
    ],
    ["registering again", (pool) => register(pool, "busy").then(() => new Response(null))],
  ])("%s proves a node alive", async (name, request) => {
    const pool = await setUp();
    const lease = await json<Lease>(await claim(pool, "busy"));
    await age(pool, "busy", 60_000);
    expect((await node(pool, "busy")).last_heartbeat_age_s).toBeGreaterThanOrEqual(60);
    const r = await request(pool, lease);
    expect(r.status).toBeLessThan(300);
    const after = await node(pool, "busy");
    expect(after.online).toBe(true);
    const elsewhere = name === "an attempt heartbeat" && shardsOf(pool) > 1 && shardOfJob(pool, lease.job_id) !== 0;
    if (!elsewhere) expect(after.last_heartbeat_age_s).toBeLessThan(5);
  });
});

// Soft liveness (docs/protocol.md §16): the row is written five minutes ahead, the exact last request is kept in
// memory, and once its window ends the alarm writes the row down to it.
describe("soft liveness", () => {
  it("an idle node's requests write its row once, five minutes ahead; the alarm writes it down once it goes silent", async () => {
    const pool = freshPool();
    await register(pool, "quiet");
    const home = await homeStub(pool, "quiet");
    const row = () =>
      runInDurableObject(home, (_o, state) =>
        state.storage.sql
          .exec<{ last_heartbeat_ms: number; live_until_ms: number }>(
            "SELECT last_heartbeat_ms, live_until_ms FROM nodes WHERE node_id = 'quiet'",
          )
          .one(),
      );
    const registered = await row();
    expect(registered.live_until_ms).toBe(registered.last_heartbeat_ms + 15_000 + LIVENESS_LEAD_MS);
    await sleep(30);
    for (let i = 0; i < 3; i++)
      expect((await call(pool, "POST", "/nodes/quiet/heartbeat", { node_id: "quiet" })).status).toBe(200);
    // The row is as it was; the node's age is its last request's, kept in memory.
    expect(await row()).toEqual(registered);
    expect((await node(pool, "quiet")).last_heartbeat_age_s).toBeLessThan(0.03);

    // 16 s of silence later, by the home's clock: the alarm armed for it writes the row down.
    const silentSince = await runInDurableObject(home, (_o, state) => {
      const known = lastRequests(state.storage.sql);
      known.saw("quiet", known.get("quiet")!.at - 16_000);
      return known.get("quiet")!.at;
    });
    expect(await runDurableObjectAlarm(home)).toBe(true);
    const settled = await row();
    expect(settled.live_until_ms).toBe(silentSince + 15_000);
    expect(settled.live_until_ms).toBeLessThan(Date.now());
    expect((await node(pool, "quiet")).online).toBe(false);
  });

  it("a working node's silence between renewals writes nothing: its lease keeps it online", async () => {
    const pool = await setUp(600);
    const lease = await json<Lease>(await claim(pool, "busy"));
    expect((await call(pool, "POST", `/attempts/${lease.lease_id}/heartbeat`)).status).toBe(200);
    const home = await homeStub(pool, "busy");
    const liveUntil = () =>
      runInDurableObject(
        home,
        (_o, state) =>
          state.storage.sql.exec<{ t: number }>("SELECT live_until_ms AS t FROM nodes WHERE node_id = 'busy'").one().t,
      );
    const before = await liveUntil();
    await runInDurableObject(home, (_o, state) => {
      const known = lastRequests(state.storage.sql);
      known.saw("busy", known.get("busy")!.at - 16_000);
    });
    await runDurableObjectAlarm(home);
    expect(await liveUntil()).toBe(before);
    expect((await node(pool, "busy")).online).toBe(true);
  });

  it("after a restart the written row stands, five minutes ahead at most, until the node's next request", async () => {
    const pool = freshPool();
    await register(pool, "quiet");
    const home = await homeStub(pool, "quiet");
    // A restart forgets what memory held; the row says online until five minutes past the request's window.
    await runInDurableObject(home, (_o, state) => lastRequests(state.storage.sql).takeDue(Number.POSITIVE_INFINITY));
    const { written } = await runInDurableObject(home, (_o, state) => ({
      written: state.storage.sql
        .exec<{ t: number }>("SELECT live_until_ms - last_heartbeat_ms AS t FROM nodes WHERE node_id = 'quiet'")
        .one().t,
    }));
    expect(written).toBe(15_000 + LIVENESS_LEAD_MS);
    expect((await node(pool, "quiet")).online).toBe(true);
  });
});
