// Passports are forgotten (docs/protocol.md §12, issue 40): a shard's copy of
// a node homed elsewhere goes once the node has not been seen there for a
// day, unless something there still needs it (a live lease, a result
// awaiting its verdict), and a node seen again gets a new one with its next
// forwarded claim. In a pool of 4 shards (worker-shards): nodes homed at
// shard 0, their work at shard 2.

import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { FORGET_EVERY_MS } from "../../src/pool/alarm/housekeeping";
import { PASSPORT_RETENTION_MS } from "../../src/pool/nodes/passports";
import type { Lease } from "../../src/protocol/tasks";
import {
  call,
  claim,
  delivered,
  freshPool,
  homeShardOf,
  json,
  nodeIdAt,
  register,
  sha256,
  sleep,
  trialsJob,
  upload,
} from "../worker/helpers";
import { shard, submitTo } from "./helpers";

/** The job's shard; every node here is homed at shard 0. */
const K = 2;

/** The nodes whose passports shard k holds, with their versions. */
async function passportsAt(pool: string, k: number): Promise<Array<{ node_id: string; version: number }>> {
  return runInDurableObject(shard(pool, k), (_o, state) =>
    state.storage.sql
      .exec<{ node_id: string; version: number }>("SELECT node_id, version FROM passports ORDER BY node_id")
      .toArray(),
  );
}

/** As if shard k last saw these nodes (a request, a forward) a day and a minute ago. */
async function lastSeenADayAgo(pool: string, k: number, nodeIds: string[]): Promise<void> {
  const then = Date.now() - PASSPORT_RETENTION_MS - 60_000;
  await runInDurableObject(shard(pool, k), (_o, state) => {
    state.storage.sql.exec(
      "UPDATE passports SET last_request_ms = ?1, received_ms = ?1 WHERE node_id IN (SELECT value FROM json_each(?2))",
      then,
      JSON.stringify(nodeIds),
    );
  });
}

/**
 * Runs shard k's alarm until it has forgotten `gone`'s passport: the alarm
 * looks at a page of passports at most every FORGET_EVERY_MS, and the
 * summary tick may have just looked. Every passport here fits in one page,
 * so the run that forgot `gone` looked at all of them.
 */
async function alarmUntilForgotten(pool: string, k: number, gone: string): Promise<void> {
  const deadline = Date.now() + FORGET_EVERY_MS * 3;
  while (Date.now() < deadline) {
    await runDurableObjectAlarm(shard(pool, k));
    if (!(await passportsAt(pool, k)).some((p) => p.node_id === gone)) return;
    await sleep(100);
  }
  throw new Error(`shard ${k} never forgot ${gone}'s passport`);
}

/** A lease for `nodeId` on `job`, forwarded from the node's home. */
async function take(pool: string, nodeId: string, job: string): Promise<Lease> {
  const r = await claim(pool, nodeId, job);
  expect(r.status, `${nodeId} claims`).toBe(200);
  return json<Lease>(r);
}

/** The node's version of its passport at home. */
async function versionAtHome(pool: string, nodeId: string): Promise<number> {
  return runInDurableObject(
    shard(pool, await homeShardOf(pool, nodeId)),
    (_o, state) =>
      state.storage.sql.exec<{ v: number }>("SELECT passport_version AS v FROM nodes WHERE node_id = ?", nodeId).one()
        .v,
  );
}

describe("a passport", () => {
  it("of a node not seen here for a day is forgotten by the alarm; one seen within the day, or of a node holding a live lease here, is kept", async () => {
    const pool = freshPool();
    const [stale, recent, leased] = ["stale", "recent", "leased"].map((name) => nodeIdAt(pool, name, 0));
    for (const n of [stale, recent, leased]) await register(pool, n!);
    expect(await homeShardOf(pool, stale!)).toBe(0);
    const job = await submitTo(pool, K, trialsJob(4));
    const leases = new Map<string, Lease>();
    for (const n of [stale!, recent!, leased!]) leases.set(n, await take(pool, n, job));
    for (const n of [stale!, recent!]) {
      const r = await call(pool, "POST", `/attempts/${leases.get(n)!.lease_id}/fail`, { reason: "x" });
      expect(r.status).toBe(200);
    }
    expect((await passportsAt(pool, K)).map((p) => p.node_id)).toEqual([leased, recent, stale].sort());

    await lastSeenADayAgo(pool, K, [stale!, leased!]);
    await alarmUntilForgotten(pool, K, stale!);
    expect((await passportsAt(pool, K)).map((p) => p.node_id)).toEqual([leased, recent].sort());

    // Seen again: its next forwarded claim brings the home's passport, whole, and leases as before.
    const again = await take(pool, stale!, job);
    expect(again).toMatchObject({ node_id: stale, job_id: job });
    expect(await passportsAt(pool, K)).toContainEqual({ node_id: stale, version: await versionAtHome(pool, stale!) });
    // The leased node's copy still serves its lease: its heartbeat renews it.
    expect((await call(pool, "POST", `/attempts/${leases.get(leased!)!.lease_id}/heartbeat`, {})).status).toBe(200);
  });

  it("of a node that holds or ran a replica of a task still open here is kept until the verdict, which reaches the node's home", async () => {
    const pool = freshPool();
    const [first, quitter, second, idle] = ["first", "quitter", "second", "idle"].map((name) =>
      nodeIdAt(pool, name, 0),
    );
    for (const n of [first!, quitter!, second!, idle!]) await register(pool, n);
    const job = await submitTo(pool, K, trialsJob(1), { replicas: 2 });
    const metrics = JSON.stringify({ loss: 0.25 });
    const commit = async (lease: Lease) => {
      const prefix = lease.payload.output_prefix as string;
      expect((await upload(pool, `${prefix}metrics.json`, metrics)).status).toBe(200);
      const r = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, {
        output_sha256: await sha256(metrics),
      });
      expect(await json(r)).toMatchObject({ accepted: true });
    };
    const fail = async (lease: Lease) =>
      expect((await call(pool, "POST", `/attempts/${lease.lease_id}/fail`, { reason: "x" })).status).toBe(200);
    // One replica awaits its verdict, one was given up: the task wants another.
    await commit(await take(pool, first!, job));
    await fail(await take(pool, quitter!, job));
    // A node that worked here and owes nothing: the one whose copy goes.
    await fail(await take(pool, idle!, await submitTo(pool, K, trialsJob(1))));

    await lastSeenADayAgo(pool, K, [first!, quitter!, idle!]);
    await alarmUntilForgotten(pool, K, idle!);
    expect((await passportsAt(pool, K)).map((p) => p.node_id)).toEqual([first, quitter].sort());

    // The third replica agrees with the first: the verdict counts a valid result for each at its home.
    await commit(await take(pool, second!, job));
    await delivered(pool);
    const validResults = await runInDurableObject(shard(pool, 0), (_o, state) =>
      state.storage.sql
        .exec<{ node_id: string; valid_results: number }>(
          "SELECT node_id, valid_results FROM nodes WHERE node_id IN (?, ?) ORDER BY node_id",
          first!,
          second!,
        )
        .toArray(),
    );
    expect(validResults).toEqual([first!, second!].sort().map((node_id) => ({ node_id, valid_results: 1 })));

    // Judged now, and still not seen here for a day: forgotten.
    await lastSeenADayAgo(pool, K, [first!, quitter!]);
    await alarmUntilForgotten(pool, K, first!);
    expect((await passportsAt(pool, K)).map((p) => p.node_id)).toEqual([second]);
  });
});
