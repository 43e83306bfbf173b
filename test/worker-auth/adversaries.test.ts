// Verified results against hostile nodes (docs/protocol.md §14 "Against adversaries"),
// with tokens enforced: each test is the move a node that wants a wrong
// answer accepted, or trust it did not earn, would make with what its
// credential can read and send, and the pool's answer.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { WireLease } from "../../src/pool/leases/leases";
import type { Lease } from "../../src/protocol/tasks";
import { TRUST_AFTER_VALID } from "../../src/rules/verification";
import {
  delivered,
  expireLeases,
  freshPool,
  homeStub,
  jobStub,
  json,
  sha256,
  storedObjects,
  trialsJob,
} from "../worker/helpers";
import { violations } from "../worker/invariants";
import { claimWithDraw as claimDrawn } from "./draws";
import { call, claim, register, submitJob, upload } from "./nodes";

type Task = { task_id: string; state: string; attempts: number; max_attempts: number; node_id: string | null };

function replicatedJob(labels: Record<string, string>, extra: Record<string, unknown> = {}) {
  const spec = trialsJob(1);
  return { ...spec, ...extra, metadata: { ...spec.metadata, labels: { "flashml.dev/replicas": "2", ...labels } } };
}

async function setUp(nodes: string[], labels: Record<string, string> = {}) {
  const pool = freshPool();
  for (const n of nodes) await register(pool, n);
  const job = (await submitJob(pool, replicatedJob(labels))).job_id;
  return { pool, job, task: `jobs/${job}/trial-000` };
}

async function take(pool: string, nodeId: string): Promise<Lease> {
  const r = await claim(pool, nodeId);
  expect(r.status, `${nodeId} claims`).toBe(200);
  return json<Lease>(r);
}

async function commit(pool: string, lease: Lease, bytes: string) {
  const r = await call(
    pool,
    "POST",
    `/attempts/${lease.lease_id}/complete`,
    { output_sha256: await sha256(bytes) },
    lease.node_id,
  );
  return json<{ accepted: boolean; detail?: string }>(r);
}

async function finish(pool: string, lease: Lease, bytes: string) {
  expect(
    (await upload(pool, `${lease.payload.output_prefix as string}metrics.json`, bytes, lease.node_id)).status,
  ).toBe(200);
  return commit(pool, lease, bytes);
}

/** Gives a node a record of verified results long enough to run tasks alone. */
async function trust(pool: string, nodeId: string, consecutive = TRUST_AFTER_VALID) {
  return runInDurableObject(await homeStub(pool, nodeId), (_o, state) => {
    state.storage.sql.exec("UPDATE nodes SET consecutive_valid = ? WHERE node_id = ?", consecutive, nodeId);
  });
}

/** A claim in the pool with the spot check's draw fixed (below the rate a check, above it none): its lease. */
async function claimWithDraw(pool: string, job: string, nodeId: string, draw: number): Promise<Lease> {
  const r = await claimDrawn(pool, job, nodeId, draw);
  if (!r.ok) throw new Error(`${nodeId} got no lease: ${r.reason}`);
  return r.lease as WireLease as unknown as Lease;
}

/** The node's record at its home, once every shard has delivered what its work there did to it. */
async function node(pool: string, nodeId: string) {
  await delivered(pool);
  return runInDurableObject(await homeStub(pool, nodeId), (_o, state) =>
    state.storage.sql
      .exec<{ consecutive_valid: number; distrusted: string | null; held_until_ms: number; verdicts: string }>(
        "SELECT consecutive_valid, distrusted, held_until_ms, verdicts FROM nodes WHERE node_id = ?",
        nodeId,
      )
      .one(),
  );
}

async function taskOf(pool: string, job: string, nodeId?: string): Promise<Task> {
  return (await json<Task[]>(await call(pool, "GET", `/jobs/${job}/tasks`, undefined, nodeId)))[0]!;
}

describe("copying another replica's output", () => {
  it("is refused: before the verdict another replica's output does not exist for a node, listed or read", async () => {
    const { pool, job, task } = await setUp(["n1", "n2"]);
    const first = await take(pool, "n1");
    const second = await take(pool, "n2");
    expect(await finish(pool, first, '{"loss": 0.31}')).toEqual({ accepted: true });

    // The copier lists the job's artifacts and reads what it finds, or guesses the key.
    const listed = await json<Array<{ key: string }>>(
      await call(pool, "GET", `/jobs/${job}/artifacts`, undefined, "n2"),
    );
    expect(listed.map((a) => a.key)).not.toContain(`${task}/r1/metrics.json`);
    const read = await call(pool, "GET", `/artifacts/${task}/r1/metrics.json`, undefined, "n2");
    expect(read.status).toBe(404);
    expect(await read.json()).toEqual({ detail: `no artifact at ${task}/r1/metrics.json` });
    // Its own output, and the operator, see what is there.
    expect((await call(pool, "GET", `/artifacts/${task}/r1/metrics.json`, undefined, "n1")).status).toBe(200);
    const all = await json<Array<{ key: string }>>(await call(pool, "GET", `/jobs/${job}/artifacts`));
    expect(all.map((a) => a.key)).toEqual([`${task}/r1/metrics.json`]);

    // The copier makes up its own answer; with no copy it disagrees, and a third node settles it.
    expect(await finish(pool, second, '{"loss": 0.99}')).toEqual({ accepted: true });
    expect((await taskOf(pool, job)).state).toBe("PENDING");
    await register(pool, "n3");
    expect(await finish(pool, await take(pool, "n3"), '{"loss": 0.31}')).toEqual({ accepted: true });
    // After the verdict the task key serves the agreed object to every reader.
    expect(await (await call(pool, "GET", `/artifacts/${task}/metrics.json`, undefined, "n2")).json()).toEqual({
      loss: 0.31,
    });
    expect((await call(pool, "GET", `/artifacts/${task}/r3/metrics.json`, undefined, "n2")).status).toBe(200);
    expect(await violations(pool)).toEqual([]);
  });
});

describe("dodging spot checks", () => {
  /** Everything n1's credential can read about its task and pool, with ids and times made comparable. */
  async function whatN1Sees(pool: string, job: string, lease: Lease) {
    const read = async (path: string) => (await call(pool, "GET", path, undefined, "n1")).text();
    const views = {
      lease: JSON.stringify({ ...lease, lease_id: "", deadline: "", job_id: "" }),
      job: await read(`/jobs/${job}`),
      jobs: await read("/jobs"),
      tasks: await read(`/jobs/${job}/tasks`),
      events: await read(`/jobs/${job}/events`),
      placement: await read(`/jobs/${job}/tasks/trial-000/placement`),
      dashboard: await read("/dashboard"),
      fleet: await read("/nodes/summary"),
      metrics: (await read("/metrics"))
        .split("\n")
        .filter((l) => /tasks|leases/.test(l))
        .join("\n"),
      nodes: await read("/nodes"),
    };
    const same = (text: string) =>
      text
        .replaceAll(job, "JOB")
        .replaceAll(pool, "POOL")
        .replace(/ls-[0-9a-f]{12}/g, "LEASE")
        .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, "TIME")
        .replace(/"(seconds_left|last_heartbeat_age_s|bytes|used_fraction)":[\d.e-]+/g, '"$1":N')
        .replace(/flashedge_storage_bytes\S* \d+/g, "");
    return Object.fromEntries(Object.entries(views).map(([k, v]) => [k, same(v)]));
  }

  it("a trusted node reads the same whether its task runs alone or is checked, before and after the check is claimed", async () => {
    const solo = await setUp(["n1", "n2"]);
    const checked = await setUp(["n1", "n2"]);
    for (const p of [solo.pool, checked.pool]) await trust(p, "n1");
    const alone = await claimWithDraw(solo.pool, solo.job, "n1", 0.99);
    const spot = await claimWithDraw(checked.pool, checked.job, "n1", 0);
    // The operator sees the difference: one replica wanted, or two.
    const wanted = async (p: string, j: string) =>
      (await json<{ replicas: { wanted: number } }>(await call(p, "GET", `/jobs/${j}/tasks/trial-000/placement`)))
        .replicas.wanted;
    expect([await wanted(solo.pool, solo.job), await wanted(checked.pool, checked.job)]).toEqual([1, 2]);

    const seesAlone = await whatN1Sees(solo.pool, solo.job, alone);
    expect(await whatN1Sees(checked.pool, checked.job, spot)).toEqual(seesAlone);
    // n2 takes the check in one pool and stays idle in the other.
    await take(checked.pool, "n2");
    expect((await claim(solo.pool, "n2")).status).toBe(204);
    const after = await whatN1Sees(checked.pool, checked.job, spot);
    for (const view of ["lease", "job", "jobs", "tasks", "events", "placement", "metrics", "fleet"]) {
      expect(after[view], view).toEqual((await whatN1Sees(solo.pool, solo.job, alone))[view]);
    }
    // The dashboard shows one lease per task and no replica numbers to a node.
    const dashboard = await json<{ leases: { items: Array<{ replica: number }> }; counts: { leases_live: number } }>(
      await call(checked.pool, "GET", "/dashboard", undefined, "n1"),
    );
    expect([dashboard.counts.leases_live, dashboard.leases.items.map((l) => l.replica)]).toEqual([1, [0]]);
  });

  // The rows a commit writes, and the R2 reads of a checked output, differ when its task is checked
  // (docs/protocol.md §16): what the pool's work costs is an operator's to read, never a node's.
  it("a node reading the metrics finds no cost counter to tell a check by; the operator finds them", async () => {
    const { pool, job } = await setUp(["n1", "n2"]);
    await trust(pool, "n1");
    await claimWithDraw(pool, job, "n1", 0);
    const asNode = await (await call(pool, "GET", "/metrics", undefined, "n1")).text();
    expect(asNode).toMatch(/^flashedge_tasks\{/m);
    expect(asNode).not.toMatch(/flashedge_sql_rows|flashedge_r2_operations/);
    const asOperator = await (await call(pool, "GET", "/metrics")).text();
    expect(asOperator).toMatch(/^flashedge_sql_rows_written_total\{[^}]*\} [1-9]/m);
    expect(asOperator).toMatch(/^flashedge_r2_operations_total\{[^}]*class="A"\} \d+$/m);
  });

  it("the replication decision is made once: a check that is failed is not re-drawn as a solo run", async () => {
    const { pool, job } = await setUp(["n1", "n2", "n3"]);
    for (const n of ["n1", "n2"]) await trust(pool, n);
    const checked = await claimWithDraw(pool, job, "n1", 0);
    expect((await call(pool, "POST", `/attempts/${checked.lease_id}/fail`, { reason: "dodge" }, "n1")).status).toBe(
      200,
    );
    // The next trusted claimer draws "alone", but the task still wants two.
    await claimWithDraw(pool, job, "n2", 0.99);
    expect((await taskOf(pool, job)).state).toBe("PENDING");
    expect((await take(pool, "n3")).payload.output_prefix).toBe(`jobs/${job}/trial-000/r3/`);
  });

  it("a task decided to run alone is replicated in full when an untrusted node takes it over", async () => {
    const { pool, job } = await setUp(["n1", "n2", "n3"]);
    await trust(pool, "n1");
    const alone = await claimWithDraw(pool, job, "n1", 0.99);
    expect((await call(pool, "POST", `/attempts/${alone.lease_id}/fail`, { reason: "gone" }, "n1")).status).toBe(200);
    await take(pool, "n2");
    expect((await taskOf(pool, job)).state).toBe("PENDING");
    expect((await claim(pool, "n3")).status).toBe(200);
  });

  it("abandoning a replica, by failing it or letting it expire, ends the node's run of valid results", async () => {
    const failed = await setUp(["n1", "n2"]);
    await trust(failed.pool, "n1");
    const lease = await take(failed.pool, "n1");
    await call(failed.pool, "POST", `/attempts/${lease.lease_id}/fail`, { reason: "suspected a check" }, "n1");
    expect((await node(failed.pool, "n1")).consecutive_valid).toBe(0);

    const expired = await setUp(["n1", "n2"]);
    await trust(expired.pool, "n1");
    await take(expired.pool, "n1");
    // Its deadline passes and the pool's alarm (in the job's shard) expires it.
    await expireLeases(expired.pool);
    expect((await node(expired.pool, "n1")).consecutive_valid).toBe(0);
  });

  it("invalid output for a replica ends the run too", async () => {
    const { pool } = await setUp(["n1", "n2"]);
    await trust(pool, "n1");
    const lease = await take(pool, "n1");
    expect((await commit(pool, lease, '{"never": "uploaded"}')).accepted).toBe(false);
    expect((await node(pool, "n1")).consecutive_valid).toBe(0);
  });
});

describe("the lie threshold", () => {
  it("a node outvoted 3 times in its last 20 verdicts is held back and never again runs a task alone until released", async () => {
    const pool = freshPool();
    for (const n of ["cheat", "h1", "h2"]) await register(pool, n);
    for (let round = 0; round < 3; round++) {
      const job = (await submitJob(pool, replicatedJob({}))).job_id;
      const leases = [await take(pool, "cheat"), await take(pool, "h1")];
      await finish(pool, leases[0]!, '{"loss": 0}');
      await finish(pool, leases[1]!, `{"loss": ${round + 1}}`);
      await finish(pool, await take(pool, "h2"), `{"loss": ${round + 1}}`);
      expect((await taskOf(pool, job)).state).toBe("COMPLETED");
      // Outvoted twice is not yet distrust.
      if (round < 2) expect((await node(pool, "cheat")).distrusted).toBeNull();
    }
    const cheat = await node(pool, "cheat");
    expect(cheat.distrusted).toBe("lost 3 of its last 3 verdicts");
    expect(cheat.held_until_ms).toBeGreaterThan(Date.now());
    const last = (await submitJob(pool, replicatedJob({}))).job_id;
    expect((await claim(pool, "cheat")).status).toBe(204);
    const listed = await json<Array<{ node_id: string; distrusted: string | null }>>(await call(pool, "GET", "/nodes"));
    expect(listed.find((n) => n.node_id === "cheat")?.distrusted).toBe("lost 3 of its last 3 verdicts");
    // The operator sees the refusal on the dashboard too.
    const dashboard = await json<{ nodes: { items: Array<{ node_id: string; distrusted: string | null }> } }>(
      await call(pool, "GET", "/dashboard"),
    );
    expect(dashboard.nodes.items.find((n) => n.node_id === "cheat")?.distrusted).toBe("lost 3 of its last 3 verdicts");

    // Past its hold it works again, but with a long record it still never runs alone.
    await runInDurableObject(await homeStub(pool, "cheat"), (_o, state) => {
      state.storage.sql.exec("UPDATE nodes SET held_until_ms = 0, consecutive_valid = 1000 WHERE node_id = 'cheat'");
    });
    await claimWithDraw(pool, last, "cheat", 0.99);
    const wanted = await runInDurableObject(
      jobStub(pool, last),
      (_o, state) =>
        state.storage.sql
          .exec<{ wanted: number }>("SELECT wanted FROM tasks WHERE job_id = ? ORDER BY seq DESC LIMIT 1", last)
          .one().wanted,
    );
    expect(wanted).toBe(2);
    // An operator's release lifts the distrust.
    expect((await call(pool, "POST", "/nodes/cheat/release")).status).toBe(200);
    expect((await node(pool, "cheat")).distrusted).toBeNull();
  });
});

describe("a sleeper, honest until trusted", () => {
  it("is distrusted the first time a spot check outvotes it: held back, and never alone again until released", async () => {
    const pool = freshPool();
    for (const n of ["n1", "n2", "n3"]) await register(pool, n);
    await trust(pool, "n1");
    const job = (await submitJob(pool, replicatedJob({}))).job_id;
    // n1 turns bad once trusted; the task it drew is a spot check, so two honest nodes judge it.
    const checked = await claimWithDraw(pool, job, "n1", 0);
    await finish(pool, checked, '{"loss": 0}');
    await finish(pool, await take(pool, "n2"), '{"loss": 1}');
    await finish(pool, await take(pool, "n3"), '{"loss": 1}');
    const sleeper = await node(pool, "n1");
    expect(sleeper.distrusted).toBe(
      `outvoted while trusted to run tasks alone (after ${TRUST_AFTER_VALID} verified results in a row)`,
    );
    expect(sleeper.held_until_ms).toBeGreaterThan(Date.now());
    expect(sleeper.consecutive_valid).toBe(0);
  });
});

describe("the judged bytes are the served bytes", () => {
  it("a replica key rebound after its commit changes nothing: the verdict binds the object it judged, which stays", async () => {
    const { pool, task } = await setUp(["n1", "n2"]);
    const [a, b] = [await take(pool, "n1"), await take(pool, "n2")];
    await finish(pool, a, '{"loss": 0.5}');
    const judged = await storedObjects(pool);
    // Bytes under a's key are replaced after a's commit (an operator may write anywhere).
    expect((await upload(pool, `${task}/r1/metrics.json`, '{"loss": 0.5, "x": 1}')).status).toBe(200);
    await finish(pool, b, '{"loss": 0.5}');
    expect(await (await call(pool, "GET", `/artifacts/${task}/metrics.json`, undefined, "n2")).json()).toEqual({
      loss: 0.5,
    });
    // The judged object was never deleted.
    expect(await storedObjects(pool)).toEqual(expect.arrayContaining(judged));
  });
});

describe("exact comparison", () => {
  it("a duplicate key is invalid output: the commit is refused and the attempt requeued", async () => {
    const { pool } = await setUp(["n1", "n2"]);
    const lease = await take(pool, "n1");
    expect(await finish(pool, lease, '{"loss": 999, "loss": 0.25}')).toEqual({
      accepted: false,
      detail: "output validation failed; attempt requeued",
    });
  });

  it("integers past 2^53 that differ do not agree", async () => {
    const { pool, job } = await setUp(["n1", "n2"]);
    await finish(pool, await take(pool, "n1"), '{"steps": 9007199254740993}');
    await finish(pool, await take(pool, "n2"), '{"steps": 9007199254740992}');
    expect((await taskOf(pool, job)).state).toBe("PENDING");
  });

  it("values near zero agree within flashml.dev/tolerance-abs beside a relative tolerance", async () => {
    const { pool, job } = await setUp(["n1", "n2"], {
      "flashml.dev/tolerance": "0.01",
      "flashml.dev/tolerance-abs": "0.001",
    });
    await finish(pool, await take(pool, "n1"), '{"bias": 0.0001}');
    await finish(pool, await take(pool, "n2"), '{"bias": -0.0002}');
    expect((await taskOf(pool, job)).state).toBe("COMPLETED");
  });
});

describe("attempts as submitted", () => {
  it("max_attempts reads as submitted and replicas use none of it", async () => {
    const pool = freshPool();
    for (const n of ["n1", "n2"]) await register(pool, n);
    const spec = replicatedJob({});
    const job = (
      await submitJob(pool, {
        ...spec,
        spec: { ...spec.spec, retryPolicy: { maxTaskAttempts: 2, retryWorkerLoss: true } },
      })
    ).job_id;
    const [a, b] = [await take(pool, "n1"), await take(pool, "n2")];
    expect([a.attempt_number, b.attempt_number]).toEqual([1, 1]);
    expect((await taskOf(pool, job)).max_attempts).toBe(2);
    // One failure: the next replica is attempt 2, and a second failure exhausts the task.
    await call(pool, "POST", `/attempts/${a.lease_id}/fail`, { reason: "x" }, "n1");
    await register(pool, "n3");
    const c = await take(pool, "n3");
    expect(c.attempt_number).toBe(2);
    await call(pool, "POST", `/attempts/${c.lease_id}/fail`, { reason: "x" }, "n3");
    expect((await taskOf(pool, job)).state).toBe("FAILED");
  });
});
