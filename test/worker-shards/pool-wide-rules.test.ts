// §13's rules over shards (docs/protocol.md §13, §15): what one node claiming
// over HTTP gets at 4 shards (worker-shards), once a summary's age has passed
// since the submissions, wherever the jobs live relative to the node's home.
// Home-first serving never beats them.

import { describe, expect, it } from "vitest";
import type { Lease } from "../../src/protocol/tasks";
import { registryShard } from "../../src/rules/shard-ids";
import {
  call,
  claim,
  freshPool,
  json,
  nodeIdAt,
  register,
  sha256,
  sleep,
  summarized,
  trialsJob,
  upload,
} from "../worker/helpers";
import { submitTo } from "./helpers";

/** The node commits what it was leased, as an agent would, so each claim is its only work. */
async function commitLease(pool: string, l: Lease): Promise<void> {
  await upload(pool, `jobs/${l.job_id}/${l.task_id}/metrics.json`, "{}");
  const r = await call(pool, "POST", `/attempts/${l.lease_id}/complete`, { output_sha256: await sha256("{}") });
  expect(await json(r)).toEqual({ accepted: true });
}

/** `n` claims by n1, one after another, each committed: the jobs they leased. */
async function claims(pool: string, n: number): Promise<string[]> {
  const jobs: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await claim(pool, "n1");
    expect(r.status, `claim ${i}`).toBe(200);
    const lease = await json<Lease>(r);
    jobs.push(lease.job_id);
    await commitLease(pool, lease);
  }
  return jobs;
}

/** A summary's age (§15: ≤ 1 s) after the submissions, in real time: no test hook brings the copies up to date. */
const SUMMARY_AGE_MS = 1_100;

describe("strict priority across shards", () => {
  // Where the low, normal and urgent jobs live, relative to n1's home (0): the home holding the lowest, the
  // middle, the highest, or none of them.
  it.each([
    [0, 1, 2],
    [1, 0, 2],
    [1, 2, 0],
    [1, 2, 3],
  ])("low at home+%i, normal at home+%i, urgent at home+%i: urgent, then normal, never low", async (l, m, u) => {
    const pool = freshPool();
    await register(pool, "n1");
    const home = registryShard("n1", 4);
    const at = (i: number) => (home + i) % 4;
    const low = await submitTo(pool, at(l), trialsJob(20), { priority: -10 });
    const normal = await submitTo(pool, at(m), trialsJob(20));
    const urgent = await submitTo(pool, at(u), trialsJob(3), { priority: 100 });
    await sleep(SUMMARY_AGE_MS);
    const order = await claims(pool, 9);
    const name = (job: string) => (job === low ? "low" : job === normal ? "normal" : job === urgent ? "urgent" : job);
    expect(order.map(name)).toEqual([...Array(3).fill("urgent"), ...Array(6).fill("normal")]);
  });

  it("a higher priority that ran out on two shards, their offers still in the home's copy, does not hand the claim to the home's lower-priority work", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const home = registryShard("n1", 4);
    const at = (i: number) => (home + i) % 4;
    const low = await submitTo(pool, home, trialsJob(20), { priority: -10 });
    const mid = await submitTo(pool, at(1), trialsJob(20));
    const urgent = [
      await submitTo(pool, at(2), trialsJob(5), { priority: 100 }),
      await submitTo(pool, at(3), trialsJob(5), { priority: 100 }),
    ];
    await summarized(pool);
    // The urgent work ends at its shards; the home's copy still shows it until they next tell Σ (≤ 1 s).
    for (const job of urgent) expect((await call(pool, "POST", `/jobs/${job}/cancel`)).status).toBe(200);
    const r = await claim(pool, "n1");
    expect(r.status).toBe(200);
    const lease = await json<Lease>(r);
    expect(lease.job_id, `not the home's priority -10 job ${low}`).toBe(mid);
  });
});

describe("fair share between tenants across shards", () => {
  it.each([0, 1])(
    "one job of tenant a (at home+%i) against five of tenant b around it: about half the claims each",
    async (a) => {
      const pool = freshPool();
      await register(pool, "n1");
      const home = registryShard("n1", 4);
      const tenantOf = new Map<string, string>();
      tenantOf.set(await submitTo(pool, (home + a) % 4, trialsJob(40), { tenant: "a" }), "a");
      for (let j = 0; j < 5; j++)
        tenantOf.set(await submitTo(pool, (home + j) % 4, trialsJob(40), { tenant: "b" }), "b");
      await sleep(SUMMARY_AGE_MS);
      const share = (await claims(pool, 20)).filter((job) => tenantOf.get(job) === "a").length;
      // At one shard exactly 10; over shards within a turn or two (docs/sharding.md §7.2).
      expect(share).toBeGreaterThanOrEqual(8);
      expect(share).toBeLessThanOrEqual(12);
    },
  );
});

describe("retry elsewhere across shards", () => {
  // Where the broken node, the healthy node and the job live, relative to one another.
  it.each([
    [0, 1, 2],
    [0, 0, 1],
    [1, 0, 0],
    [0, 1, 1],
  ])(
    "broken at %i, healthy at %i, job at %i: the broken node's next claim passes over the task it failed while the healthy node is idle",
    async (b, h, j) => {
      const pool = freshPool();
      const broken = nodeIdAt(pool, "broken", b);
      const healthy = nodeIdAt(pool, "healthy", h);
      await register(pool, broken);
      await register(pool, healthy);
      const job = await submitTo(pool, j, trialsJob(2, {}, { retryPolicy: { maxTaskAttempts: 2 } }));
      await sleep(SUMMARY_AGE_MS);
      const first = await json<Lease>(await claim(pool, broken));
      expect((await call(pool, "POST", `/attempts/${first.lease_id}/fail`, { reason: "x" })).status).toBe(200);
      const again = await json<Lease>(await claim(pool, broken));
      expect(again.task_id).not.toBe(first.task_id);
      // The healthy node takes the failed task; the job does not fail.
      const retry = await json<Lease>(await claim(pool, healthy));
      expect(retry).toMatchObject({ task_id: first.task_id, attempt_number: 2 });
      await commitLease(pool, retry);
      expect((await call(pool, "POST", `/attempts/${again.lease_id}/fail`, { reason: "x" })).status).toBe(200);
      await commitLease(pool, await json<Lease>(await claim(pool, healthy)));
      expect((await json<{ state: string }>(await call(pool, "GET", `/jobs/${job}`))).state).toBe("SUCCEEDED");
    },
  );
});
