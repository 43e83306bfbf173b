import { abortAllDurableObjects, createExecutionContext, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import app from "../../../src/index";
import { LATEST_FOR_WORLD_SIZE_SQL, LATEST_SQL } from "../../../src/pool/artifacts/checkpoints";
import {
  type CheckpointManifest,
  CheckpointManifestSchema,
  type CheckpointPart,
  MANIFEST_ID_RE,
} from "../../../src/protocol/checkpoints";
import type { Lease } from "../../../src/protocol/tasks";
import {
  call,
  claim,
  ledger as events,
  expireLeases,
  freshPool,
  jobStub,
  json,
  register,
  registration,
  shardStubs,
  submitJob,
  trialsJob,
} from "../helpers";

/** The pool's checkpoint manifests, in every shard. */
async function manifestCount(pool: string): Promise<number> {
  let n = 0;
  for (const shard of shardStubs(pool)) {
    n += await runInDurableObject(
      shard,
      (_o, state) => state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM checkpoint_manifests").one().n,
    );
  }
  return n;
}

const base = (jobId: string, taskId: string) => `/jobs/${jobId}/tasks/${taskId}/checkpoints`;

/**
 * A stand-in hash, well-formed (64 lowercase hex characters) and distinct
 * per content: the catalog compares hashes, it never reads bytes.
 */
function hashOf(content: string): string {
  const hex = Array.from(new TextEncoder().encode(content), (b) => b.toString(16).padStart(2, "0")).join("");
  if (hex.length > 64) throw new Error(`content too long for a stand-in hash: ${content}`);
  return hex.padEnd(64, "0");
}

function part(key: string, content = key): CheckpointPart {
  return { key, sha256: hashOf(content), size_bytes: content.length };
}

function registerPart(pool: string, jobId: string, taskId: string, attemptId: string, step: number, p: CheckpointPart) {
  return call(pool, "POST", `${base(jobId, taskId)}/parts`, { attempt_id: attemptId, step, part: p });
}

function commit(
  pool: string,
  jobId: string,
  taskId: string,
  attemptId: string,
  step: number,
  parts: CheckpointPart[],
  extra: Record<string, unknown> = {},
) {
  return call(pool, "POST", `${base(jobId, taskId)}/commit`, {
    attempt_id: attemptId,
    step,
    expected_parts: parts,
    storage_prefix: `jobs/${jobId}/${taskId}/ckpt/step-${step}/`,
    ...extra,
  });
}

/** Registers every part, then commits them: a complete checkpoint. */
async function checkpoint(
  pool: string,
  jobId: string,
  taskId: string,
  attemptId: string,
  step: number,
  extra: Record<string, unknown> = {},
) {
  const parts = [part("model.pt", `m${step}`), part("optimizer.pt", `o${step}`)];
  for (const p of parts) expect((await registerPart(pool, jobId, taskId, attemptId, step, p)).status).toBe(200);
  const r = await commit(pool, jobId, taskId, attemptId, step, parts, extra);
  expect(r.status).toBe(200);
  return json<CheckpointManifest>(r);
}

async function latest(pool: string, jobId: string, taskId: string, query = "") {
  return call(pool, "GET", `${base(jobId, taskId)}/latest${query}`);
}

async function latestStep(pool: string, jobId: string, taskId: string, query = ""): Promise<number | null> {
  const r = await latest(pool, jobId, taskId, query);
  return r.status === 404 ? null : (await json<CheckpointManifest>(r)).step;
}

/** The tasks of a submitted trials job: trial-000, trial-001. */
const T0 = "trial-000";
const T1 = "trial-001";

/** A fresh pool holding one job submitted through POST /jobs, of `tasks` trials. */
async function withJob(tasks = 1) {
  const pool = freshPool();
  const job = (await submitJob(pool, trialsJob(tasks))).job_id;
  return { pool, job };
}

describe("parts first, manifest last", () => {
  it("a registered part answers {status: registered, key}", async () => {
    const { pool, job } = await withJob();
    const r = await registerPart(pool, job, T0, "att-1", 100, part("model.pt"));
    expect(r.status).toBe(200);
    expect(await json(r)).toEqual({ status: "registered", key: "model.pt" });
  });

  it("a committed manifest is hash_verified, well-formed and names its parts", async () => {
    const { pool, job } = await withJob();
    const m = await checkpoint(pool, job, T0, "att-1", 100, {
      world_size: 2,
      framework: "pytorch-2.4",
      strategy_family: "ddp",
    });
    expect(m.manifest_id).toMatch(MANIFEST_ID_RE);
    expect(CheckpointManifestSchema.parse(m)).toEqual(m);
    expect(m).toMatchObject({
      schema_version: "v1alpha1",
      job_id: job,
      attempt_id: "att-1",
      step: 100,
      world_size: 2,
      compatible_world_sizes: [2],
      framework: "pytorch-2.4",
      strategy_family: "ddp",
      storage_prefix: `jobs/${job}/${T0}/ckpt/step-100/`,
      parts: [part("model.pt", "m100"), part("optimizer.pt", "o100")],
      validation: "hash_verified",
      checkpoint_duration_s: null,
    });
    expect(Date.now() - Date.parse(m.created)).toBeLessThan(60_000);
  });

  it("an interrupted upload never becomes a checkpoint: part 3 missing is a 409 and latest stays at step 100", async () => {
    const { pool, job } = await withJob();
    await checkpoint(pool, job, T0, "att-1", 100);
    const parts = [part("shard-1"), part("shard-2"), part("shard-3")];
    await registerPart(pool, job, T0, "att-1", 200, parts[0]!);
    await registerPart(pool, job, T0, "att-1", 200, parts[1]!);
    // The machine is interrupted here: shard-3 never arrives.

    const r = await commit(pool, job, T0, "att-1", 200, parts);
    expect(r.status).toBe(409);
    expect(await json(r)).toEqual({ detail: ["part 'shard-3' was never registered for this attempt and step"] });
    expect(await latestStep(pool, job, T0)).toBe(100);
    expect(await manifestCount(pool)).toBe(1);
  });

  it("a part registered for another attempt or step does not count", async () => {
    const { pool, job } = await withJob();
    await registerPart(pool, job, T0, "att-1", 300, part("a"));
    await registerPart(pool, job, T0, "att-2", 200, part("b"));
    const r = await commit(pool, job, T0, "att-2", 300, [part("a"), part("b")]);
    expect(r.status).toBe(409);
    expect((await json<{ detail: string[] }>(r)).detail).toHaveLength(2);
  });

  it("a hash different from the registered one is refused", async () => {
    const { pool, job } = await withJob();
    await registerPart(pool, job, T0, "att-1", 100, part("model.pt", "good"));
    const r = await commit(pool, job, T0, "att-1", 100, [{ ...part("model.pt", "good"), sha256: hashOf("corrupt") }]);
    expect(r.status).toBe(409);
    expect(await json(r)).toEqual({
      detail: [`part 'model.pt' has sha256 ${hashOf("corrupt")}, but ${hashOf("good")} was registered`],
    });
    expect(await latest(pool, job, T0)).toHaveProperty("status", 404);
  });

  it("every problem is listed at once, in the committer's order", async () => {
    const { pool, job } = await withJob();
    await registerPart(pool, job, T0, "att-1", 5, part("a"));
    await registerPart(pool, job, T0, "att-1", 5, part("b"));
    await registerPart(pool, job, T0, "att-1", 5, part("c"));
    const r = await commit(pool, job, T0, "att-1", 5, [
      { ...part("a"), sha256: hashOf("x") },
      part("missing"),
      part("b"),
      { ...part("c"), size_bytes: 999 },
      part("b"),
    ]);
    expect(r.status).toBe(409);
    expect((await json<{ detail: string[] }>(r)).detail).toEqual([
      `part 'a' has sha256 ${hashOf("x")}, but ${hashOf("a")} was registered`,
      "part 'missing' was never registered for this attempt and step",
      "part 'c' has size_bytes 999, but 1 was registered",
      "part 'b' is listed more than once",
    ]);
  });

  it("a commit with zero parts is refused", async () => {
    const { pool, job } = await withJob();
    const r = await commit(pool, job, T0, "att-1", 100, []);
    expect(r.status).toBe(409);
    expect(await json(r)).toEqual({ detail: ["a checkpoint needs at least one part: expected_parts is empty"] });
    expect(await manifestCount(pool)).toBe(0);
  });

  it("re-registering a key replaces its hash", async () => {
    const { pool, job } = await withJob();
    await registerPart(pool, job, T0, "att-1", 100, part("model.pt", "first"));
    await registerPart(pool, job, T0, "att-1", 100, part("model.pt", "again"));
    expect((await commit(pool, job, T0, "att-1", 100, [part("model.pt", "first")])).status).toBe(409);
    expect((await commit(pool, job, T0, "att-1", 100, [part("model.pt", "again")])).status).toBe(200);
  });

  it("malformed bodies are 422 with the field named", async () => {
    const { pool, job } = await withJob();
    const r = await call(pool, "POST", `${base(job, T0)}/parts`, { attempt_id: "a", step: -1, part: part("k") });
    expect(r.status).toBe(422);
    expect((await json<{ detail: Array<{ loc: unknown[] }> }>(r)).detail[0]!.loc).toEqual(["body", "step"]);
    const c = await call(pool, "POST", `${base(job, T0)}/commit`, {
      attempt_id: "a",
      step: 1,
      storage_prefix: "p",
    });
    expect(c.status).toBe(422);
    expect((await json<{ detail: Array<{ loc: unknown[]; type: string }> }>(c)).detail[0]).toMatchObject({
      loc: ["body", "expected_parts"],
      type: "missing",
    });
  });
});

describe("latest", () => {
  it("picks the highest step, not the newest commit", async () => {
    const { pool, job } = await withJob();
    await checkpoint(pool, job, T0, "att-1", 300);
    await checkpoint(pool, job, T0, "att-2", 100);
    expect(await latestStep(pool, job, T0)).toBe(300);
  });

  it("with world_size, only manifests restorable at that size are candidates", async () => {
    const { pool, job } = await withJob();
    await checkpoint(pool, job, T0, "att-1", 100, { world_size: 4 });
    await checkpoint(pool, job, T0, "att-1", 200, { world_size: 2 });
    expect(await latestStep(pool, job, T0)).toBe(200);
    expect(await latestStep(pool, job, T0, "?world_size=4")).toBe(100);
    expect(await latestStep(pool, job, T0, "?world_size=2")).toBe(200);
    const none = await latest(pool, job, T0, "?world_size=8");
    expect(none.status).toBe(404);
    expect(await json(none)).toEqual({ detail: "no valid checkpoint" });
  });

  it("a tie on step prefers restore_verified, then the newest", async () => {
    const { pool, job } = await withJob();
    const older = await checkpoint(pool, job, T0, "att-1", 100);
    const newer = await checkpoint(pool, job, T0, "att-2", 100);
    expect((await json<CheckpointManifest>(await latest(pool, job, T0))).manifest_id).toBe(newer.manifest_id);

    const verified = await call(pool, "POST", `${base(job, T0)}/${older.manifest_id}/verify`);
    expect(verified.status).toBe(200);
    expect(await json(verified)).toMatchObject({ manifest_id: older.manifest_id, validation: "restore_verified" });
    const picked = await json<CheckpointManifest>(await latest(pool, job, T0));
    expect(picked).toMatchObject({ manifest_id: older.manifest_id, validation: "restore_verified" });
  });

  it("a quarantined manifest is never selected, even when verified before", async () => {
    const { pool, job } = await withJob();
    await checkpoint(pool, job, T0, "att-1", 100);
    const bad = await checkpoint(pool, job, T0, "att-1", 200);
    await call(pool, "POST", `${base(job, T0)}/${bad.manifest_id}/verify`);
    const q = await call(pool, "POST", `${base(job, T0)}/${bad.manifest_id}/quarantine`, {
      reason: "restore diverged",
    });
    expect(q.status).toBe(200);
    expect(await json(q)).toMatchObject({ manifest_id: bad.manifest_id, validation: "invalid" });
    expect(await latestStep(pool, job, T0)).toBe(100);
    expect(await json(await call(pool, "GET", `${base(job, T0)}/lost-work?failed_at_step=250`))).toEqual({
      lost_steps: 150,
      latest_step: 100,
    });
    // Final: it cannot be verified back into use.
    const again = await call(pool, "POST", `${base(job, T0)}/${bad.manifest_id}/verify`);
    expect(again.status).toBe(409);
    expect(await latestStep(pool, job, T0)).toBe(100);
  });

  it("is an index seek, not a scan", async () => {
    const { pool, job } = await withJob();
    const plans = await runInDurableObject(jobStub(pool, job), (_o, state) =>
      [
        [LATEST_SQL, [job, T0]],
        [LATEST_FOR_WORLD_SIZE_SQL, [job, T0, 2]],
      ].map(([q, args]) =>
        state.storage.sql
          .exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${q as string}`, ...(args as (string | number)[]))
          .toArray()
          .map((r) => r.detail)
          .join("; "),
      ),
    );
    expect(plans[0]).toMatch(
      /SEARCH checkpoint_manifests USING INDEX checkpoint_manifests_latest \(job_id=\? AND task_id=\?\)/,
    );
    expect(plans[1]).toMatch(
      /SEARCH checkpoint_manifests USING INDEX checkpoint_manifests_latest_ws \(job_id=\? AND task_id=\? AND world_size=\?\)/,
    );
    for (const plan of plans) expect(plan).not.toMatch(/TEMP B-TREE|SCAN/);
  });

  it("world_size must be an integer ≥ 1: otherwise 422 naming the query parameter", async () => {
    const { pool, job } = await withJob();
    for (const [q, type] of [
      ["?world_size=two", "int_parsing"],
      ["?world_size=1.5", "int_parsing"],
      ["?world_size=0", "greater_than_equal"],
    ] as const) {
      const r = await latest(pool, job, T0, q);
      expect(r.status).toBe(422);
      expect((await json<{ detail: unknown[] }>(r)).detail).toEqual([
        { loc: ["query", "world_size"], msg: expect.any(String), type },
      ]);
    }
  });
});

describe("lost work", () => {
  it("is the steps since the latest valid checkpoint, never negative", async () => {
    const { pool, job } = await withJob();
    const lost = (s: string) =>
      call(pool, "GET", `${base(job, T0)}/lost-work?failed_at_step=${s}`).then((r) => json(r));
    expect(await lost("500")).toEqual({ lost_steps: null, latest_step: null });
    await checkpoint(pool, job, T0, "att-1", 100, { world_size: 2 });
    await checkpoint(pool, job, T0, "att-1", 300, { world_size: 4 });
    expect(await lost("500")).toEqual({ lost_steps: 200, latest_step: 300 });
    expect(await lost("300")).toEqual({ lost_steps: 0, latest_step: 300 });
    expect(await lost("250")).toEqual({ lost_steps: 0, latest_step: 300 });
  });

  it("failed_at_step is required and must be a non-negative integer", async () => {
    const { pool, job } = await withJob();
    for (const [q, type] of [
      ["", "missing"],
      ["?failed_at_step=-1", "greater_than_equal"],
      ["?failed_at_step=abc", "int_parsing"],
    ] as const) {
      const r = await call(pool, "GET", `${base(job, T0)}/lost-work${q}`);
      expect(r.status).toBe(422);
      expect((await json<{ detail: unknown[] }>(r)).detail).toEqual([
        { loc: ["query", "failed_at_step"], msg: expect.any(String), type },
      ]);
    }
  });
});

describe("scoping", () => {
  it("the job and task of the URL reach the router: each task has its own lineage", async () => {
    const { pool, job } = await withJob(2);
    const jobB = (await submitJob(pool, trialsJob(1))).job_id;
    await checkpoint(pool, job, T0, "att-1", 100);
    await checkpoint(pool, job, T1, "att-1", 700);
    const m = await json<CheckpointManifest>(await latest(pool, job, T0));
    expect(m).toMatchObject({ job_id: job, step: 100 });
    expect(await latestStep(pool, job, T1)).toBe(700);
    expect(await latestStep(pool, jobB, T0)).toBeNull();
    // Parts are scoped too: the other job's task cannot commit this task's registered parts.
    expect((await commit(pool, jobB, T0, "att-1", 100, [part("model.pt", "m100")])).status).toBe(409);
  });

  it("the routes also answer under /v1alpha1 (the pool 'local')", async () => {
    const jobId = (await submitJob("local", trialsJob(1))).job_id;
    const r = await fetchUnpooled("POST", `/v1alpha1${base(jobId, T0)}/parts`, {
      attempt_id: "a",
      step: 1,
      part: part("k"),
    });
    expect(await json(r)).toEqual({ status: "registered", key: "k" });
  });

  it("a checkpoint of a task not in the pool is 404 on every route", async () => {
    const { pool, job } = await withJob();
    const b = base(job, "ghost");
    const answers = [
      await registerPart(pool, job, "ghost", "att-1", 1, part("k")),
      await commit(pool, job, "ghost", "att-1", 1, [part("k")]),
      await call(pool, "GET", `${b}/latest`),
      await call(pool, "GET", `${b}/lost-work?failed_at_step=3`),
      await call(pool, "POST", `${b}/ck-000000000000/verify`),
      await call(pool, "POST", `${b}/ck-000000000000/quarantine`, { reason: "x" }),
    ];
    for (const r of answers) {
      expect(r.status).toBe(404);
      expect(await json(r)).toEqual({ detail: `unknown task ${job}/ghost` });
    }
    // No checkpoint event was written.
    expect((await events(pool, job)).map((e) => e.type)).toEqual(["JOB_ACCEPTED", "BACKEND_SELECTED", "TASK_CREATED"]);
  });

  it("verify and quarantine of an unknown manifest are 404; a quarantine needs a reason", async () => {
    const { pool, job } = await withJob(2);
    const m = await checkpoint(pool, job, T0, "att-1", 1);
    expect((await call(pool, "POST", `${base(job, T0)}/ck-000000000000/verify`)).status).toBe(404);
    expect((await call(pool, "POST", `${base(job, T0)}/ck-000000000000/quarantine`, { reason: "x" })).status).toBe(404);
    // Another task's manifest id is unknown here.
    expect((await call(pool, "POST", `${base(job, T1)}/${m.manifest_id}/verify`)).status).toBe(404);
    const blank = await call(pool, "POST", `${base(job, T0)}/${m.manifest_id}/quarantine`, { reason: "  " });
    expect(blank.status).toBe(422);
    expect(await latestStep(pool, job, T0)).toBe(1);
  });
});

describe("write authorization (object level)", () => {
  it("a node without a live lease on the task cannot register parts or commit", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await register(pool, "n2");
    const job = (await submitJob(pool, trialsJob(1))).job_id;
    expect((await claim(pool, "n1")).status).toBe(200);
    const request = { attempt_id: "att-1", step: 1, part: part("k") };
    const commitRequest = {
      attempt_id: "att-1",
      step: 1,
      expected_parts: [part("k")],
      storage_prefix: "p/",
      world_size: 1,
      framework: "",
      strategy_family: "",
    };

    expect(await jobStub(pool, job).registerCheckpointPart(job, T0, request, "n2")).toEqual({
      ok: false,
      reason: "forbidden",
    });
    expect(await jobStub(pool, job).commitCheckpoint(job, T0, commitRequest, "n2")).toEqual({
      ok: false,
      reason: "forbidden",
    });
    // A scoped writer learns nothing about tasks it does not hold: 403, not 404.
    expect(await jobStub(pool, job).registerCheckpointPart(job, "ghost", request, "n2")).toEqual({
      ok: false,
      reason: "forbidden",
    });
    expect(await events(pool, job)).not.toContainEqual(
      expect.objectContaining({ type: "CHECKPOINT_PARTS_REGISTERED" }),
    );

    expect(await jobStub(pool, job).registerCheckpointPart(job, T0, request, "n1")).toEqual({ ok: true, key: "k" });
    const committed = await jobStub(pool, job).commitCheckpoint(job, T0, commitRequest, "n1");
    expect(committed).toMatchObject({ ok: true, manifest: { step: 1, validation: "hash_verified" } });
    const ev = await events(pool, job);
    expect(ev.find((e) => e.type === "CHECKPOINT_PARTS_REGISTERED")!.data).toMatchObject({
      task_id: T0,
      node_id: "n1",
    });
    expect(ev.find((e) => e.type === "CHECKPOINT_MANIFEST_COMMITTED")!.data).toMatchObject({
      task_id: T0,
      node_id: "n1",
    });
  });

  it("when enforcing over HTTP, only the lease holder (or an operator) writes, and only an operator verifies", async () => {
    const settings = { FLASHML_NODE_TOKENS: "n1:tok-n1, n2:tok-n2", FLASHML_OPERATOR_TOKENS: "ops:tok-ops" };
    const send = (token: string, method: string, path: string, body?: unknown) =>
      app.fetch(
        new Request(`http://x/pools/${pool}/v1alpha1${path}`, {
          method,
          headers: {
            authorization: `Bearer ${token}`,
            ...(body === undefined ? {} : { "content-type": "application/json" }),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
        { ...env, ...settings },
        createExecutionContext(),
      );
    const pool = freshPool();
    await send("tok-n1", "POST", "/nodes/register", registration("n1"));
    await send("tok-n2", "POST", "/nodes/register", registration("n2"));
    const submitted = await send("tok-ops", "POST", "/jobs", trialsJob(1));
    expect(submitted.status).toBe(201);
    const job = (await json<{ job_id: string }>(submitted)).job_id;
    expect((await send("tok-n1", "POST", "/leases/claim", { node_id: "n1" })).status).toBe(200);
    const b = base(job, T0);
    const p = { attempt_id: "att-1", step: 1, part: part("k") };

    expect((await send("tok-n2", "POST", `${b}/parts`, p)).status).toBe(403);
    expect((await send("tok-n1", "POST", `${b}/parts`, p)).status).toBe(200);
    expect((await send("tok-ops", "POST", `${b}/parts`, p)).status).toBe(200);
    const m = await json<CheckpointManifest>(
      await send("tok-n1", "POST", `${b}/commit`, {
        attempt_id: "att-1",
        step: 1,
        expected_parts: [part("k")],
        storage_prefix: "p/",
      }),
    );
    expect((await send("tok-n2", "GET", `${b}/latest`)).status).toBe(200);
    expect((await send("tok-n1", "POST", `${b}/${m.manifest_id}/verify`)).status).toBe(403);
    expect((await send("tok-ops", "POST", `${b}/${m.manifest_id}/verify`)).status).toBe(200);
  });
});

describe("durability and races", () => {
  it("the catalog survives evicting the object", async () => {
    const { pool, job } = await withJob();
    const m = await checkpoint(pool, job, T0, "att-1", 100);
    await registerPart(pool, job, T0, "att-1", 200, part("model.pt"));
    await abortAllDurableObjects();
    expect(await json(await latest(pool, job, T0))).toEqual(m);
    // The registered part survived too: the step-200 commit still sees it.
    expect((await commit(pool, job, T0, "att-1", 200, [part("model.pt")])).status).toBe(200);
    expect(await latestStep(pool, job, T0)).toBe(200);
  });

  it("concurrent commits of different steps all land", async () => {
    const { pool, job } = await withJob();
    const steps = [100, 200, 300, 400, 500];
    for (const s of steps) await registerPart(pool, job, T0, "att-1", s, part("model.pt", `m${s}`));
    const answers = await Promise.all(steps.map((s) => commit(pool, job, T0, "att-1", s, [part("model.pt", `m${s}`)])));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const ids = await Promise.all(answers.map((r) => json<CheckpointManifest>(r).then((m) => m.manifest_id)));
    expect(new Set(ids).size).toBe(5);
    expect(await manifestCount(pool)).toBe(5);
    expect(await latestStep(pool, job, T0)).toBe(500);
  });

  it("concurrent identical commits are deduplicated into one manifest and one event", async () => {
    const { pool, job } = await withJob();
    const parts = [part("model.pt"), part("optimizer.pt")];
    for (const p of parts) await registerPart(pool, job, T0, "att-1", 100, p);
    const answers = await Promise.all(
      // Part order does not make a commit different.
      Array.from({ length: 6 }, (_, i) => commit(pool, job, T0, "att-1", 100, i % 2 ? parts : [...parts].reverse())),
    );
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const ids = await Promise.all(answers.map((r) => json<CheckpointManifest>(r).then((m) => m.manifest_id)));
    expect(new Set(ids).size).toBe(1);
    expect(await manifestCount(pool)).toBe(1);
    const committed = (await events(pool, job)).filter((e) => e.type === "CHECKPOINT_MANIFEST_COMMITTED");
    expect(committed).toHaveLength(1);

    // Any difference is a new manifest, and the newest wins the tie on step.
    const other = await json<CheckpointManifest>(
      await commit(pool, job, T0, "att-1", 100, parts, { world_size: 1, framework: "jax" }),
    );
    expect(other.manifest_id).not.toBe(ids[0]);
    expect((await json<CheckpointManifest>(await latest(pool, job, T0))).manifest_id).toBe(other.manifest_id);
  });

  it("re-committing a quarantined checkpoint returns it still invalid, never revived", async () => {
    const { pool, job } = await withJob();
    const m = await checkpoint(pool, job, T0, "att-1", 100);
    await call(pool, "POST", `${base(job, T0)}/${m.manifest_id}/quarantine`, { reason: "corrupt on restore" });
    const again = await commit(pool, job, T0, "att-1", 100, m.parts);
    expect(await json(again)).toMatchObject({ manifest_id: m.manifest_id, validation: "invalid" });
    expect(await latest(pool, job, T0)).toHaveProperty("status", 404);
  });
});

describe("events", () => {
  it("registration, commit, refusal, verification and quarantine each leave one event naming the task", async () => {
    const { pool, job } = await withJob();
    await registerPart(pool, job, T0, "att-1", 100, part("model.pt"));
    await commit(pool, job, T0, "att-1", 100, [part("model.pt"), part("missing.pt")]);
    const m = await json<CheckpointManifest>(await commit(pool, job, T0, "att-1", 100, [part("model.pt")]));
    await call(pool, "POST", `${base(job, T0)}/${m.manifest_id}/verify`);
    await call(pool, "POST", `${base(job, T0)}/${m.manifest_id}/verify`); // idempotent: no second event
    await call(pool, "POST", `${base(job, T0)}/${m.manifest_id}/quarantine`, {
      reason: "loss went NaN after restore",
    });
    await call(pool, "POST", `${base(job, T0)}/${m.manifest_id}/quarantine`, { reason: "again" }); // keeps the first

    const ev = (await events(pool, job)).slice(3); // after JOB_ACCEPTED, BACKEND_SELECTED and TASK_CREATED
    expect(ev).toEqual([
      {
        type: "CHECKPOINT_PARTS_REGISTERED",
        data: {
          task_id: T0,
          attempt_id: "att-1",
          step: 100,
          key: "model.pt",
          sha256: hashOf("model.pt"),
          size_bytes: 8,
        },
      },
      {
        type: "CHECKPOINT_REJECTED",
        data: {
          task_id: T0,
          attempt_id: "att-1",
          step: 100,
          problems: ["part 'missing.pt' was never registered for this attempt and step"],
        },
      },
      {
        type: "CHECKPOINT_MANIFEST_COMMITTED",
        data: { task_id: T0, manifest_id: m.manifest_id, attempt_id: "att-1", step: 100, world_size: 1, parts: 1 },
      },
      {
        type: "CHECKPOINT_RESTORE_VERIFIED",
        data: { task_id: T0, manifest_id: m.manifest_id, attempt_id: "att-1", step: 100 },
      },
      {
        type: "CHECKPOINT_REJECTED",
        data: {
          task_id: T0,
          manifest_id: m.manifest_id,
          attempt_id: "att-1",
          step: 100,
          reason: "loss went NaN after restore",
        },
      },
    ]);
  });
});

describe("the resume story", () => {
  it("attempt 1 checkpoints step 100 and its lease expires; attempt 2 on another node resumes from step 100", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await register(pool, "n2");
    const job = (await submitJob(pool, trialsJob(1, { lease_seconds: 5 }))).job_id;

    const first = await json<Lease>(await claim(pool, "n1"));
    expect(first).toMatchObject({ node_id: "n1", attempt_number: 1 });
    const m = await checkpoint(pool, job, T0, first.lease_id, 100);
    // n1 goes silent; nobody polls — only the object's alarm requeues the task.
    expect(await expireLeases(pool)).toBe(true);
    const state = await runInDurableObject(
      jobStub(pool, job),
      (_o, s) =>
        s.storage.sql.exec<{ state: string }>("SELECT state FROM tasks WHERE job_id = ? AND task_id = ?", job, T0).one()
          .state,
    );
    expect(state).toBe("PENDING");

    const second = await json<Lease>(await claim(pool, "n2"));
    expect(second).toMatchObject({ task_id: T0, node_id: "n2", attempt_number: 2 });
    const r = await latest(pool, job, T0, "?world_size=1");
    expect(r.status).toBe(200);
    expect(await json(r)).toEqual(m);
    expect(m).toMatchObject({ step: 100, attempt_id: first.lease_id });
    expect(await json(await call(pool, "GET", `${base(job, T0)}/lost-work?failed_at_step=130`))).toEqual({
      lost_steps: 30,
      latest_step: 100,
    });
  });
});

function fetchUnpooled(method: string, path: string, body: unknown) {
  return app.fetch(
    new Request(`http://flashedge.test${path}`, {
      method,
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    }),
    env,
    createExecutionContext(),
  );
}
