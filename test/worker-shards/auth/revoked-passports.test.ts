// A revoked machine's passport at a job's shard (docs/sharding.md §8.1,
// §8.4), with tokens configured and 4 shards (worker-auth-shards): the
// revocation leaves the job's shard the revoked copy, and a forward of the
// machine's claim that was already in flight, carrying the copy from before
// the revocation, gets nothing there. The tests play the home, as test/worker-shards/forwarding.test.ts
// does: they build the ticket at the home and serve it in the job's shard.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { forwardedClaim } from "../../../src/pool/claims/forwarded-claims";
import type { ClaimTicket } from "../../../src/pool/contract";
import { claim } from "../../../src/pool/leases/leases";
import { type Passport, passportOf } from "../../../src/pool/nodes/passports";
import { freshPool, homeStub, nodeIdAt, registration, trialsJob } from "../../worker/helpers";
import { bearer, call, enrol } from "../../worker-auth/helpers";
import { shard, submitTo } from "../helpers";

const OPS = bearer("tok-ops");
const K = 2;

/** An enrolled machine homed at shard 1, registered there. */
async function machine(pool: string, name: string): Promise<string> {
  const nodeId = nodeIdAt(pool, name, 1);
  const token = await enrol(pool, nodeId);
  expect((await call(pool, "POST", "/nodes/register", bearer(token), registration(nodeId))).status).toBe(200);
  return nodeId;
}

/** The machine's passport as its home builds it for a ticket. */
async function passportAtHome(pool: string, nodeId: string): Promise<Passport> {
  const passport = await runInDurableObject(await homeStub(pool, nodeId), (_o, state) =>
    passportOf(state.storage.sql, nodeId, new Map()),
  );
  if (passport === null) throw new Error(`${nodeId} is not registered at its home`);
  return passport;
}

/** Serves one forwarded claim per ticket passport at shard K, in order, as claimForwarded's change does. */
function forwardAtK(pool: string, passports: ClaimTicket["passport"][]) {
  return runInDurableObject(shard(pool, K), (_o, state) => {
    const sql = state.storage.sql;
    const now = Date.now();
    return passports.map((passport) => {
      const claimId = crypto.randomUUID().replaceAll("-", "").slice(0, 16);
      const ticket = { claimId, passport, jobId: null, notAfter: now + 10_000 };
      return forwardedClaim(sql, now, ticket, (s, nodeId, jobId, id) =>
        claim(s, now, nodeId, jobId, { owners: new Map(), membership: "assigned" }, { claimId: id }),
      );
    });
  });
}

describe("a revoked machine's passport at a job's shard", () => {
  it("admits no forwarded claim, in flight from before the revocation or naming the revoked copy, and the task stays for another node", async () => {
    const pool = freshPool();
    const laptop = await machine(pool, "laptop");
    const desk = await machine(pool, "desk");
    await submitTo(pool, K, trialsJob(1));
    const inFlight = await passportAtHome(pool, laptop);
    expect((await call(pool, "DELETE", `/nodes/${laptop}/credential`, OPS)).status).toBe(200);

    const kept = await runInDurableObject(shard(pool, K), (_o, state) =>
      state.storage.sql.exec("SELECT version, revoked FROM passports WHERE node_id = ?", laptop).one(),
    );
    expect(kept.version).toBeGreaterThan(inFlight.version);
    expect(kept.revoked).toBe(1);

    const [old, other] = await forwardAtK(pool, [inFlight, await passportAtHome(pool, desk)]);
    expect(old).toEqual({ ok: false, reason: "unregistered" });
    // The one task was there for a node whose passport admits it.
    expect(other).toMatchObject({ ok: true, lease: { node_id: desk } });
    const leased = await runInDurableObject(shard(pool, K), (_o, state) =>
      state.storage.sql.exec("SELECT node_id FROM leases").toArray(),
    );
    expect(leased).toEqual([{ node_id: desk }]);
  });
});
