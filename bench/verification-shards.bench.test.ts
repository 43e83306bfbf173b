// Verification benchmark at S shards (issue 40): the fleet of
// bench/verification.bench.test.ts, honest nodes and cheaters alike, runs a
// replicated job through the real Worker, with tokens enforced, on a pool of
// BENCH_POOL_SHARDS shards (the driver binds FLASHML_POOL_SHARDS and the
// tokens). Each node reads only what its own credential can: its counts (to
// know when it is trusted), the job's tasks as its sealed view shows them
// (dodgers) and other replicas' outputs (copycats). Time is real, so a
// held-back cheater stays held back for the rest of a run, where the
// one-object bench lets simulated hours pass; adaptive replication only
// (fixed replication draws need the one-object bench's injected draw). The
// figures are read from the shards' tables at the end, summed, with the
// same queries as the one-object bench. Never run by `npm test`; the Node
// driver is bench/verification.mjs --shards 4.

import { runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { it } from "vitest";
import { shardStub } from "../src/pool/address";
import type { Lease } from "../src/protocol/tasks";
import { QUORUM_LABEL, REPLICAS_LABEL, TRUST_AFTER_VALID } from "../src/rules/verification";
import { jobSpec } from "../test/fixtures/jobspec";
import { registration } from "../test/fixtures/registration";
import { type Adversary, fleet, generator, shuffle } from "./verification-fleet";

const settings = env as unknown as Record<string, string | undefined>;
const SHARDS = Number(settings.BENCH_POOL_SHARDS || 4);
const NODES = Number(settings.BENCH_NODES || 100);
const TASKS = Number(settings.BENCH_TASKS || 1000);
const RATES = (settings.BENCH_CHEATERS || "0.01").split(",").map(Number);
const SOMETIMES = Number(settings.BENCH_SOMETIMES || 0.2);
const SEED = Number(settings.BENCH_SEED || 17);
const ADVERSARIES = (settings.BENCH_ADVERSARIES || "mixed,copycat,dodger,sleeper").split(",") as Adversary[];
const REPLICAS = 2;
/** Rounds in a row that lease nothing while tasks are open before a run gives up (a retry window, a hold). */
const IDLE_ROUNDS = 50;
const OPERATOR = "tok-ops";

/** One request through the Worker as the holder of `token`. */
async function send(pool: string, token: string, method: string, path: string, body?: unknown) {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  let payload: BodyInit | undefined;
  // Bytes, not a string: an upload needs its Content-Length.
  if (typeof body === "string") payload = new TextEncoder().encode(body);
  else if (body !== undefined) {
    headers["content-type"] = "application/json";
    payload = JSON.stringify(body);
  }
  return exports.default.fetch(
    new Request(`http://x/pools/${pool}/v1alpha1${path}`, { method, headers, body: payload }),
  );
}

async function ok<T>(r: Response, what: string): Promise<T> {
  if (r.status >= 300) throw new Error(`${what}: ${r.status} ${await r.text()}`);
  return (await r.json()) as T;
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The task's true metrics object: what every honest run returns. */
const truth = (taskId: string) => JSON.stringify({ task: taskId, accuracy: 0.5 });
const tokenOf = (nodeId: string) => `tok-${nodeId}`;

async function scenario(rate: number, adversary: Adversary) {
  const pool = `verify${SHARDS}-${adversary}-${crypto.randomUUID().slice(0, 8)}`;
  const random = generator(SEED);
  const behaviour = fleet(NODES, rate, adversary);
  const nodes = [...behaviour.keys()];
  for (const nodeId of nodes)
    await ok(await send(pool, tokenOf(nodeId), "POST", "/nodes/register", registration(nodeId)), `register ${nodeId}`);
  const spec = jobSpec(
    { type: "hyperparameter_search", parameters: { trials: Array.from({ length: TASKS }, () => ({})) } },
    {},
    "verify",
  );
  const labelled = {
    ...spec,
    metadata: { ...spec.metadata, labels: { [REPLICAS_LABEL]: String(REPLICAS), [QUORUM_LABEL]: String(REPLICAS) } },
  };
  const { job_id: jobId } = await ok<{ job_id: string }>(
    await send(pool, OPERATOR, "POST", "/jobs", labelled),
    "submit",
  );

  // What a node can count of itself (GET /nodes, its own row): trusted after TRUST_AFTER_VALID valid results since its last invalid one.
  const sinceInvalid = new Map<string, { invalid: number; validAt: number }>();
  let counts = new Map<string, { valid_results: number; invalid_results: number }>();
  const readCounts = async () => {
    const rows = await ok<Array<{ node_id: string; valid_results: number; invalid_results: number }>>(
      await send(pool, OPERATOR, "GET", `/nodes?limit=${NODES}`),
      "nodes",
    );
    counts = new Map(rows.map((r) => [r.node_id, r]));
  };
  const trustedByItsCount = (nodeId: string) => {
    const now = counts.get(nodeId) ?? { valid_results: 0, invalid_results: 0 };
    const mark = sinceInvalid.get(nodeId);
    if (!mark || mark.invalid !== now.invalid_results)
      sinceInvalid.set(nodeId, { invalid: now.invalid_results, validAt: now.valid_results });
    return now.valid_results - sinceInvalid.get(nodeId)!.validAt >= TRUST_AFTER_VALID;
  };
  const replicaOf = (lease: Lease) => Number(/\/r(\d+)\/$/.exec(lease.payload.output_prefix as string)?.[1] ?? 0);
  // Copycats read any other replica's output their credential is shown.
  const copied = async (lease: Lease) => {
    for (let k = 1; k <= REPLICAS + 2; k++) {
      if (k === replicaOf(lease)) continue;
      const r = await send(
        pool,
        tokenOf(lease.node_id),
        "GET",
        `/artifacts/jobs/${jobId}/${lease.task_id}/r${k}/metrics.json`,
      );
      if (r.status === 200) return await r.text();
      await r.body?.cancel();
    }
    return null;
  };
  // Dodgers look for any sign of a check in their own view of the job's tasks.
  const looksChecked = async (lease: Lease) => {
    if (replicaOf(lease) > 1 || lease.attempt_number > 1) return true;
    const tasks = await ok<Array<{ task_id: string; state: string; node_id: string | null }>>(
      await send(pool, tokenOf(lease.node_id), "GET", `/jobs/${jobId}/tasks`),
      "tasks",
    );
    const row = tasks.find((t) => t.task_id === lease.task_id);
    return row?.state !== "LEASED" || row.node_id !== null;
  };

  let leases = 0;
  let ended = 0;
  let rounds = 0;
  let idle = 0;
  const started = Date.now();
  for (;;) {
    rounds++;
    const out: Lease[] = [];
    for (const nodeId of shuffle([...nodes], random)) {
      const r = await send(pool, tokenOf(nodeId), "POST", "/leases/claim", { node_id: nodeId });
      if (r.status === 200) out.push((await r.json()) as Lease);
      else await r.body?.cancel();
    }
    leases += out.length;
    if (out.length === 0) {
      const job = await ok<{ state: string }>(await send(pool, OPERATOR, "GET", `/jobs/${jobId}`), "job");
      if (job.state !== "RUNNING" && job.state !== "PENDING") break;
      if (++idle >= IDLE_ROUNDS) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
      continue;
    }
    idle = 0;
    if (adversary === "sleeper" || adversary === "dodger") await readCounts();
    for (const lease of shuffle(out, random)) {
      const kind = behaviour.get(lease.node_id)!;
      const made = () => JSON.stringify({ task: lease.task_id, accuracy: random() });
      let metrics = truth(lease.task_id);
      if (kind === "always" || (kind === "sometimes" && random() < SOMETIMES)) metrics = made();
      if (kind === "copycat") metrics = (await copied(lease)) ?? made();
      if (kind === "sleeper" && trustedByItsCount(lease.node_id)) metrics = made();
      if (kind === "dodger" && trustedByItsCount(lease.node_id) && !(await looksChecked(lease))) metrics = made();
      const token = tokenOf(lease.node_id);
      const key = `${lease.payload.output_prefix as string}metrics.json`;
      // A lease can end before its commit (its task decided, or its node cut off): the node drops that work.
      const put = await send(pool, token, "PUT", `/artifacts/${key}`, metrics);
      if (put.status === 403 || put.status === 410) {
        ended++;
        await put.body?.cancel();
        continue;
      }
      await ok(put, `upload ${key}`);
      const done = await send(pool, token, "POST", `/attempts/${lease.lease_id}/complete`, {
        output_sha256: await sha256(metrics),
      });
      if (done.status === 410) {
        ended++;
        await done.body?.cancel();
        continue;
      }
      await ok(done, `commit ${lease.lease_id}`);
    }
  }

  // The figures, from every shard's tables, as the one-object bench reads its one.
  const totals = { completed: 0, failed: 0, open: 0, single: 0, wrong: 0 };
  for (let k = 0; k < SHARDS; k++) {
    const part = await runInDurableObject(shardStub(env, [], pool, k), (_o, state) => {
      const sql = state.storage.sql;
      const count = (q: string) => sql.exec<{ n: number }>(q).one().n;
      let wrong = 0;
      for (const r of sql.exec<{ task_id: string; value: string }>(
        `SELECT t.task_id, r.value FROM tasks t JOIN replica_results r ON r.object = t.accepted_object
         WHERE t.state = 'COMPLETED'`,
      ))
        if (r.value !== truth(r.task_id)) wrong++;
      return {
        completed: count("SELECT COUNT(*) AS n FROM tasks WHERE state = 'COMPLETED'"),
        failed: count("SELECT COUNT(*) AS n FROM tasks WHERE state = 'FAILED'"),
        open: count("SELECT COUNT(*) AS n FROM tasks WHERE state IN ('PENDING', 'LEASED')"),
        single: count("SELECT COUNT(*) AS n FROM tasks WHERE state = 'COMPLETED' AND wanted = 1"),
        wrong,
      };
    });
    for (const key of Object.keys(totals) as Array<keyof typeof totals>) totals[key] += part[key];
  }
  const rows = await ok<
    Array<{ node_id: string; valid_results: number; invalid_results: number; held_until: string | null }>
  >(await send(pool, OPERATOR, "GET", `/nodes?limit=${NODES}`), "nodes");
  const cheaterRows = rows.filter((r) => behaviour.get(r.node_id) !== "honest");
  const now = Date.now();
  return {
    mode: "adaptive",
    adversary,
    shards: SHARDS,
    cheater_rate: rate,
    nodes: NODES,
    cheaters: cheaterRows.map((r) => ({
      node_id: r.node_id,
      behaviour: behaviour.get(r.node_id),
      valid_results: r.valid_results,
      invalid_results: r.invalid_results,
      held_back: r.held_until !== null && Date.parse(r.held_until) > now,
    })),
    tasks: TASKS,
    sometimes_wrong: SOMETIMES,
    replicas: REPLICAS,
    rounds,
    leases,
    leases_ended_before_commit: ended,
    leases_per_accepted_task: Math.round((leases / totals.completed) * 1000) / 1000,
    completed: totals.completed,
    failed: totals.failed,
    open: totals.open,
    completed_alone: totals.single,
    wrong_accepted: totals.wrong,
    wrong_fraction: totals.wrong / totals.completed,
    honest_invalid_results: rows
      .filter((r) => behaviour.get(r.node_id) === "honest")
      .reduce((sum, r) => sum + r.invalid_results, 0),
    simulated_hours: 0,
    ms: Date.now() - started,
  };
}

it("verification at S shards: replicas per accepted task and wrong results accepted", {
  timeout: 1_800_000,
}, async () => {
  for (const adversary of ADVERSARIES)
    for (const rate of RATES) console.log(`BENCH ${JSON.stringify(await scenario(rate, adversary))}`);
});
