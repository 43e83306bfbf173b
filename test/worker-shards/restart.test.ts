// A shard that restarts around a forwarded claim or an outcome on its way
// home (docs/sharding.md §13.1, §13.4): the home retries a claim with the
// same claim id, which yields the lease the shard issued or a fresh one,
// never two; outbox rows outlive the restart and are sent from the alarm.
// The restart is the object aborting itself (ctx.abort(), from inside it),
// so the next call meets a fresh instance over the same storage.

import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { ClaimTicket } from "../../src/pool/contract";
import { passportOf } from "../../src/pool/nodes/passports";
import { PoolObject } from "../../src/pool/object";
import { newClaimId } from "../../src/protocol/ids";
import type { Lease } from "../../src/protocol/tasks";
import { freshPool, json, register, registration, callHolding as send, sleep, trialsJob } from "../worker/helpers";
import { shard, submitTo } from "./helpers";

const K = 2;

async function ticketFor(pool: string, nodeId: string, claimId = newClaimId()): Promise<ClaimTicket> {
  const passport = await runInDurableObject(shard(pool, 0), (_o, state) =>
    passportOf(state.storage.sql, nodeId, new Map()),
  );
  if (passport === null) throw new Error(`${nodeId} is not registered at shard 0`);
  return { claimId, passport, jobId: null, notAfter: Date.now() + 10_000 };
}

/** Resets shard k: its instance goes, its storage stays (a stub that saw the reset is broken: each call makes its own). */
async function reset(pool: string, k: number): Promise<void> {
  const before = await runInDurableObject(shard(pool, k), (o) => o);
  await runInDurableObject(shard(pool, k), (_o, state) => state.abort("reset by the test")).catch(() => undefined);
  if ((await runInDurableObject(shard(pool, k), (o) => o)) === before) throw new Error(`shard ${k} did not reset`);
}

function leasesAt(pool: string, k: number) {
  return runInDurableObject(shard(pool, k), (_o, state) =>
    state.storage.sql
      .exec<{ lease_id: string; claim_id: string | null }>("SELECT lease_id, claim_id FROM leases ORDER BY rowid")
      .toArray(),
  );
}

function liveLeasesAt(pool: string, k: number) {
  return runInDurableObject(shard(pool, k), (_o, state) =>
    state.storage.sql
      .exec<{ lease_id: string; node_id: string }>("SELECT lease_id, node_id FROM leases WHERE status = 'live'")
      .toArray(),
  );
}

/** Shard k's held claims: at a job's shard, those parked there for their home. */
const heldAt = (pool: string, k: number) => runInDurableObject(shard(pool, k), (o) => PoolObject.poolOf(o).held.size);

describe("a shard that restarts around a forwarded claim", () => {
  it("answers the retry of a claim whose answer was lost with the same lease, and issues no second", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, K, trialsJob(2));
    const ticket = await ticketFor(pool, "n1");
    const first = await shard(pool, K).peer().claimForwarded(ticket);
    if (!first.ok) throw new Error(first.reason);
    await reset(pool, K);
    const retried = await shard(pool, K).peer().claimForwarded(ticket);
    expect(retried).toEqual(first);
    expect(await leasesAt(pool, K)).toEqual([{ lease_id: first.lease.lease_id, claim_id: ticket.claimId }]);
  });

  it("a reset racing the claim leaves at most one lease for it, which the retry answers", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, K, trialsJob(2));
    const ticket = await ticketFor(pool, "n1");
    await Promise.allSettled([shard(pool, K).peer().claimForwarded(ticket), reset(pool, K)]);
    const before = await leasesAt(pool, K);
    expect(before.length).toBeLessThanOrEqual(1);
    const retried = await shard(pool, K).peer().claimForwarded(ticket);
    if (!retried.ok) throw new Error(retried.reason);
    const after = await leasesAt(pool, K);
    expect(after).toEqual([{ lease_id: retried.lease.lease_id, claim_id: ticket.claimId }]);
    if (before.length === 1) expect(before).toEqual(after);
  });

  it("a retry whose lease has ended since gets nothing, never a second lease", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, K, trialsJob(2));
    const ticket = await ticketFor(pool, "n1");
    const first = await shard(pool, K).peer().claimForwarded(ticket);
    if (!first.ok) throw new Error(first.reason);
    expect(await shard(pool, K).failLease(first.lease.lease_id, "gave up", null)).toEqual({ ok: true });
    await reset(pool, K);
    expect(await shard(pool, K).peer().claimForwarded(ticket)).toEqual({ ok: false, reason: "nothing" });
    expect(await leasesAt(pool, K)).toHaveLength(1);
  });
});

describe("a retried ticket for one job", () => {
  it("whose lease has ended gets nothing and waits for nothing: its claim id leases once", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const job = await submitTo(pool, K, trialsJob(2));
    const ticket = { ...(await ticketFor(pool, "n1")), jobId: job, holdMs: 3_000 };
    const first = await shard(pool, K).peer().claimForwarded(ticket);
    if (!first.ok) throw new Error(first.reason);
    expect(await shard(pool, K).failLease(first.lease.lease_id, "gave up", null)).toEqual({ ok: true });
    await reset(pool, K);
    const retried = shard(pool, K).peer().claimForwarded(ticket);
    await sleep(200);
    // Work arrives while the retry might wait for it: the job's shard takes it in as ever.
    await submitTo(pool, K, trialsJob(1));
    expect(await retried).toEqual({ ok: false, reason: "nothing" });
    const issued = (await leasesAt(pool, K)).filter((l) => l.claim_id === ticket.claimId);
    expect(issued).toEqual([{ lease_id: first.lease.lease_id, claim_id: ticket.claimId }]);
  });
});

describe("a home that restarts under a forwarded claim", () => {
  // The Worker asks the claim again under a new id naming the lost one (src/routes/leases.ts claimWithin).
  it("gives the node the lease another shard issued for the lost claim, and leaves no second", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, K, trialsJob(2));
    const lost = await ticketFor(pool, "n1");
    // The forward leased at K; its answer went with the home's memory.
    const issued = await shard(pool, K).peer().claimForwarded(lost);
    if (!issued.ok) throw new Error(issued.reason);
    await reset(pool, 0);
    const again = await shard(pool, 0).claim("n1", null, 0, { claimId: newClaimId(), lost: lost.claimId });
    expect(again).toEqual({ ok: true, lease: issued.lease });
    expect(await liveLeasesAt(pool, K)).toEqual([{ lease_id: issued.lease.lease_id, node_id: "n1" }]);
  });

  it("a lost claim's lease is answered only to its own node: another node's home asking for it gets nothing", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await register(pool, "n2");
    await submitTo(pool, K, trialsJob(2));
    const lost = await ticketFor(pool, "n1");
    const issued = await shard(pool, K).peer().claimForwarded(lost);
    if (!issued.ok) throw new Error(issued.reason);
    expect(await shard(pool, K).peer().claimLost(lost.claimId, "n2")).toEqual({ ok: false, reason: "nothing" });
    expect(await liveLeasesAt(pool, K)).toEqual([{ lease_id: issued.lease.lease_id, node_id: "n1" }]);
  });

  it("a ticket of the lost claim that lands after the claim was asked again leases nothing", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, K, trialsJob(2));
    const lost = await ticketFor(pool, "n1");
    await reset(pool, 0);
    const again = await shard(pool, 0).claim("n1", null, 0, { claimId: newClaimId(), lost: lost.claimId });
    if (!again.ok) throw new Error(again.reason);
    // The old home's ticket, slow on its way, lands now: the node is not leased the job's second task.
    expect(await shard(pool, K).peer().claimForwarded(lost)).toEqual({ ok: false, reason: "nothing" });
    expect(await liveLeasesAt(pool, K)).toEqual([{ lease_id: again.lease.lease_id, node_id: "n1" }]);
  });

  it("a claim for a job, parked at the job's shard, is answered by that job's work after its home restarts", async () => {
    const pool = freshPool();
    for (const node of ["n1", "n2"])
      expect((await send(pool, 0, "POST", "/nodes/register", registration(node))).status).toBe(200);
    const job = await submitTo(pool, K, trialsJob(1));
    const taken = await json<Lease>(await send(pool, 0, "POST", "/leases/claim", { node_id: "n2", job_id: job }));
    // n1 waits for the job's one task, parked at K, with its home (0) holding the claim.
    const waiting = send(pool, 8, "POST", "/leases/claim", { node_id: "n1", job_id: job });
    await vi.waitFor(async () => expect(await heldAt(pool, K)).toBe(1));
    await reset(pool, 0);
    // Asked again: the lost claim's parked copy is answered, the new one parks in its place.
    // The home holds the new claim a moment before its ticket parks at K: wait for both.
    await vi.waitFor(async () => expect([await heldAt(pool, 0), await heldAt(pool, K)]).toEqual([1, 1]));
    expect((await send(pool, 0, "POST", `/attempts/${taken.lease_id}/fail`, { reason: "x" })).status).toBe(200);
    const r = await waiting;
    expect(r.status).toBe(200);
    const lease = await json<Lease>(r);
    expect(lease).toMatchObject({ job_id: job, task_id: taken.task_id, node_id: "n1" });
    expect(await liveLeasesAt(pool, K)).toEqual([{ lease_id: lease.lease_id, node_id: "n1" }]);
  });
});

describe("an outcome on its way home across a restart", () => {
  it("stays in the outbox and is sent by the alarm of the restarted shard", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await runInDurableObject(shard(pool, K), (_o, state) => {
      state.storage.sql.exec(
        "INSERT INTO outbox (to_shard, kind, body, created_ms) VALUES (0, 'outcome', ?, ?)",
        JSON.stringify({ node_id: "n1", outcome: "failed" }),
        Date.now(),
      );
    });
    // A change arms the alarm for the row; then the shard restarts before any send.
    await shard(pool, K).renewLease("ls-000000000000", null);
    await reset(pool, K);
    expect(await runDurableObjectAlarm(shard(pool, K))).toBe(true);
    const home = await runInDurableObject(shard(pool, 0), (_o, state) =>
      state.storage.sql.exec("SELECT consecutive_failures FROM nodes").one(),
    );
    expect(home).toEqual({ consecutive_failures: 1 });
    expect(
      await runInDurableObject(shard(pool, K), (_o, state) =>
        state.storage.sql.exec("SELECT seq FROM outbox").toArray(),
      ),
    ).toEqual([]);
  });
});
