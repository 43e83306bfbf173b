// Forged enrolled tokens against a pool of 4 shards (docs/protocol.md §15,
// docs/sharding.md §8.4), with tokens configured (worker-auth-shards). The
// attacker's move: a flood of unauthenticated requests, each carrying a
// made-up `fe1.` token, for ids it picks (fresh ones, and real enrolled
// nodes' with a wrong secret). The pool's answer: a 401 each, checked at
// the one shard the id names, so no shard (shard 0 least of all, which
// every id once had as a candidate home) serves more than its share.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { enrolledToken } from "../../../src/rules/enrolment";
import { mintShardHex, registryShard } from "../../../src/rules/shard-ids";
import { freshPool, nodeIdAt, sha256 } from "../../worker/helpers";
import { bearer, call } from "../../worker-auth/helpers";
import { shard } from "../helpers";

const OPS = bearer("tok-ops");
const SHARDS = [0, 1, 2, 3];

/** Each shard's calls served so far (`flashedge_requests_served_total`), in shard order. */
async function served(pool: string): Promise<number[]> {
  const text = await (await call(pool, "GET", "/metrics", OPS)).text();
  return SHARDS.map((k) => {
    const series = `flashedge_requests_served_total{pool="${pool}",shard="${k}"} `;
    const line = text.split("\n").find((l) => l.startsWith(series));
    return Number(line?.slice(series.length) ?? Number.NaN);
  });
}

/** What one more metrics read costs each shard, so that a read's own calls are not counted as the flood's. */
async function readCost(pool: string): Promise<number[]> {
  const before = await served(pool);
  const after = await served(pool);
  return SHARDS.map((k) => after[k]! - before[k]!);
}

/**
 * A credential for `nodeId` at shard k, as redeeming a code installs it:
 * its token. Written here, since enrolling through the routes starts the
 * shards' exchange ticks, whose calls the counts would include.
 */
async function enrolledAt(pool: string, k: number, nodeId: string): Promise<string> {
  const token = forged(nodeId);
  const tokenSha256 = await sha256(token);
  await runInDurableObject(shard(pool, k), (_o, state) => {
    state.storage.sql.exec(
      `INSERT INTO node_credentials (node_id, token_sha256, hostname, platform, approved_by, approved_ms, issued_ms)
       VALUES (?, ?, 'rig.local', 'linux-x86_64', 'ops', ?, ?)`,
      nodeId,
      tokenSha256,
      Date.now(),
      Date.now(),
    );
  });
  return token;
}

const forged = (nodeId: string) => enrolledToken(nodeId, crypto.getRandomValues(new Uint8Array(32)));

/** `n` random node ids whose registry shard is `k`: drawn as an attacker would, kept by shard so each gets its share. */
function randomIdsAt(k: number, n: number): string[] {
  const ids: string[] = [];
  while (ids.length < n) {
    const id = `rig-${crypto.randomUUID().slice(0, 8)}`;
    if (registryShard(id, SHARDS.length) === k) ids.push(id);
  }
  return ids;
}

describe("a flood of forged enrolled tokens", () => {
  it("is refused with a 401 each, at one call on the id's own shard, so no shard serves over 1.25 times the mean", async () => {
    const pool = freshPool();
    // Real enrolled nodes, one homed on each shard, and a job id of every shard to read. No work: the
    // shards stay quiet, so the calls counted are the flood's.
    const rigs = SHARDS.map((k) => nodeIdAt(pool, "rig", k));
    const tokens = await Promise.all(rigs.map((rig, k) => enrolledAt(pool, k, rig)));
    const jobs = SHARDS.map((k) => mintShardHex(pool, k, "0badcafe"));

    // Per shard: 20 fresh ids and 5 forgeries of its real node's token; each sent to a home-routed
    // route, a job's route (on another shard as often as not) and a pool-wide read, in turn.
    const ids = SHARDS.flatMap((k) => [...randomIdsAt(k, 20), ...Array<string>(5).fill(rigs[k]!)]);
    const routes = [
      (token: string, id: string) => call(pool, "POST", "/leases/claim", bearer(token), { node_id: id }),
      (token: string, _: string, i: number) => call(pool, "GET", `/jobs/${jobs[i % jobs.length]}`, bearer(token)),
      (token: string) => call(pool, "GET", "/nodes", bearer(token)),
      (token: string) => call(pool, "GET", "/dashboard", bearer(token)),
    ];
    const flood = async () => {
      for (const [i, id] of ids.entries()) {
        const r = await routes[i % routes.length]!(forged(id), id, i);
        expect(r.status, id).toBe(401);
        expect(await r.json()).toEqual({ detail: "invalid or missing node token" });
      }
    };
    const measured = async (attack: () => Promise<void>) => {
      const cost = await readCost(pool);
      const before = await served(pool);
      await attack();
      const after = await served(pool);
      return SHARDS.map((k) => after[k]! - before[k]! - cost[k]!);
    };

    // The first flood: each shard also asks the shards that may hold its nodes for them (shard 0,
    // in a pool never raised), once a minute at most however many ids it is asked about.
    const first = await measured(flood);
    const firstMean = first.reduce((a, b) => a + b, 0) / SHARDS.length;
    for (const k of SHARDS) expect(first[k], `shard ${k} of ${first}`).toBeLessThanOrEqual(1.25 * firstMean);
    expect(first.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(ids.length + SHARDS.length - 1);

    // Every later forgery costs one call, at the shard its id names: 25 each.
    const again = await measured(flood);
    expect(again).toEqual(SHARDS.map(() => ids.length / SHARDS.length));

    // The real nodes are still served.
    for (const token of tokens) expect((await call(pool, "GET", "/nodes", bearer(token))).status).toBe(200);
  });

  it("a node enrolled into shard 0 is served through its registry shard's pointer, and forgeries of its token cost shard 0 one call each", async () => {
    const pool = freshPool();
    const old = nodeIdAt(pool, "old", 2);
    const token = await enrolledAt(pool, 0, old);
    // Shard 2 holds no pointer yet: it pulls shard 0's nodes, then names shard 0, which vouches.
    expect((await call(pool, "GET", "/nodes", bearer(token))).status).toBe(200);
    const pointers = await runInDurableObject(shard(pool, 2), (_o, state) =>
      state.storage.sql.exec("SELECT kind, name, home FROM homes").toArray(),
    );
    expect(pointers).toEqual([{ kind: "pulled", name: old, home: 0 }]);

    const cost = await readCost(pool);
    const before = await served(pool);
    for (let i = 0; i < 8; i++) {
      const r = await call(pool, "GET", "/nodes", bearer(forged(old)));
      expect(r.status).toBe(401);
    }
    const after = await served(pool);
    expect(SHARDS.map((k) => after[k]! - before[k]! - cost[k]!)).toEqual([8, 0, 0, 0]);
    expect((await call(pool, "GET", "/nodes", bearer(token))).status).toBe(200);
  });
});
