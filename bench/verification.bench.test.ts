// Verification benchmark (issue 17): a simulated fleet with cheating nodes
// runs replicated tasks through the pool's own claim, bind and commit
// (src/pool/*, the functions the object's methods call), in one pool
// object with real SQLite storage. Measured per scenario: the work overhead
// (leases issued per accepted task) and the fraction of accepted results
// that are wrong, with fixed replication (every task replicated: every draw
// is a spot check) and adaptive replication (docs/protocol.md §14). Never run by
// `npm test`; the Node driver is bench/verification.mjs.
//
// The fleet: honest nodes always return the task's true metrics object;
// always-wrong cheaters return a made-up one every time; sometimes-wrong
// cheaters a made-up one with probability BENCH_SOMETIMES (else the truth).
// Cheaters do not collude: each made-up object is their own. The
// adversaries of docs/protocol.md §14 "Against adversaries" each fill the cheaters'
// places in a scenario of their own: copycats copy any other replica's
// output they can read (else make one up); dodgers, once trusted, make up
// the results of leases nothing they can read marks as checked (another
// replica before theirs, their task not shown as theirs alone) and are
// honest on the rest; sleepers are honest until trusted, then always wrong.
// "Trusted" is what a node can count itself: TRUST_AFTER_VALID valid
// results (GET /nodes) since its last invalid one. Each round
// every node asks for work once, then every lease out is committed, in a
// random order; the rounds go on until no task is open. Every draw comes
// from one seeded generator, so a run is reproducible.

import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { it } from "vitest";
import { bind, readArtifact } from "../src/pool/artifacts/artifacts";
import { uploadStarted } from "../src/pool/artifacts/collection";
import { DEFAULT_PLACE, jobTasks } from "../src/pool/jobs/jobs";
import { claim, commit, type WireLease } from "../src/pool/leases/leases";
import { registerNode } from "../src/pool/nodes/registry";
import { JobSpecSchema } from "../src/protocol/jobs";
import { TRUST_AFTER_VALID } from "../src/rules/verification";
import { jobSpec } from "../test/fixtures/jobspec";
import { registration, trialTask } from "./in-workerd";
import { type Adversary, fleet, generator, shuffle } from "./verification-fleet";

const settings = env as unknown as Record<string, string | undefined>;
const QUICK = settings.BENCH_QUICK === "1";
const NODES = Number(settings.BENCH_NODES || (QUICK ? 100 : 200));
const TASKS = Number(settings.BENCH_TASKS || (QUICK ? 1000 : 10_000));
const RATES = (settings.BENCH_CHEATERS || "0.01,0.05").split(",").map(Number);
const SOMETIMES = Number(settings.BENCH_SOMETIMES || 0.2);
const REPLICAS = 2;
const SEED = Number(settings.BENCH_SEED || 17);
/** Simulated time per round, a task's run: holds (docs/protocol.md §13) are measured against it, not the bench's speed. */
const ROUND_MS = 60_000;

const SPEC = JobSpecSchema.parse(jobSpec({ type: "hyperparameter_search", parameters: {} }, {}, "verify"));

const ADVERSARIES = (settings.BENCH_ADVERSARIES || "mixed,copycat,dodger,sleeper").split(",") as Adversary[];

/** The task's true metrics object: what every honest run returns. */
const truth = (taskId: string) => JSON.stringify({ loss: Number(taskId.slice(-6)) / 1000, accuracy: 0.5 });

async function scenario(mode: "fixed" | "adaptive", rate: number, adversary: Adversary) {
  const pool = `verify-${mode}-${rate}-${adversary}-${crypto.randomUUID().slice(0, 8)}`;
  const stub = env.POOL.get(env.POOL.idFromName(pool));
  const jobId = "verifyjob001";
  const tasks = Array.from({ length: TASKS }, (_, i) => trialTask(jobId, i));
  const replication = { replicas: REPLICAS, quorum: REPLICAS, tolerance: 0, toleranceAbs: 0 };
  const submitted = await stub.submitJob(jobId, SPEC, tasks, pool, { ...DEFAULT_PLACE, replication });
  if (!submitted.ok) throw new Error(`submit: ${submitted.reason}`);
  return runInDurableObject(stub, (_o, state) => {
    const sql = state.storage.sql;
    const random = generator(SEED);
    // Fixed replication: every draw is a spot check, so no task ever runs alone.
    const claimDraw = mode === "fixed" ? () => 0 : random;
    const behaviour = fleet(NODES, rate, adversary);
    for (const nodeId of behaviour.keys())
      state.storage.transactionSync(() => registerNode(sql, Date.now(), registration(nodeId, 0)));
    const nodes = [...behaviour.keys()];
    // What a node can read and count, as its credential would (the sealed views, docs/protocol.md §14).
    const own = (nodeId: string) =>
      sql
        .exec<{ valid_results: number; invalid_results: number }>(
          "SELECT valid_results, invalid_results FROM nodes WHERE node_id = ?",
          nodeId,
        )
        .one();
    const sinceInvalid = new Map<string, { invalid: number; validAt: number }>();
    const trustedByItsCount = (nodeId: string) => {
      const now = own(nodeId);
      const mark = sinceInvalid.get(nodeId);
      if (!mark || mark.invalid !== now.invalid_results)
        sinceInvalid.set(nodeId, { invalid: now.invalid_results, validAt: now.valid_results });
      return now.valid_results - sinceInvalid.get(nodeId)!.validAt >= TRUST_AFTER_VALID;
    };
    const replicaOf = (lease: WireLease) => Number(/\/r(\d+)\/$/.exec(lease.payload.output_prefix as string)?.[1] ?? 0);
    const copied = (lease: WireLease) => {
      for (let k = 1; k <= REPLICAS + 2; k++) {
        if (k === replicaOf(lease)) continue;
        const row = readArtifact(sql, `jobs/${jobId}/${lease.task_id}/r${k}/metrics.json`, lease.node_id);
        const value =
          row &&
          sql.exec<{ value: string }>("SELECT value FROM replica_results WHERE object = ?", row.object).toArray()[0];
        if (value) return value.value;
      }
      return null;
    };
    const looksChecked = (lease: WireLease) => {
      if (replicaOf(lease) > 1 || lease.attempt_number > 1) return true;
      const row = jobTasks(sql, now, jobId, lease.node_id).find((t) => t.task_id === lease.task_id);
      return row?.state !== "LEASED" || row.node_id !== null;
    };
    let objects = 0;
    let rounds = 0;
    const started = Date.now();
    let now = started;
    for (; ; now += ROUND_MS) {
      rounds++;
      const out: WireLease[] = [];
      for (const nodeId of shuffle([...nodes], random)) {
        const r = state.storage.transactionSync(() => claim(sql, now, nodeId, null, { random: claimDraw }));
        if (r.ok) out.push(r.lease);
      }
      if (out.length === 0) break;
      for (const lease of shuffle(out, random)) {
        const kind = behaviour.get(lease.node_id)!;
        const made = () => JSON.stringify({ loss: random(), accuracy: 0.99 });
        let metrics = truth(lease.task_id);
        if (kind === "always" || (kind === "sometimes" && random() < SOMETIMES)) metrics = made();
        if (kind === "copycat") metrics = copied(lease) ?? made();
        if (kind === "sleeper" && trustedByItsCount(lease.node_id)) metrics = made();
        if (kind === "dodger" && trustedByItsCount(lease.node_id) && !looksChecked(lease)) metrics = made();
        const object = `obj-${++objects}`;
        const sha = objects.toString(16).padStart(64, "0");
        const key = `${lease.payload.output_prefix as string}metrics.json`;
        const bound = state.storage.transactionSync(() => {
          uploadStarted(sql, now, object);
          return bind(sql, now, key, { object, sha256: sha, size_bytes: metrics.length, etag: sha }, lease.node_id);
        });
        if (!bound.ok) throw new Error(`bind ${key}: ${bound.detail}`);
        const outcome = state.storage.transactionSync(() =>
          commit(sql, now + ROUND_MS / 2, lease.lease_id, sha, { object, metrics }, null, lease.node_id),
        );
        if (outcome.status !== "accepted") throw new Error(`commit ${lease.lease_id}: ${outcome.status}`);
      }
    }
    const count = (q: string) => sql.exec<{ n: number }>(q).one().n;
    const completed = count("SELECT COUNT(*) AS n FROM tasks WHERE state = 'COMPLETED'");
    const failed = count("SELECT COUNT(*) AS n FROM tasks WHERE state = 'FAILED'");
    const open = count("SELECT COUNT(*) AS n FROM tasks WHERE state IN ('PENDING', 'LEASED')");
    // The object each completed task accepted is its first winning replica's.
    let wrong = 0;
    for (const r of sql.exec<{ task_id: string; value: string }>(
      `SELECT t.task_id, r.value FROM tasks t JOIN replica_results r ON r.object = t.accepted_object
       WHERE t.state = 'COMPLETED'`,
    )) {
      if (r.value !== truth(r.task_id)) wrong++;
    }
    const leases = count("SELECT COUNT(*) AS n FROM leases");
    const single = count("SELECT COUNT(*) AS n FROM tasks WHERE state = 'COMPLETED' AND wanted = 1");
    const cheaterRows = sql
      .exec<{ node_id: string; valid_results: number; invalid_results: number; held_until_ms: number }>(
        "SELECT node_id, valid_results, invalid_results, held_until_ms FROM nodes",
      )
      .toArray()
      .filter((r) => behaviour.get(r.node_id) !== "honest");
    const honestInvalid = count(
      `SELECT COALESCE(SUM(invalid_results), 0) AS n FROM nodes WHERE node_id NOT IN (${cheaterRows.map((r) => `'${r.node_id}'`).join(",")})`,
    );
    return {
      mode,
      adversary,
      cheater_rate: rate,
      nodes: NODES,
      cheaters: cheaterRows.map((r) => ({
        node_id: r.node_id,
        behaviour: behaviour.get(r.node_id),
        valid_results: r.valid_results,
        invalid_results: r.invalid_results,
        held_back: r.held_until_ms > now,
      })),
      tasks: TASKS,
      sometimes_wrong: SOMETIMES,
      replicas: REPLICAS,
      rounds,
      leases,
      leases_per_accepted_task: Math.round((leases / completed) * 1000) / 1000,
      completed,
      failed,
      open,
      completed_alone: single,
      wrong_accepted: wrong,
      wrong_fraction: wrong / completed,
      honest_invalid_results: honestInvalid,
      simulated_hours: Math.round((rounds * ROUND_MS) / 360_000) / 10,
      ms: Date.now() - started,
    };
  });
}

it("verification: replicas per accepted task and wrong results accepted", { timeout: 1_800_000 }, async () => {
  for (const adversary of ADVERSARIES) {
    for (const rate of RATES) {
      // Fixed replication is the baseline for the first mix only: every task replicated costs the same whoever cheats.
      for (const mode of adversary === "mixed" ? (["fixed", "adaptive"] as const) : (["adaptive"] as const)) {
        console.log(`BENCH ${JSON.stringify(await scenario(mode, rate, adversary))}`);
      }
    }
  }
});
