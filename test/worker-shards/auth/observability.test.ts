// The pool-wide reads of a pool of 4 shards as an enrolled node makes them
// (docs/sharding.md §8.4, §10), with tokens configured (worker-auth-shards):
// the dashboard, the fleet and metrics visit every shard, so each other
// shard serves the node only once its home has vouched for it.

import { describe, expect, it } from "vitest";
import { freshPool, trialsJob } from "../../worker/helpers";
import { bearer, call, enrol } from "../../worker-auth/helpers";

const OPS = bearer("tok-ops");

const READS = ["/dashboard", "/nodes/summary", "/metrics"];

describe("an enrolled node reading the whole pool", () => {
  it("reads the dashboard, the fleet and metrics of every shard while its credential holds, and gets 401 once it is revoked", async () => {
    const pool = freshPool();
    const token = await enrol(pool, "laptop-7");
    expect((await call(pool, "POST", "/jobs", OPS, trialsJob(2))).status).toBe(201);
    for (const path of READS) expect((await call(pool, "GET", path, bearer(token))).status, path).toBe(200);
    const seen = await (await call(pool, "GET", "/dashboard", bearer(token))).json<{
      counts: { tasks: { PENDING: number } };
    }>();
    expect(seen.counts.tasks.PENDING).toBe(2);

    expect((await call(pool, "DELETE", "/nodes/laptop-7/credential", OPS)).status).toBe(200);
    for (const path of READS) {
      const after = await call(pool, "GET", path, bearer(token));
      expect(after.status, path).toBe(401);
      expect(await after.json()).toEqual({ detail: "invalid or missing node token" });
    }
  });
});
