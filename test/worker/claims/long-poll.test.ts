// Long-poll claims (docs/protocol.md §5): a claim with nothing to take is held and
// answered the moment a task this node may take appears, else 204 when the
// hold ends. Each test sets its own hold through the Worker's settings.

import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { Lease } from "../../../src/protocol/tasks";
import { jobSpec } from "../../fixtures/jobspec";
import {
  expireLeases,
  freshPool,
  homeStub,
  json,
  nodeIdAt,
  registration,
  callHolding as send,
  shardStubs,
  sleep,
  stub,
} from "../helpers";
import { violations } from "../invariants";

function searchJob(tasks: number, extra: { lease_seconds?: number; name?: string; gpus?: number } = {}) {
  const parameters: Record<string, unknown> = { trials: Array.from({ length: tasks }, (_, i) => ({ i })) };
  if (extra.lease_seconds !== undefined) parameters.lease_seconds = extra.lease_seconds;
  const spec = extra.gpus ? { resources: { gpuPerTask: extra.gpus } } : {};
  return jobSpec({ type: "hyperparameter_search", parameters }, spec, extra.name ?? "search");
}

async function setUp(nodes: string[], gpus = 0) {
  const pool = freshPool();
  for (const node of nodes) {
    const r = await send(pool, 0, "POST", "/nodes/register", registration(node, {}, gpus));
    expect(r.status).toBe(200);
  }
  const submit = async (spec: unknown) => {
    const r = await send(pool, 0, "POST", "/jobs", spec);
    expect(r.status).toBe(201);
    return (await json<{ job_id: string }>(r)).job_id;
  };
  const claim = (node: string, holdSeconds: number, jobId?: string) =>
    send(pool, holdSeconds, "POST", "/leases/claim", jobId ? { node_id: node, job_id: jobId } : { node_id: node });
  return { pool, submit, claim };
}

/** Until the pool's metrics count `n` claims held open: a sleep cannot promise a claim on a busy machine is. */
async function untilHeld(pool: string, n: number) {
  await vi.waitFor(
    async () => {
      const text = await (await send(pool, 0, "GET", "/metrics")).text();
      expect(text).toContain(`flashedge_claims_held{pool="${pool}"} ${n}\n`);
    },
    { timeout: 5000, interval: 20 },
  );
}

describe("long-poll claims", () => {
  it("a held claim is answered with the first task of a job submitted while it waits", async () => {
    const { submit, claim } = await setUp(["n1"]);
    const started = Date.now();
    const held = claim("n1", 10);
    await sleep(100);
    const jobId = await submit(searchJob(2));
    const r = await held;
    expect(r.status).toBe(200);
    expect(await json<Lease>(r)).toMatchObject({ job_id: jobId, task_id: "trial-000", node_id: "n1" });
    expect(Date.now() - started).toBeLessThan(5000); // answered by the task, not by the end of the hold
  });

  it("a held claim with nothing appearing answers 204 when the hold ends, and leases nothing", async () => {
    const { pool, claim } = await setUp(["n1"]);
    const started = Date.now();
    const r = await claim("n1", 0.4);
    expect(r.status).toBe(204);
    expect(await r.text()).toBe("");
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    expect(await violations(pool)).toEqual([]);
  });

  it("a task requeued by another node's failure goes to the held claim", async () => {
    const { pool, submit, claim } = await setUp(["n1", "n2"]);
    await submit(searchJob(1));
    const first = await json<Lease>(await claim("n1", 0));
    const held = claim("n2", 10);
    await sleep(100);
    expect((await send(pool, 0, "POST", `/attempts/${first.lease_id}/fail`, { reason: "oom" })).status).toBe(200);
    const second = await json<Lease>(await held);
    expect(second).toMatchObject({ task_id: first.task_id, node_id: "n2", attempt_number: 2 });
    expect(await violations(pool)).toEqual([]);
  });

  it("a task whose lease expired goes to the held claim when the alarm sweeps it", async () => {
    const { pool, submit, claim } = await setUp(["dead", "alive"]);
    await submit(searchJob(1, { lease_seconds: 5 }));
    const lost = await json<Lease>(await claim("dead", 0));
    const held = claim("alive", 10);
    await sleep(100); // the claim is held
    const expired = Date.now();
    expect(await expireLeases(pool)).toBe(true);
    const next = await json<Lease>(await held);
    expect(next).toMatchObject({ task_id: lost.task_id, node_id: "alive", attempt_number: 2 });
    expect(Date.now() - expired).toBeLessThan(2000); // woken by the sweep, not by the lease's own deadline
    expect(await violations(pool)).toEqual([]);
  });

  // Arrival order is each home's: in a pool of shards the three nodes share one (shard 0's), as "a", "b", "c" do at one shard.
  it("held claims are answered in the order they arrived, and those left over wait on", async () => {
    const [a, b, c] = ["a", "b", "c"].map((name) => nodeIdAt(freshPool(), name, 0)) as [string, string, string];
    const { pool, submit, claim } = await setUp([a, b, c]);
    const heldA = claim(a, 10);
    await untilHeld(pool, 1);
    const heldB = claim(b, 10);
    await untilHeld(pool, 2);
    const heldC = claim(c, 2);
    await untilHeld(pool, 3);
    await submit(searchJob(2));
    expect(await json<Lease>(await heldA)).toMatchObject({ node_id: a, task_id: "trial-000" });
    expect(await json<Lease>(await heldB)).toMatchObject({ node_id: b, task_id: "trial-001" });
    expect((await heldC).status).toBe(204);
    expect(await violations(pool)).toEqual([]);
  });

  it("a held claim is answered only with a task its node may take", async () => {
    const { pool, submit, claim } = await setUp(["cpu"]);
    expect((await send(pool, 0, "POST", "/nodes/register", registration("gpu", {}, 2))).status).toBe(200);
    const heldCpu = claim("cpu", 0.6);
    const heldGpu = claim("gpu", 10);
    await sleep(50);
    await submit(searchJob(1, { gpus: 2 }));
    expect(await json<Lease>(await heldGpu)).toMatchObject({ node_id: "gpu" });
    expect((await heldCpu).status).toBe(204);
  });

  it("200 held claims and then a 200-task job: every task leased once, every node one task", async () => {
    const nodes = Array.from({ length: 200 }, (_, i) => `n${String(i).padStart(3, "0")}`);
    const { pool, submit, claim } = await setUp(nodes);
    const held = nodes.map((node) => claim(node, 10));
    await sleep(300);
    const submitted = Date.now();
    await submit(searchJob(200));
    const answers = await Promise.all(held);
    const elapsed = Date.now() - submitted;
    expect(answers.map((r) => r.status)).toEqual(nodes.map(() => 200));
    const leases = await Promise.all(answers.map((r) => json<Lease>(r)));
    expect(new Set(leases.map((l) => l.task_id)).size).toBe(200);
    expect(leases.map((l) => l.node_id).sort()).toEqual(nodes);
    // Woken by the work, not by the hold's end (10 s); how fast is the benches' (a loaded machine, 4 shards).
    expect(elapsed).toBeLessThan(5000);
    expect(await violations(pool)).toEqual([]);
  });

  it("a node that claims again while its claim is held gets the task; the earlier claim answers 204", async () => {
    const { pool, submit, claim } = await setUp(["n1"]);
    const first = claim("n1", 10);
    await sleep(50);
    const second = claim("n1", 10);
    expect((await first).status).toBe(204); // superseded at once, not at the end of its hold
    await submit(searchJob(1));
    expect(await json<Lease>(await second)).toMatchObject({ node_id: "n1", task_id: "trial-000" });
    expect(await violations(pool)).toEqual([]);
  });

  it("a draining node's claim answers 204 at once", async () => {
    const { pool, claim } = await setUp(["n1"]);
    await send(pool, 0, "POST", "/nodes/n1/heartbeat", { node_id: "n1", status: "draining" });
    const started = Date.now();
    expect((await claim("n1", 10)).status).toBe(204);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("an unregistered node's claim is refused at once", async () => {
    const { claim } = await setUp([]);
    const r = await claim("ghost", 10);
    expect(r.status).toBe(403);
  });

  it("a claim held for one job answers 204 when that job is cancelled", async () => {
    const { pool, submit, claim } = await setUp(["n1", "n2"]);
    const jobId = await submit(searchJob(1));
    expect((await claim("n1", 0, jobId)).status).toBe(200);
    const started = Date.now();
    const held = claim("n2", 10, jobId);
    await sleep(100);
    expect((await send(pool, 0, "POST", `/jobs/${jobId}/cancel`)).status).toBe(200);
    expect((await held).status).toBe(204);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("a claim for a job with no open task answers 204 without waiting", async () => {
    const { pool, submit, claim } = await setUp(["n1"]);
    const jobId = await submit(searchJob(1));
    expect((await send(pool, 0, "POST", `/jobs/${jobId}/cancel`)).status).toBe(200);
    const started = Date.now();
    expect((await claim("n1", 10, jobId)).status).toBe(204);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("a claim that reaches a busy pool late is answered by the pool itself: never a 204 with a lease behind it", async () => {
    const { pool, submit, claim } = await setUp(["n1"]);
    // The pool is busy for 2 s (a burst of work ahead of the claim); the claim, held 0.5 s, waits its turn.
    const busy = runInDurableObject(stub(pool), (_o, state) => state.blockConcurrencyWhile(() => sleep(2000)));
    await sleep(50);
    const held = claim("n1", 0.5);
    await busy;
    await sleep(50);
    await submit(searchJob(1)); // while the pool still holds the claim
    const r = await held;
    const issued: Array<{ lease_id: string }> = [];
    for (const shard of shardStubs(pool)) {
      issued.push(
        ...(await runInDurableObject(shard, (_o, state) =>
          state.storage.sql.exec<{ lease_id: string }>("SELECT lease_id FROM leases WHERE node_id = 'n1'").toArray(),
        )),
      );
    }
    // Whatever the caller read is the whole truth: the lease it got, or no lease at all.
    if (r.status === 204) expect(issued).toEqual([]);
    else expect(issued.map((l) => l.lease_id)).toEqual([(await json<Lease>(r)).lease_id]);
    // Over several shards the job may land on another, and a claim with less than MIN_FORWARD_MS of its
    // hold left waits it out at home (docs/sharding.md §5.3): the answer is then a 204 with no lease behind it.
    if (shardStubs(pool).length === 1) expect(r.status).toBe(200);
    expect(await violations(pool)).toEqual([]);
  });

  it.each<[string, Record<string, unknown>, (pool: string) => Response | Promise<Response>]>([
    [
      "its heartbeat joins the job's team pool",
      { placement: { pool: "team-a" } },
      (pool) => send(pool, 0, "POST", "/nodes/n1/heartbeat", { node_id: "n1", status: "online", pools: ["team-a"] }),
    ],
    [
      "it registers again with a GPU",
      { resources: { gpuPerTask: 1 } },
      (pool) => send(pool, 0, "POST", "/nodes/register", registration("n1", {}, 1)),
    ],
  ])("a held claim gets waiting work the moment %s, not at the end of its hold", async (_, spec, change) => {
    const { pool, submit, claim } = await setUp(["n1"]);
    await submit(jobSpec({ type: "hyperparameter_search", parameters: { trials: [{}] } }, spec)); // n1 may not take it yet
    const started = Date.now();
    const held = claim("n1", 10);
    await sleep(100);
    expect((await change(pool)).status).toBe(200);
    expect(await json<Lease>(await held)).toMatchObject({ node_id: "n1", task_id: "trial-000" });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(await violations(pool)).toEqual([]);
  });

  it("a held-back node's held claim gets the task the moment an operator releases it", async () => {
    const { pool, submit, claim } = await setUp(["n1"]);
    await submit(searchJob(1));
    await runInDurableObject(await homeStub(pool, "n1"), (_o, state) => {
      state.storage.sql.exec("UPDATE nodes SET consecutive_failures = 5, held_until_ms = ?", Date.now() + 60_000);
    });
    const started = Date.now();
    const held = claim("n1", 10);
    await sleep(100);
    expect((await send(pool, 0, "POST", "/nodes/n1/release")).status).toBe(200);
    expect(await json<Lease>(await held)).toMatchObject({ node_id: "n1", task_id: "trial-000" });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("a held claim answers 204, never 5xx, when the object restarts under it", async () => {
    const { pool, submit, claim } = await setUp(["n1"]);
    const held = claim("n1", 1);
    await sleep(100);
    await abortAllDurableObjects();
    const r = await held;
    expect(r.status).toBe(204);
    // The pool serves on: the next claim gets the next task.
    await submit(searchJob(1));
    expect(await json<Lease>(await claim("n1", 0))).toMatchObject({ task_id: "trial-000" });
    expect(await violations(pool)).toEqual([]);
  });
});
