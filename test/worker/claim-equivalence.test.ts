// The class-indexed claim against the rule it implements (SPEC §4 queue
// order, issue 8): for generated queues and nodes, the object's claim leases
// exactly the task a one-by-one scan would — the earliest-inserted PENDING
// task (of the claim's job, when named) that `eligible` accepts for the node.
// The scan reads the stored rows and runs the pure gate on each stored
// payload; it shares no code with the claim but `eligible`.
//
// The generated payloads (exclude_nodes, type confusions) are ones no JobSpec
// produces, so they are queued inside the object with the pool's own insert.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { NodeRegistrationSchema } from "../../src/protocol/nodes";
import type { TaskSpec } from "../../src/protocol/tasks";
import { claimView, eligible } from "../../src/rules/placement";
import { Rng } from "../fixtures/rng";
import { freshPool, insertTasks, stub, task } from "./helpers";

// Values per gate key, well-formed ones first and more likely; the rest are
// the type confusions the gate must refuse (and the class key must not merge).
const VALUES: Record<string, { good: readonly unknown[]; bad: readonly unknown[] }> = {
  argv: { good: [["python", "-c", "pass"], null, []], bad: ["ls"] },
  module: { good: ["flashml_workloads.sklearn_trial", null, false], bad: [] },
  local_inputs: {
    good: [["ds-a"], ["ds-b"], ["ds-a", "ds-b"], ["ds-b", "ds-a", "ds-a"], [], null],
    bad: ["ds-a", [1], [true], [["ds-a"]]],
  },
  gpus: { good: [1, 2, 0, null], bad: [true, "1", 1.5, -1, [1]] },
  exclude_nodes: { good: [["n0"], ["n1", "n0"], [], null, [""], ["n3", "n2"]], bad: ["n0", [7]] },
  pool: { good: ["team-a", "team-b", null], bad: ["", 5, ["team-a"]] },
  isolation: {
    good: [
      {},
      null,
      { tier: "standard" },
      { tier: "sandboxed" },
      { allowFallback: false, tier: "Sandboxed" },
      { tier: "sandboxed", allowFallback: true },
      { allowFallback: true },
      { tier: "", allowFallback: "true" },
      { tier: "gvisor" },
    ],
    bad: ["sandboxed", ["standard"]],
  },
};

function generatePayload(rng: Rng, i: number): Record<string, unknown> {
  const entries: [string, unknown][] = [
    ["params", { seed: i }],
    ["output_prefix", `out/${i}/`],
  ];
  for (const [key, { good, bad }] of Object.entries(VALUES)) {
    if (!rng.chance(0.3)) continue;
    entries.push([key, bad.length > 0 && rng.chance(0.15) ? rng.pick(bad) : rng.pick(good)]);
  }
  // Key order must not matter: shuffle it.
  return Object.fromEntries(rng.shuffle(entries));
}

function generateRegistration(rng: Rng, nodeId: string) {
  return NodeRegistrationSchema.parse({
    node_id: nodeId,
    kubernetes_node: "",
    hostname: `${nodeId}.local`,
    capabilities: {
      gpus: Array.from({ length: rng.between(0, 2) }, (_, index) => ({ index })),
      pools: rng.pick([[], ["team-a"], ["team-b", "team-a"]]),
    },
    sandbox_capable: rng.chance(0.4),
    argv_capable: rng.chance(0.4),
    module_capable: rng.chance(0.85),
    unsandboxed_argv_capable: rng.chance(0.3),
    local_datasets: rng.pick([[], ["ds-a"], ["ds-b", "ds-a"]]),
  });
}

type Pending = { job_id: string; task_id: string; payload: string };

/**
 * The reference: the first PENDING task in insertion order the gate accepts;
 * when there is none, a claim restricted to a job with no PENDING or LEASED
 * task is told the job is closed (nothing will come), any other "nothing".
 */
async function referenceClaim(pool: string, nodeId: string, jobId: string | null) {
  return runInDurableObject(stub(pool), (_o, state) => {
    const sql = state.storage.sql;
    const view = claimView(
      JSON.parse(
        sql.exec<{ registration: string }>("SELECT registration FROM nodes WHERE node_id = ?", nodeId).one()
          .registration,
      ),
    );
    const pending = sql
      .exec<Pending>("SELECT job_id, task_id, payload FROM tasks WHERE state = 'PENDING' ORDER BY seq")
      .toArray()
      .filter((t) => jobId === null || t.job_id === jobId);
    const index = pending.findIndex((t) => eligible(JSON.parse(t.payload), view));
    const open =
      jobId === null ||
      sql
        .exec<{ state: string }>("SELECT state FROM tasks WHERE job_id = ?", jobId)
        .toArray()
        .some((t) => t.state === "PENDING" || t.state === "LEASED");
    return {
      task: index < 0 ? null : { job_id: pending[index]!.job_id, task_id: pending[index]!.task_id },
      reason: index >= 0 ? null : open ? "nothing" : "job_closed",
      skipped: Math.max(0, index),
    };
  });
}

const JOBS = ["job-a", "job-b", "job-c"];
const NODES = ["n0", "n1", "n2", "n3", ""];

describe("the class-indexed claim", () => {
  it("leases exactly the task a one-by-one scan of the queue would, for generated queues and nodes", async () => {
    const tally = { claims: 0, leased: 0, none: 0, closed: 0, skippedAhead: 0, requeuedReleased: 0, byJob: 0 };
    for (let seed = 1; seed <= 16; seed++) {
      const rng = new Rng(seed);
      const pool = freshPool();
      const object = stub(pool);
      for (const nodeId of NODES) await object.register(generateRegistration(rng, nodeId));

      let inserted = 0;
      const addBatch = async (n: number) => {
        const batch: TaskSpec[] = [];
        for (let k = 0; k < n; k++, inserted++) {
          batch.push(
            task(
              rng.pick(JOBS),
              `t${String(inserted).padStart(3, "0")}`,
              generatePayload(rng, inserted) as TaskSpec["payload"],
            ),
          );
        }
        await insertTasks(pool, batch);
      };
      await addBatch(rng.between(20, 40));

      for (let step = 0; step < 36; step++) {
        if (rng.chance(0.1)) await addBatch(rng.between(1, 8));
        const nodeId = rng.pick(NODES);
        const jobId = rng.chance(0.6) ? null : rng.chance(0.9) ? rng.pick(JOBS) : "no-such-job";
        const expected = await referenceClaim(pool, nodeId, jobId);
        const result = await object.claim(nodeId, jobId);
        const got = result.ok ? { job_id: result.lease.job_id, task_id: result.lease.task_id } : null;
        expect(got, `seed ${seed}, step ${step}: claim by '${nodeId}' with job ${jobId}`).toEqual(expected.task);
        if (!result.ok) expect(result.reason, `seed ${seed}, step ${step}`).toBe(expected.reason);

        tally.claims++;
        if (!result.ok) {
          tally.none++;
          if (result.reason === "job_closed") tally.closed++;
          continue;
        }
        tally.leased++;
        if (expected.skipped > 0) tally.skippedAhead++;
        if (jobId !== null) tally.byJob++;
        if (result.lease.attempt_number > 1) tally.requeuedReleased++;
        // Requeue often, so failed tasks come back at their old place.
        if (rng.chance(0.45))
          expect((await object.failLease(result.lease.lease_id, "generated failure", null)).ok).toBe(true);
      }
    }
    // The comparison above only means something if every path was exercised.
    expect(tally.leased).toBeGreaterThan(tally.claims * 0.3);
    expect(tally.none).toBeGreaterThan(tally.claims * 0.05);
    // Both refusals: a job with nothing open, and nothing this node may take yet.
    expect(tally.closed).toBeGreaterThan(5);
    expect(tally.none - tally.closed).toBeGreaterThan(5);
    expect(tally.skippedAhead).toBeGreaterThan(20);
    expect(tally.requeuedReleased).toBeGreaterThan(10);
    expect(tally.byJob).toBeGreaterThan(20);
  });

  it("stores payloads with the same gate-relevant values in any key order under one class row", async () => {
    const pool = freshPool();
    const a = {
      module: "m",
      gpus: 1,
      local_inputs: ["ds-b", "ds-a"],
      exclude_nodes: ["n1", "n0"],
      pool: "team-a",
      isolation: { tier: "sandboxed", allowFallback: true },
      params: { lr: 0.1 },
    };
    const b = JSON.parse(
      '{"isolation": {"allowFallback": true, "tier": "sandboxed"}, "params": {"lr": 0.2}, "pool": "team-a",' +
        ' "exclude_nodes": ["n0", "n1", "n0"], "local_inputs": ["ds-a", "ds-b"], "gpus": 1.0, "module": "other"}',
    ) as Record<string, unknown>;
    const apart = { ...a, gpus: 2 };
    await insertTasks(pool, [
      task("j", "a", a as TaskSpec["payload"]),
      task("j", "b", b as TaskSpec["payload"]),
      task("j", "apart", apart as TaskSpec["payload"]),
    ]);
    const rows = await runInDurableObject(stub(pool), (_o, state) => ({
      tasks: Object.fromEntries(
        state.storage.sql
          .exec<{ task_id: string; class_id: number }>("SELECT task_id, class_id FROM tasks")
          .toArray()
          .map((r) => [r.task_id, r.class_id]),
      ),
      classes: state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM classes").one().n,
    }));
    expect(rows.tasks.a).toBe(rows.tasks.b);
    expect(rows.tasks.apart).not.toBe(rows.tasks.a);
    expect(rows.classes).toBe(2);
  });

  it("never stores two payloads the gate tells apart in one class, on the generated queues and nodes", async () => {
    const rng = new Rng(99);
    const pool = freshPool();
    const object = stub(pool);
    // A registration holds every field of the claim-time view.
    const views = Array.from({ length: 40 }, () => generateRegistration(rng, rng.pick(NODES)));
    await insertTasks(
      pool,
      Array.from({ length: 300 }, (_, i) => task("j", `t${i}`, generatePayload(rng, i) as TaskSpec["payload"])),
    );
    const rows = await runInDurableObject(object, (_o, state) =>
      state.storage.sql.exec<{ class_id: number; payload: string }>("SELECT class_id, payload FROM tasks").toArray(),
    );
    const answers = new Map<number, string>();
    for (const row of rows) {
      const payload: unknown = JSON.parse(row.payload);
      const answer = views.map((view) => (eligible(payload, view) ? "1" : "0")).join("");
      const first = answers.get(row.class_id);
      if (first === undefined) answers.set(row.class_id, answer);
      else expect(answer, `seed ${rng.seed}, class ${row.class_id}: ${row.payload}`).toBe(first);
    }
    // Enough classes for the check to bite.
    expect(answers.size).toBeGreaterThan(30);
  });
});
