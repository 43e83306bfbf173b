// The placement report of a replicated task (docs/protocol.md §11, §14), as an operator
// reads it: its replicas, and the pool's replica rule beside the gate.
// Replicated jobs need identities, so this runs with tokens enforced; what a
// node reads of the same report is in adversaries.test.ts.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { claim as claimInPool } from "../../src/pool/leases/leases";
import type { Lease } from "../../src/protocol/tasks";
import { TRUST_AFTER_VALID } from "../../src/rules/verification";
import type { Report } from "../fixtures/placement-report";
import { freshPool, json, sha256, stub, trialsJob } from "../worker/helpers";
import { call, claim, register, submitJob, upload } from "./nodes";

async function placement(pool: string, jobId: string, taskId: string) {
  return call(pool, "GET", `/jobs/${encodeURIComponent(jobId)}/tasks/${encodeURIComponent(taskId)}/placement`);
}

describe("placement of a replicated task", () => {
  /** A one-trial job with these replication labels, on these nodes. */
  async function replicatedJob(labels: Record<string, string>, nodes: string[]) {
    const pool = freshPool();
    for (const n of nodes) await register(pool, n);
    const spec = trialsJob(1);
    const job = await submitJob(pool, { ...spec, metadata: { ...spec.metadata, labels } });
    const report = async () => json<Report>(await placement(pool, job.job_id, "trial-000"));
    return { pool, job: job.job_id, report };
  }

  async function take(pool: string, nodeId: string): Promise<Lease> {
    const r = await claim(pool, nodeId);
    expect(r.status, `${nodeId} claims`).toBe(200);
    return json<Lease>(r);
  }

  /** A replica uploads `metrics` under its own prefix and commits it; answers the output's sha256. */
  async function finish(pool: string, lease: Lease, metrics: unknown): Promise<string> {
    const bytes = JSON.stringify(metrics);
    expect(
      (await upload(pool, `${lease.payload.output_prefix as string}metrics.json`, bytes, lease.node_id)).status,
    ).toBe(200);
    const hash = await sha256(bytes);
    const r = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, { output_sha256: hash }, lease.node_id);
    expect(await json(r)).toEqual({ accepted: true });
    return hash;
  }

  const REFUSAL = "each replica runs on a different node";

  it("before any replica is out, every node is eligible and the report shows the replication wanted", async () => {
    const { report } = await replicatedJob({ "flashml.dev/replicas": "2" }, ["n1", "n2"]);
    expect(await report()).toMatchObject({
      state: "PENDING",
      nodes: [
        { node_id: "n1", eligible: true },
        { node_id: "n2", eligible: true },
      ],
      unplaceable: false,
      summary: "2/2 nodes eligible",
      waiting: "next in line",
      replicas: { wanted: 2, quorum: 2, items: [] },
    });
  });

  it("a node holding a replica is refused by the replica rule, and the task waits for another node", async () => {
    const { pool, report } = await replicatedJob({ "flashml.dev/replicas": "2" }, ["n1", "n2", "n3"]);
    await take(pool, "n1");
    const r = await report();
    expect(r.state).toBe("PENDING");
    expect(r.nodes).toEqual([
      {
        node_id: "n1",
        online: true,
        status: "online",
        eligible: false,
        gate: "replica",
        reason: `replica: holds replica 1 of this task; ${REFUSAL}`,
      },
      { node_id: "n2", online: true, status: "online", eligible: true },
      { node_id: "n3", online: true, status: "online", eligible: true },
    ]);
    expect(r.summary).toBe("2/3 nodes eligible: 1 × replica (holds or ran a replica of this task)");
    expect(r.waiting).toBe("waits for a node that has not run a replica of it (n1 holds or ran one)");
    expect(r.replicas).toEqual({
      wanted: 2,
      quorum: 2,
      items: [{ replica: 1, node_id: "n1", owner: "n1", state: "live", output_sha256: null, verdict: null }],
      owners: { eligible: 3, needed: 2, short: false },
    });
    // The claim path agrees: n1 gets nothing, an eligible node gets replica 2.
    expect((await claim(pool, "n1")).status).toBe(204);
    expect((await take(pool, "n2")).payload.output_prefix).toMatch(/\/r2\/$/);
  });

  it("shows each replica's hash and verdict: pending until a quorum, then valid or invalid", async () => {
    const { pool, job, report } = await replicatedJob({ "flashml.dev/replicas": "2" }, ["n1", "n2", "n3"]);
    const [a, b] = [await take(pool, "n1"), await take(pool, "n2")];
    const honest = await finish(pool, a, { accuracy: 0.71 });
    const cheat = await finish(pool, b, { accuracy: 0.99 });

    // 1:1 is no quorum: a third replica is wanted, from the one node that has run none.
    const waiting = await report();
    expect(waiting).toMatchObject({
      state: "PENDING",
      unplaceable: false,
      summary: "1/3 nodes eligible: 2 × replica (holds or ran a replica of this task)",
      waiting: "waits for a node that has not run a replica of it (n1, n2 hold or ran one)",
      replicas: {
        wanted: 3,
        quorum: 2,
        items: [
          { replica: 1, node_id: "n1", owner: "n1", state: "completed", output_sha256: honest, verdict: "pending" },
          { replica: 2, node_id: "n2", owner: "n2", state: "completed", output_sha256: cheat, verdict: "pending" },
        ],
      },
    });
    expect(waiting.nodes.map((n) => [n.node_id, n.gate ?? "eligible", n.reason ?? ""])).toEqual([
      ["n1", "replica", `replica: ran replica 1 of this task; ${REFUSAL}`],
      ["n2", "replica", `replica: ran replica 2 of this task; ${REFUSAL}`],
      ["n3", "eligible", ""],
    ]);

    await finish(pool, await take(pool, "n3"), { accuracy: 0.71 });
    const done = await report();
    expect(done).toMatchObject({ job_id: job, state: "COMPLETED", queue: null, waiting: null });
    expect(done.replicas).toEqual({
      wanted: 3,
      quorum: 2,
      items: [
        { replica: 1, node_id: "n1", owner: "n1", state: "completed", output_sha256: honest, verdict: "valid" },
        { replica: 2, node_id: "n2", owner: "n2", state: "completed", output_sha256: cheat, verdict: "invalid" },
        { replica: 3, node_id: "n3", owner: "n3", state: "completed", output_sha256: honest, verdict: "valid" },
      ],
      owners: { eligible: 3, needed: 3, short: false },
    });
  });

  it("a node that failed its replica is named once, as one that ran it, and never gets the task back", async () => {
    const { pool, report } = await replicatedJob({ "flashml.dev/replicas": "2" }, ["n1", "n2", "n3"]);
    const a = await take(pool, "n1");
    expect((await call(pool, "POST", `/attempts/${a.lease_id}/fail`, { reason: "OOM" }, "n1")).status).toBe(200);
    const r = await report();
    expect(r.queue?.failed_on).toEqual(["n1"]);
    expect(r.nodes[0]).toMatchObject({
      eligible: false,
      gate: "replica",
      reason: `replica: ran replica 1 of this task; ${REFUSAL}`,
    });
    expect(r.waiting).toBe("waits for a node that has not run a replica of it (n1 holds or ran one)");
    expect(r.replicas?.items).toEqual([
      { replica: 1, node_id: "n1", owner: "n1", state: "failed", output_sha256: null, verdict: null },
    ]);
  });

  it("a pending replica no registered node may run is unplaceable, and flagged short of distinct owners", async () => {
    const { pool, report } = await replicatedJob({ "flashml.dev/replicas": "2" }, ["n1"]);
    await take(pool, "n1");
    expect(await report()).toMatchObject({
      state: "PENDING",
      unplaceable: true,
      summary:
        "0/1 nodes eligible: 1 × replica (holds or ran a replica of this task); " +
        "only 1 distinct owner can run its replicas, 2 needed",
      replicas: { owners: { eligible: 1, needed: 2, short: true } },
    });
  });

  it("the gate's own refusal comes first: a node the gate refuses is reported by that gate", async () => {
    const { pool, report } = await replicatedJob({ "flashml.dev/replicas": "2" }, ["n1", "n2"]);
    await take(pool, "n1");
    // n1 now says it cannot run modules (a trial is a module task): the gate refuses it before the replica rule.
    await runInDurableObject(stub(pool), (_o, state) => {
      state.storage.sql.exec(
        "UPDATE nodes SET registration = json_set(registration, '$.module_capable', json('false')) WHERE node_id = 'n1'",
      );
    });
    const r = await report();
    expect(r.nodes[0]).toMatchObject({ node_id: "n1", eligible: false, gate: "module" });
    expect(r.summary).toBe("1/2 nodes eligible: 1 × module (node is not module_capable)");
  });

  it(`a task trusted to one replica (a node with ${TRUST_AFTER_VALID} valid results in a row) wants one, quorum 1`, async () => {
    const { pool, report } = await replicatedJob({ "flashml.dev/replicas": "3" }, ["trusted", "other"]);
    await runInDurableObject(stub(pool), (_o, state) => {
      const sql = state.storage.sql;
      sql.exec("UPDATE nodes SET consecutive_valid = ? WHERE node_id = 'trusted'", TRUST_AFTER_VALID);
      // A draw of 0.5 is no spot check.
      state.storage.transactionSync(() => claimInPool(sql, Date.now(), "trusted", null, { random: () => 0.5 }));
    });
    expect(await report()).toMatchObject({
      state: "LEASED",
      queue: null,
      waiting: null,
      replicas: { wanted: 1, quorum: 1, items: [{ replica: 1, node_id: "trusted", owner: "trusted", state: "live" }] },
    });
  });
});
