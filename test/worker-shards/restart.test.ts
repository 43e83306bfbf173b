// A shard that restarts around a forwarded claim or an outcome on its way
// home (docs/sharding.md §13.1, §13.4): the home retries a claim with the
// same claim id, which yields the lease the shard issued or a fresh one,
// never two; outbox rows outlive the restart and are sent from the alarm.
// The restart is the object aborting itself (ctx.abort(), from inside it),
// so the next call meets a fresh instance over the same storage.

import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ClaimTicket } from "../../src/pool/contract";
import { passportOf } from "../../src/pool/nodes/passports";
import { freshPool, register, trialsJob } from "../worker/helpers";
import { shard, submitTo } from "./helpers";

const K = 2;

async function ticketFor(pool: string, nodeId: string): Promise<ClaimTicket> {
  const passport = await runInDurableObject(shard(pool, 0), (_o, state) =>
    passportOf(state.storage.sql, nodeId, new Map()),
  );
  if (passport === null) throw new Error(`${nodeId} is not registered at shard 0`);
  const claimId = crypto.randomUUID().replaceAll("-", "").slice(0, 16);
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
