// A revoked machine whose work lives on another shard than its home
// (docs/sharding.md §8.4, §16), with tokens configured and 4 shards
// (worker-auth-shards): the revocation is answered only once every shard has
// ended the machine's leases, so its task goes to another node now.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Lease } from "../../../src/protocol/tasks";
import { freshPool, nodeIdAt, registration, trialsJob } from "../../worker/helpers";
import { bearer, call, enrol } from "../../worker-auth/helpers";
import { shard, submitTo } from "../helpers";

const OPS = bearer("tok-ops");

describe("revoking a machine that works on another shard", () => {
  it("ends its lease there before the operator is answered, and the task is pending again", async () => {
    const pool = freshPool();
    const laptop = nodeIdAt(pool, "laptop", 1); // homed at shard 1, working at shard 2
    const token = await enrol(pool, laptop);
    expect((await call(pool, "POST", "/nodes/register", bearer(token), registration(laptop))).status).toBe(200);
    const job = await submitTo(pool, 2, trialsJob(1, { lease_seconds: 3600 }));
    const r = await call(pool, "POST", "/leases/claim", bearer(token), { node_id: laptop });
    expect(r.status).toBe(200);
    const lease = await r.json<Lease>();
    expect(lease.job_id).toBe(job);

    expect((await call(pool, "DELETE", `/nodes/${laptop}/credential`, OPS)).status).toBe(200);
    const there = await runInDurableObject(shard(pool, 2), (_o, state) => ({
      lease: state.storage.sql
        .exec<{ status: string }>("SELECT status FROM leases WHERE lease_id = ?", lease.lease_id)
        .one().status,
      task: state.storage.sql.exec<{ state: string }>("SELECT state FROM tasks").one().state,
      revoked: state.storage.sql
        .exec<{ revoked: number }>("SELECT revoked FROM passports WHERE node_id = ?", laptop)
        .one().revoked,
    }));
    expect(there).toEqual({ lease: "expired", task: "PENDING", revoked: 1 });
    // The old token is refused at the lease's shard too.
    const late = await call(pool, "POST", `/attempts/${lease.lease_id}/heartbeat`, bearer(token));
    expect(late.status).toBe(401);
  });
});
