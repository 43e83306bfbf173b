// Spot checks stay invisible across shards (docs/protocol.md §14 "Against
// adversaries", docs/sharding.md §8.6), with tokens over 4 shards
// (worker-auth-shards): a trusted node takes the only task of a replicated
// job on another shard than its home, once drawn to run alone and once
// drawn to be checked. What it sees — the answers to its claims, whether its
// next claim costs a forward to that shard (an extra round trip: the latency
// class it can time), and every series GET /metrics shows its credential —
// is the same both times, as the one-shard test in
// test/worker-auth/adversaries.test.ts holds it for the pool's reads.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { TRUST_AFTER_VALID } from "../../../src/rules/verification";
import { delivered, freshPool, homeShardOf, homeStub, json, summarized, trialsJob } from "../../worker/helpers";
import { claimWithDraw } from "../../worker-auth/draws";
import { call, claim, register } from "../../worker-auth/nodes";
import { submitTo } from "../helpers";

/** A sample of the pool's metrics as the operator reads it: `name{pool,shard="k"}`, 0 when absent. */
async function operatorSample(pool: string, name: string, k: number): Promise<number> {
  const text = await (await call(pool, "GET", "/metrics")).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{pool="${pool}",shard="${k}"} `));
  return line === undefined ? 0 : Number(line.split(" ")[1]);
}

/** A pool with n1 trusted and the first task of a 2-replica job on a shard other than n1's home, claimed by n1 with `draw`. */
async function taken(draw: number, tasks = 1) {
  const pool = freshPool();
  for (const n of ["n1", "n2"]) await register(pool, n);
  await runInDurableObject(await homeStub(pool, "n1"), (_o, state) => {
    state.storage.sql.exec("UPDATE nodes SET consecutive_valid = ? WHERE node_id = ?", TRUST_AFTER_VALID, "n1");
  });
  const home = await homeShardOf(pool, "n1");
  const k = (home + 1) % 4;
  const job = await submitTo(pool, k, trialsJob(tasks), { replicas: 2 });
  await summarized(pool);
  const first = await claimWithDraw(pool, job, "n1", draw);
  if (!first.ok) throw new Error(`n1 got no lease: ${first.reason}`);
  // Every shard's copy of the summary shows the job's shard as it is after the lease.
  await summarized(pool);
  return { pool, job, home, lease: first.lease };
}

/**
 * n1's next claim: its answer, and whether its home sent it on to another
 * shard (the operator's flashedge_forwarded_claims_total at the home): a
 * forward is a round trip n1 can time, and a call the job's shard serves.
 */
async function nextClaim(pool: string, home: number) {
  const forwards = () => operatorSample(pool, "flashedge_forwarded_claims_total", home);
  const before = await forwards();
  const r = await claim(pool, "n1");
  const answer = { status: r.status, body: await r.text() };
  return { answer, forwarded: (await forwards()) - before };
}

/** Everything n1's credential reads of the pool's metrics, with ids and sizes made comparable. */
async function metricsN1Reads(pool: string, job: string): Promise<string> {
  const text = await (await call(pool, "GET", "/metrics", undefined, "n1")).text();
  return (
    text
      .replaceAll(job, "JOB")
      .replaceAll(pool, "POOL")
      // Storage is counted in pages at any shard count, as the one-shard test leaves it out.
      .replace(/^flashedge_storage_bytes\{.*$/gm, "")
      .replace(/^(flashedge_object_busy_seconds_total\{[^}]*\}) .*$/gm, "$1 N")
  );
}

describe("a spot check on another shard", () => {
  it("a trusted node sees the same answers, forwards and metrics whether its task there runs alone or is checked", async () => {
    const solo = await taken(0.99);
    const checked = await taken(0);
    // The operator sees the difference: one replica wanted, or two.
    const wanted = async (p: string, j: string) =>
      (await json<{ replicas: { wanted: number } }>(await call(p, "GET", `/jobs/${j}/tasks/trial-000/placement`)))
        .replicas.wanted;
    expect([await wanted(solo.pool, solo.job), await wanted(checked.pool, checked.job)]).toEqual([1, 2]);
    const lease = ({ lease: l, job }: { lease: object; job: string }) =>
      JSON.stringify({ ...l, lease_id: "", deadline: "" }).replaceAll(job, "JOB");
    expect(lease(checked)).toEqual(lease(solo));

    // n1 claims again: in neither pool may it take the task, and in neither does its home send the claim on.
    const alone = await nextClaim(solo.pool, solo.home);
    const spot = await nextClaim(checked.pool, checked.home);
    expect(spot).toEqual(alone);
    expect([alone.answer.status, alone.forwarded]).toEqual([204, 0]);
    expect(await metricsN1Reads(checked.pool, checked.job)).toEqual(await metricsN1Reads(solo.pool, solo.job));

    // n2, a node of another owner, is sent to the check, and n1 still reads what it reads beside a solo run.
    expect((await claim(checked.pool, "n2")).status).toBe(200);
    expect((await claim(solo.pool, "n2")).status).toBe(204);
    for (const p of [solo.pool, checked.pool]) await summarized(p);
    expect(await nextClaim(checked.pool, checked.home)).toEqual(await nextClaim(solo.pool, solo.home));
  });

  it("once the check's last replica is out, the node is sent to another replicating task there it may take", async () => {
    const { pool, job } = await taken(0, 2);
    // n2 takes the check's second replica (trial-000 stops wanting any); m1, a node of another owner, takes
    // the first replica of trial-001, which it may not run alone.
    const second = await claim(pool, "n2");
    expect((await json<{ task_id: string }>(second)).task_id).toBe("trial-000");
    await register(pool, "m1");
    const other = await claim(pool, "m1");
    expect((await json<{ task_id: string }>(other)).task_id).toBe("trial-001");
    // The job's shard tells n1's home that trial-000 left its replicating tasks, and the summary says so.
    await delivered(pool);
    await summarized(pool);
    const r = await claim(pool, "n1");
    expect(r.status).toBe(200);
    expect(await json<{ job_id: string; task_id: string }>(r)).toMatchObject({ job_id: job, task_id: "trial-001" });
  });
});
