// Node homes in a pool of 4 shards (docs/sharding.md §4.2): a node registers
// at its registry shard, jump(node_id, 4), and lives there; a node homed
// elsewhere before (shard 0, where every node of a pool's one-shard days,
// and of a pool before homes spread, lives) is found there and stays there;
// a call sent by hand to a shard that is not the node's home is refused
// with the home, and changes nothing.

import { describe, expect, it } from "vitest";
import { NOT_HOME } from "../../src/pool/nodes/homes";
import { NodeRegistrationSchema } from "../../src/protocol/nodes";
import { registryShard } from "../../src/rules/shard-ids";
import { call, claim, freshPool, json, nodeIdAt, register, registration, trialsJob } from "../worker/helpers";
import { callsWrappedBy, shard, submitTo } from "./helpers";

const SHARDS = 4;

/** The shards that hold node `nodeId`: its registration or credential. */
async function holders(pool: string, nodeId: string): Promise<number[]> {
  const held = await Promise.all(Array.from({ length: SHARDS }, (_, k) => shard(pool, k).peer().livesHere(nodeId)));
  return held.flatMap((h, k) => (h ? [k] : []));
}

const asRegistration = (pool: string, nodeId: string) =>
  NodeRegistrationSchema.parse({ ...registration(nodeId), pool });

describe("node homes at 4 shards", () => {
  it("a node registers at its registry shard and only there, and heartbeats and claims reach it", async () => {
    const pool = freshPool();
    const ids = [0, 1, 2, 3].map((k) => nodeIdAt(pool, "box", k));
    for (const id of ids) await register(pool, id);
    for (const [k, id] of ids.entries()) expect(await holders(pool, id)).toEqual([k]);
    const jobId = await submitTo(pool, 3, trialsJob(4));
    for (const id of ids) {
      expect((await call(pool, "POST", `/nodes/${id}/heartbeat`, { node_id: id, status: "online" })).status).toBe(200);
      expect(await json(await claim(pool, id))).toMatchObject({ job_id: jobId, node_id: id });
    }
    const listed = await json<Array<{ node_id: string }>>(await call(pool, "GET", "/nodes"));
    expect(listed.map((n) => n.node_id)).toEqual(ids); // home by home, shard 0 first
  });

  it("a node homed at shard 0 before its registry shard knew it stays there: served, listed once, never registered twice", async () => {
    const pool = freshPool();
    const id = nodeIdAt(pool, "old", 2);
    // As a pool's one-shard days (or the days before homes spread) left it: registered in shard 0.
    await shard(pool, 0).register(asRegistration(pool, id));
    expect(await holders(pool, id)).toEqual([0]);
    // Through the Worker: shard 2 answers that shard 0 is the home, and the Worker goes there.
    expect((await call(pool, "POST", "/nodes/register", registration(id))).status).toBe(200);
    expect((await call(pool, "POST", `/nodes/${id}/heartbeat`, { node_id: id, status: "online" })).status).toBe(200);
    const jobId = await submitTo(pool, 1, trialsJob(1));
    expect(await json(await claim(pool, id))).toMatchObject({ job_id: jobId, node_id: id });
    expect(await holders(pool, id)).toEqual([0]);
    const listed = await json<Array<{ node_id: string }>>(await call(pool, "GET", "/nodes"));
    expect(listed.filter((n) => n.node_id === id)).toHaveLength(1);
  });

  it("a call by hand at a shard that is not the node's home is refused with its home, and registers nothing there", async () => {
    const pool = freshPool();
    const id = nodeIdAt(pool, "n", 1);
    await register(pool, id);
    const refusal = (p: Promise<unknown>) =>
      p.then(
        () => "answered",
        (e: Error) => e.message,
      );
    expect(await refusal(shard(pool, 3).register(asRegistration(pool, id)))).toBe(`${NOT_HOME}1`);
    expect(await refusal(shard(pool, 3).claim(id, null, 0))).toBe(`${NOT_HOME}1`);
    expect(await refusal(shard(pool, 0).releaseNode(id))).toBe(`${NOT_HOME}1`);
    expect(await holders(pool, id)).toEqual([1]);
    // A node no shard holds may be homed only where it may live: its registry shard, or shard 0.
    const fresh = nodeIdAt(pool, "fresh", 2);
    expect(await refusal(shard(pool, 3).register(asRegistration(pool, fresh)))).toBe(`${NOT_HOME}2`);
    expect(await holders(pool, fresh)).toEqual([]);
  });

  it("a node that claims before it registers is refused, and registering afterwards homes it at its registry shard", async () => {
    const pool = freshPool();
    const id = "early-bird";
    expect((await claim(pool, id)).status).toBe(403);
    expect((await claim(pool, id)).status).toBe(403);
    await register(pool, id);
    expect(await holders(pool, id)).toEqual([registryShard(id, SHARDS)]);
  });

  it("every call a route sends to a node's home is one that checks the home in its body", () => {
    const routes = import.meta.glob(["../../src/routes/*.ts"], { query: "?raw", import: "default", eager: true });
    const sent = new Set<string>();
    for (const text of Object.values(routes) as string[])
      for (const m of text.matchAll(/\.home\([^,]+,\s*async \(\w+\) =>\s*\w+\.(\w+)\(/g)) sent.add(m[1]!);
    expect(sent.size).toBeGreaterThanOrEqual(6);
    const checked = callsWrappedBy("#whenHome(");
    for (const name of sent) expect(checked, name).toContain(name);
  });
});
