// Where POST /jobs puts a job in a pool of 4 shards (docs/sharding.md §7.4):
// the lighter of two shards drawn at random, each asked for a slot, and the
// slot at the shard not chosen released rather than left to lapse.

import { describe, expect, it } from "vitest";
import { RESERVATION_MS } from "../../src/pool/jobs/reservations";
import { shardOfHex } from "../../src/rules/shard-ids";
import { freshPool, submitJob, trialsJob } from "../worker/helpers";
import { shard } from "./helpers";

const SHARDS = 4;

/** Each shard's load as its next reservation would see it: pending tasks plus slots still reserved. */
async function loads(pool: string): Promise<number[]> {
  return Promise.all(Array.from({ length: SHARDS }, async (_, k) => (await shard(pool, k).reserveSlot(0)).load));
}

describe("placing submissions over 4 shards", () => {
  it("a burst of 64 one-task jobs from 8 submitters puts no shard above 1.25 × N/S + 2", async () => {
    const pool = freshPool();
    const perShard = Array.from({ length: SHARDS }, () => 0);
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < 64) {
          next++;
          const { job_id } = await submitJob(pool, trialsJob(1));
          const k = shardOfHex(pool, job_id);
          if (k === null) throw new Error(`job id ${job_id} names no shard`);
          perShard[k]! += 1;
        }
      }),
    );
    expect(perShard.reduce((a, b) => a + b, 0)).toBe(64);
    expect(Math.max(...perShard)).toBeLessThanOrEqual(1.25 * (64 / SHARDS) + 2);
    // Each shard's load is what it holds: no slot of the burst still counts.
    await expect.poll(() => loads(pool), { timeout: 10_000 }).toEqual(perShard);
  });

  it("the shard not chosen stops counting its slot before the slot would lapse", async (ctx) => {
    const pool = freshPool();
    const t0 = Date.now();
    const { job_id } = await submitJob(pool, trialsJob(3));
    // A released slot and a lapsed one look alike past the lapse: a machine this slow shows nothing.
    if (Date.now() - t0 > RESERVATION_MS / 2) ctx.skip();
    const expected = Array.from({ length: SHARDS }, (_, k) => (k === shardOfHex(pool, job_id) ? 3 : 0));
    let released = false;
    while (!released && Date.now() - t0 < RESERVATION_MS) {
      const seen = await loads(pool);
      // Read before the slot could lapse (it was reserved after t0), so only a release explains it.
      released = Date.now() - t0 < RESERVATION_MS && seen.every((n, k) => n === expected[k]);
    }
    expect(released).toBe(true);
  });
});
