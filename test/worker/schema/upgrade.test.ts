// A large object upgrades its schema a step per event (src/pool/object.ts,
// src/pool/schema/schema.ts): no event runs more than one heavy step, so a
// full 10 GB pool many steps behind still starts within the object's 30 s
// (BENCHMARKS.md §10). Until the last step every call is refused with a 503
// that says so, and nothing a refused call asked for happens. Here a small
// pool is made to upgrade as a large one does (`UPGRADE.wholeBelowBytes` 0).

import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, expect, it } from "vitest";
import { MIGRATIONS, UPGRADE } from "../../../src/pool/schema/schema";
import type { Lease } from "../../../src/protocol/tasks";
import { trialsJob } from "../../fixtures/jobspec";
import {
  call,
  claim,
  freshPool,
  json,
  register,
  sha256,
  shardStubs,
  shardsOf,
  submitJob,
  summarized,
  upload,
} from "../helpers";
import { violations } from "../invariants";
import { rewindSchema } from "./schema-history";

/** The step a pool is taken back to: every later step is one event's. Shards came with step 18. */
const fromStep = (pool: string) => (shardsOf(pool) > 1 ? 18 : 2);

/** Takes every shard of `pool` back to step `from`, shard 0 last: the others' starts ask it for the layout. */
async function rewind(pool: string, from: number): Promise<void> {
  for (const shard of shardStubs(pool).reverse())
    await runInDurableObject(shard, (_o, state) =>
      state.storage.transactionSync(() => rewindSchema(state.storage.sql, from)),
    );
}

const WHOLE_BELOW_BYTES = UPGRADE.wholeBelowBytes;

afterEach(() => {
  UPGRADE.wholeBelowBytes = WHOLE_BELOW_BYTES;
});

const UPGRADING =
  /^coordinator refuses to serve pool '[^']+': its schema is being upgraded \(step (\d+) of (\d+)\); retry in a few seconds$/;

it("a large pool behind its schema upgrades a step per event, refusing every call with a 503 until the last, and loses nothing", async () => {
  const pool = freshPool();
  await register(pool, "n1");
  const job = await submitJob(pool, trialsJob(3));
  const first = await json<Lease>(await claim(pool, "n1"));
  const output = '{"loss": 0.5}';
  await upload(pool, `jobs/${job.job_id}/${first.task_id}/metrics.json`, output);
  const done = await call(pool, "POST", `/attempts/${first.lease_id}/complete`, {
    output_sha256: await sha256(output),
  });
  expect(await json(done)).toEqual({ accepted: true });
  const running = await json<Lease>(await claim(pool, "n1"));
  const before = await json(await call(pool, "GET", `/jobs/${job.job_id}`));

  await rewind(pool, fromStep(pool));
  UPGRADE.wholeBelowBytes = 0;
  await abortAllDurableObjects();

  // The object's start applied one step: the first call is refused, and says how far the upgrade is.
  const refused = await call(pool, "GET", `/jobs/${job.job_id}`);
  expect(refused.status).toBe(503);
  expect(refused.headers.get("retry-after")).toBe("1");
  const detail = (await json<{ detail: string }>(refused)).detail;
  expect(detail).toMatch(UPGRADING);
  expect(detail.match(UPGRADING)?.slice(1)).toEqual([String(fromStep(pool) + 1), String(MIGRATIONS.length)]);
  // A refused write changes nothing: no job, and a node that claims now leases nothing (the task stays queued).
  expect((await call(pool, "POST", "/jobs", trialsJob(1))).status).toBe(503);
  expect((await claim(pool, "n1")).status).toBe(503);

  // Each alarm applies the next step (and the runtime's own alarms too), until the pool serves again:
  // the list of jobs asks every shard.
  const seen: number[] = [];
  for (let events = 0; ; events++) {
    expect(events).toBeLessThan(10 * MIGRATIONS.length);
    const answer = await call(pool, "GET", "/jobs");
    if (answer.status === 200) {
      // Nothing lost, nothing the refused calls asked for.
      expect((await json<unknown[]>(answer)).length).toBe(1);
      break;
    }
    expect(answer.status).toBe(503);
    const step = Number((await json<{ detail: string }>(answer)).detail.match(UPGRADING)?.[1]);
    expect(step).toBeGreaterThan(fromStep(pool));
    seen.push(step);
    // At several shards, one that finished refuses while shard 0 upgrades: its alarm fails, and the runtime retries it.
    for (const shard of shardStubs(pool))
      await runDurableObjectAlarm(shard).catch((err) => expect(String(err)).toMatch(/its schema is being upgraded/));
  }
  expect(seen.length).toBeGreaterThan(1);

  // The job as it was, its lease still live, its counts true.
  expect(await json(await call(pool, "GET", `/jobs/${job.job_id}`))).toEqual(before);
  expect((await call(pool, "POST", `/attempts/${running.lease_id}/heartbeat`)).status).toBe(200);
  expect(await violations(pool)).toEqual([]);
  for (const shard of shardStubs(pool))
    await runInDurableObject(shard, (_o, state) =>
      expect(state.storage.sql.exec<{ version: number }>("SELECT version FROM schema_version").one().version).toBe(
        MIGRATIONS.length,
      ),
    );
});

it("a pool below the size upgrades at its start, all its steps at once, and refuses nothing", async () => {
  const pool = freshPool();
  await register(pool, "n1");
  const job = await submitJob(pool, trialsJob(2));
  await rewind(pool, fromStep(pool));
  await abortAllDurableObjects();
  expect((await call(pool, "GET", `/jobs/${job.job_id}`)).status).toBe(200);
  // At several shards the summary restarted too: the claim waits until it has heard from the job's shard.
  await summarized(pool);
  expect((await claim(pool, "n1")).status).toBe(200);
});
