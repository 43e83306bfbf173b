// The pool the fuzz generator (test/fuzz/) aims at, seeded through the
// Worker: shared by the fuzz test and the documented-statuses test, which
// send it the same malformed requests.

import { expect } from "vitest";
import type { Lease } from "../../src/protocol/tasks";
import { fuzzJobSpec, type World } from "../fuzz/generator";
import { call, claim, freshPool, json, register, sha256, upload } from "./helpers";

async function ok(r: Response | Promise<Response>, status = 200): Promise<Response> {
  const response = await r;
  if (response.status !== status) throw new Error(`seeding: ${response.status} ${await response.text()}`);
  return response;
}

/** A fresh pool seeded for the fuzz generator: its nodes, a job with a live, a done and a pending task, leases, artifacts, a checkpoint. */
export async function seed(): Promise<World> {
  const pool = freshPool();
  const nodes = ["n1", "n2", "ñødé-😀-\u202e"];
  await register(pool, "n1");
  await register(pool, "n2", { labels: { rack: "r1" } }, 2);
  await register(pool, nodes[2]!);
  const job = (await json<{ job_id: string }>(await ok(call(pool, "POST", "/jobs", fuzzJobSpec()), 201))).job_id;
  // A lease that failed (a dead id), then the live lease on the same task
  // (with n2, not n1: a retry goes to a node that has not failed it).
  const dead = await json<Lease>(await ok(claim(pool, "n1")));
  await ok(call(pool, "POST", `/attempts/${dead.lease_id}/fail`, { reason: "seeded failure" }));
  const live = await json<Lease>(await ok(claim(pool, "n2")));
  // A completed task: its prefix is immutable.
  const done = await json<Lease>(await ok(claim(pool, "n1")));
  const output = '{"accuracy": 0.9}';
  await ok(upload(pool, `jobs/${job}/${done.task_id}/metrics.json`, output));
  await ok(call(pool, "POST", `/attempts/${done.lease_id}/complete`, { output_sha256: await sha256(output) }));
  await ok(upload(pool, "datasets/train.csv", "a,b\n1,2\n"));
  await ok(upload(pool, `jobs/${job}/${live.task_id}/partial.bin`, new Uint8Array([0, 1, 2, 255])));
  const part = { key: "model.pt", sha256: "ab".repeat(32), size_bytes: 3 };
  const base = `/jobs/${job}/tasks/${live.task_id}/checkpoints`;
  await ok(call(pool, "POST", `${base}/parts`, { attempt_id: live.lease_id, step: 5, part }));
  const manifest = (
    await json<{ manifest_id: string }>(
      await ok(
        call(pool, "POST", `${base}/commit`, {
          attempt_id: live.lease_id,
          step: 5,
          expected_parts: [part],
          storage_prefix: `jobs/${job}/${live.task_id}/ckpt/`,
        }),
      ),
    )
  ).manifest_id;
  expect([live.task_id, done.task_id]).toEqual(["trial-000", "trial-001"]);
  return {
    pool,
    nodes,
    job,
    tasks: { live: live.task_id, done: done.task_id, pending: "trial-002" },
    leases: { live: live.lease_id, dead: dead.lease_id, done: done.lease_id },
    manifest,
    artifactKeys: ["datasets/train.csv", `jobs/${job}/trial-000/partial.bin`, `jobs/${job}/trial-001/metrics.json`],
  };
}
