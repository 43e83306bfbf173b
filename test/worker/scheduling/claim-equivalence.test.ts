// The claim against the rule it implements (docs/protocol.md §4 gate, §13 policy): for
// generated queues, jobs at several priorities and tenants, and nodes that
// fail often, the object's claim leases exactly the task a brute-force
// reading of the stored rows picks — the highest priority; its tenant with
// the lowest (pass, turn, name); that tenant's job with the lowest (pass,
// turn, insertion); that job's earliest PENDING task the gate accepts and
// the node has not failed in the last 60 s, unless no other idle node
// (online, holding no live lease) that has not failed it could take it. A
// held-back node gets nothing. The reference reads the stored passes (their
// arithmetic is the fairness test's), runs the pure gate on each stored
// payload, and shares no code with the claim but `eligible`.
//
// The generated payloads (exclude_nodes, type confusions) are ones no JobSpec
// produces, so they are queued inside the object with the pool's own insert.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { NodeRegistrationSchema } from "../../../src/protocol/nodes";
import type { TaskSpec } from "../../../src/protocol/tasks";
import { eligible, nodeView } from "../../../src/rules/placement";
import { Rng } from "../../fixtures/rng";
import { freshPool, insertTasks, stub, task } from "../helpers";

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

type Row = Record<string, string | number | null>;

/** The policy's answer, computed by brute force from the stored rows. */
async function referenceClaim(pool: string, nodeId: string, jobId: string | null) {
  return runInDurableObject(stub(pool), (_o, state) => {
    const sql = state.storage.sql;
    const now = Date.now();
    const all = (query: string) => sql.exec<Row>(query).toArray();
    const nodes = all("SELECT node_id, registration, status, live_until_ms, held_until_ms FROM nodes");
    const me = nodes.find((n) => n.node_id === nodeId)!;
    if ((me.held_until_ms as number) > now)
      return { task: null, reason: "held_back", skipped: 0, elsewhere: false, passed: 0 };
    const view = (n: Row) => nodeView(JSON.parse(n.registration as string));
    // A failure counts for the retry-elsewhere window (60 s by default) after it.
    const failures = all("SELECT task_seq, node_id, failed_ms FROM task_failures");
    const failed = (seq: unknown, node: unknown) =>
      failures.some((f) => f.task_seq === seq && f.node_id === node && (f.failed_ms as number) > now - 60_000);
    const busy = new Set(all("SELECT node_id FROM leases WHERE status = 'live'").map((l) => l.node_id));
    const pending = all("SELECT seq, job_id, task_id, payload FROM tasks WHERE state = 'PENDING' ORDER BY seq");
    const shares = all("SELECT priority, tenant, pass, turn FROM tenant_shares");
    const share = (q: Row) => shares.find((s) => s.priority === q.priority && s.tenant === q.tenant)!;
    const cmp = (a: unknown, b: unknown) => ((a as number | string) < (b as number | string) ? -1 : a === b ? 0 : 1);
    const queues = all("SELECT rowid AS id, job_id, priority, tenant, pass, turn FROM job_queues")
      .filter((q) => (jobId === null || q.job_id === jobId) && pending.some((t) => t.job_id === q.job_id))
      .sort(
        (a, b) =>
          cmp(b.priority, a.priority) ||
          cmp(share(a).pass, share(b).pass) ||
          cmp(share(a).turn, share(b).turn) ||
          cmp(a.tenant, b.tenant) ||
          cmp(a.pass, b.pass) ||
          cmp(a.turn, b.turn) ||
          cmp(a.id, b.id),
      );
    const anotherCould = (t: Row) =>
      nodes.some(
        (n) =>
          n.node_id !== nodeId &&
          (n.live_until_ms as number) > now &&
          n.status === "online" &&
          (n.held_until_ms as number) <= now &&
          !busy.has(n.node_id) &&
          !failed(t.seq, n.node_id) &&
          eligible(JSON.parse(t.payload as string), view(n)),
      );
    let elsewhere = false;
    let passed = 0; // jobs ahead of the answer in claim order with nothing for this node
    for (const q of queues) {
      for (const t of pending.filter((t) => t.job_id === q.job_id)) {
        if (!eligible(JSON.parse(t.payload as string), view(me))) continue;
        if (failed(t.seq, nodeId) && anotherCould(t)) {
          elsewhere = true;
          continue;
        }
        // How many eligible tasks queued earlier the policy passed over.
        const skipped = pending.filter(
          (p) => (p.seq as number) < (t.seq as number) && eligible(JSON.parse(p.payload as string), view(me)),
        ).length;
        return { task: { job_id: t.job_id, task_id: t.task_id }, reason: null, skipped, elsewhere, passed };
      }
      passed++;
    }
    const open =
      jobId === null ||
      all(`SELECT state FROM tasks WHERE job_id = '${jobId}'`).some(
        (t) => t.state === "PENDING" || t.state === "LEASED",
      );
    return { task: null, reason: open ? "nothing" : "job_closed", skipped: 0, elsewhere, passed };
  });
}

/** Jobs and where they stand: two tenants at priority 0, one job above them. */
const PLACES: Record<string, { priority: number; tenant: string }> = {
  "job-a": { priority: 0, tenant: "team-a" },
  "job-b": { priority: 0, tenant: "team-b" },
  "job-c": { priority: 0, tenant: "team-a" },
  "job-d": { priority: 3, tenant: "team-b" },
};
/** 40 jobs over 3 priorities and 4 tenants: enough that a claim walks past more jobs than a page holds. */
function manyPlaces(rng: Rng): Record<string, { priority: number; tenant: string }> {
  return Object.fromEntries(
    Array.from({ length: 40 }, (_, i) => [
      `job-${String(i).padStart(2, "0")}`,
      { priority: rng.pick([0, 0, 1, 5]), tenant: rng.pick(["t1", "t2", "t3", "t4"]) },
    ]),
  );
}
const NODES = ["n0", "n1", "n2", "n3", ""];

describe("the policy claim", () => {
  it("leases exactly the task a brute-force reading of the policy picks, for generated queues and nodes", async () => {
    const tally = {
      claims: 0,
      leased: 0,
      none: 0,
      closed: 0,
      held: 0,
      skippedAhead: 0,
      elsewhere: 0,
      requeuedReleased: 0,
      byJob: 0,
      walkedFar: 0,
    };
    for (let seed = 1; seed <= 24; seed++) {
      const rng = new Rng(seed);
      // Seeds past 16 spread the queue over many jobs.
      const places = seed <= 16 ? PLACES : manyPlaces(rng);
      const JOBS = Object.keys(places);
      const pool = freshPool();
      const object = stub(pool);
      for (const nodeId of NODES) await object.register(generateRegistration(rng, nodeId));
      // Each job's queue, made before its tasks (as a submission makes it).
      await runInDurableObject(object, (_o, state) => {
        for (const job of JOBS) {
          const { priority, tenant } = places[job]!;
          state.storage.sql.exec(
            "INSERT INTO job_queues (job_id, priority, tenant) VALUES (?, ?, ?)",
            job,
            priority,
            tenant,
          );
        }
      });

      let inserted = 0;
      const addBatch = async (n: number) => {
        const batch: TaskSpec[] = [];
        for (let k = 0; k < n; k++, inserted++) {
          const job = rng.pick(JOBS);
          const payload = generatePayload(rng, inserted);
          // With many jobs, those above priority 0 ask for more GPUs than any node
          // has: every claim passes over them first.
          if (seed > 16 && places[job]!.priority > 0) payload.gpus = 8;
          batch.push(task(job, `t${String(inserted).padStart(3, "0")}`, payload as TaskSpec["payload"]));
        }
        await insertTasks(pool, batch);
      };
      await addBatch(seed <= 16 ? rng.between(20, 40) : rng.between(80, 120));

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
        if (expected.elsewhere) tally.elsewhere++;
        if (expected.passed >= 16) tally.walkedFar++;
        if (!result.ok) {
          tally.none++;
          if (result.reason === "job_closed") tally.closed++;
          if (result.reason === "held_back") tally.held++;
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
    // Every refusal: a job with nothing open, a held-back node, nothing this node may take yet.
    expect(tally.closed).toBeGreaterThan(5);
    expect(tally.held).toBeGreaterThan(5);
    expect(tally.none - tally.closed - tally.held).toBeGreaterThan(5);
    // The policy, not queue order, chose; and retries went elsewhere.
    expect(tally.skippedAhead).toBeGreaterThan(20);
    expect(tally.elsewhere).toBeGreaterThan(10);
    expect(tally.requeuedReleased).toBeGreaterThan(10);
    expect(tally.byJob).toBeGreaterThan(20);
    // Claims that passed over a page's worth of jobs (16) with nothing for the node.
    expect(tally.walkedFar).toBeGreaterThan(5);
  }, 30_000);

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
