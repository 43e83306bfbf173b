// Hosted runs with tokens enforced (docs/protocol.md §17, §9, §14): only an
// operator starts or cancels a run, a node reads one, and a replicated
// round aggregates a task only once its replicas' verdict accepted it,
// reading the accepted replica's delta. Runs again over 4 shards.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import type { RunRecord } from "../../src/pool/runs/calls";
import type { Lease } from "../../src/protocol/tasks";
import { parseWeights, reduceRound, weightsToJson } from "../../src/rules/fedavg";
import { freshPool, jobStub, json, sha256 } from "../worker/helpers";
import { call, claim, register, upload } from "./nodes";

const RUN = {
  kind: "federated_averaging",
  rounds: 1,
  num_shards: 1,
  min_participants: 1,
  worker_params: { local_steps: 1, lr: 0.1, batch_size: 2, seed: 1, in_dim: 1, hidden: 1, out_dim: 1, dataset_size: 4 },
  initial_weights: { w: { shape: [1], data: [1.0] } },
  round_timeout_seconds: 60,
};

function until(pool: string, runId: string, ready: (run: RunRecord) => boolean, nodeId?: string): Promise<RunRecord> {
  return vi.waitFor(
    async () => {
      const run = await json<RunRecord>(await call(pool, "GET", `/runs/${runId}`, undefined, nodeId));
      if (!ready(run)) throw new Error(`not yet: ${run.state} ${JSON.stringify(run.live_round)}`);
      return run;
    },
    { timeout: 20_000, interval: 50 },
  );
}

/** A replica's outputs under the prefix its lease names, then its commit. */
async function finish(pool: string, lease: Lease, delta: unknown, metrics: unknown) {
  const prefix = lease.payload.output_prefix as string;
  expect((await upload(pool, `${prefix}delta.json`, JSON.stringify(delta), lease.node_id)).status).toBe(200);
  const bytes = JSON.stringify(metrics);
  expect((await upload(pool, `${prefix}metrics.json`, bytes, lease.node_id)).status).toBe(200);
  const r = await call(
    pool,
    "POST",
    `/attempts/${lease.lease_id}/complete`,
    { output_sha256: await sha256(bytes) },
    lease.node_id,
  );
  return json<{ accepted: boolean }>(r);
}

describe("hosted runs with tokens", () => {
  it("only an operator starts or cancels a run; a node reads it", async () => {
    const pool = freshPool();
    const asNode = await call(pool, "POST", "/runs", RUN, "n1");
    expect(asNode.status).toBe(403);
    expect(await json<unknown[]>(await call(pool, "GET", "/runs"))).toEqual([]);
    const started = await call(pool, "POST", "/runs", RUN);
    expect(started.status).toBe(201);
    const run = await json<RunRecord>(started);
    expect(run.started_by).toBe("ops");
    const read = await call(pool, "GET", `/runs/${run.run_id}`, undefined, "n1");
    expect(read.status).toBe(200);
    expect((await json<RunRecord>(read)).run_id).toBe(run.run_id);
    expect((await call(pool, "POST", `/runs/${run.run_id}/cancel`, undefined, "n1")).status).toBe(403);
    expect((await json<RunRecord>(await call(pool, "GET", `/runs/${run.run_id}`))).state).toBe("RUNNING");
    const cancelled = await json<RunRecord>(await call(pool, "POST", `/runs/${run.run_id}/cancel`));
    expect(cancelled).toMatchObject({ state: "CANCELLED", reason: "cancelled by ops" });
  });

  it("aggregates a replicated round's task only once its replicas agreed, from the accepted replica's delta", async () => {
    const pool = freshPool();
    for (const n of ["n1", "n2"]) await register(pool, n);
    const { run_id } = await json<RunRecord>(
      await call(pool, "POST", "/runs", { ...RUN, labels: { "flashml.dev/replicas": "2" } }),
    );
    await until(pool, run_id, (run) => run.live_round !== null);
    const [a, b] = [await claim(pool, "n1"), await claim(pool, "n2")];
    expect([a.status, b.status]).toEqual([200, 200]);
    const [la, lb] = [await json<Lease>(a), await json<Lease>(b)];
    expect(la.payload.output_prefix).not.toBe(lb.payload.output_prefix);
    // A node may not write the round's weights, where the next round reads them from.
    const job = la.job_id;
    expect(
      (await upload(pool, `jobs/${job}/round-000/weights.json`, '{"w":{"shape":[1],"data":[99]}}', "n1")).status,
    ).toBe(403);
    const delta = { w: { shape: [1], data: [0.5] } };
    const metrics = { samples: 4, loss: 0.25 };
    expect(await finish(pool, la, delta, metrics)).toMatchObject({ accepted: true });
    // One replica is no verdict: the round is not over, and nothing is aggregated.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const waiting = await json<RunRecord>(await call(pool, "GET", `/runs/${run_id}`));
    expect(waiting).toMatchObject({ state: "RUNNING", rounds_completed: 0, live_round: { frozen: false } });
    expect(await finish(pool, lb, delta, metrics)).toMatchObject({ accepted: true });
    const done = await until(pool, run_id, (run) => run.state !== "RUNNING");
    const base = parseWeights(RUN.initial_weights);
    if (!base.ok) throw new Error(base.message);
    const expected = reduceRound(base.weights, [{ taskId: la.task_id, samples: 4, loss: 0.25, delta }]);
    if (!expected.ok) throw new Error(expected.message);
    expect(done).toMatchObject({ state: "SUCCEEDED", rounds_completed: 1 });
    const weights = await call(pool, "GET", `/artifacts/${done.result_uri!.slice("artifact://".length)}`);
    expect(await weights.json()).toEqual(weightsToJson(expected.weights));
  });

  it("lets a straggler cancelled at quorum finish its uploads to a refused commit, and nobody else write there", async () => {
    const pool = freshPool();
    for (const n of ["n1", "n2", "n3"]) await register(pool, n);
    const { run_id } = await json<RunRecord>(
      await call(pool, "POST", "/runs", { ...RUN, num_shards: 3, min_participants: 2, rounds: 2 }),
    );
    const live = (await until(pool, run_id, (run) => run.live_round !== null)).live_round!;
    const leases = [];
    for (const n of ["n1", "n2", "n3"]) leases.push(await json<Lease>(await claim(pool, n)));
    const delta = { w: { shape: [1], data: [0.5] } };
    for (const lease of leases.slice(0, 2))
      expect(await finish(pool, lease, delta, { samples: 2, loss: 1 })).toMatchObject({ accepted: true });
    const late = leases[2]!;
    expect((await call(pool, "POST", `/attempts/${late.lease_id}/heartbeat`, undefined, late.node_id)).status).toBe(
      410,
    );
    // Another node may not write under the cancelled task.
    expect((await upload(pool, `jobs/${live.job_id}/${late.task_id}/delta.json`, "{}", "n1")).status).toBe(403);
    // Its holder's uploads land (the unchanged agent stops on a refused one), its commit is refused, and the round stays as frozen.
    expect(await finish(pool, late, delta, { samples: 2, loss: 1 })).toMatchObject({ accepted: false });
    const run = await until(pool, run_id, (r) => r.rounds_completed >= 1);
    expect(run.history[0]!.task_ids).toEqual([leases[0]!.task_id, leases[1]!.task_id].sort());
    // Once its cancelled lease would have ended, the holder may write there no more.
    await runInDurableObject(jobStub(pool, live.job_id), (_o, state) => {
      state.storage.sql.exec("UPDATE leases SET deadline_ms = ? WHERE lease_id = ?", Date.now() - 1, late.lease_id);
    });
    const after = await upload(pool, `jobs/${live.job_id}/${late.task_id}/delta.json`, "{}", late.node_id);
    expect(after.status).toBe(403);
    await call(pool, "POST", `/runs/${run_id}/cancel`);
  });
});
