// What a node's home hears of its work on another shard, and a claim for a
// job of another shard (docs/sharding.md §5.3, §8.3, §16), in a pool of 4
// shards (worker-shards): a claim for one job is held where the job is, so
// its work wakes it and its cancel answers it; a lease that ends there lowers
// the node's liveness at home as one that ends at home does.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { HEARD_GRACE_MS, LIVENESS_LEAD_MS } from "../../src/pool/nodes/liveness";
import type { Lease } from "../../src/protocol/tasks";
import { ageNode, call, claim, delivered, freshPool, json, register, trialsJob } from "../worker/helpers";
import { shard, submitTo } from "./helpers";

describe("a claim for a job of another shard", () => {
  it("is held there and answered the moment that job's task is requeued", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await register(pool, "n2");
    const job = await submitTo(pool, 3, trialsJob(1));
    const taken = await json<Lease>(await claim(pool, "n2", job));
    const started = Date.now();
    const held = shard(pool, 0).claim("n1", job, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await call(pool, "POST", `/attempts/${taken.lease_id}/fail`, { reason: "x" })).status).toBe(200);
    const answer = await held;
    expect(answer).toMatchObject({ ok: true, lease: { node_id: "n1", job_id: job, attempt_number: 2 } });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("is answered when that job is cancelled, not at the end of its hold", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await register(pool, "n2");
    const job = await submitTo(pool, 1, trialsJob(1));
    expect((await claim(pool, "n2", job)).status).toBe(200);
    const started = Date.now();
    const held = shard(pool, 0).claim("n1", job, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await call(pool, "POST", `/jobs/${job}/cancel`)).status).toBe(200);
    expect(await held).toEqual({ ok: false, reason: "job_closed" });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("claimed again meanwhile, the earlier one is answered with nothing and the new one gets the task", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await register(pool, "n2");
    const job = await submitTo(pool, 2, trialsJob(1));
    const taken = await json<Lease>(await claim(pool, "n2", job));
    const first = shard(pool, 0).claim("n1", job, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const started = Date.now();
    const second = shard(pool, 0).claim("n1", job, 10_000);
    expect(await first).toEqual({ ok: false, reason: "nothing" });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect((await call(pool, "POST", `/attempts/${taken.lease_id}/fail`, { reason: "x" })).status).toBe(200);
    expect(await second).toMatchObject({ ok: true, lease: { node_id: "n1", attempt_number: 2 } });
  });
});

/** Whether the pool lists `nodeId` online (its home's view). */
async function onlineAtHome(pool: string, nodeId: string): Promise<boolean | undefined> {
  const nodes = await json<Array<{ node_id: string; online: boolean }>>(await call(pool, "GET", "/nodes"));
  return nodes.find((n) => n.node_id === nodeId)?.online;
}

describe("liveness of a node working on another shard", () => {
  it("falls at home to its last request + 15 s when its hour-long lease there fails, not to the deadline", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, 1, trialsJob(1, { lease_seconds: 3600 }));
    const lease = await json<Lease>(await claim(pool, "n1"));
    const liveUntil = () =>
      runInDurableObject(
        shard(pool, 0),
        (_o, state) =>
          state.storage.sql.exec<{ t: number }>("SELECT live_until_ms AS t FROM nodes WHERE node_id = 'n1'").one().t,
      );
    // The forwarded claim's answer told the home the deadline; it holds the node a minute past that (docs/sharding.md
    // §8.3), and writes it ahead (docs/protocol.md §16).
    expect(await liveUntil()).toBe(Date.parse(lease.deadline) + HEARD_GRACE_MS + LIVENESS_LEAD_MS);
    const failedAt = Date.now();
    expect((await call(pool, "POST", `/attempts/${lease.lease_id}/fail`, { reason: "x" })).status).toBe(200);
    await delivered(pool);
    // Online for the window after the fail, its last request; the home's row is soft and written down by its
    // sweep once the node is silent (docs/protocol.md §16): 16 s later, to the fail + 15 s, not the deadline.
    expect(await onlineAtHome(pool, "n1")).toBe(true);
    await ageNode(pool, "n1", 16_000);
    const after = await liveUntil();
    expect(after).toBeGreaterThanOrEqual(failedAt + 15_000 - 16_000 - 1_000);
    expect(after).toBeLessThanOrEqual(Date.now());
    expect(await onlineAtHome(pool, "n1")).toBe(false);
  });

  it("is held at home a minute past the deadline it heard, and no longer, while no word of the lease's end comes", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, 1, trialsJob(1, { lease_seconds: 30 }));
    expect((await claim(pool, "n1")).status).toBe(200);
    // The home heard the deadline from the claim's answer and holds n1 a minute past it (docs/sharding.md §8.3).
    // Silent 31 s, past that deadline: still online there.
    await ageNode(pool, "n1", 31_000);
    expect(await onlineAtHome(pool, "n1")).toBe(true);
    // A minute more, and shard 1 never said the lease ended: offline.
    await ageNode(pool, "n1", 60_000);
    expect(await onlineAtHome(pool, "n1")).toBe(false);
  });
});
