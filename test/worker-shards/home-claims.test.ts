// A claim at the node's home in a pool of 4 shards (docs/sharding.md §5.1,
// §5.3, §7.1): served where the summary says the best work for the node is,
// through the same HTTP routes a one-shard pool has. Each node lives at its
// home (n1's is shard 0, by jump hash at 4 shards); the tests place jobs on
// other shards through the shards' own calls, as two-choice placement does.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { ClaimResult } from "../../src/pool/claims/claim-result";
import { PoolObject } from "../../src/pool/object";
import type { Pool } from "../../src/pool/pool";
import { shardOfHex } from "../../src/rules/shard-ids";
import {
  call,
  claim,
  commandJob,
  freshPool,
  homeStub,
  json,
  nodeIdAt,
  register,
  sha256,
  trialsJob,
  upload,
} from "../worker/helpers";
import { shard, submitTo } from "./helpers";

type Lease = { lease_id: string; job_id: string; task_id: string; node_id: string };

const homeRecord = async (pool: string, nodeId: string) =>
  runInDurableObject(await homeStub(pool, nodeId), (_o, state) =>
    state.storage.sql
      .exec<{ accepted_tasks: number; live_until_ms: number }>(
        "SELECT accepted_tasks, live_until_ms FROM nodes WHERE node_id = ?",
        nodeId,
      )
      .one(),
  );

describe("a claim at its home, with the work on another shard", () => {
  it("is leased by that shard, and the lease's heartbeat, upload and commit reach it by the lease's id", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const jobId = await submitTo(pool, 2, trialsJob(1));
    const r = await claim(pool, "n1");
    expect(r.status).toBe(200);
    const lease = await json<Lease>(r);
    expect(lease).toMatchObject({ job_id: jobId, node_id: "n1" });
    expect(shardOfHex(pool, lease.lease_id.slice(3))).toBe(2);

    expect((await call(pool, "POST", `/attempts/${lease.lease_id}/heartbeat`)).status).toBe(200);
    const bytes = '{"accuracy": 0.9}';
    expect((await upload(pool, `jobs/${jobId}/${lease.task_id}/metrics.json`, bytes)).status).toBe(200);
    const done = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, {
      output_sha256: await sha256(bytes),
    });
    expect(await json(done)).toEqual({ accepted: true });
    expect((await json(await call(pool, "GET", `/jobs/${jobId}`))).state).toBe("SUCCEEDED");
    // The home counts the node online while it holds the lease, and the accepted task once it is delivered.
    await vi.waitFor(async () => expect((await homeRecord(pool, "n1")).accepted_tasks).toBe(1), { timeout: 5_000 });
  });

  it("takes the higher priority on another shard before this shard's own work", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const low = await submitTo(pool, 0, trialsJob(1), { priority: 0 });
    const high = await submitTo(pool, 3, trialsJob(1), { priority: 10 });
    expect((await json<Lease>(await claim(pool, "n1"))).job_id).toBe(high);
    expect((await json<Lease>(await claim(pool, "n1"))).job_id).toBe(low);
    expect((await claim(pool, "n1")).status).toBe(204);
  });

  it("serves its own work first at an equal priority: no request to another shard", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const remote = await submitTo(pool, 1, trialsJob(1));
    const here = await submitTo(pool, 0, trialsJob(1));
    expect((await json<Lease>(await claim(pool, "n1"))).job_id).toBe(here);
    expect((await json<Lease>(await claim(pool, "n1"))).job_id).toBe(remote);
  });

  it("restricted to a job, goes to that job's shard", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, 1, trialsJob(1));
    const wanted = await submitTo(pool, 3, trialsJob(1));
    expect((await json<Lease>(await claim(pool, "n1", wanted))).job_id).toBe(wanted);
    expect((await claim(pool, "n1", wanted)).status).toBe(204); // its one task is leased
  });
});

describe("what the home refuses, no other shard serves", () => {
  it("a task the gate refuses the node on another shard: nothing", async () => {
    const pool = freshPool();
    await register(pool, "cpu-only");
    await submitTo(pool, 2, commandJob({}, { resources: { gpuPerTask: 1 } }));
    expect((await claim(pool, "cpu-only")).status).toBe(204);
  });

  it("a node held back at home gets nothing from any shard", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitTo(pool, 2, trialsJob(1));
    await runInDurableObject(shard(pool, 0), (_o, state) => {
      state.storage.sql.exec("UPDATE nodes SET held_until_ms = ? WHERE node_id = 'n1'", Date.now() + 60_000);
    });
    expect((await claim(pool, "n1")).status).toBe(204);
    const tasks = await json<Array<{ state: string }>>(
      await call(pool, "GET", `/jobs/${(await jobsOf(pool))[0]}/tasks`),
    );
    expect(tasks.map((t) => t.state)).toEqual(["PENDING"]);
  });

  it("a draining node gets nothing from any shard, even for a job it names", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const jobId = await submitTo(pool, 2, trialsJob(1));
    expect((await call(pool, "POST", "/nodes/n1/heartbeat", { node_id: "n1", status: "draining" })).status).toBe(200);
    expect((await claim(pool, "n1")).status).toBe(204);
    expect((await claim(pool, "n1", jobId)).status).toBe(204);
  });

  it("an unregistered node is refused at its home, for a job on another shard too", async () => {
    const pool = freshPool();
    const jobId = await submitTo(pool, 2, trialsJob(1));
    expect((await claim(pool, "stranger")).status).toBe(403);
    expect((await claim(pool, "stranger", jobId)).status).toBe(403);
  });
});

describe("a held claim", () => {
  it("is answered with a lease from another shard when work for it appears there", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const held = shard(pool, 0).claim("n1", null, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const jobId = await submitTo(pool, 1, trialsJob(1));
    const result = await held;
    expect(result.ok && result.lease.job_id).toBe(jobId);
  });

  it("of a held-back node takes work on another shard the moment an operator releases the node", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const jobId = await submitTo(pool, 2, trialsJob(1));
    await runInDurableObject(shard(pool, 0), (_o, state) => {
      state.storage.sql.exec("UPDATE nodes SET held_until_ms = ? WHERE node_id = 'n1'", Date.now() + 60_000);
    });
    const held = shard(pool, 0).claim("n1", null, 20_000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await call(pool, "POST", "/nodes/n1/release")).status).toBe(200);
    // A lease, not the nothing the hold's end answers: the release woke it.
    const result = await held;
    expect(result.ok && result.lease.job_id).toBe(jobId);
  });

  it("claiming again while its forward is in flight gets that forward's lease, and the task is leased once", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const first = shard(pool, 0).claim("n1", null, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const jobId = await submitTo(pool, 1, trialsJob(1));
    // Whether the first claim's forward is in flight or done, the node ends with one lease of the one task.
    const second = await shard(pool, 0).claim("n1", null, 0);
    const answers = [await first, second];
    const leases = answers.filter((a) => a.ok);
    expect(leases).toHaveLength(1);
    expect(leases[0]!.ok && leases[0]!.lease.job_id).toBe(jobId);
    const rows = await runInDurableObject(shard(pool, 1), (_o, state) =>
      state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM leases").one(),
    );
    expect(rows.n).toBe(1);
  });
});

describe("a hostile node's held claim", () => {
  it("buys at most one forward per heartbeat, and none by waiting, at a shard that refuses it", async () => {
    const pool = freshPool();
    await register(pool, "n1"); // homed at shard 0
    const n2 = nodeIdAt(pool, "n2", 1);
    await register(pool, n2);
    const jobId = await submitTo(pool, 1, trialsJob(1, {}, { retryPolicy: { maxTaskAttempts: 3 } }));
    // n1 fails the task: shard 1 keeps its retry for n2, idle there (retry elsewhere, docs/protocol.md §13).
    const first = await shard(pool, 0).claim("n1", null, 0);
    expect(first.ok && first.lease.job_id).toBe(jobId);
    const lease = first.ok ? first.lease : null;
    expect((await call(pool, "POST", `/attempts/${lease!.lease_id}/fail`, { reason: "nope" })).status).toBe(200);
    await shard(pool, 1).peer().summaryChanged();

    const forwarded = () => inShard(pool, 0, (s) => s.forwardedClaims);
    const before = await forwarded();
    const held = shard(pool, 0).claim("n1", null, 20_000);
    // Its one forward is refused, and the claim stays held at home.
    await vi.waitFor(async () => expect(await forwarded()).toBe(before + 1), { timeout: 5_000 });
    await new Promise((resolve) => setTimeout(resolve, 1_200)); // two busy ticks: the refusal stands at that version
    expect(await forwarded()).toBe(before + 1);

    const BEATS = 5;
    for (let i = 0; i < BEATS; i++) {
      expect((await call(pool, "POST", "/nodes/n1/heartbeat", { node_id: "n1" })).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const bought = (await forwarded()) - before - 1;
    expect(bought).toBeGreaterThanOrEqual(1); // a changed node is asked about again, as a new claim would be
    expect(bought).toBeLessThanOrEqual(BEATS);
    // However often it asks, the task is n2's: n1's claim ends with nothing, and n2 leases the retry.
    expect((await shard(pool, 0).claim("n1", null, 0)).ok).toBe(false);
    expect(await held).toEqual({ ok: false, reason: "nothing" });
    const retry = await shard(pool, 1).claim(n2, null, 0);
    expect(retry.ok && retry.lease.task_id).toBe(lease!.task_id);
  });
});

/** Reads shard k's side of the summary in the object itself. */
function inShard<T>(pool: string, k: number, read: (shard: Pool) => T): Promise<T> {
  return runInDurableObject(shard(pool, k), (object) => read(PoolObject.poolOf(object)));
}

/**
 * `fleet` nodes of each home (shard → [count, GPUs each]) registered and
 * holding claims there for 30 s, until each home's copy shows the other
 * homes' held claims, as a burst into a waiting fleet finds them. The
 * claims' answers collect in `answers` as they come.
 */
async function heldFleet(pool: string, fleet: Record<number, [number, number]>) {
  const homes = Object.keys(fleet).map(Number);
  const nodes = homes.flatMap((k) =>
    Array.from({ length: fleet[k]![0] }, (_, i) => ({ k, id: nodeIdAt(pool, `held-${k}-${i}`, k) })),
  );
  for (const { k, id } of nodes) await register(pool, id, {}, fleet[k]![1]);
  const answers: ClaimResult[] = [];
  const held = nodes.map(({ k, id }) =>
    shard(pool, k)
      .claim(id, null, 30_000)
      .then((a) => answers.push(a)),
  );
  await vi.waitFor(
    async () => {
      for (const k of homes) {
        await shard(pool, k).peer().summaryChanged();
        const seen = await inShard(pool, k, (s) =>
          homes.filter((h) => h !== k).map((h) => s.summary.shard(h, Date.now())?.held.claims),
        );
        expect(seen).toEqual(homes.filter((h) => h !== k).map((h) => fleet[h]![0]));
      }
    },
    { timeout: 10_000, interval: 100 },
  );
  /** Claims again for every node with no wait, which answers the claims still held; answers the leases the fleet got. */
  const end = async () => {
    const again = await Promise.all(nodes.map(({ k, id }) => shard(pool, k).claim(id, null, 0)));
    expect(again.filter((a) => a.ok)).toEqual([]);
    await Promise.all(held);
    return answers.flatMap((a) => (a.ok ? [a.lease] : []));
  };
  const forwards = async () => Promise.all(homes.map((k) => inShard(pool, k, (s) => s.forwardedClaims)));
  return { answers, end, forwards };
}

describe("held claims across the pool meeting a burst of work (docs/sharding.md §6.3)", () => {
  it("draw each home's share of it, about n + S forwards in all, not one per held claim; every task is leased once", async () => {
    const pool = freshPool();
    const TASKS = 12;
    const fleet = await heldFleet(pool, { 1: [12, 0], 2: [12, 0], 3: [12, 0] });
    const jobId = await submitTo(pool, 0, trialsJob(TASKS));
    await vi.waitFor(() => expect(fleet.answers.filter((a) => a.ok)).toHaveLength(TASKS), { timeout: 10_000 });
    const forwards = await fleet.forwards();
    const sum = forwards.reduce((a, b) => a + b, 0);
    // Each home's share is ceil(12 × 12/36) + 1 = 5 per version of shard 0; one per held claim would be 36.
    expect(sum).toBeGreaterThanOrEqual(TASKS);
    expect(sum).toBeLessThanOrEqual(TASKS + 3 * 4);
    for (const f of forwards) expect(f).toBeGreaterThan(0);
    const leases = await fleet.end();
    expect(leases.every((l) => l.job_id === jobId)).toBe(true);
    expect(new Set(leases.map((l) => l.task_id)).size).toBe(TASKS);
  });

  it("a class only one home's claims accept is leased in full there, though the pool holds many more claims", async () => {
    const pool = freshPool();
    const fleet = await heldFleet(pool, { 1: [4, 1], 2: [12, 0], 3: [12, 0] });
    // New to every home: until they count it, shard 1 takes the others' 24 held claims as competing.
    const jobId = await submitTo(pool, 0, trialsJob(4, {}, { resources: { gpuPerTask: 1 } }));
    await vi.waitFor(() => expect(fleet.answers.filter((a) => a.ok)).toHaveLength(4), { timeout: 10_000 });
    const leases = await fleet.end();
    expect(leases.map((l) => [l.job_id, l.node_id.startsWith("held-1-")])).toEqual(Array(4).fill([jobId, true]));
  });

  it("a home's digest counts its held claims for the 16 classes most pending elsewhere, zeros included", async () => {
    const pool = freshPool();
    const fleet = await heldFleet(pool, { 1: [1, 0], 2: [1, 0] });
    // 20 classes at shard 3 by the GPUs a task needs, 1 to 20, with as many tasks: the nodes have none.
    for (let gpus = 1; gpus <= 20; gpus++)
      await submitTo(pool, 3, trialsJob(gpus, {}, { resources: { gpuPerTask: gpus } }));
    await vi.waitFor(
      async () => {
        await shard(pool, 1).peer().summaryChanged();
        const counted = await inShard(pool, 1, (s) => s.link.built?.held.nodesByClass ?? {});
        const classes = await inShard(pool, 3, (s) => s.link.built?.classes ?? []);
        const most = classes
          .map((c) => ({ key: c.key, n: c.levels.reduce((sum, l) => sum + l.fresh, 0) }))
          .sort((a, b) => b.n - a.n)
          .slice(0, 16)
          .map((c) => c.key)
          .sort();
        // The 16 classes with the most tasks (5 to 20 GPUs), none of which the held claims accept.
        expect(classes).toHaveLength(20);
        expect(counted).toEqual(Object.fromEntries(most.map((key) => [key, 0])));
      },
      { timeout: 10_000, interval: 200 },
    );
    await fleet.end();
  });
});

async function jobsOf(pool: string): Promise<string[]> {
  const jobs = await json<Array<{ job_id: string }>>(await call(pool, "GET", "/jobs"));
  return jobs.map((j) => j.job_id);
}
