// Verified results (docs/protocol.md §14) through the real Worker and pool object, with
// tokens enforced (replicas need identities): replicas as concurrent leases
// on distinct nodes, quorum over their metrics objects, extra replicas on
// disagreement, failure without quorum, each node's validity record,
// adaptive replication and lying evidence. The attacks on them are in
// adversaries.test.ts.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Lease } from "../../src/protocol/tasks";
import { TRUST_AFTER_VALID } from "../../src/rules/verification";
import { delivered, freshPool, homeStub, jobStub, json, sha256, trialsJob } from "../worker/helpers";
import { violations } from "../worker/invariants";
import { claimWithDraw } from "./draws";
import { call, claim, register, submitJob, upload } from "./nodes";

type Task = { task_id: string; state: string; attempts: number; max_attempts: number; node_id: string | null };
type NodeRecord = {
  node_id: string;
  valid_results: number;
  invalid_results: number;
  consecutive_failures: number;
  distrusted: string | null;
};

/** A one-task job with these labels. */
function replicated(labels: Record<string, string>, tasks = 1) {
  const spec = trialsJob(tasks);
  return { ...spec, metadata: { ...spec.metadata, labels } };
}

async function setUp(labels: Record<string, string>, nodes: string[]) {
  const pool = freshPool();
  for (const n of nodes) await register(pool, n);
  const job = await submitJob(pool, replicated(labels));
  return { pool, job: job.job_id };
}

async function take(pool: string, nodeId: string): Promise<Lease> {
  const r = await claim(pool, nodeId);
  expect(r.status, `${nodeId} claims`).toBe(200);
  return json<Lease>(r);
}

/** A replica uploads `metrics` under the prefix its lease names and commits it. */
async function finish(pool: string, lease: Lease, metrics: unknown, evidence?: unknown) {
  const bytes = JSON.stringify(metrics);
  const prefix = lease.payload.output_prefix as string;
  expect((await upload(pool, `${prefix}metrics.json`, bytes, lease.node_id)).status).toBe(200);
  const r = await call(
    pool,
    "POST",
    `/attempts/${lease.lease_id}/complete`,
    { output_sha256: await sha256(bytes), ...(evidence === undefined ? {} : { evidence }) },
    lease.node_id,
  );
  return json<{ accepted: boolean; detail?: string }>(r);
}

/** The job's ledger from its shard's table: each event's type, message and data. */
async function ledger(pool: string, jobId: string) {
  return runInDurableObject(jobStub(pool, jobId), (_o, state) =>
    state.storage.sql
      .exec<{ type: string; message: string; data: string }>(
        "SELECT type, message, data FROM events WHERE job_id = ? ORDER BY seq",
        jobId,
      )
      .toArray()
      .map((e) => ({ ...e, data: JSON.parse(e.data) as Record<string, unknown> })),
  );
}

async function taskOf(pool: string, job: string): Promise<Task> {
  return (await json<Task[]>(await call(pool, "GET", `/jobs/${job}/tasks`)))[0]!;
}

/** Each node's record at its home, once every shard has delivered what the node's work there did to it. */
async function records(pool: string): Promise<Record<string, NodeRecord>> {
  await delivered(pool);
  const nodes = await json<NodeRecord[]>(await call(pool, "GET", "/nodes"));
  return Object.fromEntries(nodes.map((n) => [n.node_id, n]));
}

/** Gives a node a record of verified results long enough to run tasks alone. */
async function trust(pool: string, nodeId: string) {
  return runInDurableObject(await homeStub(pool, nodeId), (_o, state) => {
    state.storage.sql.exec("UPDATE nodes SET consecutive_valid = ? WHERE node_id = ?", TRUST_AFTER_VALID, nodeId);
  });
}

async function taskKey(pool: string, job: string): Promise<unknown> {
  const r = await call(pool, "GET", `/artifacts/jobs/${job}/trial-000/metrics.json`);
  return r.status === 200 ? r.json() : r.status;
}

describe("replicas", () => {
  it("honest replicas on distinct nodes agree: the task completes once, its key serves their object", async () => {
    const { pool, job } = await setUp({ "flashml.dev/replicas": "2" }, ["n1", "n2", "n3"]);
    const first = await take(pool, "n1");
    expect(first.payload.output_prefix).toBe(`jobs/${job}/trial-000/r1/`);
    // The task still wants its second replica, never from the same node.
    expect((await taskOf(pool, job)).state).toBe("PENDING");
    expect((await claim(pool, "n1")).status).toBe(204);
    const second = await take(pool, "n2");
    expect(second.payload.output_prefix).toBe(`jobs/${job}/trial-000/r2/`);
    expect((await taskOf(pool, job)).state).toBe("LEASED");
    expect((await claim(pool, "n3")).status).toBe(204);

    expect(await finish(pool, first, { loss: 0.25, acc: [0.9, 0.8] })).toEqual({ accepted: true });
    expect((await taskOf(pool, job)).state).toBe("LEASED");
    expect(await taskKey(pool, job)).toBe(404);
    // Key order is not a disagreement (canonical JSON).
    expect(await finish(pool, second, { acc: [0.9, 0.8], loss: 0.25 })).toEqual({ accepted: true });
    expect((await taskOf(pool, job)).state).toBe("COMPLETED");
    expect(await taskKey(pool, job)).toEqual({ loss: 0.25, acc: [0.9, 0.8] });
    const job_ = await json<{ state: string }>(await call(pool, "GET", `/jobs/${job}`));
    expect(job_.state).toBe("SUCCEEDED");

    const events = await ledger(pool, job);
    const accepted = events.filter((e) => e.type === "TASK_COMMIT_ACCEPTED");
    expect(accepted).toHaveLength(1);
    expect(accepted[0]!.message).toBe("commit of trial-000 accepted: 2 of 2 replicas agree");
    expect(events.filter((e) => e.type === "TASK_ATTEMPT_COMPLETED")).toHaveLength(2);
    const nodes = await records(pool);
    expect([nodes.n1, nodes.n2, nodes.n3].map((n) => [n!.valid_results, n!.invalid_results])).toEqual([
      [1, 0],
      [1, 0],
      [0, 0],
    ]);
    expect(await violations(pool)).toEqual([]);
  });

  it("a cheater is outvoted: another replica is issued, the honest value wins and the cheater is counted", async () => {
    const { pool, job } = await setUp({ "flashml.dev/replicas": "2" }, ["honest-1", "cheat", "honest-2"]);
    const a = await take(pool, "honest-1");
    const b = await take(pool, "cheat");
    await finish(pool, a, { accuracy: 0.71 });
    await finish(pool, b, { accuracy: 0.99 });
    // 1:1 is no quorum of 2: one more replica, on a third node only.
    expect((await taskOf(pool, job)).state).toBe("PENDING");
    expect((await claim(pool, "honest-1")).status).toBe(204);
    expect((await claim(pool, "cheat")).status).toBe(204);
    const c = await take(pool, "honest-2");
    expect(c.payload.output_prefix).toBe(`jobs/${job}/trial-000/r3/`);
    await finish(pool, c, { accuracy: 0.71 });

    expect((await taskOf(pool, job)).state).toBe("COMPLETED");
    expect(await taskKey(pool, job)).toEqual({ accuracy: 0.71 });
    const nodes = await records(pool);
    expect(nodes.cheat).toMatchObject({ valid_results: 0, invalid_results: 1, consecutive_failures: 1 });
    expect(nodes["honest-1"]).toMatchObject({ valid_results: 1, invalid_results: 0 });
    const metrics = await (await call(pool, "GET", "/metrics")).text();
    expect(metrics).toMatch(/^flashedge_results_total\{pool="[^"]+",verdict="valid"\} 2$/m);
    expect(metrics).toMatch(/^flashedge_results_total\{pool="[^"]+",verdict="invalid"\} 1$/m);
    const events = await ledger(pool, job);
    const rejected = events.find((e) => e.type === "TASK_COMMIT_REJECTED");
    expect(rejected?.data).toMatchObject({ node_id: "cheat", verdict: "invalid" });
    const accepted = events.find((e) => e.type === "TASK_COMMIT_ACCEPTED");
    expect(accepted?.message).toBe("commit of trial-000 accepted: 2 of 3 replicas agree");
    expect(
      ((accepted?.data.replicas ?? []) as Array<{ node_id: string; verdict: string }>).map((r) => r.verdict),
    ).toEqual(["valid", "invalid", "valid"]);
    expect(await violations(pool)).toEqual([]);
  });

  it("numbers agree within the job's relative tolerance, and not beyond it", async () => {
    const close = await setUp({ "flashml.dev/replicas": "2", "flashml.dev/tolerance": "0.01" }, ["n1", "n2"]);
    await finish(close.pool, await take(close.pool, "n1"), { loss: 0.5 });
    await finish(close.pool, await take(close.pool, "n2"), { loss: 0.504 });
    expect((await taskOf(close.pool, close.job)).state).toBe("COMPLETED");

    const exact = await setUp({ "flashml.dev/replicas": "2" }, ["n1", "n2"]);
    await finish(exact.pool, await take(exact.pool, "n1"), { loss: 0.5 });
    await finish(exact.pool, await take(exact.pool, "n2"), { loss: 0.504 });
    expect((await taskOf(exact.pool, exact.job)).state).toBe("PENDING");
  });

  it("no quorum by replicas + 2: the task fails with every replica's hash as evidence", async () => {
    const { pool, job } = await setUp({ "flashml.dev/replicas": "2" }, ["n1", "n2", "n3", "n4", "n5"]);
    const hashes: string[] = [];
    for (const [i, n] of ["n1", "n2", "n3", "n4"].entries()) {
      await finish(pool, await take(pool, n), { seed: i });
      hashes.push(await sha256(JSON.stringify({ seed: i })));
    }
    expect((await taskOf(pool, job)).state).toBe("FAILED");
    expect((await claim(pool, "n5")).status).toBe(204);
    const exhausted = (await ledger(pool, job)).find((e) => e.type === "TASK_EXHAUSTED");
    expect(exhausted?.message).toBe("task trial-000 found no quorum of 2 in 4 replicas");
    expect(((exhausted?.data.replicas ?? []) as Array<{ output_sha256: string }>).map((r) => r.output_sha256)).toEqual(
      hashes,
    );
    expect((await json<{ state: string }>(await call(pool, "GET", `/jobs/${job}`))).state).toBe("FAILED");
    expect(await taskKey(pool, job)).toBe(404);
    expect(await violations(pool)).toEqual([]);
  });

  it("with a quorum of 2 of 3, the replica still out when two agree is cancelled and its commit rejected", async () => {
    const { pool, job } = await setUp({ "flashml.dev/replicas": "3", "flashml.dev/quorum": "2" }, ["n1", "n2", "n3"]);
    const [a, b, c] = [await take(pool, "n1"), await take(pool, "n2"), await take(pool, "n3")];
    await finish(pool, a, { f1: 0.8 });
    await finish(pool, b, { f1: 0.8 });
    expect((await taskOf(pool, job)).state).toBe("COMPLETED");
    // Its outputs are refused (the task's prefix is immutable now), and so is its commit.
    const late = `${c.payload.output_prefix as string}metrics.json`;
    expect((await upload(pool, late, '{"f1": 0.8}', c.node_id)).status).toBe(409);
    const commit = await call(
      pool,
      "POST",
      `/attempts/${c.lease_id}/complete`,
      { output_sha256: await sha256('{"f1": 0.8}') },
      c.node_id,
    );
    expect(await json(commit)).toEqual({ accepted: false });
    expect((await ledger(pool, job)).filter((e) => e.type === "TASK_COMMIT_ACCEPTED")).toHaveLength(1);
    expect(await violations(pool)).toEqual([]);
  });

  it("a replica that fails frees its place for another node; the node that failed it never gets it back", async () => {
    const { pool, job } = await setUp({ "flashml.dev/replicas": "2" }, ["n1", "n2", "n3"]);
    const a = await take(pool, "n1");
    await take(pool, "n2");
    expect((await call(pool, "POST", `/attempts/${a.lease_id}/fail`, { reason: "OOM" }, "n1")).status).toBe(200);
    expect((await taskOf(pool, job)).state).toBe("PENDING");
    expect((await claim(pool, "n1")).status).toBe(204);
    const c = await take(pool, "n3");
    expect(c.payload.output_prefix).toBe(`jobs/${job}/trial-000/r3/`);
    expect(await violations(pool)).toEqual([]);
  });
});

describe("labels", () => {
  it.each([
    [{ "flashml.dev/replicas": "6" }, "flashml.dev/replicas"],
    [{ "flashml.dev/replicas": "two" }, "flashml.dev/replicas"],
    [{ "flashml.dev/replicas": "2", "flashml.dev/quorum": "3" }, "flashml.dev/quorum"],
    [{ "flashml.dev/quorum": "2" }, "flashml.dev/quorum"],
    [{ "flashml.dev/replicas": "2", "flashml.dev/tolerance": "-0.1" }, "flashml.dev/tolerance"],
  ])("%j is a 422 naming the label, and queues nothing", async (labels, name) => {
    const pool = freshPool();
    const r = await call(pool, "POST", "/jobs", replicated(labels));
    expect(r.status).toBe(422);
    expect((await json<{ detail: string }>(r)).detail).toContain(name);
    expect(await json<unknown[]>(await call(pool, "GET", "/jobs"))).toEqual([]);
  });

  it("replicas with checkpoints are refused with a clear 422", async () => {
    const pool = freshPool();
    const spec = replicated({ "flashml.dev/replicas": "2" });
    spec.spec.workload.parameters.checkpoint = { every_steps: 10 };
    const r = await call(pool, "POST", "/jobs", spec);
    expect(r.status).toBe(422);
    expect((await json<{ detail: string }>(r)).detail).toContain("cannot use checkpoints");
  });
});

describe("adaptive replication and evidence", () => {
  it(`a node with ${TRUST_AFTER_VALID} valid results in a row runs a task alone, unless spot-checked`, async () => {
    const { pool, job } = await setUp({ "flashml.dev/replicas": "2" }, ["trusted", "other"]);
    await trust(pool, "trusted");
    // A draw of 0.5 is no spot check (SPOT_CHECK_RATE is 0.2).
    const claimed = await claimWithDraw(pool, job, "trusted", 0.5);
    if (!claimed.ok) throw new Error("no lease");
    expect((await taskOf(pool, job)).state).toBe("LEASED");
    expect((await claim(pool, "other")).status).toBe(204);
    await finish(pool, claimed.lease as unknown as Lease, { loss: 0.1 });
    expect((await taskOf(pool, job)).state).toBe("COMPLETED");
    expect((await ledger(pool, job)).find((e) => e.type === "TASK_COMMIT_ACCEPTED")?.message).toBe(
      "commit of trial-000 accepted: 1 of 1 replicas agree",
    );

    const spot = await setUp({ "flashml.dev/replicas": "2" }, ["trusted", "other"]);
    await trust(spot.pool, "trusted");
    await claimWithDraw(spot.pool, spot.job, "trusted", 0.05);
    expect((await taskOf(spot.pool, spot.job)).state).toBe("PENDING");
    expect((await claim(spot.pool, "other")).status).toBe(200);
  });

  it("evidence claiming more time than passed since the claim is an invalid result, replicated or not", async () => {
    const pool = freshPool();
    await register(pool, "liar");
    const job = await submitJob(pool, trialsJob(1));
    const lease = await take(pool, "liar");
    const answer = await finish(pool, lease, { loss: 0.2 }, { wall_seconds: 3600 });
    expect(answer.accepted).toBe(false);
    expect(answer.detail).toMatch(/^evidence claims 3600 s of work, but [\d.]+ s passed since the claim/);
    expect((await taskOf(pool, job.job_id)).state).toBe("PENDING");
    expect((await records(pool)).liar).toMatchObject({ invalid_results: 1, consecutive_failures: 1 });
    // A lie distrusts the node at once (docs/protocol.md §14), and holds it back.
    expect((await records(pool)).liar!.distrusted).toMatch(/^its evidence lied: evidence claims 3600 s/);
    expect((await claim(pool, "liar")).status).toBe(204);
    expect((await call(pool, "POST", "/nodes/liar/release")).status).toBe(200);
    // Honest evidence is accepted.
    const again = await take(pool, "liar");
    expect(await finish(pool, again, { loss: 0.2 }, { wall_seconds: 0.01 })).toEqual({ accepted: true });
    expect(await violations(pool)).toEqual([]);
  });
});

describe("the dashboard, to an operator", () => {
  type Summary = {
    jobs: { items: Array<{ job_id: string; state: string }> };
    leases: { items: Array<{ node_id: string; task_id: string; replica: number }> };
    nodes: {
      items: Array<{ node_id: string; valid_results: number; invalid_results: number; accepted_tasks: number }>;
    };
  };
  const summary = async (pool: string) => json<Summary>(await call(pool, "GET", "/dashboard"));

  it("shows each live replica's number, and each node's record of valid and invalid results", async () => {
    const { pool, job } = await setUp({ "flashml.dev/replicas": "2" }, ["honest-1", "cheat", "honest-2"]);
    const a = await take(pool, "honest-1");
    const b = await take(pool, "cheat");
    const out = await summary(pool);
    expect(out.leases.items.map((l) => [l.node_id, l.task_id, l.replica])).toEqual([
      ["honest-1", "trial-000", 1],
      ["cheat", "trial-000", 2],
    ]);
    await finish(pool, a, { accuracy: 0.71 });
    await finish(pool, b, { accuracy: 0.99 });
    const c = await take(pool, "honest-2");
    expect((await summary(pool)).leases.items.map((l) => [l.node_id, l.replica])).toEqual([["honest-2", 3]]);
    await finish(pool, c, { accuracy: 0.71 });

    const s = await summary(pool);
    expect(s.jobs.items[0]).toMatchObject({ job_id: job, state: "SUCCEEDED" });
    expect(s.leases.items).toEqual([]);
    const records = s.nodes.items.map((n) => [n.node_id, n.valid_results, n.invalid_results, n.accepted_tasks]);
    expect(records).toEqual([
      ["cheat", 0, 1, 0],
      ["honest-1", 1, 0, 1],
      ["honest-2", 1, 0, 1],
    ]);
  });
});
