// Hosted runs (docs/protocol.md §17), driven from outside as an operator and
// its nodes would: a run starts with one request, its rounds are ordinary
// jobs that nodes claim and commit, and the run's Workflow aggregates each
// round's first quorum of accepted commits with the reference's arithmetic,
// cancels what is still out, and goes on. Runs again over 4 shards.

import { describe, expect, it, vi } from "vitest";
import type { RunRecord } from "../../../src/pool/runs/calls";
import type { Lease } from "../../../src/protocol/tasks";
import { parseWeights, reduceRound, weightsToJson } from "../../../src/rules/fedavg";
import { reducePartials } from "../../../src/rules/kmeans";
import { call, claim, freshPool, json, register, sha256, upload } from "../helpers";

const WORKER_PARAMS = {
  local_steps: 2,
  lr: 0.1,
  batch_size: 4,
  seed: 7,
  in_dim: 2,
  hidden: 2,
  out_dim: 1,
  dataset_size: 32,
};
const INITIAL = { w: { shape: [2], data: [0.5, -1.0] }, b: { shape: [], data: [0.25] } };

function fedavgRun(extra: Record<string, unknown> = {}) {
  return {
    kind: "federated_averaging",
    rounds: 2,
    num_shards: 3,
    min_participants: 2,
    worker_params: WORKER_PARAMS,
    initial_weights: INITIAL,
    round_timeout_seconds: 60,
    lease_seconds: 30,
    ...extra,
  };
}

async function start(pool: string, body: unknown): Promise<RunRecord> {
  const r = await call(pool, "POST", "/runs", body);
  if (r.status !== 201) throw new Error(`start: ${r.status} ${await r.text()}`);
  return json<RunRecord>(r);
}

async function runOf(pool: string, runId: string): Promise<RunRecord> {
  const r = await call(pool, "GET", `/runs/${runId}`);
  expect(r.status).toBe(200);
  return json<RunRecord>(r);
}

/** The run once `ready` holds of it, looked at every 50 ms for up to 20 s. */
function until(pool: string, runId: string, ready: (run: RunRecord) => boolean): Promise<RunRecord> {
  return vi.waitFor(
    async () => {
      const run = await runOf(pool, runId);
      if (!ready(run))
        throw new Error(
          `run not there yet: ${JSON.stringify({ state: run.state, live: run.live_round, done: run.rounds_completed })}`,
        );
      return run;
    },
    { timeout: 20_000, interval: 50 },
  );
}

/** Node `nodeId` claims a task of `jobId`. */
async function claimOf(pool: string, nodeId: string, jobId: string): Promise<Lease> {
  const r = await claim(pool, nodeId, jobId);
  expect(r.status).toBe(200);
  return json<Lease>(r);
}

/** What a fedavg_worker commits: its metrics.json beside its delta.json, then the commit of the metrics. */
async function commitRound(pool: string, lease: Lease, samples: number, loss: number, delta: unknown) {
  const prefix = `jobs/${lease.job_id}/${lease.task_id}`;
  expect((await upload(pool, `${prefix}/delta.json`, JSON.stringify(delta))).status).toBe(200);
  const metrics = JSON.stringify({ samples, loss, delta_file: "delta.json" });
  expect((await upload(pool, `${prefix}/metrics.json`, metrics)).status).toBe(200);
  const r = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, { output_sha256: await sha256(metrics) });
  return json<{ accepted: boolean }>(r);
}

async function artifactJson(pool: string, uri: string): Promise<unknown> {
  const r = await call(pool, "GET", `/artifacts/${uri.slice("artifact://".length)}`);
  expect(r.status).toBe(200);
  return r.json();
}

async function tasksOf(pool: string, jobId: string) {
  return json<{ task_id: string; state: string }[]>(await call(pool, "GET", `/jobs/${jobId}/tasks`));
}

const delta = (w0: number, w1: number, b: number) => ({
  w: { shape: [2], data: [w0, w1] },
  b: { shape: [], data: [b] },
});

describe("a federated-averaging run", () => {
  it("aggregates each round's first quorum with the reference's arithmetic, cancels the straggler, and succeeds", async () => {
    const pool = freshPool();
    for (const n of ["na", "nb", "nc"]) await register(pool, n);
    const started = await start(pool, fedavgRun());
    expect(started).toMatchObject({ state: "RUNNING", kind: "federated_averaging", rounds: 2, rounds_completed: 0 });
    const runId = started.run_id;

    let weights = parseWeights(INITIAL);
    if (!weights.ok) throw new Error(weights.message);
    let previousUri: string | null = null;
    const deltas = [
      [delta(0.1, 0.2, -0.05), delta(0.3, -0.1, 0.0)],
      [delta(-0.2, 0.05, 0.1), delta(0.0, 0.4, 0.2)],
    ];
    for (let r = 0; r < 2; r++) {
      const live = (await until(pool, runId, (run) => run.live_round?.round === r)).live_round!;
      const job = await json<{
        spec: {
          metadata: { labels: Record<string, string> };
          spec: { workload: { parameters: Record<string, unknown> } };
        };
      }>(await call(pool, "GET", `/jobs/${live.job_id}`));
      // The reference driver's body: its name, its params, the previous round's weights; the run's labels beside.
      expect(job.spec.metadata).toMatchObject({
        name: `fedavg-r00${r}`,
        labels: { "flashedge.dev/run": runId, "flashedge.dev/round": String(r) },
      });
      expect(job.spec.spec.workload.parameters).toEqual({
        ...WORKER_PARAMS,
        round: r,
        num_shards: 3,
        lease_seconds: 30,
        ...(previousUri === null ? {} : { weights: previousUri }),
      });
      const [la, lb, lc] = [
        await claimOf(pool, "na", live.job_id),
        await claimOf(pool, "nb", live.job_id),
        await claimOf(pool, "nc", live.job_id),
      ];
      expect(await commitRound(pool, la!, 10, 0.9 - r * 0.3, deltas[r]![0])).toMatchObject({ accepted: true });
      expect(await commitRound(pool, lb!, 30, 0.7 - r * 0.3, deltas[r]![1])).toMatchObject({ accepted: true });
      // Quorum met: the straggler's task is cancelled at once, and its lease with it.
      const tasks = await tasksOf(pool, live.job_id);
      expect(tasks.find((t) => t.task_id === lc!.task_id)?.state).toBe("CANCELLED");
      expect((await call(pool, "POST", `/attempts/${lc!.lease_id}/heartbeat`)).status).toBe(410);
      // Its late commit is not accepted, and cannot join the round.
      expect(await commitRound(pool, lc!, 1000, 5, delta(9, 9, 9))).toMatchObject({ accepted: false });

      const run = await until(pool, runId, (run) => run.rounds_completed === r + 1);
      const expected = reduceRound(weights.weights, [
        { taskId: la!.task_id, samples: 10, loss: 0.9 - r * 0.3, delta: deltas[r]![0] },
        { taskId: lb!.task_id, samples: 30, loss: 0.7 - r * 0.3, delta: deltas[r]![1] },
      ]);
      if (!expected.ok) throw new Error(expected.message);
      const round = run.history[r]!;
      expect(round).toMatchObject({
        round: r,
        job_id: live.job_id,
        participants: 2,
        task_ids: [la!.task_id, lb!.task_id].sort(),
        mean_loss: expected.meanLoss,
        clipped: [],
        result_uri: `artifact://jobs/${live.job_id}/round-00${r}/weights.json`,
      });
      expect(await artifactJson(pool, round.result_uri)).toEqual(weightsToJson(expected.weights));
      weights = { ok: true, weights: expected.weights };
      previousUri = round.result_uri;
    }
    const done = await until(pool, runId, (run) => run.state !== "RUNNING");
    expect(done).toMatchObject({
      state: "SUCCEEDED",
      reason: null,
      rounds_completed: 2,
      live_round: null,
      result_uri: previousUri,
    });
    const metrics = await (await call(pool, "GET", "/metrics")).text();
    expect(metrics).toContain(`flashedge_runs{pool="${pool}",state="SUCCEEDED"} 1`);
    expect(metrics).toContain(`flashedge_run_rounds_aggregated_total{pool="${pool}"} 2`);
    // Two rounds, two jobs: none submitted twice.
    const jobs = await json<{ job_id: string }[]>(await call(pool, "GET", "/jobs"));
    expect(jobs.map((j) => j.job_id).sort()).toEqual(done.history.map((h) => h.job_id).sort());
  });

  it("starts from weights an artifact holds, and refuses to when that artifact is not weights", async () => {
    const pool = freshPool();
    await register(pool, "na");
    expect((await upload(pool, "seeds/w.json", JSON.stringify(INITIAL))).status).toBe(200);
    expect((await upload(pool, "seeds/bad.json", JSON.stringify({ w: [1, 2] }))).status).toBe(200);
    const good = await start(
      pool,
      fedavgRun({ rounds: 1, min_participants: 1, initial_weights: "artifact://seeds/w.json" }),
    );
    const live = (await until(pool, good.run_id, (run) => run.live_round !== null)).live_round!;
    const lease = await claimOf(pool, "na", live.job_id);
    expect(await commitRound(pool, lease, 8, 0.5, delta(1, 2, 3))).toMatchObject({ accepted: true });
    const done = await until(pool, good.run_id, (run) => run.state !== "RUNNING");
    const base = parseWeights(INITIAL);
    if (!base.ok) throw new Error(base.message);
    const expected = reduceRound(base.weights, [
      { taskId: lease.task_id, samples: 8, loss: 0.5, delta: delta(1, 2, 3) },
    ]);
    if (!expected.ok) throw new Error(expected.message);
    expect(done.state).toBe("SUCCEEDED");
    expect(await artifactJson(pool, done.result_uri!)).toEqual(weightsToJson(expected.weights));

    const bad = await start(
      pool,
      fedavgRun({ rounds: 1, min_participants: 1, initial_weights: "artifact://seeds/bad.json" }),
    );
    const badLive = (await until(pool, bad.run_id, (run) => run.live_round !== null)).live_round!;
    const badLease = await claimOf(pool, "na", badLive.job_id);
    await commitRound(pool, badLease, 8, 0.5, delta(1, 2, 3));
    const failed = await until(pool, bad.run_id, (run) => run.state !== "RUNNING");
    expect(failed.state).toBe("FAILED");
    expect(failed.reason).toMatch(/^round 0: artifact:\/\/seeds\/bad.json/);
  });

  it("fails with the reference's reason when a round's deadline passes short of quorum, and cancels the round", async () => {
    const pool = freshPool();
    await register(pool, "na");
    const { run_id } = await start(pool, fedavgRun({ round_timeout_seconds: 1 }));
    const live = (await until(pool, run_id, (run) => run.live_round !== null)).live_round!;
    const lease = await claimOf(pool, "na", live.job_id);
    expect(await commitRound(pool, lease, 5, 1, delta(0, 0, 0))).toMatchObject({ accepted: true });
    const failed = await until(pool, run_id, (run) => run.state !== "RUNNING");
    expect(failed).toMatchObject({
      state: "FAILED",
      reason: "round 0: timed out with 1 of 2 needed (3 shards dispatched)",
      rounds_completed: 0,
    });
    const job = await json<{ state: string }>(await call(pool, "GET", `/jobs/${live.job_id}`));
    expect(job.state).toBe("CANCELLED");
  });

  it("fails naming the task when a committed delta is not the weights' shape, as the reference refuses it", async () => {
    const pool = freshPool();
    for (const n of ["na", "nb"]) await register(pool, n);
    const { run_id } = await start(pool, fedavgRun({ rounds: 1 }));
    const live = (await until(pool, run_id, (run) => run.live_round !== null)).live_round!;
    const la = await claimOf(pool, "na", live.job_id);
    const lb = await claimOf(pool, "nb", live.job_id);
    await commitRound(pool, la, 5, 1, delta(0.1, 0.1, 0.1));
    await commitRound(pool, lb, 5, 1, { w: { shape: [3], data: [1, 2, 3] }, b: { shape: [], data: [0] } });
    const failed = await until(pool, run_id, (run) => run.state !== "RUNNING");
    expect(failed.state).toBe("FAILED");
    expect(failed.reason).toMatch(/^round 0: /);
    expect(failed.history).toEqual([]);
  });

  it("fails naming the missing artifact when a participant committed its metrics without its delta", async () => {
    const pool = freshPool();
    await register(pool, "na");
    const { run_id } = await start(pool, fedavgRun({ rounds: 1, min_participants: 1 }));
    const live = (await until(pool, run_id, (run) => run.live_round !== null)).live_round!;
    const lease = await claimOf(pool, "na", live.job_id);
    const metrics = JSON.stringify({ samples: 3, loss: 0.5, delta_file: "nowhere.json" });
    expect((await upload(pool, `jobs/${live.job_id}/${lease.task_id}/metrics.json`, metrics)).status).toBe(200);
    const r = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, {
      output_sha256: await sha256(metrics),
    });
    expect(await json(r)).toMatchObject({ accepted: true });
    const failed = await until(pool, run_id, (run) => run.state !== "RUNNING");
    expect(failed).toMatchObject({
      state: "FAILED",
      reason: `round 0: no artifact at jobs/${live.job_id}/${lease.task_id}/nowhere.json`,
    });
  });

  it("is cancelled by its operator: the run ends CANCELLED and its live round's job with it, idempotently", async () => {
    const pool = freshPool();
    const { run_id } = await start(pool, fedavgRun());
    const live = (await until(pool, run_id, (run) => run.live_round !== null)).live_round!;
    const r = await call(pool, "POST", `/runs/${run_id}/cancel`);
    expect(r.status).toBe(200);
    expect(await json(r)).toMatchObject({ state: "CANCELLED", reason: "cancelled", live_round: null });
    expect((await json<{ state: string }>(await call(pool, "GET", `/jobs/${live.job_id}`))).state).toBe("CANCELLED");
    const again = await call(pool, "POST", `/runs/${run_id}/cancel`);
    expect(await json(again)).toMatchObject({ state: "CANCELLED", reason: "cancelled" });
    // Nothing more is submitted after the cancel.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await json<unknown[]>(await call(pool, "GET", "/jobs"))).toHaveLength(1);
  });
});

describe("a K-means run", () => {
  it("reduces every shard's partial into the next iteration's centroids, as the reference's reduce_partials", async () => {
    const pool = freshPool();
    for (const n of ["na", "nb"]) await register(pool, n);
    const centroids = [
      [0, 0],
      [10, 10],
    ];
    const { run_id } = await start(pool, {
      kind: "sharded_kmeans",
      shards: ["artifact://data/shard-000.csv", "artifact://data/shard-001.csv"],
      centroids,
      iterations: 2,
    });
    let current: number[][] = centroids;
    for (let it = 0; it < 2; it++) {
      const live = (await until(pool, run_id, (run) => run.live_round?.round === it)).live_round!;
      const job = await json<{ spec: { spec: { workload: { parameters: Record<string, unknown> } } } }>(
        await call(pool, "GET", `/jobs/${live.job_id}`),
      );
      expect(job.spec.spec.workload.parameters).toMatchObject({ centroids: current, iteration: it });
      const partials = [
        {
          sums: [
            [1 + it, 2],
            [22, 20],
          ],
          counts: [2, 2],
          inertia: 3.5,
          n: 4,
        },
        {
          sums: [
            [0.5, 0.25],
            [0, 0],
          ],
          counts: [1, 0],
          inertia: 0.75,
          n: 1,
        },
      ];
      for (const [i, node] of ["na", "nb"].entries()) {
        const lease = await claimOf(pool, node, live.job_id);
        const metrics = JSON.stringify({ task_id: lease.task_id, ...partials[Number(lease.task_id.endsWith("001"))]! });
        expect((await upload(pool, `jobs/${live.job_id}/${lease.task_id}/metrics.json`, metrics)).status).toBe(200);
        const r = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, {
          output_sha256: await sha256(metrics),
        });
        expect(await json(r), `commit ${i}`).toMatchObject({ accepted: true });
      }
      const run = await until(pool, run_id, (run) => run.rounds_completed === it + 1);
      const expected = reducePartials(partials, current);
      if (!expected.ok) throw new Error(expected.message);
      expect(run.history[it]).toMatchObject({ participants: 2, inertia: expected.inertia });
      // Every shard was needed and every shard committed: the iteration's job succeeded, nothing was cancelled.
      expect((await json<{ state: string }>(await call(pool, "GET", `/jobs/${live.job_id}`))).state).toBe("SUCCEEDED");
      expect(await artifactJson(pool, run.history[it]!.result_uri)).toEqual(expected.centroids);
      current = expected.centroids.map((row) => [...row]);
    }
    expect(await until(pool, run_id, (run) => run.state !== "RUNNING")).toMatchObject({ state: "SUCCEEDED" });
  });
});

describe("what a run refuses", () => {
  it("refuses with a 422 naming the field, and starts nothing", async () => {
    const pool = freshPool();
    const cases: [unknown, (string | number)[]][] = [
      [fedavgRun({ min_participants: 4 }), ["body", "min_participants"]],
      [fedavgRun({ rounds: 0 }), ["body", "rounds"]],
      [fedavgRun({ initial_weights: { w: { shape: [3], data: [1, 2] } } }), ["body", "initial_weights"]],
      [fedavgRun({ initial_weights: "s3://elsewhere" }), ["body", "initial_weights"]],
      [fedavgRun({ image: "local/tier1:latest" }), ["body", "image"]],
      [fedavgRun({ surprise: 1 }), ["body"]],
      // Replicas need identities (docs/protocol.md §14): an open pool refuses them, for a run as for a job.
      [fedavgRun({ labels: { "flashml.dev/replicas": "2" } }), ["body", "labels"]],
      [fedavgRun({ labels: { "flashml.dev/priority": "high" } }), ["body", "labels"]],
      [fedavgRun({ isolation: { tier: "vm" } }), ["body", "isolation", "tier"]],
      [{ kind: "sharded_kmeans", shards: [], centroids: [[0]], iterations: 1 }, ["body", "shards"]],
      [
        { kind: "sharded_kmeans", shards: ["artifact://a"], centroids: [[0, 1], [2]], iterations: 1 },
        ["body", "centroids", 1],
      ],
      [{ kind: "bogus" }, ["body", "kind"]],
    ];
    for (const [body, loc] of cases) {
      const r = await call(pool, "POST", "/runs", body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      const detail = (await json<{ detail: { loc: (string | number)[] }[] }>(r)).detail;
      expect(detail[0]!.loc.slice(0, loc.length), JSON.stringify(detail)).toEqual(loc);
    }
    // A worker param the recipe refuses: the whole problem, as a job's.
    const r = await call(pool, "POST", "/runs", fedavgRun({ worker_params: { lr: 0.1 } }));
    expect(r.status).toBe(422);
    expect((await json<{ detail: string }>(r)).detail).toMatch(/missing required parameters/);
    expect(await json<unknown[]>(await call(pool, "GET", "/runs"))).toEqual([]);
    expect(await json<unknown[]>(await call(pool, "GET", "/jobs"))).toEqual([]);
  });

  it("answers 404 for a run it does not have, however it is named", async () => {
    const pool = freshPool();
    for (const id of ["run-000000000000", "nope", "run-ZZZ", "..%2F"]) {
      expect((await call(pool, "GET", `/runs/${id}`)).status).toBe(404);
      expect((await call(pool, "POST", `/runs/${id}/cancel`)).status).toBe(404);
    }
  });

  it("pages its runs, oldest first", async () => {
    const pool = freshPool();
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await start(pool, fedavgRun())).run_id);
    const first = await call(pool, "GET", "/runs?limit=2");
    const page = await json<RunRecord[]>(first);
    expect(page).toHaveLength(2);
    const link = first.headers.get("link")!;
    const next = new URL(link.slice(1, link.indexOf(">"))).search;
    const rest = await json<RunRecord[]>(await call(pool, "GET", `/runs${next}`));
    expect([...page, ...rest].map((r) => r.run_id).sort()).toEqual(ids.sort());
    for (const id of ids) await call(pool, "POST", `/runs/${id}/cancel`);
  });
});
