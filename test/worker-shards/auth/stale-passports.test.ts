// A node's claim in flight to another shard, or parked at a job's shard for
// its hold, while its home changes it (docs/sharding.md §8.1, §8.4): with
// tokens configured and 4 shards (worker-auth-shards). Each test is the
// hostile node's move, then the pool's answer: the shard that leases reads
// the node as its home has it once the change is answered, never the copy
// the claim carried when it left.

import { createExecutionContext, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import app from "../../../src/index";
import type { Lease } from "../../../src/protocol/tasks";
import { registryShard } from "../../../src/rules/shard-ids";
import { freshPool, nodeIdAt, registration, sha256, sleep, trialsJob } from "../../worker/helpers";
import { bearer, call, enrol } from "../../worker-auth/helpers";
import { upload } from "../../worker-auth/nodes";
import { shard, submitTo } from "../helpers";

const OPS = bearer("tok-ops");
const N1 = bearer("tok-n1");
const N2 = bearer("tok-n2");
const TEAM_JOB = trialsJob(1, { lease_seconds: 3600 }, { placement: { pool: "team-a" } });

/** A claim through the Worker held up to `holdSeconds` (the projects' own hold is 0). */
function heldClaim(pool: string, headers: Record<string, string>, body: unknown, holdSeconds: number) {
  const request = new Request(`http://x/pools/${pool}/v1alpha1/leases/claim`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return app.fetch(request, { ...env, FLASHML_CLAIM_WAIT_SECONDS: String(holdSeconds) }, createExecutionContext());
}

/** The live leases of `nodeId` on every shard. */
async function liveLeasesOf(pool: string, nodeId: string): Promise<string[]> {
  const rows = await Promise.all(
    [0, 1, 2, 3].map((k) =>
      runInDurableObject(shard(pool, k), (_o, state) =>
        state.storage.sql
          .exec<{ lease_id: string }>("SELECT lease_id FROM leases WHERE node_id = ? AND status = 'live'", nodeId)
          .toArray()
          .map((r) => r.lease_id),
      ),
    ),
  );
  return rows.flat();
}

/**
 * n1 and n2 in team-a; the team's one task on a shard other than n1's home,
 * leased to n2; `before` runs (a lease of n1's, answered as `mine`); then
 * n1's claim for that job parked there for 8 s. Answers the pool, the
 * job's shard, n2's lease and n1's claim in flight.
 */
async function parkedClaim(before?: (pool: string) => Promise<Lease>) {
  const pool = freshPool();
  for (const [node, token] of [
    ["n1", N1],
    ["n2", N2],
  ] as const) {
    expect((await call(pool, "POST", "/nodes/register", token, registration(node))).status).toBe(200);
    expect((await call(pool, "PUT", `/nodes/${node}/pools`, OPS, { pools: ["team-a"] })).status).toBe(200);
  }
  const home = registryShard("n1", 4);
  const k = (home + 1) % 4;
  const jobId = await submitTo(pool, k, TEAM_JOB);
  const taken = await call(pool, "POST", "/leases/claim", N2, { node_id: "n2", job_id: jobId });
  expect(taken.status).toBe(200);
  const lease = await taken.json<Lease>();
  const mine = before ? await before(pool) : null;
  const claim = heldClaim(pool, N1, { node_id: "n1", job_id: jobId }, 8);
  // Parked once the job's shard holds it for n1's home.
  await waitParked(pool, k, "n1");
  return { pool, k, jobId, lease, claim, mine };
}

/**
 * Waits until shard k has taken in a forward of `nodeId`'s claim (its
 * passport is there), then a moment for the hold that follows in the same
 * call. Too early only makes the claim leave with the newer passport.
 */
async function waitParked(pool: string, k: number, nodeId: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const there = await runInDurableObject(shard(pool, k), (_o, state) =>
      state.storage.sql.exec("SELECT 1 FROM passports WHERE node_id = ?", nodeId).toArray(),
    );
    if (there.length > 0) {
      await sleep(100);
      return;
    }
    await sleep(10);
  }
  throw new Error(`no claim of ${nodeId} reached shard ${k}`);
}

/** n2 gives its task back: it is pending again at the job's shard, where n1's claim is parked. */
async function giveBack(pool: string, lease: Lease): Promise<void> {
  const r = await call(pool, "POST", `/attempts/${lease.lease_id}/fail`, N2, { reason: "giving it back" });
  expect(r.status).toBe(200);
}

describe("a claim parked at a job's shard is served with the node as its home has it now", () => {
  it("removed from the team pool while parked, n1 is not leased the team's task when it comes back", async () => {
    const { pool, lease, claim } = await parkedClaim();
    expect((await call(pool, "PUT", "/nodes/n1/pools", OPS, { pools: [] })).status).toBe(200);
    await giveBack(pool, lease);
    const r = await claim;
    expect(r.status).toBe(204);
    expect(await liveLeasesOf(pool, "n1")).toEqual([]);
  });

  it("draining while parked, n1's claim is answered at once and the task that comes back is not leased to it", async () => {
    const { pool, lease, claim } = await parkedClaim();
    const started = Date.now();
    const drain = await call(pool, "POST", "/nodes/n1/heartbeat", N1, { node_id: "n1", status: "draining" });
    expect(drain.status).toBe(200);
    const r = await claim;
    expect(r.status).toBe(204);
    expect(Date.now() - started).toBeLessThan(6_000);
    await giveBack(pool, lease);
    expect(await liveLeasesOf(pool, "n1")).toEqual([]);
  });

  it("caught lying at home while parked, n1 is held back and distrusted there, and not leased the task that comes back", async () => {
    // n1 first takes a task of its home shard, then parks a claim for the team's job elsewhere.
    const { pool, lease, claim, mine } = await parkedClaim(async (pool) => {
      await submitTo(pool, registryShard("n1", 4), trialsJob(1, { lease_seconds: 3600 }));
      const own = await call(pool, "POST", "/leases/claim", N1, { node_id: "n1" });
      expect(own.status).toBe(200);
      return own.json<Lease>();
    });
    // It commits its home task with evidence of more time than passed: a lie, at home.
    const bytes = JSON.stringify({ loss: 0.1 });
    expect((await upload(pool, `${mine!.payload.output_prefix as string}metrics.json`, bytes, "n1")).status).toBe(200);
    const lie = await call(pool, "POST", `/attempts/${mine!.lease_id}/complete`, N1, {
      output_sha256: await sha256(bytes),
      evidence: { wall_seconds: 3600 },
    });
    expect(await lie.json()).toMatchObject({ accepted: false });
    await giveBack(pool, lease);
    expect((await claim).status).toBe(204);
    expect(await liveLeasesOf(pool, "n1")).toEqual([]);
  });

  it("a parked claim of a member still gets the task that comes back (the push changes nothing else)", async () => {
    const { pool, lease, claim, jobId } = await parkedClaim();
    // A change at home that moves n1's passport but not its eligibility.
    expect((await call(pool, "PUT", "/nodes/n1/pools", OPS, { pools: ["team-a", "team-b"] })).status).toBe(200);
    await giveBack(pool, lease);
    const r = await claim;
    expect(r.status).toBe(200);
    expect(await r.json<Lease>()).toMatchObject({ node_id: "n1", job_id: jobId });
  });
});

describe("a revocation racing a claim", () => {
  it("leaves no live lease on any shard once the DELETE is answered, in 20 races", async () => {
    for (let round = 0; round < 20; round++) {
      const pool = freshPool();
      const laptop = nodeIdAt(pool, "laptop", 1);
      const token = await enrol(pool, laptop);
      expect((await call(pool, "POST", "/nodes/register", bearer(token), registration(laptop))).status).toBe(200);
      await submitTo(pool, 2, trialsJob(2, { lease_seconds: 3600 }));
      await submitTo(pool, 3, trialsJob(2, { lease_seconds: 3600 }));
      const claim = call(pool, "POST", "/leases/claim", bearer(token), { node_id: laptop });
      await sleep(round % 5);
      const revoked = await call(pool, "DELETE", `/nodes/${laptop}/credential`, OPS);
      expect(revoked.status).toBe(200);
      const live = await liveLeasesOf(pool, laptop);
      const answer = await claim;
      expect([200, 204, 401]).toContain(answer.status);
      expect(live).toEqual([]);
      expect(await liveLeasesOf(pool, laptop)).toEqual([]);
    }
  });
});
