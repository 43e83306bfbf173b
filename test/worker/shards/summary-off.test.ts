// A pool of one shard has no summary (docs/sharding.md §12): no exchange,
// no tick, no grant counted. The same pool at 4 shards keeps a tick armed
// (test/worker-shards/summary.test.ts); at 1 an idle pool's alarm stays
// unset, as before sharding.

import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { lastRequests } from "../../../src/pool/nodes/liveness";
import { PoolObject } from "../../../src/pool/object";
import { call, claim, freshPool, json, register, stub, submitJob, trialsJob } from "../helpers";

describe("the pool summary at one shard", () => {
  it("an idle pool with pending work sets no alarm but its node's liveness, joins no summary and counts no grant", async () => {
    expect(env.FLASHML_POOL_SHARDS ?? "").toBe("");
    const pool = freshPool();
    await register(pool, "n1");
    await submitJob(pool, trialsJob(2));
    await submitJob(pool, trialsJob(1));
    const lease = await json<{ lease_id: string }>(await claim(pool, "n1"));
    expect((await call(pool, "POST", `/attempts/${lease.lease_id}/fail`, { reason: "no" })).status).toBe(200);
    // The one alarm left is for n1's liveness, written down 15 s after its last request (docs/protocol.md §16).
    const seen = await runInDurableObject(stub(pool), async (object, state) => ({
      alarm: await state.storage.getAlarm(),
      liveness: lastRequests(state.storage.sql).due(),
      exchanges: PoolObject.poolOf(object).link.sent,
      grants: [...PoolObject.poolOf(object).grants.values()],
    }));
    expect(seen.liveness).not.toBeNull();
    expect(seen).toEqual({ alarm: seen.liveness, liveness: seen.liveness, exchanges: 0, grants: [] });
  });
});
