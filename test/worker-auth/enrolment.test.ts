// Device-code enrolment (docs/protocol.md §9 "Enrolled machines") through the real
// Worker with tokens configured: the agent's two calls, an operator's
// decisions, the enrolled token used for a node's whole loop, revocation,
// and what nobody may learn.

import { createExecutionContext, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import app from "../../src/index";
import { NODE_CALLS, PoolObject } from "../../src/pool/object";
import { PoolPeer } from "../../src/pool/peer";
import { CREDENTIAL_REFUSED, sessionClass } from "../../src/pool/session";
import type { DashboardSummary } from "../../src/protocol/dashboard";
import type { Lease } from "../../src/protocol/tasks";
import { CODE_RECORD_MS, MAX_PENDING_CODES, MAX_PENDING_CODES_PER_SOURCE } from "../../src/rules/enrolment";
import { freshPool, homeStub, jobStub, registration, sha256, shardStubs, stub, trialsJob } from "../worker/helpers";
import { bearer, call } from "./helpers";

const OPS = { authorization: "Bearer tok-ops" };
const MACHINE = { node_id: "laptop-7", hostname: "laptop-7.local", platform: "linux-x86_64" };
const USER_CODE = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/;

type Code = {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  interval: number;
  expires_in: number;
  expires_at: string;
};

async function requestCode(
  pool: string,
  machine: Record<string, string> = MACHINE,
  from = "203.0.113.9",
): Promise<Code> {
  const r = await call(pool, "POST", "/device/code", { "cf-connecting-ip": from }, machine);
  expect(r.status).toBe(200);
  return r.json();
}

const poll = (pool: string, code: Code) => call(pool, "POST", "/device/token", {}, { device_code: code.device_code });
const decide = (pool: string, verdict: "approve" | "deny", userCode: string, headers: Record<string, string> = OPS) =>
  call(pool, "POST", `/device/${verdict}`, headers, { user_code: userCode });

/** The answer to every code that is not approved and unredeemed, byte for byte. */
const PENDING = '{"error":"authorization_pending","interval":5}';

async function expectPending(r: Response) {
  expect(r.status).toBe(400);
  expect(await r.text()).toBe(PENDING);
}

/** A code requested, approved and redeemed: the enrolled token. */
async function enrol(pool: string, machine = MACHINE): Promise<string> {
  const code = await requestCode(pool, machine);
  expect((await decide(pool, "approve", code.user_code)).status).toBe(200);
  const r = await poll(pool, code);
  expect(r.status).toBe(200);
  return (await r.json<{ token: string }>()).token;
}

describe("a machine joins with a code", () => {
  it("pending → approved → the token once → register, claim and commit with it → revoked → 401", async () => {
    const pool = freshPool();
    const code = await requestCode(pool);
    expect(code.user_code).toMatch(USER_CODE);
    expect(code.device_code.length).toBeGreaterThanOrEqual(43);
    expect(code.verification_uri).toBe(`http://x/pools/${pool}/enrol`);
    expect(code.verification_uri_complete).toBe(`${code.verification_uri}?code=${code.user_code}`);
    expect(code).toMatchObject({ interval: 5, expires_in: 900 });
    expect(Date.parse(code.expires_at) - Date.now()).toBeGreaterThan(890_000);
    await expectPending(await poll(pool, code));

    // The operator sees who asks, from where, and until when.
    const pending = await (await call(pool, "GET", "/device/pending", OPS)).json();
    expect(pending).toEqual([
      {
        user_code: code.user_code,
        ...MACHINE,
        requested_at: expect.any(String),
        requested_from: "203.0.113.9",
        expires_at: code.expires_at,
        replaces_credential: false,
      },
    ]);
    // Typed as people type it: lower case, no dash.
    const approved = await decide(pool, "approve", code.user_code.toLowerCase().replace("-", ""));
    expect(await approved.json()).toEqual({ approved: true, node_id: "laptop-7", owner: "laptop-7" });
    expect(await (await call(pool, "GET", "/device/pending", OPS)).json()).toEqual([]);

    const issued = await poll(pool, code);
    expect(issued.status).toBe(200);
    const { token, node_id } = await issued.json<{ token: string; node_id: string }>();
    expect(node_id).toBe("laptop-7");
    // Exactly once.
    await expectPending(await poll(pool, code));

    // The token is the node's identity: the body's node_id is replaced by it.
    const registered = await call(pool, "POST", "/nodes/register", bearer(token), registration("someone-else"));
    expect(await registered.json()).toEqual({ node_id: "laptop-7", status: "registered" });
    const submitted = await call(pool, "POST", "/jobs", OPS, trialsJob(1));
    expect(submitted.status).toBe(201);
    const claimed = await call(pool, "POST", "/leases/claim", bearer(token), { node_id: "laptop-7" });
    expect(claimed.status).toBe(200);
    const lease = await claimed.json<Lease>();
    expect(lease.node_id).toBe("laptop-7");
    const output = '{"loss": 0.25}';
    const put = await call(
      pool,
      "PUT",
      `/artifacts/jobs/${lease.job_id}/${lease.task_id}/metrics.json`,
      bearer(token),
      output,
    );
    expect(put.status).toBe(200);
    const done = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, bearer(token), {
      output_sha256: await sha256(output),
    });
    expect(await done.json()).toEqual({ accepted: true });
    expect((await call(pool, "GET", "/nodes", bearer(token))).status).toBe(200);

    const revoked = await call(pool, "DELETE", "/nodes/laptop-7/credential", OPS);
    expect(await revoked.json()).toEqual({ node_id: "laptop-7", revoked: true });
    const after = await call(pool, "GET", "/nodes", bearer(token));
    expect(after.status).toBe(401);
    expect(after.headers.get("www-authenticate")).toBe("Bearer");
    expect(await after.json()).toEqual({ detail: "invalid or missing node token" });
    expect((await call(pool, "POST", "/leases/claim", bearer(token), { node_id: "laptop-7" })).status).toBe(401);
    expect((await call(pool, "DELETE", "/nodes/laptop-7/credential", OPS)).status).toBe(404);
  });

  it("a denied code never yields a token and cannot be approved after", async () => {
    const pool = freshPool();
    const code = await requestCode(pool);
    expect(await (await decide(pool, "deny", code.user_code)).json()).toEqual({ denied: true, node_id: "laptop-7" });
    await expectPending(await poll(pool, code));
    expect((await decide(pool, "approve", code.user_code)).status).toBe(404);
    await expectPending(await poll(pool, code));
  });

  it("an expired code yields nothing and cannot be decided", async () => {
    const pool = freshPool();
    const waiting = await requestCode(pool);
    const approved = await requestCode(pool, { ...MACHINE, node_id: "laptop-8" });
    expect((await decide(pool, "approve", approved.user_code)).status).toBe(200);
    // Fifteen minutes pass.
    await runInDurableObject(stub(pool), (_o, state) => {
      state.storage.sql.exec("UPDATE device_codes SET expires_ms = ?", Date.now() - 1);
    });
    await expectPending(await poll(pool, approved));
    expect((await decide(pool, "approve", waiting.user_code)).status).toBe(404);
    expect(await (await call(pool, "GET", "/device/pending", OPS)).json()).toEqual([]);
  });

  it("approving again for the same node replaces its credential: the old token is refused", async () => {
    const pool = freshPool();
    const first = await enrol(pool);
    const code = await requestCode(pool);
    const pending = await (await call(pool, "GET", "/device/pending", OPS)).json<{ replaces_credential: boolean }[]>();
    expect(pending[0]!.replaces_credential).toBe(true);
    expect((await decide(pool, "approve", code.user_code)).status).toBe(200);
    const second = (await (await poll(pool, code)).json<{ token: string }>()).token;
    expect(second).not.toBe(first);
    expect((await call(pool, "GET", "/nodes", bearer(first))).status).toBe(401);
    expect((await call(pool, "GET", "/nodes", bearer(second))).status).toBe(200);
  });
});

describe("what the dashboard shows", () => {
  it("every request, approval, denial and revocation, with who and when, and never a code or an address", async () => {
    const pool = freshPool();
    const token = await enrol(pool);
    const denied = await requestCode(pool, { ...MACHINE, node_id: "laptop-8", hostname: "<b>8</b>" });
    expect((await decide(pool, "deny", denied.user_code)).status).toBe(200);
    const waiting = await requestCode(pool, { ...MACHINE, node_id: "laptop-9" });
    expect((await call(pool, "DELETE", "/nodes/laptop-7/credential", OPS)).status).toBe(200);
    await enrol(pool, { ...MACHINE, node_id: "desk-1", platform: "windows-x86_64" });

    // Node tokens read the dashboard too, so it is checked with one.
    const r = await call(pool, "GET", "/dashboard", bearer("tok-n1"));
    expect(r.status).toBe(200);
    const text = await r.text();
    const { counts, enrolment } = JSON.parse(text) as DashboardSummary;
    expect(counts.enrolment).toEqual({ enrolled: 1, revoked: 1, pending_requests: 1 });
    const at = expect.stringMatching(/^\d{4}-\d\d-\d\dT/);
    // Active credentials first.
    expect(enrolment.credentials).toEqual({
      items: [
        {
          node_id: "desk-1",
          owner: "desk-1",
          hostname: MACHINE.hostname,
          platform: "windows-x86_64",
          approved_by: "ops",
          approved_at: at,
          issued_at: at,
          revoked_by: null,
          revoked_at: null,
        },
        {
          ...MACHINE,
          owner: MACHINE.node_id,
          approved_by: "ops",
          approved_at: at,
          issued_at: at,
          revoked_by: "ops",
          revoked_at: at,
        },
      ],
      more: 0,
    });
    // Newest request first; the client's strings as they sent them (the page escapes).
    expect(enrolment.requests.items.map((q) => [q.node_id, q.hostname, q.state, q.decided_by])).toEqual([
      ["desk-1", MACHINE.hostname, "redeemed", "ops"],
      ["laptop-9", MACHINE.hostname, "pending", null],
      ["laptop-8", "<b>8</b>", "denied", "ops"],
      ["laptop-7", MACHINE.hostname, "redeemed", "ops"],
    ]);
    for (const secret of [denied.user_code, waiting.user_code, denied.device_code, token, "203.0.113.9"]) {
      expect(text).not.toContain(secret);
    }

    // Codes that ran out unredeemed show as expired; a day later they are gone.
    await runInDurableObject(stub(pool), (_o, state) => {
      state.storage.sql.exec("UPDATE device_codes SET expires_ms = ? WHERE node_id = 'laptop-9'", Date.now() - 1);
    });
    const later = await (await call(pool, "GET", "/dashboard", OPS)).json<DashboardSummary>();
    expect(later.enrolment.requests.items.find((q) => q.node_id === "laptop-9")?.state).toBe("expired");
    expect(later.counts.enrolment.pending_requests).toBe(0);
    await runInDurableObject(stub(pool), (_o, state) => {
      state.storage.sql.exec("UPDATE device_codes SET expires_ms = ?", Date.now() - CODE_RECORD_MS - 1);
    });
    const dayAfter = await (await call(pool, "GET", "/dashboard", OPS)).json<DashboardSummary>();
    expect(dayAfter.enrolment.requests).toEqual({ items: [], more: 0 });
    expect(dayAfter.enrolment.credentials.items).toHaveLength(2);
  });

  it("a revoked credential keeps its record but not its hash, and the node can enrol again", async () => {
    const pool = freshPool();
    const old = await enrol(pool);
    expect((await call(pool, "DELETE", "/nodes/laptop-7/credential", OPS)).status).toBe(200);
    const row = await runInDurableObject(await homeStub(pool, "laptop-7"), (_o, state) =>
      state.storage.sql.exec("SELECT token_sha256, revoked_by FROM node_credentials").one(),
    );
    expect(row).toEqual({ token_sha256: "", revoked_by: "ops" });
    const code = await requestCode(pool);
    const pending = await (await call(pool, "GET", "/device/pending", OPS)).json<{ replaces_credential: boolean }[]>();
    expect(pending[0]!.replaces_credential).toBe(false);
    expect((await decide(pool, "approve", code.user_code)).status).toBe(200);
    const renewed = (await (await poll(pool, code)).json<{ token: string }>()).token;
    expect((await call(pool, "GET", "/nodes", bearer(renewed))).status).toBe(200);
    expect((await call(pool, "GET", "/nodes", bearer(old))).status).toBe(401);
    const { enrolment } = await (await call(pool, "GET", "/dashboard", OPS)).json<DashboardSummary>();
    expect(enrolment.credentials.items).toEqual([
      expect.objectContaining({ node_id: "laptop-7", revoked_by: null, revoked_at: null }),
    ]);
  });
});

describe("what a credential is good for", () => {
  it("a claim held open by a machine whose credential is revoked gets nothing, even when work arrives", async () => {
    const pool = freshPool();
    const token = await enrol(pool);
    expect((await call(pool, "POST", "/nodes/register", bearer(token), registration("laptop-7"))).status).toBe(200);
    // The object's own call, as an enrolled node's claim makes it, held for up to 10 s.
    const proof = { nodeId: "laptop-7", tokenSha256: await sha256(token) };
    const home = await homeStub(pool, "laptop-7");
    const session = await home.session(proof);
    const held = session.claim("laptop-7", null, 10_000);
    // Held now: at S > 1 the claim refreshes the summary's copy first, an exchange that may outlast other calls.
    await vi.waitFor(async () => expect(await runInDurableObject(home, (o) => PoolObject.poolOf(o).held.size)).toBe(1));
    expect((await call(pool, "DELETE", "/nodes/laptop-7/credential", OPS)).status).toBe(200);
    expect((await call(pool, "POST", "/jobs", OPS, trialsJob(1))).status).toBe(201);
    expect(await held).toEqual({ ok: false, reason: "nothing" });
    const nodes = await (await call(pool, "GET", "/nodes", OPS)).json<Array<{ node_id: string }>>();
    expect(nodes.map((n) => n.node_id)).toContain("laptop-7");
    // In no shard: the job's may be any of them.
    const leases = [];
    for (const shard of shardStubs(pool))
      leases.push(
        ...(await runInDurableObject(shard, (_o, state) =>
          state.storage.sql.exec("SELECT node_id FROM leases").toArray(),
        )),
      );
    expect(leases).toEqual([]);
  });

  it("a revoked machine's live lease ends at once: its task goes to another node now, not at the deadline", async () => {
    const pool = freshPool();
    const token = await enrol(pool);
    expect((await call(pool, "POST", "/nodes/register", bearer(token), registration("laptop-7"))).status).toBe(200);
    expect((await call(pool, "POST", "/nodes/register", bearer("tok-n1"), registration("n1"))).status).toBe(200);
    const job = await (await call(pool, "POST", "/jobs", OPS, trialsJob(1, { lease_seconds: 3600 }))).json<{
      job_id: string;
    }>();
    const lease = await (
      await call(pool, "POST", "/leases/claim", bearer(token), { node_id: "laptop-7" })
    ).json<Lease>();
    // n1 waits for work; the only task is laptop-7's for the next hour.
    const held = stub(pool).claim("n1", null, 10_000);
    expect((await call(pool, "DELETE", "/nodes/laptop-7/credential", OPS)).status).toBe(200);
    const next = await held;
    expect(next.ok && next.lease).toMatchObject({ task_id: lease.task_id, node_id: "n1", attempt_number: 2 });
    // The old machine's commit, heartbeat or fail is refused outright.
    expect((await call(pool, "POST", `/attempts/${lease.lease_id}/heartbeat`, bearer(token))).status).toBe(401);
    const events = await (await call(pool, "GET", `/jobs/${job.job_id}/events`, OPS)).json<
      Array<{ type: string; message: string }>
    >();
    const ended = events.filter((e) => e.type === "LEASE_EXPIRED");
    expect(ended.map((e) => e.message)).toEqual([
      `lease ${lease.lease_id} ended: the credential of laptop-7 was revoked`,
    ]);
    // A worker loss, as an expiry is: no attempt used up.
    const tasks = await runInDurableObject(jobStub(pool, job.job_id), (_o, state) =>
      state.storage.sql.exec<{ worker_losses: number }>("SELECT worker_losses FROM tasks").toArray(),
    );
    expect(tasks).toEqual([{ worker_losses: 1 }]);
  });

  it("enrolling the same node id again cuts the old machine off: its held claim answers 204, its lease ends", async () => {
    const pool = freshPool();
    const old = await enrol(pool);
    expect((await call(pool, "POST", "/nodes/register", bearer(old), registration("laptop-7"))).status).toBe(200);
    await call(pool, "POST", "/jobs", OPS, trialsJob(1, { lease_seconds: 3600 }));
    const lease = await (await call(pool, "POST", "/leases/claim", bearer(old), { node_id: "laptop-7" })).json<Lease>();
    // The old machine waits for more work, as the agent's loop does.
    const proof = { nodeId: "laptop-7", tokenSha256: await sha256(old) };
    const home = await homeStub(pool, "laptop-7");
    const session = await home.session(proof);
    const held = session.claim("laptop-7", null, 10_000);
    // Held now: at S > 1 the claim refreshes the summary's copy first, an exchange that may outlast other calls.
    await vi.waitFor(async () => expect(await runInDurableObject(home, (o) => PoolObject.poolOf(o).held.size)).toBe(1));
    const started = Date.now();
    const fresh = await enrol(pool); // someone enrols laptop-7 again, and the new credential is redeemed
    expect(await held).toEqual({ ok: false, reason: "nothing" });
    expect(Date.now() - started).toBeLessThan(5000);
    expect((await call(pool, "POST", `/attempts/${lease.lease_id}/heartbeat`, bearer(old))).status).toBe(401);
    // The task came back at once: the new credential's claim gets it.
    const again = await (
      await call(pool, "POST", "/leases/claim", bearer(fresh), { node_id: "laptop-7" })
    ).json<Lease>();
    expect(again).toMatchObject({ task_id: lease.task_id, attempt_number: 2 });
    expect((await call(pool, "POST", `/attempts/${lease.lease_id}/heartbeat`, bearer(fresh))).status).toBe(410);
  });

  it("another pool's credential is a 401", async () => {
    const token = await enrol(freshPool());
    const other = freshPool();
    expect((await call(other, "GET", "/nodes", bearer(token))).status).toBe(401);
    expect((await call(other, "POST", "/nodes/register", bearer(token), registration("laptop-7"))).status).toBe(401);
  });

  it("a token shaped like an enrolled one that was never issued is a 401, also for a configured node's id", async () => {
    const pool = freshPool();
    await enrol(pool);
    const secret = "A".repeat(43);
    for (const node of ["laptop-7", "n1"]) {
      const forged = `fe1.${btoa(node).replace(/=+$/, "")}.${secret}`;
      expect((await call(pool, "GET", "/nodes", bearer(forged))).status).toBe(401);
    }
  });

  it("an enrolled node is a node: operator routes are refused with 403", async () => {
    const pool = freshPool();
    const token = await enrol(pool);
    const code = await requestCode(pool, { ...MACHINE, node_id: "laptop-9" });
    expect((await call(pool, "POST", "/jobs", bearer(token), trialsJob(1))).status).toBe(403);
    expect((await call(pool, "GET", "/device/pending", bearer(token))).status).toBe(403);
    expect((await decide(pool, "approve", code.user_code, bearer(token))).status).toBe(403);
    expect((await call(pool, "DELETE", "/nodes/laptop-7/credential", bearer(token))).status).toBe(403);
    // And may heartbeat only itself.
    expect((await call(pool, "POST", "/nodes/n1/heartbeat", bearer(token), { node_id: "n1" })).status).toBe(403);
  });

  it("a session offers every pool call, so each operator route refuses an enrolled node itself, and nothing changes", async () => {
    const pool = freshPool();
    const token = await enrol(pool);
    const asNode = bearer(token);
    const code = await requestCode(pool, { ...MACHINE, node_id: "laptop-9" });
    const job = await (await call(pool, "POST", "/jobs", OPS, trialsJob(1))).json<{ job_id: string }>();
    const jobState = async () =>
      (await (await call(pool, "GET", `/jobs/${job.job_id}`, OPS)).json<{ state: string }>()).state;
    const before = await jobState();
    // The moves a hostile enrolled machine would make: lift its own hold and
    // distrust, join a team pool, wipe the queue of machines waiting to join,
    // cancel someone's job, approve a sibling.
    expect((await call(pool, "POST", "/nodes/laptop-7/release", asNode)).status).toBe(403);
    expect((await call(pool, "PUT", "/nodes/laptop-7/pools", asNode, { pools: ["gpu-team"] })).status).toBe(403);
    expect((await call(pool, "POST", "/device/deny", asNode, { all: true })).status).toBe(403);
    expect((await call(pool, "POST", `/jobs/${job.job_id}/cancel`, asNode)).status).toBe(403);
    expect((await decide(pool, "approve", code.user_code, asNode)).status).toBe(403);

    const pending = await (await call(pool, "GET", "/device/pending", OPS)).json<{ user_code: string }[]>();
    expect(pending.map((p) => p.user_code)).toEqual([code.user_code]);
    expect(await jobState()).toBe(before);
    expect(before).not.toBe("CANCELLED");
    const assigned = await runInDurableObject(await homeStub(pool, "laptop-7"), (_o, state) =>
      state.storage.sql.exec("SELECT COUNT(*) AS n FROM node_pools").one(),
    );
    expect(assigned.n).toBe(0);
  });

  it("the pool stores hashes only: neither the device code nor the token appears in it", async () => {
    const pool = freshPool();
    const code = await requestCode(pool);
    await decide(pool, "approve", code.user_code);
    const { token } = await (await poll(pool, code)).json<{ token: string }>();
    // Every shard: the codes are shard 0's, the credential its node's home's.
    const shards = await Promise.all(
      shardStubs(pool).map((shard) =>
        runInDurableObject(shard, (_o, state) => [
          state.storage.sql.exec("SELECT * FROM device_codes").toArray(),
          state.storage.sql.exec("SELECT * FROM node_credentials").toArray(),
        ]),
      ),
    );
    const rows = JSON.stringify(shards);
    expect(rows).not.toContain(code.device_code);
    expect(rows).not.toContain(token);
    expect(rows).not.toContain(token.split(".")[2]);
    expect(rows).toContain(await sha256(token));
  });
});

describe("refusals", () => {
  it("the operator API needs an operator: 401 without a credential; an unknown code is a 404", async () => {
    const pool = freshPool();
    expect((await call(pool, "GET", "/device/pending")).status).toBe(401);
    expect((await decide(pool, "approve", "BCDF-GHJK", {})).status).toBe(401);
    expect((await call(pool, "DELETE", "/nodes/laptop-7/credential")).status).toBe(401);
    for (const typed of ["BCDF-GHJK", "not a code", "AAAA-AAAA", ""]) {
      const r = await decide(pool, "approve", typed);
      expect(r.status).toBe(404);
      expect(await r.json()).toEqual({ detail: "no pending enrolment with this code (expired, decided or unknown)" });
    }
  });

  it("unknown, pending, denied, expired and redeemed codes all get the same answer", async () => {
    const pool = freshPool();
    const answers: string[] = [];
    const record = async (r: Response) => answers.push(`${r.status} ${await r.text()}`);
    await record(await call(pool, "POST", "/device/token", {}, { device_code: "x".repeat(43) }));
    const pendingCode = await requestCode(pool);
    await record(await poll(pool, pendingCode));
    const denied = await requestCode(pool, { ...MACHINE, node_id: "d" });
    await decide(pool, "deny", denied.user_code);
    await record(await poll(pool, denied));
    const redeemed = await requestCode(pool, { ...MACHINE, node_id: "r" });
    await decide(pool, "approve", redeemed.user_code);
    expect((await poll(pool, redeemed)).status).toBe(200);
    await record(await poll(pool, redeemed));
    await runInDurableObject(stub(pool), (_o, state) => {
      state.storage.sql.exec("UPDATE device_codes SET expires_ms = ?", Date.now() - 1);
    });
    await record(await poll(pool, pendingCode));
    expect(new Set(answers)).toEqual(new Set([`400 ${PENDING}`]));
  });

  it(`a pool holds at most ${MAX_PENDING_CODES} pending codes: one more is a 429, and a decision makes room`, async () => {
    const pool = freshPool();
    const codes = [];
    // From many addresses, each within its own limit.
    const from = (i: number) => ({ "cf-connecting-ip": `198.51.${i >> 8}.${i & 255}` });
    for (let i = 0; i < MAX_PENDING_CODES; i++)
      codes.push(await requestCode(pool, { ...MACHINE, node_id: `m-${i}` }, from(i)["cf-connecting-ip"]));
    const over = await call(pool, "POST", "/device/code", from(1000), MACHINE);
    expect(over.status).toBe(429);
    expect(over.headers.get("retry-after")).toBe("60");
    expect((await decide(pool, "deny", codes[0]!.user_code)).status).toBe(200);
    expect((await call(pool, "POST", "/device/code", from(1000), MACHINE)).status).toBe(200);
  });

  it("one address floods the pool with requests: its sixth is a 429, everyone else still gets a code", async () => {
    const pool = freshPool();
    const flood = [];
    for (let i = 0; i < MAX_PENDING_CODES_PER_SOURCE; i++)
      flood.push(await requestCode(pool, { ...MACHINE, node_id: `bot-${i}` }, "203.0.113.66"));
    const sixth = await call(pool, "POST", "/device/code", { "cf-connecting-ip": "203.0.113.66" }, MACHINE);
    expect(sixth.status).toBe(429);
    expect(sixth.headers.get("retry-after")).toBe("60");
    expect(await sixth.json()).toEqual({
      detail: "too many enrolment requests from your address are waiting for an operator: try again later",
    });
    // A volunteer elsewhere is not locked out.
    await requestCode(pool, MACHINE, "198.51.100.7");
    // A decision on one of the flood's codes makes room for that address again.
    expect((await decide(pool, "deny", flood[0]!.user_code)).status).toBe(200);
    await requestCode(pool, { ...MACHINE, node_id: "bot-5" }, "203.0.113.66");
  });

  it("one IPv6 host rotating through its /64 counts as one address", async () => {
    const pool = freshPool();
    for (let i = 1; i <= MAX_PENDING_CODES_PER_SOURCE; i++)
      await requestCode(pool, { ...MACHINE, node_id: `v6-${i}` }, `2001:db8:7:42::${i}`);
    const rotated = await call(
      pool,
      "POST",
      "/device/code",
      { "cf-connecting-ip": "2001:0db8:7:42:ffff:1:2:3" },
      MACHINE,
    );
    expect(rotated.status).toBe(429);
    await requestCode(pool, MACHINE, "2001:db8:7:43::1"); // the next /64 is someone else
  });

  it("an operator denies a whole flood at once; none of its codes ever yields a token", async () => {
    const pool = freshPool();
    const codes = [];
    for (let i = 0; i < 12; i++)
      codes.push(await requestCode(pool, { ...MACHINE, node_id: `bot-${i}` }, `203.0.113.${i >> 2}`));
    // A node may not do it.
    const asNode = await call(pool, "POST", "/device/deny", bearer("tok-n1"), { all: true });
    expect(asNode.status).toBe(403);
    expect(await (await call(pool, "GET", "/device/pending", OPS)).json()).toHaveLength(12);
    const r = await call(pool, "POST", "/device/deny", OPS, { all: true });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ denied: true, count: 12 });
    expect(await (await call(pool, "GET", "/device/pending", OPS)).json()).toEqual([]);
    for (const code of codes) await expectPending(await poll(pool, code));
    expect((await decide(pool, "approve", codes[3]!.user_code)).status).toBe(404);
    // Nothing left: denying all again denies none.
    expect(await (await call(pool, "POST", "/device/deny", OPS, { all: true })).json()).toEqual({
      denied: true,
      count: 0,
    });
  });

  it.each<[string, unknown]>([
    ["neither field", {}],
    ["all: false", { all: false }],
    ["both fields", { all: true, user_code: "BCDF-GHJK" }],
    ["all as a string", { all: "true" }],
    ["a user code that is not text", { user_code: 5 }],
    ["a list", [{ all: true }]],
  ])("a deny with %s is a 422 that denies nothing", async (_, body) => {
    const pool = freshPool();
    await requestCode(pool);
    const r = await call(pool, "POST", "/device/deny", OPS, body);
    expect(r.status).toBe(422);
    const detail = (await r.json<{ detail: Array<{ loc: unknown[]; msg: string; type: string }> }>()).detail;
    expect(detail.length).toBeGreaterThan(0);
    expect(await (await call(pool, "GET", "/device/pending", OPS)).json()).toHaveLength(1);
  });

  it("a malformed request is a 422 and records nothing", async () => {
    const pool = freshPool();
    for (const body of [
      {},
      { node_id: "" },
      { node_id: 7 },
      { node_id: "x".repeat(257) },
      { ...MACHINE, hostname: 1 },
    ]) {
      expect((await call(pool, "POST", "/device/code", {}, body)).status).toBe(422);
    }
    expect((await call(pool, "POST", "/device/token", {}, { device_code: 1 })).status).toBe(422);
    expect(await (await call(pool, "GET", "/device/pending", OPS)).json()).toEqual([]);
  });

  it("an open coordinator says plainly that no enrolment is needed", async () => {
    const open = { ...env, FLASHML_NODE_TOKENS: "", FLASHML_OPERATOR_TOKENS: "" };
    for (const [method, path, body] of [
      ["POST", "/device/code", MACHINE],
      ["POST", "/device/token", { device_code: "x" }],
      ["GET", "/device/pending", undefined],
      ["POST", "/device/approve", { user_code: "BCDF-GHJK" }],
      ["DELETE", "/nodes/laptop-7/credential", undefined],
    ] as const) {
      const init: RequestInit = { method };
      if (body) init.body = JSON.stringify(body);
      const r = await app.fetch(new Request(`http://x/pools/p/v1alpha1${path}`, init), open, createExecutionContext());
      expect(r.status, path).toBe(400);
      expect((await r.json<{ detail: string }>()).detail, path).toMatch(/open.*no credential/);
    }
  });
});

describe("an enrolled node's session", () => {
  // An RPC promise is read through `then` only: a matcher that inspects its
  // properties would make pipelined property reads that reject unobserved.
  const outcome = (call: PromiseLike<unknown>) =>
    call.then(
      () => "answered",
      (e: Error) => e.message,
    );

  /** The object's methods a session does not offer: its lifecycle and the calls between objects. */
  const NOT_OFFERED = Object.getOwnPropertyNames(PoolObject.prototype).filter(
    (name) => name !== "constructor" && !(NODE_CALLS as readonly string[]).includes(name),
  );

  it("offers each of the node calls, each refusing a credential the pool does not hold", async () => {
    const pool = freshPool();
    await enrol(pool);
    const home = await homeStub(pool, "laptop-7");
    const proof = { nodeId: "laptop-7", tokenSha256: "0".repeat(64) };
    expect(NODE_CALLS.length).toBeGreaterThan(30);
    for (const name of NODE_CALLS) {
      const session = home.session(proof) as unknown as Record<string, () => Promise<unknown>>;
      // Refused by the session's own check: the call exists there and checks first.
      expect(await outcome(session[name]!()), name).toBe(CREDENTIAL_REFUSED);
    }
  });

  it("a session class offers the calls it names and no other method of its object: a call added later is no node's", () => {
    class Host {
      named() {
        return "named";
      }
      addedLater() {
        return "leaked";
      }
    }
    const Session = sessionClass(Host.prototype, ["named"]);
    const session = new Session(new Host(), () => true) as unknown as Record<string, unknown>;
    expect(typeof session.named).toBe("function");
    expect(session.addedLater).toBeUndefined();
    expect(() => sessionClass(Host.prototype, ["missing" as "named"])).toThrow(/offers no method missing/);
  });

  it("offers no other method of the object, however named, even with a valid credential: the list is opt-in", async () => {
    const pool = freshPool();
    const token = await enrol(pool);
    const home = await homeStub(pool, "laptop-7");
    const proof = { nodeId: "laptop-7", tokenSha256: await sha256(token) };
    // The lifecycle and every call between objects, today's and any added later that NODE_CALLS does not name.
    expect(NOT_OFFERED).toEqual(expect.arrayContaining(["alarm", "session", "peer"]));
    // Every call between objects, each by its name on the session: none is there.
    const peerCalls = Object.getOwnPropertyNames(PoolPeer.prototype).filter((name) => name !== "constructor");
    expect(peerCalls).toEqual(expect.arrayContaining(["claimForwarded", "deliver", "passportChanged", "vouch"]));
    for (const name of [...NOT_OFFERED, ...peerCalls, "forwardClaim"]) {
      const session = home.session(proof) as unknown as Record<string, () => Promise<unknown>>;
      const answer = await outcome(Promise.resolve().then(() => session[name]!()));
      expect(answer, name).not.toBe("answered");
      expect(answer, name).not.toBe(CREDENTIAL_REFUSED);
    }
  });

  it("does not offer the calls between shards: an enrolled node cannot forward itself a claim with a passport it wrote", async () => {
    const pool = freshPool();
    const token = await enrol(pool);
    expect((await call(pool, "POST", "/jobs", OPS, trialsJob(1))).status).toBe(201);
    const home = await homeStub(pool, "laptop-7");
    const session = home.session({ nodeId: "laptop-7", tokenSha256: await sha256(token) }) as unknown as Record<
      string,
      (...args: unknown[]) => Promise<unknown>
    >;
    // The passport a home would never write: 8 GPUs, every dataset, trusted.
    const forged = {
      claimId: "0".repeat(16),
      passport: { nodeId: "laptop-7", version: 99, registration: { gpus: 8 }, trusted: true },
      jobId: null,
      notAfter: Date.now() + 10_000,
    };
    // With a valid credential: the refusal is the session's missing call, not its credential check.
    const missing = (name: string) => `The RPC receiver does not implement the method "${name}".`;
    expect(await outcome(session.claimForwarded!(forged))).toBe(missing("claimForwarded"));
    expect(await outcome(session.claimsForwarded!([forged]))).toBe(missing("claimsForwarded"));
    expect(await session.listNodes!(null, 10)).toMatchObject({ items: [] }); // the session itself works
    const leases = await runInDurableObject(home, (_o, state) =>
      state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM leases").one(),
    );
    expect(leases.n).toBe(0);
  });

  it("checks the credential at each call: one revoked after a call refuses the next call on the same session", async () => {
    const pool = freshPool();
    const token = await enrol(pool);
    const proof = { nodeId: "laptop-7", tokenSha256: await sha256(token) };
    const home = await homeStub(pool, "laptop-7");
    // Not awaited: the call pipelines on the session's promise (one round trip).
    const session = home.session(proof);
    expect(await session.listNodes(null, 10)).toMatchObject({ items: [] });
    expect((await call(pool, "DELETE", "/nodes/laptop-7/credential", OPS)).status).toBe(200);
    expect(await outcome(session.listNodes(null, 10))).toBe(CREDENTIAL_REFUSED);
    expect(await outcome(home.session(proof).listNodes(null, 10))).toBe(CREDENTIAL_REFUSED);
  });

  it("a refused call leaves the object running: a claim another node holds open still gets its lease", async () => {
    const pool = freshPool();
    const token = await enrol(pool);
    expect((await call(pool, "POST", "/nodes/register", bearer("tok-n1"), registration("n1"))).status).toBe(200);
    const held = stub(pool).claim("n1", null, 10_000);
    const forged = { nodeId: "laptop-7", tokenSha256: await sha256(`${token}x`) };
    expect(await outcome((await homeStub(pool, "laptop-7")).session(forged).listNodes(null, 10))).toBe(
      CREDENTIAL_REFUSED,
    );
    expect((await call(pool, "POST", "/jobs", OPS, trialsJob(1))).status).toBe(201);
    expect(await held).toMatchObject({ ok: true, lease: { node_id: "n1" } });
  });

  it("a refused call reaches the Worker as the plain 401 of an invalid token", async () => {
    const pool = freshPool();
    const token = await enrol(pool);
    expect((await call(pool, "POST", "/nodes/register", bearer(token), registration("laptop-7"))).status).toBe(200);
    expect((await call(pool, "DELETE", "/nodes/laptop-7/credential", OPS)).status).toBe(200);
    const r = await call(pool, "POST", "/nodes/register", bearer(token), registration("laptop-7"));
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toBe("Bearer");
    expect(await r.json()).toEqual({ detail: "invalid or missing node token" });
  });
});
