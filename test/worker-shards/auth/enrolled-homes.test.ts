// Enrolled nodes in a pool of 4 shards (docs/sharding.md §8.4), with tokens
// configured (worker-auth-shards): shard 0 redeems every device code and
// installs the credential at the node's home, its registry shard, so an
// enrolled fleet spreads as an open one does. A node enrolled while
// credentials lived in shard 0 keeps its home there. The attacker's moves:
// ask for a code under a node id enrolled on another shard, and redeem one
// code twice at once.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { NOT_HOME } from "../../../src/pool/nodes/homes";
import type { DashboardSummary } from "../../../src/protocol/dashboard";
import type { Lease } from "../../../src/protocol/tasks";
import { enrolledToken } from "../../../src/rules/enrolment";
import { freshPool, nodeIdAt, registration, sha256, trialsJob } from "../../worker/helpers";
import { bearer, call, enrol } from "../../worker-auth/helpers";
import { shard, shardsHolding, submitTo } from "../helpers";

const OPS = bearer("tok-ops");
const SHARDS = [0, 1, 2, 3];

/** The shards that hold a credential row for `nodeId`, revoked or not. */
const credentialShards = (pool: string, nodeId: string) => shardsHolding(pool, "node_credentials", nodeId);

/** An approval as shard 0 passes it with a credential to install. */
const APPROVAL = { hostname: "h", platform: "p", approvedBy: "ops", approvedMs: 0, owner: null, pools: null };

/** Asks for a code for `nodeId` and has an operator approve it; the device code. */
async function approvedCode(pool: string, nodeId: string): Promise<string> {
  const asked = await call(pool, "POST", "/device/code", {}, { node_id: nodeId, hostname: `${nodeId}.local` });
  const code = await asked.json<{ device_code: string; user_code: string }>();
  expect((await call(pool, "POST", "/device/approve", OPS, { user_code: code.user_code })).status).toBe(200);
  return code.device_code;
}

const poll = (pool: string, deviceCode: string) => call(pool, "POST", "/device/token", {}, { device_code: deviceCode });

/** A credential as one installed in shard 0 before credentials went home: its token. */
async function enrolledInShard0(pool: string, nodeId: string): Promise<string> {
  const token = enrolledToken(nodeId, crypto.getRandomValues(new Uint8Array(32)));
  const tokenSha256 = await sha256(token);
  await runInDurableObject(shard(pool, 0), (_o, state) => {
    state.storage.sql.exec(
      `INSERT INTO node_credentials (node_id, token_sha256, hostname, platform, approved_by, approved_ms, issued_ms)
       VALUES (?, ?, 'old.local', 'linux-x86_64', 'ops', ?, ?)`,
      nodeId,
      tokenSha256,
      Date.now(),
      Date.now(),
    );
  });
  return token;
}

describe("an enrolled node's credential lives at its home", () => {
  it("is installed at the node's registry shard, where the node then registers and claims", async () => {
    const pool = freshPool();
    const rigs = SHARDS.map((k) => nodeIdAt(pool, "rig", k));
    for (const [k, rig] of rigs.entries()) {
      const token = await enrol(pool, rig);
      expect(await credentialShards(pool, rig)).toEqual([k]);
      expect((await call(pool, "POST", "/nodes/register", bearer(token), registration(rig))).status).toBe(200);
      const registered = await runInDurableObject(shard(pool, k), (_o, state) =>
        state.storage.sql.exec("SELECT 1 FROM nodes WHERE node_id = ?", rig).toArray(),
      );
      expect(registered).toHaveLength(1);
      expect((await call(pool, "POST", "/leases/claim", bearer(token), { node_id: rig })).status).toBe(204);
    }
    // The operator's view is the pool's: every shard's credentials.
    const dashboard = await (await call(pool, "GET", "/dashboard", OPS)).json<DashboardSummary>();
    expect(dashboard.counts.enrolment.enrolled).toBe(4);
    expect(dashboard.enrolment.credentials.items.map((c) => c.node_id).sort()).toEqual([...rigs].sort());
  });

  it("a node enrolled into shard 0 keeps its home there: its first call, a job's, at its registry shard, is served", async () => {
    const pool = freshPool();
    const old = nodeIdAt(pool, "old", 2);
    const token = await enrolledInShard0(pool, old);
    const job = await submitTo(pool, 2, trialsJob(1));
    // The Worker guesses shard 2 (its registry shard) for this caller; shard 2 names shard 0, which vouches.
    expect((await call(pool, "GET", `/jobs/${job}`, bearer(token))).status).toBe(200);
    expect((await call(pool, "POST", "/nodes/register", bearer(token), registration(old))).status).toBe(200);
    const lease = await (await call(pool, "POST", "/leases/claim", bearer(token), { node_id: old })).json<Lease>();
    expect(lease).toMatchObject({ job_id: job, node_id: old });
    expect((await call(pool, "POST", `/attempts/${lease.lease_id}/heartbeat`, bearer(token))).status).toBe(200);
    expect(await credentialShards(pool, old)).toEqual([0]);

    // Enrolled again, its new credential replaces the old one where it lives.
    const renewed = await enrol(pool, old);
    expect(await credentialShards(pool, old)).toEqual([0]);
    expect((await call(pool, "GET", "/nodes", bearer(token))).status).toBe(401);
    expect((await call(pool, "GET", "/nodes", bearer(renewed))).status).toBe(200);
  });
});

describe("redeeming at shard 0 for a home elsewhere", () => {
  it("a code asked under a node id enrolled on another shard says it would replace that credential", async () => {
    const pool = freshPool();
    const victim = nodeIdAt(pool, "victim", 3);
    const legacy = nodeIdAt(pool, "legacy", 1);
    await enrol(pool, victim);
    await enrolledInShard0(pool, legacy);
    for (const nodeId of [victim, legacy, "newcomer"])
      expect((await call(pool, "POST", "/device/code", {}, { node_id: nodeId, hostname: "h" })).status).toBe(200);
    const pending = await (await call(pool, "GET", "/device/pending", OPS)).json<
      Array<{ node_id: string; replaces_credential: boolean }>
    >();
    expect(Object.fromEntries(pending.map((p) => [p.node_id, p.replaces_credential]))).toEqual({
      [victim]: true,
      [legacy]: true,
      newcomer: false,
    });
  });

  it("two polls of one approved code at once issue one token, and it is the one installed", async () => {
    const pool = freshPool();
    const rig = nodeIdAt(pool, "rig", 3);
    const deviceCode = await approvedCode(pool, rig);
    const answers = await Promise.all([poll(pool, deviceCode), poll(pool, deviceCode)]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 400]);
    const { token } = await answers.find((r) => r.status === 200)!.json<{ token: string }>();
    expect((await call(pool, "GET", "/nodes", bearer(token))).status).toBe(200);
    expect((await poll(pool, deviceCode)).status).toBe(400);
  });

  it("a shard 0 that restarted after the install leaves the code redeemable: the next poll's token replaces the lost one", async () => {
    const pool = freshPool();
    const rig = nodeIdAt(pool, "rig", 1);
    const deviceCode = await approvedCode(pool, rig);
    // What shard 0 installed before it restarted, and never answered.
    const lost = enrolledToken(rig, crypto.getRandomValues(new Uint8Array(32)));
    await shard(pool, 1)
      .peer()
      .installCredential(rig, { ...APPROVAL, tokenSha256: await sha256(lost) });
    const r = await poll(pool, deviceCode);
    expect(r.status).toBe(200);
    const { token } = await r.json<{ token: string }>();
    expect((await call(pool, "GET", "/nodes", bearer(token))).status).toBe(200);
    expect((await call(pool, "GET", "/nodes", bearer(lost))).status).toBe(401);
  });

  it("an install sent by hand to a shard that is not the node's home installs nothing there", async () => {
    const pool = freshPool();
    const rig = nodeIdAt(pool, "rig", 1);
    const refusal = await shard(pool, 2)
      .peer()
      .installCredential(rig, { ...APPROVAL, tokenSha256: "0".repeat(64) })
      .then(
        () => "installed",
        (e: Error) => e.message,
      );
    expect(refusal).toBe(`${NOT_HOME}1`);
    expect(await credentialShards(pool, rig)).toEqual([]);
  });
});
