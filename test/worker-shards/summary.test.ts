// The pool summary and the shards' exchange with it (docs/sharding.md §2.2,
// §6, §13.3), at 4 shards: work submitted to one shard reaches another's
// copy by the time the submission answers, work that leaves leaves the
// copies, a restarted summary is rebuilt from whole digests, and its
// snapshot of the tenant passes survives the restart. Work is placed on a
// shard through the object's own calls, as the Worker will once it spreads.

import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { arm } from "../../src/pool/alarm/housekeeping";
import { heldByClass } from "../../src/pool/claims/held-gates";
import { PoolObject } from "../../src/pool/object";
import type { Pool } from "../../src/pool/pool";
import { contentsOf, TICK_BUSY_MS } from "../../src/pool/shards/exchange";
import { NodeRegistrationSchema } from "../../src/protocol/nodes";
import { summaryStub } from "../../src/summary/address";
import { freshPool, moveDeadlines, nodeIdAt, registration, trialsJob } from "../worker/helpers";
import { shard, submitTo } from "./helpers";

const summary = (pool: string) => summaryStub(env, [], pool);

/** Reads shard k's summary side in the object itself. */
function inShard<T>(pool: string, k: number, read: (shard: Pool) => T | Promise<T>): Promise<T> {
  return runInDurableObject(shard(pool, k), (object) => read(PoolObject.poolOf(object)));
}

/** The remote classes in shard k's copy, after an exchange made now (as Σ's poke makes one). */
async function copyAt(pool: string, k: number): Promise<Array<{ shard: number; fresh: number }>> {
  await shard(pool, k).peer().summaryChanged();
  return inShard(pool, k, (s) =>
    s.summary.classes(Date.now()).map((c) => ({ shard: c.shard, fresh: c.levels.reduce((n, l) => n + l.fresh, 0) })),
  );
}

/** Aborts the pool's summary object: its next call starts a new instance with nothing in memory. */
async function restartSummary(pool: string): Promise<void> {
  await runInDurableObject(summary(pool), (_o, state) => {
    try {
      state.abort("summary restart (test)");
    } catch {
      // abort() throws in the aborted object's own turn.
    }
  }).catch(() => {});
}

describe("the pool summary at 4 shards", () => {
  it("a job submitted to shard 2 is in shard 0's copy when the submission answers", async () => {
    const pool = freshPool();
    expect(await copyAt(pool, 0)).toEqual([]);
    await submitTo(pool, 2, trialsJob(3));
    const answered = Date.now();
    // The submission itself told Σ before it answered: Σ acknowledged a digest of shard 2's holding the class.
    const told = await inShard(pool, 2, (s) => ({ at: s.link.answeredMs, classes: s.link.acked?.classes.length }));
    expect(told.at).toBeGreaterThan(0);
    expect(told.at).toBeLessThanOrEqual(answered);
    expect(told.classes).toBe(1);
    expect(await copyAt(pool, 0)).toEqual([{ shard: 2, fresh: 3 }]);
    // A shard's copy never holds its own work: it counts that exactly.
    expect(await copyAt(pool, 2)).toEqual([]);
  });

  it("a cancelled job's class leaves the other shards' copies", async () => {
    const pool = freshPool();
    const jobId = await submitTo(pool, 1, trialsJob(2));
    expect(await copyAt(pool, 3)).toEqual([{ shard: 1, fresh: 2 }]);
    expect(await shard(pool, 1).cancelJob(jobId, pool)).toBeTruthy();
    await shard(pool, 1).peer().summaryChanged();
    expect(await copyAt(pool, 3)).toEqual([]);
  });

  it("a class whose last pending task is leased leaves the copies, and the grant reaches Σ's passes", async () => {
    const pool = freshPool();
    const n1 = nodeIdAt(pool, "n1", 2); // homed at shard 2
    await submitTo(pool, 2, trialsJob(1));
    await shard(pool, 2).register(NodeRegistrationSchema.parse({ ...registration(n1), pool }));
    expect(await copyAt(pool, 0)).toEqual([{ shard: 2, fresh: 1 }]);
    const claimed = await shard(pool, 2).claim(n1, null, 0);
    expect(claimed.ok).toBe(true);
    const granted = await inShard(pool, 2, (s) => [...s.grants.values()]);
    expect(granted).toEqual([{ priority: 0, tenant: "default", granted: 1 }]);
    await shard(pool, 2).peer().summaryChanged();
    expect(await copyAt(pool, 0)).toEqual([]);
  });

  it("a task an expiry requeues between ticks is in the other shards' copies when the alarm ends", async () => {
    const pool = freshPool();
    const n1 = nodeIdAt(pool, "n1", 2);
    await submitTo(pool, 2, trialsJob(1));
    await shard(pool, 2).register(NodeRegistrationSchema.parse({ ...registration(n1), pool }));
    expect((await shard(pool, 2).claim(n1, null, 0)).ok).toBe(true);
    await shard(pool, 2).peer().summaryChanged();
    expect(await copyAt(pool, 0)).toEqual([]);
    await moveDeadlines(pool);
    // No tick is due at this alarm: only the expiry itself may tell Σ of the task it put back.
    await inShard(pool, 2, (s) => {
      s.link.startedMs = Date.now();
    });
    await runDurableObjectAlarm(shard(pool, 2));
    expect(await copyAt(pool, 0)).toEqual([{ shard: 2, fresh: 1 }]);
  });

  it("a restarted summary gets a whole digest at a shard's next tick, and the copies recover", async () => {
    const pool = freshPool();
    await submitTo(pool, 2, trialsJob(2));
    expect(await copyAt(pool, 0)).toEqual([{ shard: 2, fresh: 2 }]);
    const wholeBefore = await inShard(pool, 2, (s) => s.link.wholeSent);

    await restartSummary(pool);
    // Shard 2's tick (its alarm, the tick due): the new Σ cannot place its delta, so it sends the whole digest
    // at once. Until a shard's first exchange with the new Σ, the summary shows less work than exists (§13.3).
    await inShard(pool, 2, (s) => {
      s.link.startedMs = 0;
    });
    expect(await runDurableObjectAlarm(shard(pool, 2))).toBe(true);
    expect(await inShard(pool, 2, (s) => s.link.wholeSent)).toBe(wholeBefore + 1);
    expect(await copyAt(pool, 0)).toEqual([{ shard: 2, fresh: 2 }]);
  });

  it("the summary's snapshot of the tenant passes survives its restart", async () => {
    const pool = freshPool();
    const n1 = nodeIdAt(pool, "n1", 2); // homed at shard 2
    const n2 = nodeIdAt(pool, "n2", 2); // homed at shard 2
    await submitTo(pool, 2, trialsJob(3));
    await shard(pool, 2).register(NodeRegistrationSchema.parse({ ...registration(n1), pool }));
    await shard(pool, 2).register(NodeRegistrationSchema.parse({ ...registration(n2), pool }));
    expect((await shard(pool, 2).claim(n1, null, 0)).ok).toBe(true);
    expect((await shard(pool, 2).claim(n2, null, 0)).ok).toBe(true);
    await shard(pool, 2).peer().summaryChanged();
    await shard(pool, 0).peer().summaryChanged();
    expect(await inShard(pool, 0, (s) => s.summary.pass(0, "default"))).toBe(2);

    // The snapshot's alarm (at most every 5 s), run now.
    await runDurableObjectAlarm(summary(pool));
    const stored = await runInDurableObject(summary(pool), (_o, state) =>
      state.storage.sql.exec("SELECT priority, tenant, pass FROM tenant_passes").toArray(),
    );
    expect(stored).toEqual([{ priority: 0, tenant: "default", pass: 2 }]);

    await restartSummary(pool);
    await shard(pool, 0).peer().summaryChanged();
    // The new instance's full copy names the passes it read back (shard 2's grants since add to them).
    expect(await inShard(pool, 0, (s) => s.summary.pass(0, "default"))).toBe(2);
  });

  it("a quiet shard that starts holding a claim brings its alarm forward to a busy tick", async () => {
    const pool = freshPool();
    const n1 = nodeIdAt(pool, "n1", 1); // homed at shard 1
    await shard(pool, 1).register(NodeRegistrationSchema.parse({ ...registration(n1), pool }));
    // Its copy fresh, so the claim below needs no refresh (whose exchange would re-arm the alarm itself).
    await shard(pool, 1).peer().summaryChanged();
    // Quiet: nothing changed for a while, nothing pending, nothing held; the alarm at the quiet tick.
    await inShard(pool, 1, async (s) => {
      s.link.changedMs = 0;
      s.link.startedMs = Date.now();
      await arm(s);
    });
    const alarmAt = () => runInDurableObject(shard(pool, 1), (_o, state) => state.storage.getAlarm());
    expect(await alarmAt()).toBeGreaterThan(Date.now() + TICK_BUSY_MS);
    const held = shard(pool, 1).claim(n1, null, 2_000);
    await vi.waitFor(async () => expect(await inShard(pool, 1, (s) => s.held.size)).toBe(1));
    // Within one busy tick the summary hears that it holds a claim, and so pokes it when work appears elsewhere.
    expect(await alarmAt()).toBeLessThanOrEqual(Date.now() + TICK_BUSY_MS);
    expect((await held).ok).toBe(false);
  });

  it("a class newly pending at one shard pokes a shard holding a claim, which then sees it", async () => {
    const pool = freshPool();
    const n1 = nodeIdAt(pool, "n1", 1); // homed at shard 1
    await shard(pool, 1).register(NodeRegistrationSchema.parse({ ...registration(n1), pool }));
    const held = shard(pool, 1).claim(n1, null, 3_000);
    await vi.waitFor(async () => expect(await inShard(pool, 1, (s) => s.held.size)).toBe(1));
    await shard(pool, 1).peer().summaryChanged(); // Σ learns that shard 1 holds a claim
    const pokes = () => runInDurableObject(summary(pool), (instance) => instance.pokes);
    const before = await pokes();
    await submitTo(pool, 2, trialsJob(1));
    expect(await pokes()).toBe(before + 1);
    await vi.waitFor(async () =>
      expect(await inShard(pool, 1, (s) => s.summary.classes(Date.now()).map((c) => c.shard))).toEqual([2]),
    );
    await held; // answered, with whatever the claim path makes of it, before the test ends
  });

  it("a shard's digest reads its SQL again only once a row is written there, and then counts what changed", async () => {
    const pool = freshPool();
    // The digest as an exchange builds it, and the rows building it read (in one turn: no other call between).
    const digest = () =>
      inShard(pool, 1, (s) => {
        const before = s.sql.totals().rowsRead;
        const contents = contentsOf(s, Date.now());
        return { load: contents.load, held: contents.held, rowsRead: s.sql.totals().rowsRead - before };
      });
    const n1 = nodeIdAt(pool, "n1", 1); // homed at shard 1
    await shard(pool, 1).register(NodeRegistrationSchema.parse({ ...registration(n1), pool }));
    // Two digests in one turn, nothing written between (no alarm can run there): the second reads no row
    // (the load's counts read every node homed here: an idle shard's busy ticks would, twice a second).
    const twice = await inShard(pool, 1, (s) => {
      const first = contentsOf(s, Date.now()).load;
      const before = s.sql.totals().rowsRead;
      const second = contentsOf(s, Date.now()).load;
      return { first, second, rowsRead: s.sql.totals().rowsRead - before };
    });
    expect(twice).toMatchObject({
      first: { homeNodes: 1, online: 1 },
      second: { homeNodes: 1, online: 1 },
      rowsRead: 0,
    });
    // A registration writes: the next digest counts the new node at once.
    await shard(pool, 1).register(NodeRegistrationSchema.parse({ ...registration(nodeIdAt(pool, "n2", 1)), pool }));
    expect((await digest()).load).toMatchObject({ homeNodes: 2, online: 2 });
    // A claim held there, and no work anywhere else: counting the held claims by class reads no node's row.
    const held = shard(pool, 1).claim(n1, null, 2_000);
    await vi.waitFor(async () => expect(await inShard(pool, 1, (s) => s.held.size)).toBe(1));
    const counted = await inShard(pool, 1, (s) => {
      const before = s.sql.totals().rowsRead;
      return { byClass: heldByClass(s, Date.now()), rowsRead: s.sql.totals().rowsRead - before };
    });
    expect(counted).toEqual({ byClass: {}, rowsRead: 0 });
    expect((await held).ok).toBe(false);
  });

  it("an idle shard keeps its alarm for the next tick", async () => {
    const pool = freshPool();
    await submitTo(pool, 1, trialsJob(1));
    // Read between two runs of the alarm: while one runs, none is set.
    await vi.waitFor(async () => {
      const alarm = await runInDurableObject(shard(pool, 1), (_o, state) => state.storage.getAlarm());
      expect(alarm).not.toBeNull();
    });
  });
});
