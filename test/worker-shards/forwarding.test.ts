// Forwarded claims, passports and outcomes going home (docs/sharding.md
// §5.1, §5.2, §8.1, §8.2, §8.6): a node whose home is shard 0 claims work
// that lives on shard 2 through a ticket its home builds, and what its
// leases there end with reaches its record at home. Runs in the
// worker-shards project (FLASHML_POOL_SHARDS "*=4"). The tests play the
// home, to choose what the ticket says: they build it at shard 0
// (passportOf) and call shard 2 object to object, as the home does.

import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { forwardedClaim } from "../../src/pool/claims/forwarded-claims";
import type { ClaimTicket, OutcomeMessage } from "../../src/pool/contract";
import { claim as claimInPool, type WireLease } from "../../src/pool/leases/leases";
import { HEARD_GRACE_MS, lastRequestOf, lastRequests, passportsSeen } from "../../src/pool/nodes/liveness";
import { type Passport, passportOf, upsertPassport } from "../../src/pool/nodes/passports";
import { anotherCouldTake } from "../../src/pool/scheduling/scheduling";
import { MIGRATIONS } from "../../src/pool/schema/schema";
import { TRUST_AFTER_VALID } from "../../src/rules/verification";
import {
  ARGV_NODE,
  ageNode,
  agePassport,
  call,
  claim,
  commandJob,
  freshPool,
  homeStub,
  json,
  register,
  registration,
  sha256,
  sleep,
  trialsJob,
} from "../worker/helpers";
import { shard, submitTo } from "./helpers";

// Vite's import.meta.glob, which the test reads the Worker's route sources with.
declare global {
  interface ImportMeta {
    glob(patterns: string[], options: { query: string; import: string; eager: true }): Record<string, unknown>;
  }
}

const K = 2;

/** The node's passport as its home builds it. */
async function passportAtHome(pool: string, nodeId: string): Promise<Passport | null> {
  return runInDurableObject(await homeStub(pool, nodeId), (_o, state) =>
    passportOf(state.storage.sql, nodeId, new Map()),
  );
}

/** A ticket for `nodeId`'s claim, built at its home as the home will (docs/sharding.md §5.1). */
async function ticketFor(pool: string, nodeId: string, extra: Partial<ClaimTicket> = {}): Promise<ClaimTicket> {
  const passport = await passportAtHome(pool, nodeId);
  if (passport === null) throw new Error(`${nodeId} is not registered at its home`);
  const claimId = crypto.randomUUID().replaceAll("-", "").slice(0, 16);
  return { claimId, passport, jobId: null, notAfter: Date.now() + 10_000, ...extra };
}

/** Forwards one claim of `nodeId` to shard K; the lease, or throws naming why none. */
async function leaseAtK(pool: string, nodeId: string): Promise<WireLease> {
  const answer = await shard(pool, K)
    .peer()
    .claimForwarded(await ticketFor(pool, nodeId));
  if (!answer.ok) throw new Error(`no lease at shard ${K}: ${answer.reason}`);
  return answer.lease;
}

/** Binds `bytes` under `key` at shard k, as the Worker's upload does: R2 first, then the bind. */
async function bindAt(pool: string, k: number, key: string, bytes: string): Promise<string> {
  const object = `pools/${pool}/objects/${crypto.randomUUID()}`;
  const before = await shard(pool, k).beginUpload(key, object, null);
  if (!before.ok) throw new Error(`upload refused: ${before.detail}`);
  const stored = await env.ARTIFACTS.put(object, bytes);
  const sha = await sha256(bytes);
  const bound = await shard(pool, k).bindArtifact(
    key,
    { object, sha256: sha, size_bytes: stored!.size, etag: stored!.etag },
    null,
  );
  if (!bound.ok) throw new Error(`bind refused: ${JSON.stringify(bound)}`);
  return sha;
}

/** Uploads the lease's output at shard K and commits it there. */
async function commitAtK(pool: string, lease: WireLease, evidence: unknown = {}) {
  const sha = await bindAt(pool, K, `jobs/${lease.job_id}/${lease.task_id}/metrics.json`, "{}");
  return shard(pool, K).completeLease(lease.lease_id, sha, evidence, null);
}

type HomeRecord = {
  accepted_tasks: number;
  consecutive_failures: number;
  held_until_ms: number;
  distrusted: string | null;
  passport_version: number;
};

/** The node's last request as its home shows it: its row's, or a later one in the home's memory (soft liveness). */
async function lastRequestAtHome(pool: string, nodeId: string): Promise<number> {
  return runInDurableObject(await homeStub(pool, nodeId), (_o, state) => {
    const row = state.storage.sql
      .exec<{ last_heartbeat_ms: number }>("SELECT last_heartbeat_ms FROM nodes WHERE node_id = ?", nodeId)
      .one();
    return lastRequestOf(state.storage.sql, nodeId, row.last_heartbeat_ms);
  });
}

/** The node's record at its home. */
async function recordAtHome(pool: string, nodeId: string): Promise<HomeRecord> {
  return runInDurableObject(await homeStub(pool, nodeId), (_o, state) =>
    state.storage.sql
      .exec<HomeRecord>(
        "SELECT accepted_tasks, consecutive_failures, held_until_ms, distrusted, passport_version FROM nodes WHERE node_id = ?",
        nodeId,
      )
      .one(),
  );
}

function rowsAt<T extends Record<string, SqlStorageValue>>(
  pool: string,
  k: number,
  query: string,
  ...bindings: unknown[]
): Promise<T[]> {
  return runInDurableObject(shard(pool, k), (_o, state) => state.storage.sql.exec<T>(query, ...bindings).toArray());
}

/** Waits until shard k's outbox is empty: every outcome it queued has been delivered and acked. */
async function delivered(pool: string, k: number): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const [row] = await rowsAt<{ n: number }>(pool, k, "SELECT COUNT(*) AS n FROM outbox");
    if (row?.n === 0) return;
    await sleep(25);
  }
  throw new Error(`shard ${k}'s outbox never emptied`);
}

describe("a forwarded claim", () => {
  it("leases shard 2's task to a node homed at shard 0, recording the claim id, the owner and the passport", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const jobId = await submitTo(pool, K, trialsJob(1));
    const ticket = await ticketFor(pool, "n1");
    expect(ticket.passport).toMatchObject({ nodeId: "n1", home: 0, status: "online", owner: "n1", trusted: false });

    const answer = await shard(pool, K).peer().claimForwarded(ticket);
    expect(answer).toMatchObject({ ok: true, tenant: "default", priority: 0 });
    if (!answer.ok) throw new Error("no lease");
    expect(answer.lease).toMatchObject({ node_id: "n1", job_id: jobId, task_id: "trial-000", attempt_number: 1 });
    const leases = await rowsAt(pool, K, "SELECT node_id, claim_id, owner, status FROM leases");
    expect(leases).toEqual([{ node_id: "n1", claim_id: ticket.claimId, owner: "n1", status: "live" }]);
    const passports = await rowsAt(pool, K, "SELECT node_id, home, version, status, owner FROM passports");
    expect(passports).toEqual([
      { node_id: "n1", home: 0, version: ticket.passport.version, status: "online", owner: "n1" },
    ]);
    // The home's own tables at shard 2 stay empty: the node is not registered there.
    expect(await rowsAt(pool, K, "SELECT node_id FROM nodes")).toEqual([]);
  });

  it("honours the gate with the passport's registration: a 1-GPU task is refused a 0-GPU node and leased to a 1-GPU one", async () => {
    const pool = freshPool();
    await register(pool, "cpu-0");
    await register(pool, "gpu", {}, 1);
    await submitTo(pool, K, trialsJob(1, {}, { resources: { gpuPerTask: 1 } }));
    expect(
      await shard(pool, K)
        .peer()
        .claimForwarded(await ticketFor(pool, "cpu-0")),
    ).toEqual({
      ok: false,
      reason: "nothing",
    });
    expect(await leaseAtK(pool, "gpu")).toMatchObject({ node_id: "gpu", task_id: "trial-000" });
  });

  it("honours gate 6: a team pool's task is refused a node not in the team and leased to one that is", async () => {
    const pool = freshPool();
    await register(pool, "outsider-1");
    // Open mode: a node's own report makes it a member (docs/protocol.md §9).
    await register(pool, "member", { capabilities: { ...registration("member").capabilities, pools: ["team-a"] } });
    await submitTo(pool, K, trialsJob(1, {}, { placement: { pool: "team-a" } }));
    expect(
      await shard(pool, K)
        .peer()
        .claimForwarded(await ticketFor(pool, "outsider-1")),
    ).toEqual({
      ok: false,
      reason: "nothing",
    });
    expect(await leaseAtK(pool, "member")).toMatchObject({ node_id: "member" });
  });

  it("honours the isolation gate: a sandboxed argv task is refused a node without a sandbox and leased to one with", async () => {
    const pool = freshPool();
    await register(pool, "plain1");
    await register(pool, "sandboxed", ARGV_NODE);
    await submitTo(pool, K, commandJob());
    expect(
      await shard(pool, K)
        .peer()
        .claimForwarded(await ticketFor(pool, "plain1")),
    ).toEqual({
      ok: false,
      reason: "nothing",
    });
    expect(await leaseAtK(pool, "sandboxed")).toMatchObject({ node_id: "sandboxed", task_id: "task-000" });
  });

  it("restricted to a job, leases only that job's task", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, K, trialsJob(1));
    const wanted = await submitTo(pool, K, trialsJob(1));
    const answer = await shard(pool, K)
      .peer()
      .claimForwarded(await ticketFor(pool, "n1", { jobId: wanted }));
    expect(answer).toMatchObject({ ok: true, lease: { job_id: wanted } });
  });

  it("serves first the tenant whose turn the ticket names, at its priority only, then the shard's own order", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    // By shard 2's own passes "a" goes first (equal passes, by name); the home judged "b" behind pool-wide.
    const a = await submitTo(pool, K, trialsJob(3), { tenant: "a" });
    const b = await submitTo(pool, K, trialsJob(3), { tenant: "b" });
    const leased = async (extra: Partial<ClaimTicket>) => {
      const answer = await shard(pool, K)
        .peer()
        .claimForwarded(await ticketFor(pool, "n1", extra));
      if (!answer.ok) throw new Error(`no lease: ${answer.reason}`);
      return answer.lease.job_id;
    };
    expect(await leased({ turn: { priority: 0, tenant: "b" } })).toBe(b);
    expect(await leased({ turn: { priority: 0, tenant: "b" } })).toBe(b);
    // A turn naming a tenant with nothing here, or no turn, leaves the shard's own order: "a", behind here now.
    expect(await leased({ turn: { priority: 0, tenant: "nobody" } })).toBe(a);
    expect(await leased({})).toBe(a);
    // Strict priority comes first: a turn at priority 0 never takes a task from below work at 5.
    const urgent = await submitTo(pool, K, trialsJob(1), { tenant: "a", priority: 5 });
    expect(await leased({ turn: { priority: 0, tenant: "b" } })).toBe(urgent);
  });

  it("a batch of a home's held claims is served in the order given, and holds none of them", async () => {
    const pool = freshPool();
    for (const n of ["zero", "first", "second", "third", "fourth"]) await register(pool, n);
    const a = await submitTo(pool, K, trialsJob(1));
    const b = await submitTo(pool, K, trialsJob(2));
    expect(
      await shard(pool, K)
        .peer()
        .claimForwarded(await ticketFor(pool, "zero", { jobId: a })),
    ).toMatchObject({
      ok: true,
    });
    const tickets = [
      await ticketFor(pool, "first"),
      // A batch never holds: a ticket for job a, whose one task is out, is answered at once, and never with b's task.
      await ticketFor(pool, "fourth", { jobId: a, holdMs: 8_000 }),
      await ticketFor(pool, "second"),
      await ticketFor(pool, "third"),
    ];
    const started = Date.now();
    const answers = await shard(pool, K).peer().claimsForwarded(tickets);
    expect(
      answers.map((r) => (r.ok ? `${r.lease.node_id}:${r.lease.job_id === b}:${r.lease.task_id}` : r.reason)),
    ).toEqual(["first:true:trial-000", "nothing", "second:true:trial-001", "nothing"]);
    expect(Date.now() - started).toBeLessThan(6_000); // a hold would be 8 s
    expect(await rowsAt(pool, K, "SELECT lease_id FROM leases")).toHaveLength(3);
  });

  it("with the same claim id twice answers the same lease, and issues one", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, K, trialsJob(2));
    const ticket = await ticketFor(pool, "n1");
    const first = await shard(pool, K).peer().claimForwarded(ticket);
    const again = await shard(pool, K).peer().claimForwarded(ticket);
    expect(first.ok && again.ok).toBe(true);
    expect(again).toEqual(first);
    expect(await rowsAt(pool, K, "SELECT lease_id FROM leases")).toHaveLength(1);
  });

  it("past its notAfter gets nothing, and leaves no lease", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, K, trialsJob(1));
    const late = await ticketFor(pool, "n1", { notAfter: Date.now() - 1 });
    expect(await shard(pool, K).peer().claimForwarded(late)).toEqual({ ok: false, reason: "nothing" });
    expect(await rowsAt(pool, K, "SELECT lease_id FROM leases")).toEqual([]);
  });

  it("an older passport never overwrites a newer one, in a ticket or upserted", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, K, trialsJob(2));
    const older = await ticketFor(pool, "n1");
    // The node drains and comes back: its passport moves on twice at home.
    expect((await call(pool, "POST", "/nodes/n1/heartbeat", { node_id: "n1", status: "draining" })).status).toBe(200);
    expect((await call(pool, "POST", "/nodes/n1/heartbeat", { node_id: "n1", status: "online" })).status).toBe(200);
    const newer = await ticketFor(pool, "n1");
    const [was, now] = [older.passport as Passport, newer.passport as Passport];
    expect(now.version).toBe(was.version + 2);
    expect((await shard(pool, K).peer().claimForwarded(newer)).ok).toBe(true);
    // A late (or replayed) ticket with the older passport: answered from the newer one, which stays.
    await shard(pool, K).peer().claimForwarded(older);
    expect(await rowsAt(pool, K, "SELECT version FROM passports")).toEqual([{ version: now.version }]);
    const kept = await runInDurableObject(shard(pool, K), (_o, state) => {
      const sql = state.storage.sql;
      const forged = { ...was, status: "draining", heldUntilMs: 0, version: now.version - 1 };
      return { replaced: upsertPassport(sql, forged, Date.now()), row: sql.exec("SELECT status FROM passports").one() };
    });
    expect(kept).toEqual({ replaced: false, row: { status: "online" } });
  });

  it("reads adaptive replication's trust from the passport: a trusted node's replicated task runs alone, an untrusted one's in full", async () => {
    const pool = freshPool();
    await register(pool, "trusted");
    await register(pool, "untrusted");
    const trustedJob = await submitTo(pool, K, trialsJob(1), { replicas: 3 });
    const untrustedJob = await submitTo(pool, K, trialsJob(1), { replicas: 3 });
    const wanted = async (nodeId: string, jobId: string, trusted: boolean) => {
      const ticket = await ticketFor(pool, nodeId, { jobId });
      const passport = { ...(ticket.passport as Passport), trusted };
      return runInDurableObject(shard(pool, K), (_o, state) => {
        const sql = state.storage.sql;
        const now = Date.now();
        // No spot check: the draw is above any spot-check rate.
        const answer = forwardedClaim(sql, now, { ...ticket, passport }, (s, node, job, claimId) =>
          claimInPool(
            s,
            now,
            node,
            job,
            { weights: new Map(), random: () => 0.999, owners: new Map(), membership: "reported" },
            { claimId },
          ),
        );
        if (!answer.ok) throw new Error(answer.reason);
        return sql.exec<{ wanted: number }>("SELECT wanted FROM tasks WHERE job_id = ?", jobId).one().wanted;
      });
    };
    expect(await wanted("trusted", trustedJob, true)).toBe(1);
    expect(await wanted("untrusted", untrustedJob, false)).toBe(3);
  });
});

describe("a passport", () => {
  it("moves to a new version with each change it carries, and not with a plain request", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const version = async () => (await recordAtHome(pool, "n1")).passport_version;
    const start = await version();
    // A claim (seen) and a heartbeat that changes nothing it carries: the same version.
    expect((await claim(pool, "n1")).status).toBe(204);
    expect((await call(pool, "POST", "/nodes/n1/heartbeat", { node_id: "n1", status: "online" })).status).toBe(200);
    expect(await version()).toBe(start);
    expect((await call(pool, "POST", "/nodes/n1/heartbeat", { node_id: "n1", pools: ["team-a"] })).status).toBe(200);
    expect(await version()).toBe(start + 1);
    // Team pools assigned, a credential installed and revoked, a hold and its release: one version each.
    const bumps = await runInDurableObject(shard(pool, 0), (_o, state) => {
      const sql = state.storage.sql;
      const read = () => sql.exec<{ v: number }>("SELECT passport_version AS v FROM nodes").one().v;
      const seen: number[] = [];
      sql.exec("INSERT INTO node_pools (node_id, pools, assigned_by, assigned_ms) VALUES ('n1', '[\"t\"]', 'ops', 0)");
      seen.push(read());
      sql.exec(
        `INSERT INTO node_credentials (node_id, token_sha256, hostname, platform, approved_by, approved_ms, issued_ms, owner)
         VALUES ('n1', 'abc', 'h', 'p', 'ops', 0, 0, 'alice')`,
      );
      seen.push(read());
      const enrolled = passportOf(sql, "n1", new Map());
      sql.exec("UPDATE node_credentials SET token_sha256 = '', revoked_ms = 1, revoked_by = 'ops'");
      seen.push(read());
      const revoked = passportOf(sql, "n1", new Map());
      sql.exec("UPDATE nodes SET held_until_ms = 99");
      seen.push(read());
      sql.exec("UPDATE nodes SET held_until_ms = 99, consecutive_failures = 3");
      seen.push(read());
      sql.exec(`UPDATE nodes SET consecutive_valid = ${TRUST_AFTER_VALID}`);
      seen.push(read());
      sql.exec(`UPDATE nodes SET consecutive_valid = ${TRUST_AFTER_VALID + 1}`);
      seen.push(read());
      return { seen, enrolled, revoked };
    });
    const v = start + 1;
    expect(bumps.seen).toEqual([v + 1, v + 2, v + 3, v + 4, v + 4, v + 5, v + 5]);
    expect(bumps.enrolled).toMatchObject({
      credentialSha256: "abc",
      owner: "alice",
      revoked: false,
      assignedPools: '["t"]',
    });
    expect(bumps.revoked).toMatchObject({ credentialSha256: null, owner: "n1", revoked: true });
  });

  it("counts the trusted() flip at the literal TRUST_AFTER_VALID: the trigger and the rule agree", () => {
    const step = MIGRATIONS.find((m) => m.id === 19)!;
    expect(step.up).toContain(
      `(OLD.consecutive_valid >= ${TRUST_AFTER_VALID}) <> (NEW.consecutive_valid >= ${TRUST_AFTER_VALID})`,
    );
  });
});

describe("outcomes of a forwarded lease go home", () => {
  it("an accepted commit at shard 2 counts at home, through the outbox, once", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, K, trialsJob(1));
    const lease = await leaseAtK(pool, "n1");
    expect(await commitAtK(pool, lease)).toEqual({ status: "accepted" });
    await delivered(pool, K);
    expect(await recordAtHome(pool, "n1")).toMatchObject({ accepted_tasks: 1, consecutive_failures: 0 });
    const last_seq = (
      await rowsAt<{ last_seq: number }>(pool, 0, "SELECT last_seq FROM inbox_seen WHERE from_shard = ?", K)
    )[0]!.last_seq;
    expect(last_seq).toBeGreaterThan(0);
    // The same row delivered again (a lost ack) changes nothing.
    const again = await shard(pool, 0)
      .peer()
      .deliver(K, [{ seq: last_seq, body: { node_id: "n1", outcome: "accepted" } }]);
    expect(again).toEqual({ acked: last_seq });
    expect(await recordAtHome(pool, "n1")).toMatchObject({ accepted_tasks: 1 });
    // The node's record stays at home: shard 2 has none, and keeps no outbox row.
    expect(await rowsAt(pool, K, "SELECT node_id FROM nodes")).toEqual([]);
  });

  // Schema step 36 (docs/protocol.md §16): the commit's request and its outcome travel in one outbox row.
  it("a commit at shard 2 tells the home its request and its outcome in one row", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, K, trialsJob(1));
    const lease = await leaseAtK(pool, "n1");
    await delivered(pool, K);
    const lastSeq = async () =>
      (await rowsAt<{ last_seq: number }>(pool, 0, "SELECT last_seq FROM inbox_seen WHERE from_shard = ?", K))[0]
        ?.last_seq ?? 0;
    const before = await lastSeq();
    const at = Date.now();
    expect(await commitAtK(pool, lease)).toEqual({ status: "accepted" });
    await delivered(pool, K);
    expect(await lastSeq()).toBe(before + 1);
    expect(await recordAtHome(pool, "n1")).toMatchObject({ accepted_tasks: 1, consecutive_failures: 0 });
    expect(await lastRequestAtHome(pool, "n1")).toBeGreaterThanOrEqual(at);
    // A row whose outcome this home cannot read still tells the request; a malformed one is skipped whole.
    const home = shard(pool, 0).peer();
    const later = Date.now() + 1000;
    const bodies = [
      { node_id: "n1", outcome: "seen", at: later, until: 0, ended: 1, earned: { outcome: "promoted" } },
      { node_id: "n1", outcome: "seen", at: "soon", until: 0, ended: 1, earned: { outcome: "accepted" } },
    ];
    const next = (await lastSeq()) + 1;
    // What a peer of another version might send, past the type.
    await home.deliver(K, bodies.map((body, i) => ({ seq: next + i, body })) as unknown as OutcomeMessage[]);
    expect(await recordAtHome(pool, "n1")).toMatchObject({ accepted_tasks: 1 });
    expect(await lastRequestAtHome(pool, "n1")).toBe(later);
  });

  it("five failed attempts at shard 2 hold the node back at home, and its next claim there is refused", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, K, trialsJob(5));
    for (let i = 1; i <= 5; i++) {
      const lease = await leaseAtK(pool, "n1");
      expect(await shard(pool, K).failLease(lease.lease_id, `boom ${i}`, null)).toEqual({ ok: true });
      await delivered(pool, K);
      const record = await recordAtHome(pool, "n1");
      expect(record.consecutive_failures).toBe(i);
      expect(record.held_until_ms > Date.now()).toBe(i === 5);
    }
    // The task's record of failures stays where the task is.
    expect(await rowsAt(pool, K, "SELECT DISTINCT node_id FROM task_failures")).toEqual([{ node_id: "n1" }]);
    expect(await rowsAt(pool, 0, "SELECT node_id FROM task_failures")).toEqual([]);
    // Held back at home: the passport says so, and the home's own claim refuses it.
    expect((await passportAtHome(pool, "n1"))!.heldUntilMs).toBeGreaterThan(Date.now());
    expect((await claim(pool, "n1")).status).toBe(204);
  });

  it("an accepted commit after failures ends the run at home", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, K, trialsJob(2));
    const failed = await leaseAtK(pool, "n1");
    await shard(pool, K).failLease(failed.lease_id, "boom", null);
    const lease = await leaseAtK(pool, "n1");
    expect(await commitAtK(pool, lease)).toEqual({ status: "accepted" });
    await delivered(pool, K);
    expect(await recordAtHome(pool, "n1")).toMatchObject({ accepted_tasks: 1, consecutive_failures: 0 });
  });

  it("a lie in a commit at shard 2 distrusts the node at home", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, K, trialsJob(1));
    const lease = await leaseAtK(pool, "n1");
    const answer = await commitAtK(pool, lease, { wall_seconds: 100_000 });
    expect(answer).toMatchObject({ status: "invalid" });
    await delivered(pool, K);
    const record = await recordAtHome(pool, "n1");
    expect(record.distrusted).toMatch(/^its evidence lied: evidence claims 100000 s of work/);
    expect(record.consecutive_failures).toBe(1);
    expect(record.held_until_ms).toBeGreaterThan(Date.now());
    expect(await passportAtHome(pool, "n1")).toMatchObject({ trusted: false, distrusted: record.distrusted });
  });

  it("a lease that expires at shard 2 counts as a failure at home, from the alarm's sweep", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, K, trialsJob(1));
    await leaseAtK(pool, "n1");
    await runInDurableObject(shard(pool, K), (_o, state) => {
      state.storage.sql.exec("UPDATE leases SET deadline_ms = ?1, check_ms = ?1", Date.now() - 1);
    });
    expect(await runDurableObjectAlarm(shard(pool, K))).toBe(true);
    await delivered(pool, K);
    expect(await recordAtHome(pool, "n1")).toMatchObject({ consecutive_failures: 1 });
  });

  it("rows left in the outbox are sent by the alarm, which a change arms for them", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const body = JSON.stringify({ node_id: "n1", outcome: "accepted" });
    // A row no send picked up (its sender restarted, say): only SQL knows of it.
    await runInDurableObject(shard(pool, K), (_o, state) => {
      state.storage.sql.exec(
        "INSERT INTO outbox (to_shard, kind, body, created_ms) VALUES (0, 'outcome', ?, ?)",
        body,
        Date.now(),
      );
    });
    // Any change re-arms the alarm, no later than the row's retry time; the
    // summary's ticks may run it first, so the test waits for its effect.
    expect(await shard(pool, K).renewLease("ls-000000000000", null)).toEqual({ ok: false, reason: "gone" });
    await vi.waitFor(
      async () => {
        await runDurableObjectAlarm(shard(pool, K));
        expect(await rowsAt(pool, K, "SELECT seq FROM outbox")).toEqual([]);
      },
      { timeout: 10_000, interval: 100 },
    );
    expect(await recordAtHome(pool, "n1")).toMatchObject({ accepted_tasks: 1 });
  });

  it("at home, a delivery applies each row once, in order, and drops outcomes for nodes it does not know", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const home = shard(pool, 0);
    const failed = { node_id: "n1", outcome: "failed" } as const;
    expect(
      await home.peer().deliver(3, [
        { seq: 4, body: failed },
        { seq: 7, body: failed },
      ]),
    ).toEqual({ acked: 7 });
    // Resent with one more: only the new row applies.
    expect(
      await home.peer().deliver(3, [
        { seq: 4, body: failed },
        { seq: 7, body: failed },
        { seq: 9, body: { node_id: "ghost", outcome: "lie", reason: "x" } },
      ]),
    ).toEqual({ acked: 9 });
    // Another sender's seqs are its own.
    expect(await home.peer().deliver(1, [{ seq: 4, body: failed }])).toEqual({ acked: 4 });
    expect(await recordAtHome(pool, "n1")).toMatchObject({ consecutive_failures: 3 });
    expect(await rowsAt(pool, 0, "SELECT node_id FROM nodes ORDER BY node_id")).toEqual([{ node_id: "n1" }]);
  });

  it("a home node's outcomes apply at once and write no outbox row", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, 0, trialsJob(1));
    const lease = (await shard(pool, 0).claim("n1", null)) as { ok: true; lease: WireLease };
    const sha = await bindAt(pool, 0, `jobs/${lease.lease.job_id}/${lease.lease.task_id}/metrics.json`, "{}");
    expect(await shard(pool, 0).completeLease(lease.lease.lease_id, sha, {}, null)).toEqual({ status: "accepted" });
    expect(await recordAtHome(pool, "n1")).toMatchObject({ accepted_tasks: 1 });
    expect(await rowsAt(pool, 0, "SELECT seq FROM outbox")).toEqual([]);
  });
});

describe("shard-to-shard calls are out of every caller's reach", () => {
  it("no route of the Worker calls claimForwarded, deliver, or a credential's install", () => {
    const sources = import.meta.glob(["../../src/index.ts", "../../src/routes/*.ts"], {
      query: "?raw",
      import: "default",
      eager: true,
    }) as Record<string, string>;
    expect(Object.keys(sources).length).toBeGreaterThan(10);
    for (const [file, text] of Object.entries(sources)) {
      expect(text, file).not.toMatch(
        /claimForwarded|releaseForwarded|cutOffHere|\.deliver\(|installCredential|enrolledAmong|whereIs|homedFor/,
      );
    }
  });

  it("an enrolled node's session offers none of the shard-to-shard calls", async () => {
    const session = shard(freshPool(), 0).session({ nodeId: "n1", tokenSha256: "0".repeat(64) }) as unknown as {
      claimForwarded(ticket: unknown): Promise<unknown>;
      deliver(from: number, batch: unknown[]): Promise<unknown>;
      releaseForwarded(nodeId: string): Promise<unknown>;
      cutOffHere(nodeId: string, why: string): Promise<unknown>;
      installCredential(nodeId: string, credential: unknown): Promise<unknown>;
      enrolledAmong(nodeIds: string[]): Promise<unknown>;
    };
    const refusal = (p: Promise<unknown>) =>
      p.then(
        () => "answered",
        (e: Error) => e.message,
      );
    expect(await refusal(session.claimForwarded({}))).toMatch(/does not implement/);
    expect(await refusal(session.deliver(1, []))).toMatch(/does not implement/);
    // Nor the calls by which a home releases a claim held elsewhere or cuts a revoked machine off everywhere.
    expect(await refusal(session.releaseForwarded("n2"))).toMatch(/does not implement/);
    expect(await refusal(session.cutOffHere("n2", "forged"))).toMatch(/does not implement/);
    // Nor the install by which shard 0 puts a redeemed credential at a node's home: a node would mint its own.
    const forged = { tokenSha256: "0".repeat(64), hostname: "h", platform: "p", approvedBy: "ops", approvedMs: 0 };
    expect(await refusal(session.installCredential("n2", { ...forged, owner: null, pools: null }))).toMatch(
      /does not implement/,
    );
    expect(await refusal(session.enrolledAmong(["n2"]))).toMatch(/does not implement/);
  });
});

// docs/protocol.md §16: a passport's last request here is written at most once a minute; the exact time waits in
// memory (src/pool/nodes/liveness.ts), and each read that decides something takes it.
describe("a passport's liveness, soft", () => {
  /** Moves shard K's row of `nodeId`'s last request `ms` into the past, its memory left as it is. */
  const ageRowAtK = (pool: string, nodeId: string, ms: number) =>
    runInDurableObject(shard(pool, K), (_o, state) => {
      state.storage.sql.exec(
        "UPDATE passports SET last_request_ms = last_request_ms - ? WHERE node_id = ?",
        ms,
        nodeId,
      );
    });
  /** What shard K has told other shards: the seq of its last outbox row (AUTOINCREMENT), 0 for none. */
  const toldFromK = async (pool: string) =>
    (
      await rowsAt<{ n: number }>(
        pool,
        K,
        "SELECT COALESCE(MAX(seq), 0) AS n FROM sqlite_sequence WHERE name = 'outbox'",
      )
    )[0]!.n;
  const lastRequestRow = async (pool: string, nodeId: string) =>
    (await rowsAt<{ t: number }>(pool, K, "SELECT last_request_ms AS t FROM passports WHERE node_id = ?", nodeId))[0]!
      .t;

  it("a request writes the row only once it lags a minute", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, K, trialsJob(1, { lease_seconds: 600 }));
    const lease = await leaseAtK(pool, "n1");
    await ageRowAtK(pool, "n1", 50_000);
    const lagging = await lastRequestRow(pool, "n1");
    expect(await shard(pool, K).renewLease(lease.lease_id, null)).toMatchObject({ ok: true });
    expect(await lastRequestRow(pool, "n1")).toBe(lagging);
    await ageRowAtK(pool, "n1", 10_000);
    const at = Date.now();
    expect(await shard(pool, K).renewLease(lease.lease_id, null)).toMatchObject({ ok: true });
    expect(await lastRequestRow(pool, "n1")).toBeGreaterThanOrEqual(at);
  });

  it("an idle node whose row lags is still waited for by the node that failed the task, until its window ends", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, K, trialsJob(2));
    // n1 commits one task at shard 2 and goes idle there; its row then says 50 s ago, its last request just now.
    expect(await commitAtK(pool, await leaseAtK(pool, "n1"))).toEqual({ status: "accepted" });
    await ageRowAtK(pool, "n1", 50_000);
    const couldTake = () =>
      runInDurableObject(shard(pool, K), (_o, state) => {
        const sql = state.storage.sql;
        const { seq, requirement } = sql
          .exec<{ seq: number; requirement: string }>(
            "SELECT t.seq, c.requirement FROM tasks t JOIN classes c USING (class_id) WHERE t.state = 'PENDING'",
          )
          .one();
        const now = Date.now();
        return anotherCouldTake(sql, now, seq, requirement, "flaky", now - 60_000, "assigned");
      });
    expect(await couldTake()).toBe(true);
    // 16 s later by its memory too: offline here, as by its row.
    await runInDurableObject(shard(pool, K), (_o, state) => agePassport(state.storage.sql, "n1", 16_000));
    expect(await couldTake()).toBe(false);
  });

  it("a fail at shard 2 tells the home the fail's time, though the passport's row lags", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, K, trialsJob(1, { lease_seconds: 600 }));
    const lease = await leaseAtK(pool, "n1");
    await delivered(pool, K);
    // Everything the pool knows of n1 is 50 s old but its last request at shard 2, kept in memory there.
    await ageRowAtK(pool, "n1", 50_000);
    await ageNode(pool, "n1", 50_000);
    const at = Date.now();
    expect(await shard(pool, K).failLease(lease.lease_id, "boom", null)).toMatchObject({ ok: true });
    await delivered(pool, K);
    expect(await lastRequestAtHome(pool, "n1")).toBeGreaterThanOrEqual(at);
  });

  it("a renewal tells the home nothing its claim's answer told it, and tells it again once a restart forgot that", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, K, trialsJob(1, { lease_seconds: 600 }));
    const lease = await leaseAtK(pool, "n1");
    await delivered(pool, K);
    const before = await toldFromK(pool);
    expect(await shard(pool, K).renewLease(lease.lease_id, null)).toMatchObject({ ok: true });
    expect(await toldFromK(pool)).toBe(before);
    await runInDurableObject(shard(pool, K), (_o, state) => passportsSeen(state.storage.sql).clear());
    expect(await shard(pool, K).renewLease(lease.lease_id, null)).toMatchObject({ ok: true });
    expect(await toldFromK(pool)).toBe(before + 1);
  });

  it("a one-minute lease's renewals tell the home nothing while what it heard, a minute past, covers half the lease", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, K, trialsJob(1, { lease_seconds: 60 }));
    // Claimed through the Worker: n1's home forwards the claim to shard K and hears the lease from its answer.
    const lease = await json<WireLease>(await claim(pool, "n1"));
    // The home holds n1 online a minute past the deadline the answer carried.
    const heldAtHome = async () =>
      runInDurableObject(
        await homeStub(pool, "n1"),
        (_o, state) => lastRequests(state.storage.sql).get("n1")?.elsewhere,
      );
    expect(await heldAtHome()).toBe(Date.parse(lease.deadline) + HEARD_GRACE_MS);
    const before = await toldFromK(pool);
    /** As if the home last heard of a deadline `ago` ms past: shard K's memory of what it told. */
    const toldAgo = (ago: number) =>
      runInDurableObject(shard(pool, K), (_o, state) => {
        passportsSeen(state.storage.sql).get("n1")!.told = Date.now() - ago;
      });
    // Heard 20 s ago: with its minute it covers 40 s, over half the lease ahead. Nothing is sent.
    await toldAgo(20_000);
    expect(await shard(pool, K).renewLease(lease.lease_id, null)).toMatchObject({ ok: true });
    expect(await toldFromK(pool)).toBe(before);
    // Heard 35 s ago: 25 s, under half. The renewal tells the home, which holds n1 a minute past the new deadline.
    await toldAgo(35_000);
    expect(await shard(pool, K).renewLease(lease.lease_id, null)).toMatchObject({ ok: true });
    expect(await toldFromK(pool)).toBe(before + 1);
    await delivered(pool, K);
    const [renewed] = await rowsAt<{ d: number }>(
      pool,
      K,
      "SELECT deadline_ms AS d FROM leases WHERE lease_id = ?",
      lease.lease_id,
    );
    expect(await heldAtHome()).toBe(renewed!.d + HEARD_GRACE_MS);
  });

  it("a passport held already is not written again; one of the same version that differs still is", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, K, trialsJob(2));
    const held = (await ticketFor(pool, "n1")).passport as Passport;
    const answers = await runInDurableObject(shard(pool, K), (_o, state) => {
      const sql = state.storage.sql;
      const received = () => sql.exec<{ t: number }>("SELECT received_ms AS t FROM passports").one().t;
      upsertPassport(sql, held, 1_000);
      const same = upsertPassport(sql, held, 2_000);
      const afterSame = received();
      // The configured owners changed at home (FLASHML_NODE_OWNERS): no new version, a new owner.
      const moved = upsertPassport(sql, { ...held, owner: "mallory" }, 3_000);
      return { same, afterSame, moved, afterMoved: received(), owner: sql.exec("SELECT owner FROM passports").one() };
    });
    expect(answers).toEqual({
      same: true,
      afterSame: 1_000,
      moved: true,
      afterMoved: 3_000,
      owner: { owner: "mallory" },
    });
  });
});
