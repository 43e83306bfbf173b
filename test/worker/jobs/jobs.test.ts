import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Lease } from "../../../src/protocol/tasks";
import {
  ARGV_NODE,
  call,
  claim,
  commandJob as command,
  freshPool,
  jobSpec,
  json,
  register,
  sha256,
  submitJob,
  trialsJob,
  upload,
} from "../helpers";

type JobRecord = {
  job_id: string;
  state: string;
  backend: string;
  deployment_profile: string;
  finished_at: string | null;
  created_at: string;
};
type TaskRow = {
  task_id: string;
  state: string;
  attempts: number;
  max_attempts: number;
  node_id: string | null;
  deadline: string | null;
};
type EventRecord = { seq: number; type: string; job_id: string; source: string; data: Record<string, unknown> };

const trials = (n: number) =>
  jobSpec({ type: "hyperparameter_search", parameters: { trials: Array.from({ length: n }, (_, i) => ({ c: i })) } });

const submit = (pool: string, body: unknown) => submitJob<JobRecord>(pool, body);

async function finish(pool: string, lease: Lease) {
  const bytes = JSON.stringify({ task: lease.task_id });
  await upload(pool, `jobs/${lease.job_id}/${lease.task_id}/metrics.json`, bytes);
  const r = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, { output_sha256: await sha256(bytes) });
  return json<{ accepted: boolean }>(r);
}

async function events(pool: string, jobId: string, query = ""): Promise<EventRecord[]> {
  return json<EventRecord[]>(await call(pool, "GET", `/jobs/${jobId}/events${query}`));
}

describe("job submission", () => {
  it("a submitted job drains to SUCCEEDED as nodes claim and commit", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const job = await submit(pool, trials(3));
    expect(job).toMatchObject({
      schema_version: "v1alpha1",
      state: "RUNNING",
      backend: "leases",
      deployment_profile: pool,
      finished_at: null,
      runtime_execution_id: null,
      error: null,
      artifacts: [],
    });
    expect(job.job_id).toMatch(/^[0-9a-f]{12}$/);

    for (let i = 0; i < 3; i++) {
      const lease = await json<Lease>(await claim(pool, "n1"));
      expect(lease.payload).toMatchObject({
        module: "flashml_workloads.sklearn_trial",
        params: { c: i },
        task_id: `trial-00${i}`,
      });
      expect(await finish(pool, lease)).toEqual({ accepted: true });
    }
    const done = await json<JobRecord>(await call(pool, "GET", `/jobs/${job.job_id}`));
    expect(done.state).toBe("SUCCEEDED");
    expect(done.finished_at).not.toBeNull();

    // Reading many times neither flips the state nor re-records the transition.
    for (let i = 0; i < 3; i++)
      expect((await json<JobRecord>(await call(pool, "GET", `/jobs/${job.job_id}`))).finished_at).toBe(
        done.finished_at,
      );
    const types = (await events(pool, job.job_id)).map((e) => e.type);
    expect(types.slice(0, 5)).toEqual([
      "JOB_ACCEPTED",
      "BACKEND_SELECTED",
      "TASK_CREATED",
      "TASK_CREATED",
      "TASK_CREATED",
    ]);
    expect(types.filter((t) => t === "JOB_SUCCEEDED")).toHaveLength(1);
    expect(types.at(-1)).toBe("JOB_SUCCEEDED");

    const tasks = await json<TaskRow[]>(await call(pool, "GET", `/jobs/${job.job_id}/tasks`));
    expect(tasks.map((t) => t.task_id)).toEqual(["trial-000", "trial-001", "trial-002"]);
    expect(tasks[0]).toEqual({
      task_id: "trial-000",
      state: "COMPLETED",
      attempts: 1,
      max_attempts: 4,
      node_id: "n1",
      deadline: null,
    });
    expect(await json(await call(pool, "GET", `/jobs/${job.job_id}/logs`))).toEqual({ logs: "" });
    expect(await json<JobRecord[]>(await call(pool, "GET", "/jobs"))).toHaveLength(1);
  });

  it("a job with an exhausted task ends FAILED", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const job = await submit(
      pool,
      jobSpec({ type: "hyperparameter_search", parameters: { trials: [{}] } }, { retryPolicy: { maxTaskAttempts: 1 } }),
    );
    const lease = await json<Lease>(await claim(pool, "n1"));
    await call(pool, "POST", `/attempts/${lease.lease_id}/fail`, { reason: "oom" });
    const after = await json<JobRecord>(await call(pool, "GET", `/jobs/${job.job_id}`));
    expect(after.state).toBe("FAILED");
    expect((await events(pool, job.job_id)).filter((e) => e.type === "JOB_FAILED")).toHaveLength(1);
  });

  it("a cancelled job ends CANCELLED and stays so; its live lease dies", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const job = await submit(pool, trials(2));
    const lease = await json<Lease>(await claim(pool, "n1"));
    const cancelled = await json<JobRecord>(await call(pool, "POST", `/jobs/${job.job_id}/cancel`));
    expect(cancelled.state).toBe("CANCELLED");
    expect(cancelled.finished_at).not.toBeNull();
    expect((await call(pool, "POST", `/attempts/${lease.lease_id}/heartbeat`)).status).toBe(410);
    expect(await finish(pool, lease)).toMatchObject({ accepted: false });
    expect((await claim(pool, "n1")).status).toBe(204);
    const again = await json<JobRecord>(await call(pool, "POST", `/jobs/${job.job_id}/cancel`));
    expect(again).toEqual(cancelled);
    const tasks = await json<TaskRow[]>(await call(pool, "GET", `/jobs/${job.job_id}/tasks`));
    expect(tasks.map((t) => t.state)).toEqual(["CANCELLED", "CANCELLED"]);
  });

  it("only the leases backend is served, and the 422 says what to set", async () => {
    const pool = freshPool();
    const spec = trials(1);
    (spec.spec.execution as { backend: string }).backend = "ray";
    const r = await call(pool, "POST", "/jobs", spec);
    expect(r.status).toBe(422);
    expect(JSON.stringify(await r.json())).toContain('set spec.execution.backend to \\"leases\\"');
    expect(await json(await call(pool, "GET", "/jobs"))).toEqual([]);
  });

  it("an expansion error is one 422 listing every problem, and queues nothing", async () => {
    const pool = freshPool();
    const r = await call(
      pool,
      "POST",
      "/jobs",
      jobSpec({ type: "federated_averaging", parameters: { num_shards: 2, lr: 0.1 } }),
    );
    expect(r.status).toBe(422);
    const detail = (await json<{ detail: string }>(r)).detail;
    for (const missing of ["local_steps", "batch_size", "seed", "in_dim", "hidden", "out_dim", "dataset_size"])
      expect(detail).toContain(missing);
    expect(await json(await call(pool, "GET", "/jobs"))).toEqual([]);
  });

  it("a lease too short to ever be renewed is one 422 naming the floor, and queues nothing", async () => {
    const pool = freshPool();
    await submit(pool, trials(1));
    const before = await json(await call(pool, "GET", "/jobs"));
    const r = await call(pool, "POST", "/jobs", trialsJob(1, { lease_seconds: 4.9 }));
    expect(r.status).toBe(422);
    expect(await r.json()).toEqual({
      detail:
        "job cannot be expanded: 'lease_seconds' must be at least 5 seconds (a lease shorter than that cannot be renewed in time), got the number 4.9",
    });
    expect(await json(await call(pool, "GET", "/jobs"))).toEqual(before);
  });

  it("a lease of exactly the 5-second floor is accepted and granted", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const job = await submit(pool, trialsJob(1, { lease_seconds: 5 }));
    const claimed = Date.now();
    const lease = await json<Lease>(await claim(pool, "n1"));
    expect(lease).toMatchObject({ job_id: job.job_id, attempt_number: 1 });
    const granted = Date.parse(lease.deadline) - claimed;
    expect(granted).toBeGreaterThanOrEqual(4900);
    expect(granted).toBeLessThan(6000);
  });

  it("a 10,000-task job is accepted and 10,001 is refused with the limit in the message", async () => {
    const pool = freshPool();
    const big = await submit(pool, trials(10_000));
    const tasks = await json<TaskRow[]>(await call(pool, "GET", `/jobs/${big.job_id}/tasks`));
    expect(tasks).toHaveLength(10_000);
    const r = await call(pool, "POST", "/jobs", trials(10_001));
    expect(r.status).toBe(422);
    expect(JSON.stringify(await r.json())).toContain("10000");
  });

  it("two jobs in one pool with the same task ids do not collide", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const a = await submit(pool, trials(1));
    const b = await submit(pool, trials(1));
    const first = await json<Lease>(await claim(pool, "n1"));
    const second = await json<Lease>(await claim(pool, "n1"));
    // In submission order at one shard; over several, in no promised order (docs/protocol.md §15).
    expect([first.job_id, second.job_id].sort()).toEqual([a.job_id, b.job_id].sort());
    expect(first.task_id).toBe(second.task_id);
    expect(await finish(pool, first)).toEqual({ accepted: true });
    // The other job's task of the same id is untouched: still leased, its job running.
    const other = first.job_id === a.job_id ? b : a;
    expect((await json<JobRecord>(await call(pool, "GET", `/jobs/${other.job_id}`))).state).toBe("RUNNING");
  });

  it("events page with after and limit", async () => {
    const pool = freshPool();
    const job = await submit(pool, trials(5));
    const all = await events(pool, job.job_id);
    expect(all).toHaveLength(7);
    expect(all[0]).toMatchObject({ type: "JOB_ACCEPTED", job_id: job.job_id, source: "flashruntime.leases" });
    const page1 = await events(pool, job.job_id, "?limit=3");
    const page2 = await events(pool, job.job_id, `?after=${page1.at(-1)!.seq}&limit=3`);
    const page3 = await events(pool, job.job_id, `?after=${page2.at(-1)!.seq}&limit=3`);
    expect([...page1, ...page2, ...page3]).toEqual(all);
    expect((await call(pool, "GET", `/jobs/${job.job_id}/events?limit=0`)).status).toBe(422);
    expect((await call(pool, "GET", `/jobs/${job.job_id}/events?after=-1`)).status).toBe(422);
    expect((await call(pool, "GET", `/jobs/${job.job_id}/events?limit=abc`)).status).toBe(422);
  });

  it("an unknown job is 404 on every job route, with the reference's detail", async () => {
    const pool = freshPool();
    for (const [method, path] of [
      ["GET", "/jobs/000000000000"],
      ["GET", "/jobs/000000000000/events"],
      ["GET", "/jobs/000000000000/tasks"],
      ["POST", "/jobs/000000000000/cancel"],
      ["GET", "/jobs/000000000000/logs"],
    ] as const) {
      const r = await call(pool, method, path);
      expect(r.status, path).toBe(404);
      expect(await r.json(), path).toEqual({ detail: "no such job: 000000000000" });
    }
  });
});

describe("payload forwards reach the gate through the real claim endpoint", () => {
  it("gpuPerTask becomes payload gpus: the 1-GPU node is refused a 2-GPU task, the 2-GPU node takes it", async () => {
    const pool = freshPool();
    await register(pool, "one-gpu", ARGV_NODE, 1);
    await register(pool, "two-gpu", ARGV_NODE, 2);
    await submit(pool, command({}, { resources: { gpuPerTask: 2 } }));
    expect((await claim(pool, "one-gpu")).status).toBe(204);
    const lease = await json<Lease>(await claim(pool, "two-gpu"));
    expect(lease.payload.gpus).toBe(2);
  });

  it("a GPU hyperparameter search never lands on a CPU-only node", async () => {
    const pool = freshPool();
    await register(pool, "cpu");
    await register(pool, "gpu", {}, 1);
    await submit(
      pool,
      jobSpec({ type: "hyperparameter_search", parameters: { trials: [{}] } }, { resources: { gpuPerTask: 1 } }),
    );
    expect((await claim(pool, "cpu")).status).toBe(204);
    expect((await json<Lease>(await claim(pool, "gpu"))).payload.gpus).toBe(1);
  });

  it("gpuPerTask 0 leaves gpus absent, and a CPU node takes the task", async () => {
    const pool = freshPool();
    await register(pool, "cpu", ARGV_NODE);
    await submit(pool, command({}));
    const lease = await json<Lease>(await claim(pool, "cpu"));
    expect("gpus" in lease.payload).toBe(false);
  });

  it("local_inputs reach the payload: only the node offering the dataset gets the task", async () => {
    const pool = freshPool();
    await register(pool, "plain", ARGV_NODE);
    await register(pool, "holder", { ...ARGV_NODE, local_datasets: ["patients", "other"] });
    await submit(pool, command({ local_inputs: ["patients"] }));
    expect((await claim(pool, "plain")).status).toBe(204);
    const lease = await json<Lease>(await claim(pool, "holder"));
    expect(lease.payload.local_inputs).toEqual(["patients"]);
  });

  it("placement.pool reaches the payload: only a member of the team pool gets the task", async () => {
    const pool = freshPool();
    await register(pool, "outsider", ARGV_NODE);
    await register(pool, "member", { ...ARGV_NODE, capabilities: { gpus: [], pools: ["team-a"] } });
    await submit(pool, command({}, { placement: { pool: "team-a" } }));
    expect((await claim(pool, "outsider")).status).toBe(204);
    expect((await json<Lease>(await claim(pool, "member"))).payload.pool).toBe("team-a");
  });

  it("unpack_inputs reach the payload unchanged", async () => {
    const pool = freshPool();
    await register(pool, "n", ARGV_NODE);
    await submit(pool, command({ inputs: { data: "artifact://datasets/d.tar" }, unpack_inputs: ["data"] }));
    const lease = await json<Lease>(await claim(pool, "n"));
    expect(lease.payload).toMatchObject({ inputs: { data: "artifact://datasets/d.tar" }, unpack_inputs: ["data"] });
  });

  it("a sandboxed command job never reaches a node without both sandbox_capable and argv_capable", async () => {
    const pool = freshPool();
    await register(pool, "neither");
    await register(pool, "sandbox-only", { sandbox_capable: true });
    await register(pool, "argv-only", { argv_capable: true });
    await register(pool, "both", ARGV_NODE);
    await submit(pool, command({}));
    for (const n of ["neither", "sandbox-only", "argv-only"]) expect((await claim(pool, n)).status, n).toBe(204);
    expect((await json<Lease>(await claim(pool, "both"))).node_id).toBe("both");
  });

  it("a command job's output must be a JSON object to be accepted", async () => {
    const pool = freshPool();
    await register(pool, "n", ARGV_NODE);
    await submit(pool, command({}));
    const lease = await json<Lease>(await claim(pool, "n"));
    await upload(pool, `jobs/${lease.job_id}/${lease.task_id}/metrics.json`, "42");
    const r = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, { output_sha256: await sha256("42") });
    expect(await json(r)).toEqual({ accepted: false, detail: "output validation failed; attempt requeued" });
  });

  it("an unsandboxed command job is refused unless the coordinator allows it", async () => {
    const pool = freshPool();
    const r = await call(pool, "POST", "/jobs", command({}, { isolation: { tier: "standard" } }));
    expect(r.status).toBe(422);
    expect(JSON.stringify(await r.json())).toContain("FLASHML_ALLOW_UNSANDBOXED_ARGV");
    expect(env.FLASHML_ALLOW_UNSANDBOXED_ARGV).toBe("0");
  });
});

describe("replicated jobs on an open coordinator (docs/protocol.md §14)", () => {
  it("are refused with a 422 saying why: without identities any caller can be every replica", async () => {
    const pool = freshPool();
    const spec = trialsJob(1);
    const r = await call(pool, "POST", "/jobs", {
      ...spec,
      metadata: { ...spec.metadata, labels: { "flashml.dev/replicas": "2" } },
    });
    expect(r.status).toBe(422);
    expect((await json<{ detail: string }>(r)).detail).toContain("needs node identities, and this coordinator is open");
    expect(await json<unknown[]>(await call(pool, "GET", "/jobs"))).toEqual([]);
  });
});
