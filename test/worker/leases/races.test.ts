// Races as races: many concurrent agents against one pool object, then the
// invariant checker over the whole state — and, so that a race nobody won
// cannot pass for a race handled well, what each client was told checked
// against what storage holds.

import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Lease } from "../../../src/protocol/tasks";
import { Rng } from "../../fixtures/rng";
import {
  ARGV_NODE,
  call,
  claim,
  commandJob,
  freshPool,
  jobStub,
  json,
  moveDeadlines,
  register,
  sha256,
  shardStubs,
  shardsOf,
  submitJob,
  trialsJob,
  upload,
} from "../helpers";
import { violations } from "../invariants";

/** Uploads an output for the lease's task and commits it; answers what the client was told. */
async function commit(pool: string, lease: Lease): Promise<{ accepted: boolean }> {
  const bytes = JSON.stringify({ by: lease.node_id, attempt: lease.attempt_number });
  await upload(pool, `jobs/${lease.job_id}/${lease.task_id}/metrics.json`, bytes);
  const r = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, { output_sha256: await sha256(bytes) });
  expect(r.status).toBe(200);
  return json<{ accepted: boolean }>(r);
}

type LeaseState = { lease_id: string; status: string; task_state: string; accepted_object: string | null };

/** Every lease ever issued in the pool, with its task's state. */
async function leaseStates(pool: string): Promise<Map<string, LeaseState>> {
  const rows: LeaseState[] = [];
  for (const shard of shardStubs(pool)) {
    rows.push(
      ...(await runInDurableObject(shard, (_o, s) =>
        s.storage.sql
          .exec<LeaseState>(
            `SELECT l.lease_id, l.status, t.state AS task_state, t.accepted_object
               FROM leases l JOIN tasks t ON t.seq = l.task_seq`,
          )
          .toArray(),
      )),
    );
  }
  return new Map(rows.map((r) => [r.lease_id, r]));
}

describe("races", () => {
  it("a fleet of agents claiming, heartbeating, failing and committing concurrently keeps every invariant", async () => {
    const pool = freshPool();
    const rng = new Rng(7);
    const nodes = Array.from({ length: 12 }, (_, i) => `n${i}`);
    await Promise.all(
      nodes.map((n, i) =>
        register(pool, n, { local_datasets: i % 3 === 0 ? ["ds-a"] : [], ...(i % 2 === 0 ? ARGV_NODE : {}) }, i % 4),
      ),
    );
    // 40 tasks across the gates: module tasks with no requirement, 1 and 2
    // GPUs, and sandboxed argv tasks that need a local dataset.
    const retry = { retryPolicy: { maxTaskAttempts: 3 } };
    await submitJob(pool, trialsJob(16, {}, retry));
    await submitJob(pool, trialsJob(8, {}, { ...retry, resources: { gpuPerTask: 1 } }));
    await submitJob(pool, trialsJob(8, {}, { ...retry, resources: { gpuPerTask: 2 } }));
    const eightTasks = Array.from({ length: 8 }, (_, i) => ({ i }));
    await submitJob(pool, commandJob({ local_inputs: ["ds-a"], task_params: eightTasks }, retry));

    const told = { claims: 0, accepted: [] as string[], bothAccepted: [] as string[] };
    const agent = async (node: string) => {
      for (let step = 0; step < 12; step++) {
        const r = await claim(pool, node);
        if (r.status !== 200) continue;
        told.claims++;
        const lease = await json<Lease>(r);
        if (rng.chance(0.3)) {
          expect((await call(pool, "POST", `/attempts/${lease.lease_id}/fail`, { reason: "chaos" })).status).toBe(200);
        } else {
          expect((await call(pool, "POST", `/attempts/${lease.lease_id}/heartbeat`)).status).toBe(200);
          // Duplicate completes, racing each other.
          const answers = await Promise.all([commit(pool, lease), commit(pool, lease)]);
          const won = answers.filter((a) => a.accepted).length;
          if (won > 0) told.accepted.push(lease.lease_id);
          if (won > 1) told.bothAccepted.push(lease.lease_id);
        }
      }
    };
    await Promise.all(nodes.map(agent));

    expect(await violations(pool)).toEqual([]);
    // The fleet did work, and every "accepted" a client saw is one completed task in storage.
    expect(told.claims).toBeGreaterThan(20);
    expect(told.accepted.length).toBeGreaterThan(5);
    expect(told.bothAccepted).toEqual([]);
    const states = await leaseStates(pool);
    const completed = [...states.values()].filter((l) => l.status === "completed").map((l) => l.lease_id);
    expect(completed.sort()).toEqual([...told.accepted].sort());
    for (const id of told.accepted) expect(states.get(id)).toMatchObject({ task_state: "COMPLETED" });
  }, 30_000);

  it("commits racing the alarm's expiry: each is accepted exactly when its lease did not expire", async () => {
    const pool = freshPool();
    await Promise.all(["a", "b"].map((n) => register(pool, n)));
    // Leases that expire while their commits are in flight, and leases that cannot.
    const short = await submitJob(pool, trialsJob(10, { lease_seconds: 5 }));
    const long = await submitJob(pool, trialsJob(5, { lease_seconds: 60 }));
    const leases = await Promise.all(
      Array.from({ length: 15 }, async () => {
        const r = await claim(pool, "a");
        expect(r.status).toBe(200);
        return json<Lease>(r);
      }),
    );
    const shortLeases = leases.filter((l) => l.job_id === short.job_id);
    expect(shortLeases).toHaveLength(10);
    // The short leases run out 10 ms from now, while their commits are in flight.
    await moveDeadlines(pool, { leaseIds: shortLeases.map((l) => l.lease_id), deadlineMs: Date.now() + 10 });
    const [answers, , retakes] = await Promise.all([
      Promise.all(leases.map((l) => commit(pool, l))),
      Promise.all(shardStubs(pool).map((shard) => runDurableObjectAlarm(shard))),
      Promise.all(Array.from({ length: 10 }, () => claim(pool, "b"))),
    ]);

    const states = await leaseStates(pool);
    leases.forEach((lease, i) => {
      const answer = answers[i]!;
      const stored = states.get(lease.lease_id)!;
      // What the client was told is what storage holds: accepted and completed, or refused and expired.
      if (answer.accepted) expect(stored).toMatchObject({ status: "completed", task_state: "COMPLETED" });
      else expect(stored.status).toBe("expired");
      expect(stored.accepted_object !== null, lease.task_id).toBe(stored.task_state === "COMPLETED");
    });
    // A lease that cannot expire is always accepted: a commit did win the race.
    const longAnswers = answers.filter((_, i) => leases[i]!.job_id === long.job_id);
    expect(longAnswers).toEqual(Array.from({ length: 5 }, () => ({ accepted: true })));
    // The second node only ever took a task whose first lease had expired.
    for (const r of retakes.filter((r) => r.status === 200)) {
      const retake = await json<Lease>(r);
      expect(retake).toMatchObject({ job_id: short.job_id, attempt_number: 2 });
      const first = leases.find((l) => l.task_id === retake.task_id && l.job_id === retake.job_id)!;
      expect(states.get(first.lease_id)!.status).toBe("expired");
    }
    expect(await violations(pool)).toEqual([]);
  });

  it("cancel racing claims leaves no task leased in a cancelled job", async () => {
    const pool = freshPool();
    const nodes = Array.from({ length: 10 }, (_, i) => `n${i}`);
    await Promise.all(nodes.map((n) => register(pool, n)));
    const job = await submitJob(pool, trialsJob(30));
    const [before, [cancelled], after] = await Promise.all([
      Promise.all(nodes.map((n) => claim(pool, n))),
      Promise.all([call(pool, "POST", `/jobs/${job.job_id}/cancel`)]),
      Promise.all(nodes.map((n) => claim(pool, n))),
    ]);
    expect(cancelled!.status).toBe(200);
    expect(await violations(pool)).toEqual([]);
    const tasks = await json<Array<{ state: string }>>(await call(pool, "GET", `/jobs/${job.job_id}/tasks`));
    expect(tasks).toHaveLength(30);
    expect(tasks.every((t) => t.state === "CANCELLED")).toBe(true);
    expect((await json<{ state: string }>(await call(pool, "GET", `/jobs/${job.job_id}`))).state).toBe("CANCELLED");
    // Every lease a node was given, before or after the cancel, is dead now.
    for (const r of [...before, ...after].filter((r) => r.status === 200)) {
      const lease = await json<Lease>(r);
      expect((await call(pool, "POST", `/attempts/${lease.lease_id}/heartbeat`)).status).toBe(410);
    }
  });

  it("re-registration racing claims never places work the registration refuses", async () => {
    const pool = freshPool();
    await register(pool, "cpu");
    // GPU tasks queued ahead of the CPU tasks: every claim must skip them.
    await submitJob(pool, trialsJob(10, {}, { resources: { gpuPerTask: 1 } }));
    const job = await submitJob(pool, trialsJob(10));
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        i % 3 ? claim(pool, "cpu") : register(pool, "cpu", { hostname: `h${i}`, labels: { round: String(i) } }),
      ),
    );
    const leased = await runInDurableObject(jobStub(pool, job.job_id), (_o, s) =>
      s.storage.sql.exec<{ payload: string }>("SELECT payload FROM tasks WHERE state = 'LEASED'").toArray(),
    );
    expect(leased.length).toBe(10);
    expect(leased.every((t) => !("gpus" in JSON.parse(t.payload)))).toBe(true);
    expect(await violations(pool)).toEqual([]);
  });
});

describe("the invariant checker", () => {
  const corruptions: Array<[string, string, RegExp]> = [
    [
      "a second live lease",
      "INSERT INTO leases (lease_id, task_seq, node_id, attempt_number, issued_ms, deadline_ms, status) SELECT 'ls-ffffffffffff', task_seq, node_id, attempt_number, issued_ms, deadline_ms, 'live' FROM leases LIMIT 1",
      /2 live leases/,
    ],
    ["a completion without a commit", "UPDATE tasks SET state = 'COMPLETED'", /accepted commits|replay/],
    ["attempts beyond the limit", "UPDATE tasks SET attempts_used = 9", /attempts/],
    ["a lease to a node the gate refuses", "UPDATE tasks SET payload = '{\"gpus\": 4}'", /gate refuses/],
    ["an unarmed alarm", "UPDATE leases SET deadline_ms = 1", /alarm/],
    ["a task counter that drifted", "UPDATE pool_task_counts SET leased = leased + 1", /tasks in state LEASED/],
    ["a job's task counter that drifted", "UPDATE job_queues SET completed = 7", /tasks of job and state/],
    ["a job counter that drifted", "UPDATE job_counts SET n = 7", /jobs in state RUNNING/],
    ["a class's count of queued jobs that drifted", "UPDATE classes SET queued_jobs = 3", /queued jobs of class/],
  ];
  // Over several shards the summary's tick runs the alarm every 500 ms, and its sweep ends the lease whose
  // deadline the corruption moved before the checker reads it: the tick mends an unarmed alarm there.
  const SHARDED = (env.FLASHML_POOL_SHARDS ?? "") !== "";
  const seen = SHARDED ? corruptions.filter(([name]) => name !== "an unarmed alarm") : corruptions;
  it.each(seen)("notices %s", async (_name, corrupt, expected) => {
    const pool = freshPool();
    await register(pool, "n");
    const job = await submitJob(pool, trialsJob(1));
    expect((await claim(pool, "n")).status).toBe(200);
    expect(await violations(pool)).toEqual([]);
    await runInDurableObject(jobStub(pool, job.job_id), (_o, s) => void s.storage.sql.exec(corrupt));
    expect((await violations(pool)).join("\n")).toMatch(expected);
  });
});

/**
 * What a claim that must sweep a job's expired leases names: nothing at one shard; over several, the job,
 * so the claim reaches the shard that holds its leases (a node's home sweeps only its own).
 */
const sweeper = (pool: string, jobId: string) => (shardsOf(pool) > 1 ? jobId : undefined);

describe("alarm faults", () => {
  it("a late alarm, after a claim already swept, changes nothing", async () => {
    const pool = freshPool();
    await Promise.all(["a", "b"].map((n) => register(pool, n)));
    const job = await submitJob(pool, trialsJob(1, { lease_seconds: 5 }));
    const shard = jobStub(pool, job.job_id);
    expect((await claim(pool, "a")).status).toBe(200);
    await moveDeadlines(pool);
    expect((await json<Lease>(await claim(pool, "b", sweeper(pool, job.job_id)))).attempt_number).toBe(2);
    const before = await runInDurableObject(shard, (_o, s) => s.storage.sql.exec("SELECT * FROM events").toArray());
    expect(before.map((e) => e.type)).toContain("LEASE_EXPIRED");
    await runInDurableObject(shard, (o) => o.alarm());
    const after = await runInDurableObject(shard, (_o, s) => s.storage.sql.exec("SELECT * FROM events").toArray());
    expect(after).toEqual(before);
    expect(await violations(pool)).toEqual([]);
  });

  it("an alarm lost entirely is recovered by the next claim's sweep", async () => {
    const pool = freshPool();
    await Promise.all(["a", "b"].map((n) => register(pool, n)));
    const job = await submitJob(pool, trialsJob(1, { lease_seconds: 5 }));
    const shard = jobStub(pool, job.job_id);
    expect((await claim(pool, "a")).status).toBe(200);
    await runInDurableObject(shard, (_o, s) => s.storage.deleteAlarm());
    await moveDeadlines(pool);
    const state = await runInDurableObject(
      shard,
      (_o, s) => s.storage.sql.exec<{ state: string }>("SELECT state FROM tasks").one().state,
    );
    expect(state).toBe("LEASED"); // nobody swept: the alarm is gone
    expect(await json<Lease>(await claim(pool, "b", sweeper(pool, job.job_id)))).toMatchObject({
      node_id: "b",
      attempt_number: 2,
    });
    expect(await violations(pool)).toEqual([]);
  });

  it("an alarm that runs twice concurrently expires each lease once", async () => {
    const pool = freshPool();
    await register(pool, "a");
    const job = await submitJob(pool, trialsJob(5, { lease_seconds: 5 }, { retryPolicy: { maxTaskAttempts: 5 } }));
    const shard = jobStub(pool, job.job_id);
    const claims = await Promise.all(Array.from({ length: 5 }, () => claim(pool, "a")));
    expect(claims.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    await runInDurableObject(shard, (_o, s) => s.storage.deleteAlarm());
    await moveDeadlines(pool);
    await runInDurableObject(shard, (o) => Promise.all([o.alarm(), o.alarm()]));
    const expired = await runInDurableObject(
      shard,
      (_o, s) =>
        s.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM events WHERE type = 'LEASE_EXPIRED'").one().n,
    );
    expect(expired).toBe(5);
    expect(await violations(pool)).toEqual([]);
  });
});
