// The hosted-run crash test (docs/protocol.md §17): a federated-averaging
// run under `wrangler dev` whose coordinator process is SIGKILLed and
// restarted on the same state at the moments a driver is most fragile:
// right after the commit that met a round's quorum (its reduce in flight),
// after a round was submitted but before any commit, and mid-quorum. The
// run's Workflow resumes where it was: it ends SUCCEEDED, every round was
// submitted once and aggregated once, and every round's weights are the
// reference's arithmetic over the deltas committed.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import type { RunRecord } from "../src/protocol/runs";
import type { Lease } from "../src/protocol/tasks";
import { parseWeights, reduceRound, type Weights, weightsToJson } from "../src/rules/fedavg";
import { registration } from "../test/fixtures/registration";
import { coordinator, freePort, ok, sha256, sleep, startWrangler, type Wrangler } from "../test/support/index.mjs";

const SHARDS = Number(process.env.RELIABILITY_SHARDS ?? "1");
const ROUNDS = 4;
const INITIAL = { w: { shape: [3], data: [0.5, -1, 2] } };
const WORKER_PARAMS = {
  local_steps: 1,
  lr: 0.1,
  batch_size: 2,
  seed: 3,
  in_dim: 3,
  hidden: 1,
  out_dim: 1,
  dataset_size: 9,
};

/** Where round r is killed: after its quorum's commit, before any commit, between its two commits. */
const KILL_AT: Record<number, "after-quorum" | "before-commits" | "mid-quorum"> = {
  0: "after-quorum",
  1: "before-commits",
  2: "mid-quorum",
};

it("resumes a run killed mid-round without submitting or aggregating a round twice", async () => {
  const pool = "runs-crash";
  const port = await freePort();
  const persistTo = mkdtempSync(join(tmpdir(), "flashedge-runs-crash-"));
  const vars: Record<string, string> = { FLASHML_CLAIM_WAIT_SECONDS: "0" };
  if (SHARDS > 1) vars.FLASHML_POOL_SHARDS = `${pool}=${SHARDS}`;
  const start = () => startWrangler({ port, persistTo, vars });
  let server: Wrangler = await start();
  const api = coordinator(server.url, { pool, timeoutMs: 20_000 });
  const restart = async () => {
    await server.kill();
    server = await start();
  };
  try {
    for (const n of ["na", "nb", "nc"]) ok(await api.register(registration(n)), `register ${n}`);
    const run = ok<RunRecord>(
      await api.send("POST", "/runs", {
        body: {
          kind: "federated_averaging",
          rounds: ROUNDS,
          num_shards: 3,
          min_participants: 2,
          worker_params: WORKER_PARAMS,
          initial_weights: INITIAL,
          round_timeout_seconds: 300,
          lease_seconds: 60,
        },
      }),
      "POST /runs",
    );
    const parsed = parseWeights(INITIAL);
    if (!parsed.ok) throw new Error(parsed.message);
    let weights: Weights = parsed.weights;
    const readRun = async () => ok<RunRecord>(await api.send("GET", `/runs/${run.run_id}`), "GET /runs/{id}");
    const until = async (ready: (r: RunRecord) => boolean, what: string) => {
      const deadline = Date.now() + 120_000;
      for (;;) {
        try {
          const r = await readRun();
          if (ready(r)) return r;
          if (Date.now() > deadline)
            throw new Error(
              `${what}: still ${JSON.stringify({ state: r.state, live: r.live_round, done: r.rounds_completed })}`,
            );
        } catch (error) {
          if (Date.now() > deadline) throw error;
        }
        await sleep(200);
      }
    };

    for (let r = 0; r < ROUNDS; r++) {
      const live = (await until((x) => x.live_round?.round === r, `round ${r} live`)).live_round!;
      const leases: Lease[] = [];
      for (const n of ["na", "nb", "nc"])
        leases.push(ok<Lease>(await api.claim(n, { jobId: live.job_id }), `claim ${n}`));
      if (KILL_AT[r] === "before-commits") await restart();
      const committed = [];
      for (const [i, lease] of leases.slice(0, 2).entries()) {
        const delta = { w: { shape: [3], data: [0.1 * (r + 1), -0.2 * i, 0.05 * (i + r)] } };
        const metrics = JSON.stringify({ samples: 5 + 10 * i, loss: 1 / (r + 2 + i) });
        const prefix = `jobs/${lease.job_id}/${lease.task_id}`;
        ok(await api.upload(`${prefix}/delta.json`, JSON.stringify(delta)), "upload delta");
        ok(await api.upload(`${prefix}/metrics.json`, metrics), "upload metrics");
        const answer = ok<{ accepted: boolean }>(
          await api.complete(lease.lease_id, { output_sha256: sha256(metrics) }),
          "complete",
        );
        expect(answer.accepted).toBe(true);
        committed.push({ taskId: lease.task_id, samples: 5 + 10 * i, loss: 1 / (r + 2 + i), delta });
        if (i === 0 && KILL_AT[r] === "mid-quorum") await restart();
      }
      if (KILL_AT[r] === "after-quorum") await restart();
      const after = await until((x) => x.rounds_completed === r + 1, `round ${r} aggregated`);
      const expected = reduceRound(weights, committed);
      if (!expected.ok) throw new Error(expected.message);
      const round = after.history[r]!;
      expect(round.mean_loss).toBe(expected.meanLoss);
      const stored = ok(await api.download(round.result_uri.slice("artifact://".length)), "weights");
      expect(stored).toEqual(weightsToJson(expected.weights));
      weights = expected.weights;
      // The straggler's task was cancelled once the quorum was met.
      const tasks = ok<{ task_id: string; state: string }[]>(
        await api.send("GET", `/jobs/${live.job_id}/tasks`),
        "tasks",
      );
      expect(tasks.find((t) => t.task_id === leases[2]!.task_id)?.state).toBe("CANCELLED");
    }
    const done = await until((x) => x.state !== "RUNNING", "the run's end");
    expect(done).toMatchObject({ state: "SUCCEEDED", rounds_completed: ROUNDS });
    const jobIds = done.history.map((h) => h.job_id);
    expect(new Set(jobIds).size).toBe(ROUNDS);
    const jobs = ok<{ job_id: string }[]>(await api.send("GET", "/jobs?limit=100"), "GET /jobs");
    expect(jobs.map((j) => j.job_id).sort()).toEqual([...jobIds].sort());
    console.log(
      `RUNS-CRASH ${JSON.stringify({ shards: SHARDS, rounds: ROUNDS, kills: Object.keys(KILL_AT).length, run: done.run_id })}`,
    );
  } finally {
    await server.stop();
    rmSync(persistTo, { recursive: true, force: true });
  }
});
