// An enrolled node at shards other than its home (docs/sharding.md §8.4),
// with tokens configured and 4 shards (worker-auth-shards). Credentials
// live at the home; another shard serves the node only once the home has
// vouched for it in the same request. The attacker's move: skip the home by
// sending a cursor that starts the walk at another shard.

import { describe, expect, it } from "vitest";
import { freshPool, nodeIdAt } from "../../worker/helpers";
import { bearer, call, enrol } from "../../worker-auth/helpers";

const OPS = bearer("tok-ops");

/** A cursor that starts GET /jobs at shard k, past shard 0 (docs/sharding.md §9). */
const atShard = (k: number) => btoa(`jobs@${k}`).replace(/=+$/, "");

describe("an enrolled node visiting other shards", () => {
  it("reads a list that starts at another shard while its credential holds, and gets 401 once it is revoked", async () => {
    const pool = freshPool();
    const laptop = nodeIdAt(pool, "laptop", 1); // homed at shard 1: shards 2 and 3 are visits
    const token = await enrol(pool, laptop);
    const before = await call(pool, "GET", `/jobs?cursor=${atShard(2)}`, bearer(token));
    expect(before.status).toBe(200);
    expect(await before.json()).toEqual([]);

    expect((await call(pool, "DELETE", `/nodes/${laptop}/credential`, OPS)).status).toBe(200);
    for (const path of [`/jobs?cursor=${atShard(2)}`, `/jobs?cursor=${atShard(3)}`, "/jobs", "/nodes"]) {
      const after = await call(pool, "GET", path, bearer(token));
      expect(after.status, path).toBe(401);
      expect(await after.json()).toEqual({ detail: "invalid or missing node token" });
    }
  });

  it("a token of the right shape that no home holds is refused at every shard", async () => {
    const pool = freshPool();
    const laptop = nodeIdAt(pool, "laptop", 1);
    await enrol(pool, laptop);
    const forged = `fe1.${btoa(laptop).replace(/=+$/, "")}.${"A".repeat(43)}`; // its shape, not its bytes
    const r = await call(pool, "GET", `/jobs?cursor=${atShard(2)}`, bearer(forged));
    expect(r.status).toBe(401);
  });
});
