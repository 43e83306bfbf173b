// Ids minted while a pool had one shard (docs/sharding.md §4.1): they name no
// shard and live in shard 0, but one in 256 passes another shard's tag check
// and is routed there. That shard asks shard 0 for an id it does not hold, in
// a pool whose layout history has a one-shard epoch, and only then. Runs at 4
// shards; the raise from one shard is written into the layout history, since
// a project's env is fixed.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { mintShardHex } from "../../src/rules/shard-ids";
import { call, claim, freshPool, json, register, trialsJob } from "../worker/helpers";
import { callsWrappedBy, shard, submitTo } from "./helpers";

/** A pool raised from 1 to 4 shards (or started at 4), and a job in shard 0 whose id passes shard 2's tag check. */
async function poolWithStrayId(raisedFromOne: boolean): Promise<{ pool: string; jobId: string }> {
  const pool = freshPool();
  const history = raisedFromOne
    ? [
        [0, 1],
        [1, 4],
      ]
    : [[0, 4]];
  for (const k of [0, 2]) {
    await runInDurableObject(shard(pool, k), (_o, state) => {
      state.storage.sql.exec("DELETE FROM pool_layout");
      for (const [epoch, shards] of history) {
        state.storage.sql.exec("INSERT INTO pool_layout (epoch, shards, since_ms) VALUES (?, ?, 0)", epoch, shards);
      }
    });
  }
  const jobId = await submitTo(pool, 0, trialsJob(1), { jobId: mintShardHex(pool, 2, "5ca1ab1e") }); // as if drawn at random at one shard
  return { pool, jobId };
}

describe("legacy ids after a raise from one shard", () => {
  it("a job whose old id names shard 2 is read, listed as tasks and cancelled through shard 0", async () => {
    const { pool, jobId } = await poolWithStrayId(true);
    const got = await call(pool, "GET", `/jobs/${jobId}`);
    expect(got.status).toBe(200);
    expect((await json(got)).job_id).toBe(jobId);
    expect((await call(pool, "GET", `/jobs/${jobId}/tasks`)).status).toBe(200);
    expect((await json(await call(pool, "POST", `/jobs/${jobId}/cancel`))).state).toBe("CANCELLED");
  });

  it("a live lease whose old id names shard 2 is renewed and failed through shard 0", async () => {
    const { pool, jobId } = await poolWithStrayId(true);
    await register(pool, "n1");
    const lease = await json(await claim(pool, "n1", jobId));
    const stray = mintShardHex(pool, 2, "0ddba11a");
    await runInDurableObject(shard(pool, 0), (_o, state) => {
      state.storage.sql.exec("UPDATE leases SET lease_id = ? WHERE lease_id = ?", `ls-${stray}`, lease.lease_id);
      state.storage.sql.exec("UPDATE tasks SET lease_id = ? WHERE lease_id = ?", `ls-${stray}`, lease.lease_id);
    });
    const renewed = await call(pool, "POST", `/attempts/ls-${stray}/heartbeat`, { node_id: "n1" });
    expect(renewed.status).toBe(200);
    const failed = await call(pool, "POST", `/attempts/ls-${stray}/fail`, { node_id: "n1", reason: "test" });
    expect(failed.status).toBe(200);
  });

  it("in a pool that never had one shard the same id is unknown where it points: no second hop", async () => {
    const { pool, jobId } = await poolWithStrayId(false);
    const got = await call(pool, "GET", `/jobs/${jobId}`);
    expect(got.status).toBe(404);
    expect(await json(got)).toEqual({ detail: `no such job: ${jobId}` });
  });

  it("an unknown id in a raised pool is the 404 of any unknown id", async () => {
    const { pool } = await poolWithStrayId(true);
    const unknown = mintShardHex(pool, 2, "deadbeef");
    const got = await call(pool, "GET", `/jobs/${unknown}`);
    expect(got.status).toBe(404);
    expect(await json(got)).toEqual({ detail: `no such job: ${unknown}` });
  });

  it("every call a route sends by a job, lease or key id asks shard 0 for an id of the one-shard days", () => {
    const routes = import.meta.glob(["../../src/routes/*.ts"], { query: "?raw", import: "default", eager: true });
    const sent = new Set<string>();
    for (const text of Object.values(routes) as string[])
      for (const m of text.matchAll(/\.(?:job|lease|key)\([^,]+,\s*async \((\w+)\) =>[\s\S]*?\b\1\.(\w+)\(/g))
        sent.add(m[2]!);
    expect(sent.size).toBeGreaterThanOrEqual(15);
    const covered = callsWrappedBy("#heldHereOr(");
    for (const name of sent) expect(covered, name).toContain(name);
  });
});
