import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Lease } from "../../../src/protocol/tasks";
import {
  ARGV_NODE,
  call,
  claim,
  commandJob,
  ledger as events,
  expireLeases,
  freshPool,
  jobStub,
  json,
  moveDeadlines,
  register,
  sha256,
  shardsOf,
  submitJob,
  trialsJob,
  upload,
} from "../helpers";

async function taskState(pool: string, jobId: string, taskId: string) {
  return runInDurableObject(jobStub(pool, jobId), (_o, state) =>
    state.storage.sql
      .exec<{ state: string; attempts_used: number }>(
        "SELECT state, attempts_used FROM tasks WHERE job_id = ? AND task_id = ?",
        jobId,
        taskId,
      )
      .one(),
  );
}

async function commitOutput(pool: string, lease: Lease, bytes: string) {
  expect((await upload(pool, `jobs/${lease.job_id}/${lease.task_id}/metrics.json`, bytes)).status).toBe(200);
  return call(pool, "POST", `/attempts/${lease.lease_id}/complete`, { output_sha256: await sha256(bytes) });
}

describe("the agent loop", () => {
  it("register, claim, heartbeat, upload and complete is accepted exactly once", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const job = await submitJob(pool, trialsJob(1));

    const r = await claim(pool, "n1");
    expect(r.status).toBe(200);
    const lease = await json<Lease>(r);
    expect(lease).toMatchObject({
      schema_version: "v1alpha1",
      task_id: "trial-000",
      job_id: job.job_id,
      node_id: "n1",
      attempt_number: 1,
      payload: { module: "flashml_workloads.sklearn_trial", output_prefix: `jobs/${job.job_id}/trial-000/` },
    });
    expect(lease.lease_id).toMatch(/^ls-[0-9a-f]{12}$/);
    expect(Date.parse(lease.deadline) - Date.now()).toBeGreaterThan(55_000);

    const hb = await call(pool, "POST", `/attempts/${lease.lease_id}/heartbeat`);
    expect(hb.status).toBe(200);
    expect((await json<Lease>(hb)).lease_id).toBe(lease.lease_id);

    const done = await commitOutput(pool, lease, '{"accuracy": 0.9}');
    expect(await json(done)).toEqual({ accepted: true });
    expect(await taskState(pool, job.job_id, "trial-000")).toEqual({ state: "COMPLETED", attempts_used: 1 });

    const again = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, {
      output_sha256: await sha256('{"accuracy": 0.9}'),
    });
    expect(await json(again)).toEqual({ accepted: false });
    expect((await call(pool, "POST", `/attempts/${lease.lease_id}/heartbeat`)).status).toBe(410);

    const nodes = await json<Array<Record<string, unknown>>>(await call(pool, "GET", "/nodes"));
    expect(nodes[0]).toMatchObject({ node_id: "n1", accepted_tasks: 1, online: true });
    const types = (await events(pool, job.job_id)).map((e) => e.type);
    expect(types).toEqual([
      "JOB_ACCEPTED",
      "BACKEND_SELECTED",
      "TASK_CREATED",
      "LEASE_CLAIMED",
      "TASK_COMMIT_ACCEPTED",
      "JOB_SUCCEEDED",
      "TASK_COMMIT_REJECTED",
    ]);
  });

  it("a claim from an unregistered node is refused with 403", async () => {
    const pool = freshPool();
    const r = await claim(pool, "ghost");
    expect(r.status).toBe(403);
    expect(await json(r)).toEqual({ detail: "unregistered node — register first" });
  });

  it("an empty queue answers 204 with an empty body", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const r = await claim(pool, "n1");
    expect(r.status).toBe(204);
    expect(await r.text()).toBe("");
  });

  it("a draining node gets no new work", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitJob(pool, trialsJob(1));
    expect((await call(pool, "POST", "/nodes/n1/heartbeat", { node_id: "n1", status: "draining" })).status).toBe(200);
    expect((await claim(pool, "n1")).status).toBe(204);
    // Back online, the same node gets the task: only draining held it back.
    expect((await call(pool, "POST", "/nodes/n1/heartbeat", { node_id: "n1", status: "online" })).status).toBe(200);
    expect((await claim(pool, "n1")).status).toBe(200);
  });

  it("an unknown lease id is 404 on complete and 410 on heartbeat and fail", async () => {
    const pool = freshPool();
    const unknown = { output_sha256: "0".repeat(64) };
    expect((await call(pool, "POST", "/attempts/ls-000000000000/complete", unknown)).status).toBe(404);
    expect((await call(pool, "POST", "/attempts/ls-000000000000/heartbeat")).status).toBe(410);
    expect((await call(pool, "POST", "/attempts/ls-000000000000/fail", { reason: "x" })).status).toBe(410);
  });
});

describe("expiry", () => {
  it("a node that stops heartbeating loses its lease to the alarm, and its late commit is rejected", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await register(pool, "n2");
    const job = await submitJob(pool, trialsJob(1, { lease_seconds: 5 }));
    const first = await json<Lease>(await claim(pool, "n1"));
    expect(await taskState(pool, job.job_id, "trial-000")).toEqual({ state: "LEASED", attempts_used: 1 });
    // Nobody polls: only the object's own alarm, armed by the claim, can requeue the task.
    expect(await expireLeases(pool)).toBe(true);
    expect(await taskState(pool, job.job_id, "trial-000")).toEqual({ state: "PENDING", attempts_used: 1 });

    const second = await json<Lease>(await claim(pool, "n2"));
    expect(second).toMatchObject({ task_id: "trial-000", node_id: "n2", attempt_number: 2 });

    const late = await commitOutput(pool, first, "{}");
    expect(await json(late)).toEqual({ accepted: false });
    expect((await call(pool, "POST", `/attempts/${first.lease_id}/heartbeat`)).status).toBe(410);
    const ev = await events(pool, job.job_id);
    expect(ev.map((e) => e.type)).toContain("LEASE_EXPIRED");
    expect(ev.find((e) => e.type === "LEASE_EXPIRED")!.data).toMatchObject({ task_id: "trial-000", node_id: "n1" });
    expect(ev.at(-1)).toMatchObject({ type: "TASK_COMMIT_REJECTED", data: { node_id: "n1" } });
  });

  it("the alarm is armed at the earliest live deadline and cleared when none is left", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const long = await submitJob(pool, trialsJob(1, { lease_seconds: 30 }));
    const short = await submitJob(pool, trialsJob(1, { lease_seconds: 10 }));
    const a = await json<Lease>(await claim(pool, "n1", long.job_id));
    const b = await json<Lease>(await claim(pool, "n1", short.job_id));
    // The alarm of the shard that issued b (the pool's one object at one shard).
    const alarm = await runInDurableObject(jobStub(pool, short.job_id), (_o, s) => s.storage.getAlarm());
    // Over several shards the summary's tick (docs/sharding.md §6.2) may come first, and stays armed.
    const sharded = (env.FLASHML_POOL_SHARDS ?? "") !== "";
    if (sharded) expect(alarm).toBeLessThanOrEqual(Date.parse(b.deadline));
    else expect(alarm).toBe(Date.parse(b.deadline));
    await call(pool, "POST", `/attempts/${b.lease_id}/fail`, { reason: "x" });
    await call(pool, "POST", `/attempts/${a.lease_id}/fail`, { reason: "x" });
    // b requeued with attempts left; nothing is leased any more: the alarm is no longer at a's deadline. What
    // may be left is the node's liveness to write down (its last request + 15 s) and, over shards, the tick.
    const after = await runInDurableObject(jobStub(pool, long.job_id), (_o, s) => s.storage.getAlarm());
    expect(after ?? 0).toBeLessThan(Date.parse(a.deadline));
  });

  it("a duplicated alarm changes nothing", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const job = await submitJob(pool, trialsJob(1, { lease_seconds: 5 }));
    expect((await claim(pool, "n1")).status).toBe(200);
    expect(await expireLeases(pool)).toBe(true);
    const after = await events(pool, job.job_id);
    expect(after.map((e) => e.type)).toContain("LEASE_EXPIRED");
    await runInDurableObject(jobStub(pool, job.job_id), (o) => o.alarm());
    expect(await events(pool, job.job_id)).toEqual(after);
  });

  it("a claim sweeps expired leases first, even when the alarm never ran", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await register(pool, "n2");
    const job = await submitJob(pool, trialsJob(1, { lease_seconds: 5 }));
    expect((await claim(pool, "n1")).status).toBe(200);
    // Past its deadline, the alarm still seconds away. Over several shards the claim that sweeps is one at the
    // lease's shard: a claim for the job goes there (a node's home holds only its own shard's leases).
    await moveDeadlines(pool);
    const r = await json<Lease>(await claim(pool, "n2", shardsOf(pool) > 1 ? job.job_id : undefined));
    expect(r).toMatchObject({ node_id: "n2", attempt_number: 2 });
  });

  it("attempts run out: the task ends FAILED with TASK_EXHAUSTED", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const job = await submitJob(pool, trialsJob(1, {}, { retryPolicy: { maxTaskAttempts: 2 } }));
    for (let i = 0; i < 2; i++) {
      const lease = await json<Lease>(await claim(pool, "n1"));
      const r = await call(pool, "POST", `/attempts/${lease.lease_id}/fail`, { reason: "boom" });
      expect(await json(r)).toEqual({ status: "requeued-or-exhausted" });
    }
    expect(await taskState(pool, job.job_id, "trial-000")).toEqual({ state: "FAILED", attempts_used: 2 });
    expect((await claim(pool, "n1")).status).toBe(204);
    const types = (await events(pool, job.job_id)).map((e) => e.type);
    expect(types.filter((t) => t === "TASK_REQUEUED")).toHaveLength(1);
    expect(types.slice(-2)).toEqual(["TASK_EXHAUSTED", "JOB_FAILED"]);
  });
});

describe("output validation", () => {
  it("a wrong sha256 is not accepted and the task is requeued", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const job = await submitJob(pool, trialsJob(1));
    const lease = await json<Lease>(await claim(pool, "n1"));
    expect((await upload(pool, `jobs/${job.job_id}/trial-000/metrics.json`, "{}")).status).toBe(200);
    const r = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, {
      output_sha256: await sha256("other"),
    });
    expect(await json(r)).toEqual({ accepted: false, detail: "output validation failed; attempt requeued" });
    expect(await taskState(pool, job.job_id, "trial-000")).toEqual({ state: "PENDING", attempts_used: 1 });
  });

  it("a missing output is not accepted", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const job = await submitJob(pool, trialsJob(1));
    const lease = await json<Lease>(await claim(pool, "n1"));
    const r = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, { output_sha256: await sha256("{}") });
    expect(await json(r)).toMatchObject({ accepted: false });
    expect((await taskState(pool, job.job_id, "trial-000")).state).toBe("PENDING");
  });

  it("a command task's output must be a JSON object", async () => {
    const pool = freshPool();
    await register(pool, "n1", ARGV_NODE);
    await submitJob(pool, commandJob());
    let lease = await json<Lease>(await claim(pool, "n1"));
    expect(await json(await commitOutput(pool, lease, "[1, 2]"))).toMatchObject({
      accepted: false,
      detail: expect.any(String),
    });
    lease = await json<Lease>(await claim(pool, "n1"));
    expect(await json(await commitOutput(pool, lease, "not json"))).toMatchObject({ accepted: false });
    lease = await json<Lease>(await claim(pool, "n1"));
    expect(await json(await commitOutput(pool, lease, '{"loss": 0.1}'))).toEqual({ accepted: true });
  });
});

describe("placement through the claim endpoint", () => {
  it("a CPU node gets 204 while a GPU task is queued; then the GPU node gets it", async () => {
    const pool = freshPool();
    await register(pool, "cpu");
    await register(pool, "gpu", {}, 1);
    const job = await submitJob(pool, trialsJob(1, {}, { resources: { gpuPerTask: 1 } }));
    expect((await claim(pool, "cpu")).status).toBe(204);
    expect(await json(await claim(pool, "gpu"))).toMatchObject({ job_id: job.job_id, node_id: "gpu" });
  });

  it("the CPU node still gets a CPU task queued behind the GPU task", async () => {
    const pool = freshPool();
    await register(pool, "cpu");
    await submitJob(pool, trialsJob(1, {}, { resources: { gpuPerTask: 2 } }));
    const cpu = await submitJob(pool, trialsJob(1));
    expect(await json(await claim(pool, "cpu"))).toMatchObject({ job_id: cpu.job_id });
    expect((await claim(pool, "cpu")).status).toBe(204);
  });

  it("a local-data task only reaches the node offering the dataset", async () => {
    const pool = freshPool();
    await register(pool, "plain", ARGV_NODE);
    await register(pool, "holder", { ...ARGV_NODE, local_datasets: ["patients"] });
    await submitJob(pool, commandJob({ local_inputs: ["patients"] }));
    expect((await claim(pool, "plain")).status).toBe(204);
    expect(await json(await claim(pool, "holder"))).toMatchObject({ task_id: "task-000", node_id: "holder" });
  });

  it("a requeued task keeps its place ahead of later tasks", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitJob(pool, trialsJob(2));
    const first = await json<Lease>(await claim(pool, "n1"));
    expect(first.task_id).toBe("trial-000");
    await call(pool, "POST", `/attempts/${first.lease_id}/fail`, { reason: "x" });
    expect(await json(await claim(pool, "n1"))).toMatchObject({ task_id: "trial-000", attempt_number: 2 });
  });

  it("a claim naming a job takes only that job's tasks", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitJob(pool, trialsJob(1));
    const b = await submitJob(pool, trialsJob(1));
    expect(await json(await claim(pool, "n1", b.job_id))).toMatchObject({ job_id: b.job_id });
    expect((await claim(pool, "n1", b.job_id)).status).toBe(204);
  });
});

describe("races", () => {
  it("50 concurrent claims by 50 nodes on 10 tasks lease each task exactly once", async () => {
    const pool = freshPool();
    const ids = Array.from({ length: 50 }, (_, i) => `n${i}`);
    await Promise.all(ids.map((id) => register(pool, id)));
    await submitJob(pool, trialsJob(10));
    const results = await Promise.all(ids.map((id) => claim(pool, id)));
    const leased = await Promise.all(results.filter((r) => r.status === 200).map((r) => json<Lease>(r)));
    expect(results.filter((r) => r.status === 204)).toHaveLength(40);
    expect(new Set(leased.map((l) => l.task_id)).size).toBe(10);
    expect(leased).toHaveLength(10);
  });

  it("20 concurrent completes of one lease accept exactly one", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitJob(pool, trialsJob(1));
    const lease = await json<Lease>(await claim(pool, "n1"));
    await upload(pool, `jobs/${lease.job_id}/${lease.task_id}/metrics.json`, "{}");
    const sha = await sha256("{}");
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        call(pool, "POST", `/attempts/${lease.lease_id}/complete`, { output_sha256: sha }).then((r) => json(r)),
      ),
    );
    expect(results.filter((r) => r.accepted === true)).toHaveLength(1);
    expect(results.filter((r) => r.accepted === false)).toHaveLength(19);
  });
});
