// Lowering a pool's shard count over an enrolled machine (docs/sharding.md
// §11), with tokens configured and 4 shards (worker-auth-shards): a machine
// that has logged in but not registered lives at its home by its credential
// alone, and a lower that removed that shard would leave its token checked
// nowhere. The lower is driven as shard 0's start runs it, through
// layoutAtStart with the object's own SQL and a lowered count.

import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ShardPeers } from "../../../src/pool/address";
import { PoolObject } from "../../../src/pool/object";
import { layoutAtStart, layoutPeers } from "../../../src/pool/shards/layout";
import { freshPool, nodeIdAt, registration } from "../../worker/helpers";
import { bearer, call, enrol } from "../../worker-auth/helpers";
import { shard, shardsHolding } from "../helpers";

const OPS = bearer("tok-ops");

/** Starts shard 0 of `pool` as a deploy of `shards` shards would, and answers the shard counts it then records. */
function startShard0(pool: string, shards: number) {
  return runInDurableObject(shard(pool, 0), async (o, state) => {
    const sql = state.storage.sql;
    await layoutAtStart(
      sql,
      PoolObject.poolOf(o).gate,
      pool,
      0,
      shards,
      Date.now(),
      layoutPeers(new ShardPeers(env, [], pool, 0, 2)),
    );
    return sql
      .exec<{ shards: number; lowered_from: number | null }>(
        "SELECT shards, lowered_from FROM pool_layout ORDER BY epoch",
      )
      .toArray();
  });
}

describe("lowering the shard count over an enrolled machine", () => {
  it("a machine enrolled at shard 3 that has not registered keeps a lower from 4 to 3 refused, and its token works once the count is back", async () => {
    const pool = freshPool();
    const rig = nodeIdAt(pool, "rig", 3);
    const token = await enrol(pool, rig);
    expect(await shardsHolding(pool, "node_credentials", rig)).toEqual([3]);
    expect(await shardsHolding(pool, "nodes", rig)).toEqual([]);

    // The attacker's hope: shard 3 reads as empty, the lower is recorded, and the token is checked nowhere after.
    expect(await startShard0(pool, 3)).toEqual([{ shards: 4, lowered_from: null }]);
    const refused = await call(pool, "GET", "/jobs", OPS);
    expect(refused.status).toBe(503);
    expect(await refused.json()).toEqual({
      detail: `coordinator refuses to serve pool '${pool}': pool '${pool}' cannot run on 3 shards: FLASHML_POOL_SHARDS lowers it from 4, and shard 3 is not empty (shard 3: 1 enrolled credential)`,
    });

    // The count goes back to 4: the pool serves again, and the machine registers and claims with the token it has.
    expect(await startShard0(pool, 4)).toEqual([{ shards: 4, lowered_from: null }]);
    expect((await call(pool, "POST", "/nodes/register", bearer(token), registration(rig))).status).toBe(200);
    expect((await call(pool, "POST", "/leases/claim", bearer(token), { node_id: rig })).status).toBe(204);
    expect(await shardsHolding(pool, "nodes", rig)).toEqual([3]);
  });
});
