// One reliability run: a coordinator under `wrangler dev`, a job, a fleet of
// agents, optionally SIGKILLs of the coordinator at random moments, then the
// verdict from the persisted state. Shared by crash.test.ts and soak.test.ts.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jobSpec } from "../test/fixtures/jobspec";
import { violations } from "../test/invariants/check";
import { type FleetStats, newStats, percentile, runFleet } from "./fleet";
import { snapshotFromDisk } from "./state";
import { type Coordinator, freePort, sleep, startCoordinator } from "./wrangler";

export interface RunOptions {
  nodes: number;
  tasks: number;
  seconds: number;
  kills: number;
  maxAttempts: number;
  failRate: number;
}

export interface RunReport {
  options: RunOptions;
  kills: number;
  completed: number;
  failedExhausted: number;
  unfinished: number;
  acceptedCommits: number;
  violations: string[];
  stats: Omit<FleetStats, "claimMs" | "commitMs">;
  claim_p50_ms: number | null;
  claim_p99_ms: number | null;
  commit_p50_ms: number | null;
  commit_p99_ms: number | null;
  seconds: number;
}

export async function reliabilityRun(options: RunOptions): Promise<RunReport> {
  const persistTo = mkdtempSync(join(tmpdir(), "flashedge-reliability-"));
  const log = join(persistTo, "wrangler.log");
  const port = await freePort();
  const started = Date.now();
  let coordinator: Coordinator = await startCoordinator({ port, persistTo, log });
  const pool = "reliability";
  const base = `${coordinator.url}/pools/${pool}/v1alpha1`;
  try {
    // A job holds at most 10,000 tasks: a larger run submits several.
    const jobIds: string[] = [];
    for (let first = 0; first < options.tasks; first += 10_000) {
      const count = Math.min(10_000, options.tasks - first);
      const submitted = await fetch(`${base}/jobs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(
          jobSpec(
            {
              type: "hyperparameter_search",
              parameters: { trials: Array.from({ length: count }, (_, i) => ({ i: first + i })), lease_seconds: 5 },
            },
            { retryPolicy: { maxTaskAttempts: options.maxAttempts } },
            "reliability",
          ),
        ),
      });
      if (submitted.status !== 201) throw new Error(`submit: ${submitted.status} ${await submitted.text()}`);
      jobIds.push(((await submitted.json()) as { job_id: string }).job_id);
    }

    let finished = false;
    const deadline = Date.now() + options.seconds * 1000;
    const stats = newStats();
    const fleet = runFleet(
      { base: () => base, nodes: options.nodes, done: () => finished, deadline, failRate: options.failRate },
      stats,
    );

    // Watch the job; meanwhile SIGKILL and restart the coordinator at random moments.
    let kills = 0;
    let nextKill = Date.now() + 2000 + Math.random() * 3000;
    while (Date.now() < deadline) {
      if (kills < options.kills && Date.now() >= nextKill) {
        await coordinator.kill();
        kills++;
        await sleep(Math.random() * 1000);
        coordinator = await startCoordinator({ port, persistTo, log });
        nextKill = Date.now() + 2000 + Math.random() * 4000;
      }
      try {
        const r = await fetch(`${base}/jobs`);
        const jobs = r.ok ? ((await r.json()) as Array<{ state: string }>) : [];
        if (
          jobs.length === jobIds.length &&
          jobs.every((j) => ["SUCCEEDED", "FAILED"].includes(j.state)) &&
          kills >= options.kills
        )
          break;
      } catch {
        // restarting
      }
      await sleep(250);
    }
    finished = true;
    await fleet;
    await coordinator.stop();

    const snapshot = snapshotFromDisk(persistTo, jobIds[0]!);
    const states = snapshot.tasks.map((t) => t.state);
    const { claimMs, commitMs, ...counts } = stats;
    return {
      options,
      kills,
      completed: states.filter((s) => s === "COMPLETED").length,
      failedExhausted: snapshot.tasks.filter((t) => t.state === "FAILED" && t.attempts_used === t.max_attempts).length,
      unfinished: states.filter((s) => s !== "COMPLETED" && s !== "FAILED").length,
      acceptedCommits: snapshot.leases.filter((l) => l.status === "completed").length,
      violations: violations(snapshot),
      stats: counts,
      claim_p50_ms: percentile(claimMs, 50),
      claim_p99_ms: percentile(claimMs, 99),
      commit_p50_ms: percentile(commitMs, 50),
      commit_p99_ms: percentile(commitMs, 99),
      seconds: Math.round((Date.now() - started) / 100) / 10,
    };
  } finally {
    await coordinator.stop();
    if (!process.env.KEEP_STATE) rmSync(persistTo, { recursive: true, force: true });
  }
}

/** Sizes from the environment (set by scripts/reliability.mjs from its flags). */
export function sizes(defaults: RunOptions): RunOptions {
  const n = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback);
  return {
    nodes: n("RELIABILITY_NODES", defaults.nodes),
    tasks: n("RELIABILITY_TASKS", defaults.tasks),
    seconds: n("RELIABILITY_SECONDS", defaults.seconds),
    kills: n("RELIABILITY_KILLS", defaults.kills),
    maxAttempts: n("RELIABILITY_MAX_ATTEMPTS", defaults.maxAttempts),
    failRate: n("RELIABILITY_FAIL_RATE", defaults.failRate),
  };
}
