// One reliability run: a coordinator under `wrangler dev`, jobs at two
// priorities from two tenants, a fleet of agents (a few broken or vanishing
// on purpose), optionally SIGKILLs of the coordinator at random moments, then
// the verdict from the persisted state. Shared by crash.test.ts and
// soak.test.ts.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { jobSpec } from "../test/fixtures/jobspec";
import { type PoolSnapshot, replayHolds, violations } from "../test/invariants/check";
import { coordinator, freePort, ok, sleep, startWrangler, type Wrangler } from "../test/support/index.mjs";
import { type FleetStats, fleetMember, newStats, percentile, runFleet } from "./fleet";
import { shardViolations, snapshotsFromDisk } from "./state";

export interface RunOptions {
  nodes: number;
  tasks: number;
  seconds: number;
  kills: number;
  maxAttempts: number;
  failRate: number;
  /** Agents that fail every attempt (held back after five, docs/protocol.md §13). */
  broken: number;
  /** Agents that vanish mid-lease once (a worker loss, docs/protocol.md §13). */
  vanishing: number;
  /** The pool's shard count (FLASHML_POOL_SHARDS, docs/protocol.md §15); 1 is a pool of one object. */
  shards: number;
  /**
   * The shard count the coordinator comes back with after its first kill (0:
   * unchanged): a live pool raised mid-run must lose and move nothing
   * (docs/sharding.md §11).
   */
  raise: number;
}

const LEASE_SECONDS = 5;

/**
 * How the run's tasks are split into jobs: two tenants at priority 0 and a
 * smaller urgent job of the first at priority 10, so the claim's priority
 * and fair-share turns are all exercised. A job holds at most 10,000 tasks.
 */
const SHARES = [
  { tenant: "team-a", priority: 0, share: 0.4 },
  { tenant: "team-b", priority: 0, share: 0.4 },
  { tenant: "team-a", priority: 10, share: 0.2 },
];

export interface JobReport {
  job_id: string;
  tenant: string;
  priority: number;
  tasks: number;
  completed: number;
  failed: number;
  worker_losses: number;
  /** When the job finished, seconds after the first submission: the urgent job drains first. */
  finished_s: number | null;
}

export interface RunReport {
  options: RunOptions;
  kills: number;
  completed: number;
  /** FAILED tasks: attempts exhausted, or lost to too many workers. */
  failed: number;
  /** Each FAILED task and the nodes whose attempts failed it, in order (its TASK_ATTEMPT_FAILED events). */
  failedTasks: Array<{ task_id: string; failers: string[] }>;
  unfinished: number;
  acceptedCommits: number;
  jobs: JobReport[];
  /** Lease expiries that counted as worker losses rather than attempts (the tasks' worker_losses). */
  workerLosses: number;
  leaseExpiries: number;
  /** Nodes GET /nodes showed with a held_until during the run. */
  heldBackSeen: string[];
  /** Nodes the ledger shows held back, with how many failures started or extended a hold. */
  heldBackInLedger: Record<string, number>;
  /** The broken nodes as the final state leaves them. */
  brokenAtEnd: Array<{ node_id: string; consecutive_failures: number; held_until_ms: number }>;
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
  // wrangler.toml's settings (the claim hold, the state-change log lines), and no .dev.vars.
  const pool = "reliability";
  let shards = options.shards;
  const vars = (): Record<string, string> => (shards > 1 ? { FLASHML_POOL_SHARDS: `${pool}=${shards}` } : {});
  const start = () => startWrangler({ port, persistTo, log, logLevel: "log", vars: vars() });
  let server: Wrangler = await start();
  const api = coordinator(server.url, { pool, timeoutMs: null });
  try {
    const jobIds: string[] = [];
    const submittedMs = Date.now();
    for (const plan of jobPlans(options.tasks)) {
      const spec = jobSpec(
        {
          type: "hyperparameter_search",
          parameters: {
            trials: Array.from({ length: plan.count }, (_, i) => ({ i: plan.first + i })),
            lease_seconds: LEASE_SECONDS,
          },
        },
        { retryPolicy: { maxTaskAttempts: options.maxAttempts } },
        "reliability",
      );
      const labels = { "flashml.dev/tenant": plan.tenant, "flashml.dev/priority": String(plan.priority) };
      const submitted = await api.submit({ ...spec, metadata: { ...spec.metadata, labels } });
      jobIds.push(ok<{ job_id: string }>(submitted, "submit").job_id);
    }

    let finished = false;
    const deadline = Date.now() + options.seconds * 1000;
    const stats = newStats();
    const fleet = runFleet(
      {
        url: () => server.url,
        pool,
        nodes: options.nodes,
        done: () => finished,
        deadline,
        failRate: options.failRate,
        broken: options.broken,
        vanishing: options.vanishing,
        leaseSeconds: LEASE_SECONDS,
      },
      stats,
    );

    // Watch the jobs and the held-back nodes; meanwhile SIGKILL and restart
    // the coordinator at random moments.
    const heldBackSeen = new Set<string>();
    let nextNodesLook = 0;
    let kills = 0;
    let nextKill = Date.now() + 2000 + Math.random() * 3000;
    while (Date.now() < deadline) {
      if (kills < options.kills && Date.now() >= nextKill) {
        await server.kill();
        kills++;
        await sleep(Math.random() * 1000);
        if (options.raise > 0) shards = options.raise;
        server = await start();
        nextKill = Date.now() + 2000 + Math.random() * 4000;
      }
      try {
        if (Date.now() >= nextNodesLook) {
          nextNodesLook = Date.now() + 1000;
          // The broken nodes sort first (fleetMember), so the first page holds them.
          const r = await api.send("GET", "/nodes?limit=1000");
          const nodes =
            r.status === 200 ? (JSON.parse(r.text) as Array<{ node_id: string; held_until: string | null }>) : [];
          for (const n of nodes) if (n.held_until !== null) heldBackSeen.add(n.node_id);
        }
        const r = await api.jobs();
        const jobs = r.status === 200 ? (JSON.parse(r.text) as Array<{ state: string }>) : [];
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
    await server.stop();

    // Every shard the run's jobs landed in, read whole; their rows together are the pool's.
    const { snapshots, homeNodes } = snapshotsFromDisk(persistTo, jobIds);
    const allTasks = snapshots.flatMap((s) => s.tasks);
    const allLeases = snapshots.flatMap((s) => s.leases);
    const allEvents = snapshots.flatMap((s) => s.events);
    const states = allTasks.map((t) => t.state);
    const { claimMs, commitMs, ...counts } = stats;
    const queues = new Map(snapshots.flatMap((s) => s.counters?.job_queues ?? []).map((q) => [q.job_id as string, q]));
    const jobRows = snapshots.flatMap((s) => s.jobs);
    const jobs = jobIds.map((jobId): JobReport => {
      const tasks = allTasks.filter((t) => t.job_id === jobId);
      const queue = queues.get(jobId);
      const finishedMs = jobRows.find((j) => j.job_id === jobId)?.finished_ms;
      return {
        job_id: jobId,
        tenant: String(queue?.tenant),
        priority: Number(queue?.priority),
        tasks: tasks.length,
        completed: tasks.filter((t) => t.state === "COMPLETED").length,
        failed: tasks.filter((t) => t.state === "FAILED").length,
        worker_losses: Number(queue?.worker_losses),
        finished_s: typeof finishedMs === "number" ? Math.round((finishedMs - submittedMs) / 100) / 10 : null,
      };
    });
    const broken = new Set(brokenNodes(options));
    return {
      options,
      kills,
      completed: states.filter((s) => s === "COMPLETED").length,
      failed: states.filter((s) => s === "FAILED").length,
      failedTasks: allTasks
        .filter((t) => t.state === "FAILED")
        .map((t) => ({
          task_id: t.task_id as string,
          failers: allEvents
            .filter((e) => e.type === "TASK_ATTEMPT_FAILED" && e.job_id === t.job_id)
            .map((e) => JSON.parse(e.data as string) as { task_id: string; node_id: string })
            .filter((d) => d.task_id === t.task_id)
            .map((d) => d.node_id),
        })),
      unfinished: states.filter((s) => s !== "COMPLETED" && s !== "FAILED").length,
      acceptedCommits: allLeases.filter((l) => l.status === "completed").length,
      jobs,
      workerLosses: allTasks.reduce((sum, t) => sum + Number(t.worker_losses), 0),
      leaseExpiries: allEvents.filter((e) => e.type === "LEASE_EXPIRED").length,
      heldBackSeen: [...heldBackSeen].sort(),
      heldBackInLedger: Object.fromEntries(replayHolds(poolLedger(snapshots)).held),
      brokenAtEnd: homeNodes
        .filter((n) => broken.has(n.node_id as string))
        .map((n) => ({
          node_id: n.node_id as string,
          consecutive_failures: Number(n.consecutive_failures),
          held_until_ms: Number(n.held_until_ms),
        })),
      violations: [
        ...snapshots.flatMap((s) => violations(s)),
        ...shardViolations(persistTo, shards, jobIds, layoutOf(options)),
      ],
      stats: counts,
      claim_p50_ms: percentile(claimMs, 50),
      claim_p99_ms: percentile(claimMs, 99),
      commit_p50_ms: percentile(commitMs, 50),
      commit_p99_ms: percentile(commitMs, 99),
      seconds: Math.round((Date.now() - started) / 100) / 10,
    };
  } finally {
    await server.stop();
    if (!process.env.KEEP_STATE) rmSync(persistTo, { recursive: true, force: true });
  }
}

/** The shard counts shard 0's layout history must record: the start's, then the raise's. */
function layoutOf(options: RunOptions): number[] {
  return options.raise > 0 && options.raise !== options.shards ? [options.shards, options.raise] : [options.shards];
}

/** The node ids of the run's broken agents. */
function brokenNodes(options: RunOptions): string[] {
  return Array.from({ length: options.nodes }, (_, i) => fleetMember(i, options.broken, options.vanishing))
    .filter(([, kind]) => kind === "broken")
    .map(([id]) => id);
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
    broken: n("RELIABILITY_BROKEN", defaults.broken),
    vanishing: n("RELIABILITY_VANISHING", defaults.vanishing),
    shards: n("RELIABILITY_SHARDS", defaults.shards),
    raise: n("RELIABILITY_RAISE", defaults.raise),
  };
}

/** The jobs a run of `tasks` tasks submits: SHARES of it, each in jobs of at most 10,000. */
export function jobPlans(tasks: number): Array<{ tenant: string; priority: number; first: number; count: number }> {
  const plans = [];
  let first = 0;
  for (const [k, share] of SHARES.entries()) {
    const total = k === SHARES.length - 1 ? tasks - first : Math.floor(tasks * share.share);
    for (let done = 0; done < total; done += 10_000) {
      const count = Math.min(10_000, total - done);
      plans.push({ tenant: share.tenant, priority: share.priority, first, count });
      first += count;
    }
  }
  return plans;
}

/**
 * The pool's ledger as one: every shard's events in time order, renumbered.
 * A node's failures on several shards all reach its home's run of failures
 * (docs/sharding.md §8.2), so its holds replay over them together.
 */
function poolLedger(snapshots: readonly PoolSnapshot[]): PoolSnapshot["events"] {
  if (snapshots.length === 1) return snapshots[0]!.events;
  return snapshots
    .flatMap((s) => s.events)
    .sort((a, b) => (a.ts_ms as number) - (b.ts_ms as number) || (a.seq as number) - (b.seq as number))
    .map((e, k) => ({ ...e, seq: k + 1 }));
}

/**
 * The misbehaving agents produced the states they are there for: every
 * broken node was held back (in the ledger and on GET /nodes), every
 * vanishing agent abandoned a lease, and each of those was a worker loss.
 */
/**
 * Every task committed once — or failed with its attempts used, a broken
 * node among those that failed it. A saturated pool may hand a task back to
 * the node that just failed it (docs/protocol.md §13 rule 4: retry elsewhere
 * only while another node is idle), so a broken node can use a task's
 * attempts; a healthy fleet's random failures alone practically never do.
 */
export function expectDrained(report: RunReport): void {
  expect(report.unfinished).toBe(0);
  expect(report.completed + report.failed).toBe(report.options.tasks);
  expect(report.acceptedCommits).toBe(report.completed);
  const broken = new Set(brokenNodes(report.options));
  for (const task of report.failedTasks) {
    expect(task.failers.length).toBeGreaterThanOrEqual(report.options.maxAttempts);
    expect(task.failers.some((n) => broken.has(n))).toBe(true);
  }
  expect(report.failed).toBeLessThanOrEqual(report.options.tasks / 100);
}

export function expectScheduling(report: RunReport): void {
  const broken = brokenNodes(report.options);
  expect(Object.keys(report.heldBackInLedger)).toEqual(expect.arrayContaining(broken));
  expect(report.heldBackSeen).toEqual(expect.arrayContaining(broken));
  expect(report.stats.vanished).toBe(Math.min(report.options.vanishing, report.options.nodes - broken.length));
  expect(report.workerLosses).toBeGreaterThanOrEqual(report.stats.vanished);
}
