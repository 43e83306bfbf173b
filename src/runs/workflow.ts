// A hosted run's driver (docs/protocol.md §17): one Cloudflare Workflow
// instance per run, doing what the reference's run_fedavg and run_kmeans do
// (Zolli-Labs/flashml d5b29dd), each round in durable steps: submit the
// round's job, wait for its quorum, reduce the frozen participants'
// outputs with the reference's arithmetic (src/rules/fedavg.ts,
// src/rules/kmeans.ts), write the result where the reference writes it,
// and go on. Every step's outcome is recorded in the run's pool object
// first (src/pool/runs/calls.ts), so a step the engine runs again after a
// crash finds its work done: no round is submitted or aggregated twice.
//
// Two deliberate differences from the reference driver: the pool freezes
// the participants and cancels the round's other tasks the moment its
// quorum is met, and tells the run so with an event (src/pool/runs/tell.ts)
// instead of being polled. The run still looks for itself every LOOK_MS, in
// case an event is lost.

import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { shardStub } from "../pool/address";
import type { StoredObject } from "../pool/artifacts/artifacts";
import type { PoolObject } from "../pool/object";
import type { RoundState, RunRecord, RunToDrive } from "../pool/runs/calls";
import { roundEventType } from "../pool/runs/tell";
import { randomHex8, randomHex12 } from "../protocol/ids";
import { jobOfKey } from "../protocol/keys";
import type { RunRequest, RunRound } from "../protocol/runs";
import {
  type CommittedTask,
  parseWeights,
  readTaskMetrics,
  reduceRound,
  type Weights,
  weightsToJson,
} from "../rules/fedavg";
import { reduceIteration } from "../rules/kmeans";
import { shardCount } from "../rules/pool-shards";
import {
  converged,
  endedShort,
  metricsKey,
  planRound,
  roundQuorum,
  roundResultKey,
  roundsOf,
  roundTaskIds,
  timedOut,
} from "../rules/runs";
import { type Settings, settingsOf } from "../rules/settings";
import { mintShardHex, shardOfId } from "../rules/shard-ids";

/** What a run's instance is created with: which run, of which pool. */
export type RunParams = { pool: string; runId: string };

/** The longest a run waits for its round's event before it looks at the round itself. */
export const LOOK_MS = 60_000;
/** What the persisted run holds in place of its inline initial weights: no artifact URI looks like it. */
const INLINE = "inline";
/** Job ids tried for a round before the step fails (and is retried by the engine). */
const JOB_ID_ATTEMPTS = 5;

type Pool = DurableObjectStub<PoolObject>;
/** The shard that holds an artifact key: its job's, or shard 0 for a key under no job (as the artifact routes find it). */
type KeyShard = (key: string) => Pool;
type Ended = { state: "SUCCEEDED" | "FAILED" | "CANCELLED"; reason: string | null; result_uri: string | null };

export class RunWorkflow extends WorkflowEntrypoint<Env, RunParams> {
  override async run(event: Readonly<WorkflowEvent<RunParams>>, step: WorkflowStep): Promise<Ended> {
    const { pool: name, runId } = event.payload;
    const read = settingsOf(this.env);
    if (!read.ok) throw new Error(`settings unreadable: ${read.detail}`);
    const { settings } = read;
    const shards = shardCount(settings.poolShards, name);
    const shard = shardOfId(name, runId, "run-", shards).shard;
    const stub = (k: number) => shardStub(this.env, settings.poolLocations, name, k) as unknown as Pool;
    const pool = () => stub(shard);
    const at: KeyShard = (key) => {
      const job = jobOfKey(key);
      return stub(job === null ? 0 : shardOfId(name, job, "", shards).shard);
    };
    try {
      return await this.#drive(step, settings, name, shards, shard, runId, pool, at);
    } catch (error) {
      // A step that failed every retry: the run ends FAILED saying so, not RUNNING for ever.
      const reason = `the run's driver failed: ${error instanceof Error ? error.message : String(error)}`;
      return await durably(step, "fail", () => endRun(pool(), runId, "FAILED", reason, null));
    }
  }

  async #drive(
    step: WorkflowStep,
    settings: Settings,
    name: string,
    shards: number,
    shard: number,
    runId: string,
    pool: () => Pool,
    at: KeyShard,
  ): Promise<Ended> {
    // Persisted without its inline weights (a step's result is at most 1 MiB, as a request): round 0 reads them.
    const drive = await durably(step, "read the run", async () => {
      const read = (await pool().runToDrive(runId)) as RunToDrive | null;
      if (read?.request.kind !== "federated_averaging" || typeof read.request.initial_weights === "string") return read;
      return { ...read, request: { ...read.request, initial_weights: INLINE } };
    });
    if (drive === null) return { state: "FAILED", reason: `run ${runId} is unknown to pool ${name}`, result_uri: null };
    const run = drive.request;
    const finish = (state: Ended["state"], reason: string | null, resultUri: string | null): Promise<Ended> =>
      durably(step, "finish", () => endRun(pool(), runId, state, reason, resultUri));

    let resultUri: string | null = null;
    let centroids = run.kind === "sharded_kmeans" ? run.centroids : [];
    for (let r = 0; r < roundsOf(run); r++) {
      const submitted = await durably(step, `round ${r}: submit`, async () => {
        for (let attempt = 0; attempt < JOB_ID_ATTEMPTS; attempt++) {
          const jobId = shards === 1 ? randomHex12() : mintShardHex(name, shard, randomHex8());
          // The run's operator and the coordinator's settings as they are now: what POST /jobs would judge.
          const plan = planRound(run, runId, r, { weightsUri: resultUri, centroids }, jobId, drive.operator, {
            allowUnsandboxedArgv: settings.allowUnsandboxedArgv,
            maxWorkerLosses: settings.maxWorkerLosses,
            enforcing: drive.operator !== null,
          });
          if (!plan.ok) return { ok: false as const, reason: `round ${r}: ${plan.problem}` };
          const answer = await pool().submitRound(runId, r, roundQuorum(run), jobId, plan.spec, plan.tasks, plan.place);
          if (answer.ok) return { ok: true as const, jobId: answer.jobId };
          if (answer.reason === "not_running") return { ok: false as const, reason: null };
        }
        throw new Error(`round ${r}: no unused job id found in ${JOB_ID_ATTEMPTS} tries`);
      });
      if (!submitted.ok) {
        if (submitted.reason === null) return await finish("CANCELLED", null, resultUri);
        return await finish("FAILED", submitted.reason, resultUri);
      }
      const deadline = await durably(
        step,
        `round ${r}: deadline`,
        async () => Date.now() + run.round_timeout_seconds * 1000,
      );

      // Until the round's quorum is frozen: look, then wait for its event at most LOOK_MS.
      for (let look = 0; ; look++) {
        const seen = await durably(step, `round ${r}: look ${look}`, async () => {
          const [state, drove] = await Promise.all([pool().roundState(runId, r), pool().runToDrive(runId)]);
          return {
            state: state as RoundState | null,
            running: (drove as RunToDrive | null)?.state === "RUNNING",
            left: deadline - Date.now(),
          };
        });
        if (!seen.running) return await finish("CANCELLED", null, resultUri);
        const state = seen.state!;
        if (state.frozen !== null || state.result !== null) break;
        if (state.ended !== null)
          return await finish(
            "FAILED",
            endedShort(r, state.jobId, state.ended, state.committed, state.quorum),
            resultUri,
          );
        if (seen.left <= 0)
          return await finish(
            "FAILED",
            timedOut(r, state.committed, state.quorum, roundTaskIds(run, r).length),
            resultUri,
          );
        try {
          await step.waitForEvent(`round ${r}: wait ${look}`, {
            type: roundEventType(r),
            timeout: Math.max(1000, Math.min(seen.left, LOOK_MS)),
          });
        } catch {
          // No event before the timeout: look again.
        }
      }

      const aggregated = await durably(step, `round ${r}: aggregate`, async () =>
        aggregate(this.env, pool(), at, name, runId, run, r, resultUri, centroids),
      );
      if (!aggregated.ok) return await finish("FAILED", aggregated.reason, resultUri);
      resultUri = aggregated.round.result_uri;
      if (run.kind === "sharded_kmeans") {
        const before = centroids;
        centroids = aggregated.centroids;
        if (converged(before, centroids, run.tolerance)) break;
      }
    }
    return await finish("SUCCEEDED", null, resultUri);
  }
}

/**
 * `step.do` for a JSON value: the engine persists what `run` answers and
 * answers it again, without running it, to every later replay. RPC's
 * Serializable typing cannot see that our values are plain JSON, hence the cast.
 */
function durably<T>(step: WorkflowStep, name: string, run: () => Promise<T>): Promise<T> {
  const untyped = step as unknown as { do(name: string, run: () => Promise<unknown>): Promise<unknown> };
  return untyped.do(name, run) as Promise<T>;
}

/** Ends the run `state` at its pool, and how it ended: as asked, or as it had ended already (a cancel). */
async function endRun(
  pool: Pool,
  runId: string,
  state: Ended["state"],
  reason: string | null,
  resultUri: string | null,
): Promise<Ended> {
  const record = (await pool.finishRun(runId, state, reason, resultUri)) as RunRecord | null;
  if (record === null || record.state === "RUNNING") return { state, reason, result_uri: resultUri };
  return { state: record.state, reason: record.reason, result_uri: record.result_uri };
}

type Aggregated = { ok: true; round: RunRound; centroids: number[][] } | { ok: false; reason: string };

/**
 * Round `r`'s reduce, once: its frozen participants' outputs read, reduced
 * and the result written at the reference's key, then recorded. A round
 * recorded already (the step run again after it wrote) answers its record.
 */
async function aggregate(
  env: Env,
  pool: Pool,
  at: KeyShard,
  name: string,
  runId: string,
  run: RunRequest,
  r: number,
  previousUri: string | null,
  centroids: readonly (readonly number[])[],
): Promise<Aggregated> {
  const state = (await pool.roundState(runId, r)) as RoundState;
  if (state.result !== null)
    return { ok: true, round: state.result, centroids: await readCentroids(env, at, state.result) };
  const jobId = state.jobId;
  const taskIds = state.frozen!;
  const fail = (message: string): Aggregated => ({ ok: false, reason: `round ${r}: ${message}` });
  const resultKey = roundResultKey(run, jobId, r);
  let round: Omit<RunRound, "result_uri" | "finished_at">;
  let result: unknown;
  let next: number[][] = [];
  if (run.kind === "federated_averaging") {
    const base = await baseWeights(env, pool, at, runId, run, previousUri);
    if (!base.ok) return fail(base.message);
    const committed: CommittedTask[] = [];
    for (const taskId of taskIds) {
      const key = metricsKey(jobId, taskId);
      const read = await readJson(env, at, key);
      if (!read.ok) return fail(read.message);
      const metrics = readTaskMetrics(key, read.value);
      if (!metrics.ok) return fail(metrics.message);
      // The delta beside the accepted metrics: a replicated task's lies under its accepted replica's prefix.
      const deltaKey = state.prefixes![taskId] + metrics.deltaKey.slice(metrics.deltaKey.lastIndexOf("/") + 1);
      const delta = await readJson(env, at, deltaKey);
      if (!delta.ok) return fail(delta.message);
      committed.push({ taskId, samples: metrics.samples, loss: metrics.loss, delta: delta.value });
    }
    const reduced = reduceRound(base.weights, committed);
    if (!reduced.ok) return fail(reduced.message);
    result = weightsToJson(reduced.weights);
    round = {
      round: r,
      job_id: jobId,
      participants: reduced.participants,
      task_ids: [...taskIds].sort(),
      mean_loss: reduced.meanLoss,
      clipped: reduced.clipped.map((c) => ({ task_id: c.taskId, norm: c.norm, cap: c.cap, scale: c.scale })),
    };
  } else {
    const partials = [];
    for (const taskId of taskIds) {
      const read = await readJson(env, at, metricsKey(jobId, taskId));
      if (!read.ok) return fail(read.message);
      partials.push({ taskId, metrics: read.value });
    }
    const reduced = reduceIteration(partials, centroids, run.shards.length);
    if (!reduced.ok) return fail(reduced.message);
    next = reduced.centroids.map((row) => [...row]);
    result = next;
    round = {
      round: r,
      job_id: jobId,
      participants: partials.length,
      task_ids: [...taskIds],
      inertia: reduced.inertia,
    };
  }
  await writeJson(env, pool, name, resultKey, result);
  const recorded: RunRound = { ...round, result_uri: `artifact://${resultKey}`, finished_at: new Date().toISOString() };
  if (await pool.recordRound(runId, r, recorded)) return { ok: true, round: recorded, centroids: next };
  // Recorded meanwhile (it cannot be, one instance drives a run; but the first record is the one that counts).
  const kept = ((await pool.roundState(runId, r)) as RoundState).result!;
  return { ok: true, round: kept, centroids: await readCentroids(env, at, kept) };
}

async function baseWeights(
  env: Env,
  pool: Pool,
  at: KeyShard,
  runId: string,
  run: Extract<RunRequest, { kind: "federated_averaging" }>,
  previousUri: string | null,
): Promise<{ ok: true; weights: Weights } | { ok: false; message: string }> {
  let source = previousUri ?? run.initial_weights;
  if (source === INLINE) {
    const full = (await pool.runToDrive(runId)) as unknown as RunToDrive;
    if (full.request.kind === "federated_averaging") source = full.request.initial_weights;
  }
  const blob =
    typeof source === "string" ? await readJson(env, at, keyOf(source)) : { ok: true as const, value: source };
  if (!blob.ok) return blob;
  const parsed = parseWeights(blob.value, typeof source === "string" ? source : "initial_weights");
  return parsed.ok ? parsed : { ok: false, message: parsed.message };
}

/** A recorded K-means round's centroids, as it wrote them; a federated-averaging round has none. */
async function readCentroids(env: Env, at: KeyShard, round: RunRound): Promise<number[][]> {
  if (round.inertia === undefined) return [];
  const read = await readJson(env, at, keyOf(round.result_uri));
  if (!read.ok) throw new Error(read.message);
  return read.value as number[][];
}

function keyOf(uri: string): string {
  return uri.slice("artifact://".length);
}

/**
 * An artifact's bytes as JSON, as the pool resolves its key for an
 * operator. A missing artifact is the round's input missing, which no retry
 * brings back (the reference's ArtifactNotFound); a failed read throws, and
 * the engine retries the step.
 */
async function readJson(
  env: Env,
  at: KeyShard,
  key: string,
): Promise<{ ok: true; value: unknown } | { ok: false; message: string }> {
  const row = await at(key).resolveArtifact(key, null);
  const body = row === null || row === "archived" ? null : await env.ARTIFACTS.get(row.object);
  if (body === null) return { ok: false, message: `no artifact at ${key}` };
  try {
    return { ok: true, value: JSON.parse(await body.text()) };
  } catch {
    return { ok: true, value: undefined }; // not JSON: the reduce refuses it by name
  }
}

/** Writes `value` as JSON at `key` and binds it there, as an operator's PUT /artifacts does. */
async function writeJson(env: Env, pool: Pool, name: string, key: string, value: unknown): Promise<void> {
  const bytes = new TextEncoder().encode(JSON.stringify(value));
  const object = `pools/${name}/objects/${crypto.randomUUID()}`;
  const before = await pool.beginUpload(key, object, null);
  if (!before.ok) throw new Error(`cannot write ${key}: ${before.detail}`);
  const put = (await env.ARTIFACTS.put(object, bytes))!;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  const stored: StoredObject = {
    object,
    sha256: Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join(""),
    size_bytes: put.size,
    etag: put.etag,
  };
  const bound = await pool.bindArtifact(key, stored, null);
  if (!bound.ok) {
    await env.ARTIFACTS.delete(object);
    throw new Error(`cannot write ${key}: ${bound.detail}`);
  }
  if (bound.replaced) await env.ARTIFACTS.delete(bound.replaced);
}
