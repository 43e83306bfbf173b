// Test-side helpers: talk to the Worker over its real fetch handler, exactly
// as an agent would, and reach a pool's object for what HTTP cannot show.

import { createExecutionContext, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import app from "../../src/index";
import { shardStub } from "../../src/pool/address";
import { addTasks as queueTasks } from "../../src/pool/jobs/tasks";
import { ledgerAfter } from "../../src/pool/ledger/created";
import { lastRequests, passportsSeen } from "../../src/pool/nodes/liveness";
import { settleLiveness } from "../../src/pool/nodes/registry";
import type { PoolObject } from "../../src/pool/object";
import type { TaskSpec } from "../../src/protocol/tasks";
import { parsePoolShards, shardCount } from "../../src/rules/pool-shards";
import { registryShard, shardOfId } from "../../src/rules/shard-ids";
import { registration } from "../fixtures/registration";

/** A fresh pool name per test, so tests never share state. */
export function freshPool(): string {
  return `t-${crypto.randomUUID().slice(0, 8)}`;
}

/** The pool's object; at several shards, shard 0: every node's home and the enrolment's. */
export function stub(pool: string) {
  return env.POOL.get(env.POOL.idFromName(pool));
}

/** How many shards this test project gives `pool` (FLASHML_POOL_SHARDS). */
export function shardsOf(pool: string): number {
  const rules = parsePoolShards(env.FLASHML_POOL_SHARDS);
  if (typeof rules === "string") throw new Error(rules);
  return shardCount(rules, pool);
}

/** Every shard of `pool`, shard 0 first. */
export function shardStubs(pool: string) {
  return Array.from({ length: shardsOf(pool) }, (_, k) => shardStub(env, [], pool, k));
}

/**
 * Which shard is node `nodeId`'s home (docs/sharding.md §4.2): the one that
 * holds its registration or enrolled credential, else where it would
 * register, its registry shard.
 */
export async function homeShardOf(pool: string, nodeId: string): Promise<number> {
  const shards = shardStubs(pool);
  if (shards.length === 1) return 0;
  const k = (await Promise.all(shards.map((s) => s.peer().livesHere(nodeId)))).indexOf(true);
  return k === -1 ? registryShard(nodeId, shards.length) : k;
}

/** Node `nodeId`'s home shard's stub. */
export async function homeStub(pool: string, nodeId: string) {
  return shardStubs(pool)[await homeShardOf(pool, nodeId)]!;
}

/**
 * `nodeIds` in the order GET /nodes lists them: by node_id at one shard; in
 * a pool of shards home by home, shard 0 first, by node_id within each
 * (docs/sharding.md §9), for nodes homed at their registry shards.
 */
export function inListOrder(pool: string, nodeIds: readonly string[]): string[] {
  const shards = shardsOf(pool);
  const keyed = nodeIds.map((id) => [shards === 1 ? 0 : registryShard(id, shards), id] as const);
  return keyed.sort(([a, x], [b, y]) => a - b || (x < y ? -1 : x > y ? 1 : 0)).map(([, id]) => id);
}

/** `name`, or `name-i` for the first i that makes it, a node id whose registry shard in `pool` is k. */
export function nodeIdAt(pool: string, name: string, k: number): string {
  const shards = shardsOf(pool);
  if (registryShard(name, shards) === k) return name;
  for (let i = 0; ; i++) if (registryShard(`${name}-${i}`, shards) === k) return `${name}-${i}`;
}

/** The shard that holds a job, its tasks, leases and events: the one its id names. */
export function shardOfJob(pool: string, jobId: string): number {
  return shardOfId(pool, jobId, "", shardsOf(pool)).shard;
}

export function jobStub(pool: string, jobId: string) {
  return shardStub(env, [], pool, shardOfJob(pool, jobId));
}

export function call(pool: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body);
    if (!(body instanceof Uint8Array)) (init.headers as Record<string, string>)["content-type"] = "application/json";
  }
  return exports.default.fetch(new Request(`http://flashedge.test/pools/${pool}/v1alpha1${path}`, init));
}

/** A request to the pool through the real Worker, with claims held up to `holdSeconds` (FLASHML_CLAIM_WAIT_SECONDS). */
export function callHolding(pool: string, holdSeconds: number, method: string, path: string, body?: unknown) {
  const init: RequestInit =
    body === undefined
      ? { method }
      : { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
  return app.fetch(
    new Request(`http://x/pools/${pool}/v1alpha1${path}`, init),
    { ...env, FLASHML_CLAIM_WAIT_SECONDS: String(holdSeconds) },
    createExecutionContext(),
  );
}

export async function json<T = Record<string, unknown>>(response: Response): Promise<T> {
  return (await response.json()) as T;
}

export async function register(pool: string, nodeId: string, extra: Record<string, unknown> = {}, gpus = 0) {
  const r = await call(pool, "POST", "/nodes/register", registration(nodeId, extra, gpus));
  if (r.status !== 200) throw new Error(`register ${nodeId}: ${r.status} ${await r.text()}`);
}

/** A TaskSpec for insertTasks: 3 attempts of 60-second leases unless `extra` says otherwise. */
export function task(
  jobId: string,
  taskId: string,
  payload: Record<string, unknown> = {},
  extra: Partial<TaskSpec> = {},
): TaskSpec {
  return {
    schema_version: "v1alpha1",
    task_id: taskId,
    job_id: jobId,
    payload,
    commit_key: `jobs/${jobId}/${taskId}/metrics.json`,
    max_attempts: 3,
    lease_seconds: 60,
    max_worker_losses: 0,
    ...extra,
  };
}

/**
 * Submits a JobSpec through POST /jobs, as a driver does, and answers its
 * record; anything but a 201 throws. This is how a test gets tasks.
 */
export async function submitJob<T extends { job_id: string } = { job_id: string; state: string }>(
  pool: string,
  spec: unknown,
  headers: Record<string, string> = {},
): Promise<T> {
  const r = await call(pool, "POST", "/jobs", spec, headers);
  if (r.status !== 201) throw new Error(`submit: ${r.status} ${await r.text()}`);
  return json<T>(r);
}

/**
 * Queues tasks inside the pool's object with the pool's own insert (the one
 * POST /jobs runs), in one transaction, with no job record. Only for
 * payloads and ids no JobSpec can produce — generated requirement values,
 * exclude_nodes, ids with spaces; ordinary tasks come from submitJob.
 * It bypasses the object's change(): no lease changes, so the alarm needs
 * nothing, but a claim held open (long-poll) is not woken by these tasks.
 */
export async function insertTasks(pool: string, tasks: TaskSpec[], options: { outputJson?: boolean } = {}) {
  // At several shards each job's tasks go to the shard its id names, as a submission's would.
  const byShard = Map.groupBy(tasks, (t) => shardOfJob(pool, t.job_id));
  for (const [k, inShard] of byShard) {
    const result = await runInDurableObject(shardStub(env, [], pool, k), (_o, state) =>
      state.storage.transactionSync(() =>
        queueTasks(state.storage.sql, Date.now(), inShard, { outputJson: options.outputJson ?? false }),
      ),
    );
    if (!result.ok) throw new Error(`insertTasks refused: ${JSON.stringify(result)}`);
  }
}

export async function claim(pool: string, nodeId: string, jobId?: string) {
  return call(
    pool,
    "POST",
    "/leases/claim",
    jobId === undefined ? { node_id: nodeId } : { node_id: nodeId, job_id: jobId },
  );
}

export async function sha256(bytes: Uint8Array | string): Promise<string> {
  const data = typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes;
  const digest = await crypto.subtle.digest("SHA-256", data);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

export function upload(pool: string, key: string, bytes: Uint8Array | string) {
  const data = typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes;
  return call(pool, "PUT", `/artifacts/${key}`, data);
}

/** Objects stored in R2 for a pool (the bytes behind its keys). */
export async function storedObjects(pool: string): Promise<string[]> {
  const listed = await env.ARTIFACTS.list({ prefix: `pools/${pool}/` });
  return listed.objects.map((o) => o.key);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Moves the deadline of live leases — all of the pool's, or only those in
 * `leaseIds` — to `deadlineMs` (by default just past), as if that much time
 * had gone by: leases are at least 5 seconds long and tests do not sleep
 * through them, as if issued with that deadline (the sweep looks at it
 * then: check_ms). Nothing else changes; the alarm stays where it was armed, so
 * only a sweep (a claim, a commit, or the alarm run by hand) expires them.
 */
export async function moveDeadlines(pool: string, options: { leaseIds?: string[]; deadlineMs?: number } = {}) {
  const deadline = options.deadlineMs ?? Date.now() - 1;
  for (const shard of shardStubs(pool)) {
    await runInDurableObject(shard, (_o, state) => {
      if (options.leaseIds === undefined) {
        state.storage.sql.exec("UPDATE leases SET deadline_ms = ?1, check_ms = ?1 WHERE status = 'live'", deadline);
        return;
      }
      for (const id of options.leaseIds) {
        state.storage.sql.exec(
          "UPDATE leases SET deadline_ms = ?1, check_ms = ?1 WHERE status = 'live' AND lease_id = ?2",
          deadline,
          id,
        );
      }
    });
  }
}

/**
 * Moves node `nodeId`'s last request `ms` into the past at its home: its row,
 * and what the home keeps in memory of it (soft liveness, docs/protocol.md
 * §16), which the home then writes down as its alarm does once the online
 * window after the request ends. Leases and other shards' passports are the caller's.
 */
export async function ageNode(pool: string, nodeId: string, ms: number): Promise<void> {
  await runInDurableObject(await homeStub(pool, nodeId), (_o, state) => {
    state.storage.sql.exec(
      "UPDATE nodes SET last_heartbeat_ms = last_heartbeat_ms - ?1, live_until_ms = live_until_ms - ?1 WHERE node_id = ?2",
      ms,
      nodeId,
    );
    const known = lastRequests(state.storage.sql);
    const node = known.get(nodeId);
    if (node !== undefined) {
      known.saw(nodeId, node.at - ms);
      known.heldElsewhere(nodeId, Math.max(0, node.elsewhere - ms), true);
    }
    state.storage.transactionSync(() => settleLiveness(state.storage.sql, Date.now()));
  });
}

/**
 * Moves what a shard saw of `nodeId` through its passport there `ms` into
 * the past: its last request here, row and memory (src/pool/nodes/liveness.ts),
 * and the deadline its home last heard of. Runs inside the shard object.
 */
export function agePassport(sql: SqlStorage, nodeId: string, ms: number): void {
  sql.exec(
    "UPDATE passports SET last_request_ms = last_request_ms - ?1, told_until_ms = told_until_ms - ?1 WHERE node_id = ?2",
    ms,
    nodeId,
  );
  const seen = passportsSeen(sql).get(nodeId);
  if (seen !== undefined) {
    seen.at = Math.max(0, seen.at - ms);
    seen.told = Math.max(0, seen.told - ms);
  }
}

/**
 * Brings the pool's summary up to date (docs/sharding.md §6): every shard
 * tells Σ what it holds now, then hears what the others told it, as the
 * ticks do within a second. For a test whose next step needs the whole
 * pool's state (the nodes just registered, say) at a shard other than its
 * own. Nothing at one shard.
 */
export async function summarized(pool: string): Promise<void> {
  const shards = shardStubs(pool);
  if (shards.length === 1) return;
  for (let round = 0; round < 2; round++) for (const shard of shards) await shard.peer().summaryChanged();
}

/**
 * Waits until every shard of `pool` has delivered the outcomes it owes other
 * shards' nodes (docs/sharding.md §8.2, §8.3): what a node did at one shard
 * is then in its home's record. At one shard there are none.
 */
export async function delivered(pool: string): Promise<void> {
  const shards = shardStubs(pool);
  if (shards.length === 1) return;
  for (let i = 0; i < 100; i++) {
    let owed = 0;
    for (const shard of shards)
      owed += await runInDurableObject(
        shard,
        (_o, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM outbox").one().n,
      );
    if (owed === 0) return;
    await sleep(20);
  }
  throw new Error(`pool ${pool}: outcomes still undelivered after 2 s`);
}

/**
 * Lets live leases (all, or only `leaseIds`) run out now and the pool's own
 * alarm expire them, exactly as when their deadline passes in production.
 * Answers whether an alarm was armed to run (on any shard).
 */
export async function expireLeases(pool: string, leaseIds?: string[]): Promise<boolean> {
  await moveDeadlines(pool, leaseIds === undefined ? {} : { leaseIds });
  let ran = false;
  for (const shard of shardStubs(pool)) ran = (await runDurableObjectAlarm(shard)) || ran;
  return ran;
}

/** A job's ledger straight from the object's tables (its event rows and its runs of TASK_CREATED): each event's type and data. */
export async function ledger(
  pool: string,
  jobId: string,
): Promise<Array<{ type: string; data: Record<string, unknown> }>> {
  return runInDurableObject(jobStub(pool, jobId), (_o, state) =>
    ledgerAfter(state.storage.sql, jobId, 0, 1_000_000).map((e) => ({
      type: e.type,
      data: JSON.parse(e.data) as Record<string, unknown>,
    })),
  );
}

export { commandJob, jobSpec, trialsJob } from "../fixtures/jobspec";
export { ARGV_NODE, registration } from "../fixtures/registration";

/** How the Worker addressed one pool object: its jurisdiction, name and location hint. */
export type Addressed = { jurisdiction: string | null; name: string; locationHint: string | null };

/** The real POOL namespace, recording how the Worker addresses it (jurisdictions are not run in workerd: recorded, then served plainly). */
export function recordingNamespace(addressed: Addressed[]) {
  const real = env.POOL;
  const within = (jurisdiction: string | null) => ({
    idFromName(name: string) {
      const id = real.idFromName(name);
      addressed.push({ jurisdiction, name, locationHint: null });
      return id;
    },
    get(id: DurableObjectId, options?: DurableObjectNamespaceGetDurableObjectOptions) {
      addressed.at(-1)!.locationHint = options?.locationHint ?? null;
      return real.get(id, options);
    },
  });
  return { ...within(null), jurisdiction: (j: string) => within(j) } as unknown as DurableObjectNamespace<PoolObject>;
}
