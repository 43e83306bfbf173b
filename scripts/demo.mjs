#!/usr/bin/env node
// @ts-check
// `npm run demo`: watch flashedge work. Starts the coordinator locally
// (`wrangler dev` on 127.0.0.1:8787, state in .wrangler/state), registers a
// small simulated fleet, submits jobs that exercise the placement gates, and
// runs one simulated agent per node through claim → heartbeat → upload →
// commit. One node dies mid-task: its lease expires and the task moves to
// another node. One node is broken: it fails every task it takes, is held
// back after five failures in a row, and its tasks finish elsewhere. Once
// the fleet is busy a priority job is submitted and overtakes the queue.
// Then a replicated job (each task run on two nodes, SPEC §14) runs on the
// fleet and a cheater that joins it, committing made-up metrics without
// doing the work: it is outvoted, a third node settles each task it cheated
// on, and its one commit with evidence claiming more time than passed is
// refused; before each commit it tries to copy the other replicas' outputs,
// and the pool shows it none. Prints a progress bar per job as it goes, and at the end a
// summary with checks (every GPU task on a GPU node, nothing committed
// twice, the broken node held back, the priority job first, the cheater
// outvoted and counted, every task's key serving the honest metrics, its
// attempts to copy the other replicas' outputs all refused).
//
// The coordinator enforces tokens (SPEC §9; replicated jobs need node
// identities, §14): the demo makes a fresh random token per run for every
// node it simulates (the cheater included) and one operator token, `demo`,
// and passes them to the wrangler dev it starts (`--var`). Each node's agent
// sends its own token; submitting, cancelling and every read the demo makes
// as an onlooker send the operator's. So the demo always starts its own
// coordinator: it cannot know the tokens of one already running, and
// `--url` is refused (pick a free port with --port instead).
//
// The agents speak only HTTP, exactly as the Python agent does, to
// 127.0.0.1 only. Plain Node 20, no dependencies. Stops by itself (at most
// --max-seconds), and cleanly on Ctrl-C; the coordinator is stopped by its pid.
//
//   npm run demo                        # start a coordinator on :8787 and run
//   npm run demo -- --keep              # leave it running afterwards (Ctrl-C stops)
//   npm run demo -- --port 8788 --max-seconds 90

import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const options = parseOptions(process.argv.slice(2));
const TTY = process.stdout.isTTY === true;
/** @param {number} code */
const color = (code) => (/** @type {string} */ text) => (TTY ? `\x1b[${code}m${text}\x1b[0m` : text);
const bold = color(1);
const dim = color(2);
const green = color(32);
const red = color(31);
const yellow = color(33);
const cyan = color(36);

// ---- the fleet and the jobs --------------------------------------------------

/**
 * @typedef {object} FleetNode
 * @property {string} node_id
 * @property {string} note
 * @property {{ cpu_cores: number, gpus?: Gpu[] }} capabilities
 * @property {boolean} [dies]
 * @property {boolean} [broken] fails every task it takes
 * @property {boolean} [cheats] commits made-up metrics without doing the work
 * @property {boolean} [argv_capable]
 * @property {boolean} [sandbox_capable]
 * @property {string[]} [local_datasets]
 */

/** @typedef {{ index: number, name: string, memory_total_mb: number, compute_capability: string, driver_version: string }} Gpu */

/**
 * `n` GPUs as the agent's probe reports them.
 * @param {number} n
 * @param {string} name
 * @param {number} memoryMb
 * @param {string} capability
 * @returns {Gpu[]}
 */
const gpu = (n, name, memoryMb, capability) =>
  Array.from({ length: n }, (_, index) => ({
    index,
    name,
    memory_total_mb: memoryMb,
    compute_capability: capability,
    driver_version: "550.54.15",
  }));

/**
 * What each simulated node says about itself on registration.
 * @type {FleetNode[]}
 */
const FLEET = [
  { node_id: "cpu-1", note: "CPU only", capabilities: { cpu_cores: 8 } },
  { node_id: "cpu-2", note: "CPU only — dies mid-task", capabilities: { cpu_cores: 4 }, dies: true },
  {
    node_id: "gpu-1",
    note: "1 × NVIDIA H100 80 GB — a data-centre card",
    capabilities: { cpu_cores: 32, gpus: gpu(1, "NVIDIA H100 80GB HBM3", 81920, "9.0") },
  },
  {
    node_id: "gpu-broken",
    note: "1 × GeForce RTX 3060, 12 GB — a consumer card, faulty: fails every task it takes",
    capabilities: { cpu_cores: 8, gpus: gpu(1, "NVIDIA GeForce RTX 3060", 12288, "8.6") },
    broken: true,
  },
  {
    node_id: "gpu-2",
    note: "2 × NVIDIA A100 40 GB, runs argv but has no sandbox",
    capabilities: { cpu_cores: 32, gpus: gpu(2, "NVIDIA A100-SXM4-40GB", 40960, "8.0") },
    argv_capable: true,
  },
  {
    node_id: "data-1",
    note: "offers local dataset 'patients', sandboxed argv",
    capabilities: { cpu_cores: 8 },
    local_datasets: ["patients"],
    argv_capable: true,
    sandbox_capable: true,
  },
  {
    node_id: "sandbox-1",
    note: "sandboxed argv",
    capabilities: { cpu_cores: 8 },
    argv_capable: true,
    sandbox_capable: true,
  },
];

/**
 * Joins for the verified-results step only, so the steps before it never
 * see it. Its id is no fleet node's.
 * @type {FleetNode}
 */
const CHEATER = {
  node_id: "cheat-1",
  note: "CPU only — commits made-up metrics without doing the work",
  capabilities: { cpu_cores: 8 },
  cheats: true,
};

/**
 * Who sends a request: the operator (the demo submitting jobs and watching
 * them), or a node (its agent, FleetNode).
 * @typedef {{ operator: string } | FleetNode} Caller
 */
/** The demo as the operator `demo` (FLASHML_OPERATOR_TOKENS). */
const OPERATOR = { operator: "demo" };

/**
 * This run's tokens (SPEC §9), made fresh each run and given to the
 * coordinator it starts: one per node it simulates, the cheater included,
 * and one for the operator.
 */
const TOKENS = {
  operator: randomBytes(24).toString("hex"),
  nodes: new Map([...FLEET, CHEATER].map((n) => [n.node_id, randomBytes(24).toString("hex")])),
};

/** What the broken node's agent reports for every attempt. */
const BROKEN_REASON = "CUDA error: an illegal memory access was encountered";
/** The label that ranks a job in the claim order (SPEC §13). */
const PRIORITY_LABEL = "flashml.dev/priority";
/** The labels that ask for a kind of GPU (SPEC §4 gate 4). */
const GPU_MEMORY_LABEL = "flashml.dev/gpu-memory-mb";
const GPU_CAPABILITY_LABEL = "flashml.dev/gpu-compute-capability";
/** The label that runs each task of a job on this many nodes (SPEC §14). */
const REPLICAS_LABEL = "flashml.dev/replicas";
/** The replicas the cheater tries to copy from: r1 to r{COPY_REPLICAS}, but its own. */
const COPY_REPLICAS = 4;
/** What the cheater reports for every task, whatever the task. */
const FAKE_METRICS = { accuracy: 0.99 };
/** The run time the cheater's first commit claims: far more than passes. */
const LIE_SECONDS = 30;

/**
 * @param {string} name
 * @param {{ type: string, parameters: { local_inputs?: string[], [name: string]: unknown } }} workload
 * @param {{ resources?: { gpuPerTask: number }, isolation?: { tier: string } }} [spec]
 * @param {Record<string, string>} [labels]
 */
function jobSpec(name, workload, spec = {}, labels = {}) {
  return {
    apiVersion: "flashml.dev/v1alpha1",
    kind: "Job",
    metadata: { name, labels: /** @type {Record<string, string>} */ ({ demo: "fleet", ...labels }) },
    spec: {
      execution: { backend: "leases" },
      image: { repository: "ghcr.io/flashml/runner", tag: "0.4.1" },
      workload,
      // A task the broken node failed goes to another node while one is
      // idle (SPEC §13 rule 4); when every other GPU node is busy it may come
      // back to the broken node, which is held back after 5 failures in a
      // row: 6 attempts let no task run out on the broken node alone.
      retryPolicy: { maxTaskAttempts: 6 },
      ...spec,
    },
  };
}

/**
 * Submitted in this order; `gate` is what the job shows off. A `later` job
 * is submitted once the fleet is busy and the broken node is held back; a
 * `verified` job once the fleet's jobs are done, for the cheater's step.
 * @type {{ gate: string, unplaceable?: boolean, later?: boolean, verified?: boolean, spec: ReturnType<typeof jobSpec> }[]}
 */
const JOBS = [
  {
    gate: "gpu: only nodes with a GPU",
    spec: jobSpec(
      "gpu-training",
      {
        type: "hyperparameter_search",
        parameters: { trials: [{ lr: 0.1 }, { lr: 0.03 }, { lr: 0.01 }, { lr: 0.003 }], lease_seconds: 10 },
      },
      { resources: { gpuPerTask: 1 } },
    ),
  },
  {
    gate: "local_data: only the node that holds 'patients'",
    spec: jobSpec(
      "patient-stats",
      {
        type: "command",
        parameters: {
          command: ["python", "-m", "stats", "--shard", "{shard}"],
          task_params: [{ shard: 0 }, { shard: 1 }, { shard: 2 }],
          local_inputs: ["patients"],
          lease_seconds: 10,
        },
      },
      { isolation: { tier: "sandboxed" } },
    ),
  },
  {
    gate: "argv + isolation: only sandbox-capable argv nodes",
    spec: jobSpec(
      "sandboxed-eval",
      {
        type: "command",
        parameters: {
          command: ["./evaluate.sh", "--case", "{case}"],
          task_params: [{ case: "a" }, { case: "b" }, { case: "c" }, { case: "d" }],
          lease_seconds: 10,
        },
      },
      { isolation: { tier: "sandboxed" } },
    ),
  },
  {
    gate: "none: any node",
    spec: jobSpec("plain-search", {
      type: "hyperparameter_search",
      parameters: { grid: { C: [0.1, 1, 10], kernel: ["linear", "rbf"], seed: [1, 2] }, lease_seconds: 6 },
    }),
  },
  {
    gate: "gpu: ≥ 64 GB and compute capability 8.0 per GPU — only the 80 GB card",
    spec: jobSpec(
      "llm-finetune",
      {
        type: "hyperparameter_search",
        parameters: { trials: [{ lr: 2e-5 }, { lr: 1e-5 }, { lr: 5e-6 }], lease_seconds: 10 },
      },
      { resources: { gpuPerTask: 1 } },
      { [GPU_MEMORY_LABEL]: "65536", [GPU_CAPABILITY_LABEL]: "8.0" },
    ),
  },
  {
    gate: "gpu: 2 GPUs with ≥ 80 GB each — no node has that",
    unplaceable: true,
    spec: jobSpec(
      "needs-2x80g",
      { type: "hyperparameter_search", parameters: { trials: [{}, {}] } },
      { resources: { gpuPerTask: 2 } },
      { [GPU_MEMORY_LABEL]: "81920" },
    ),
  },
  {
    gate: "gpu: needs 8 GPUs — no node has them",
    unplaceable: true,
    spec: jobSpec(
      "needs-8-gpus",
      { type: "hyperparameter_search", parameters: { trials: [{}] } },
      { resources: { gpuPerTask: 8 } },
    ),
  },
  {
    gate: "none: any node, priority 10",
    later: true,
    spec: jobSpec(
      "urgent-eval",
      {
        type: "hyperparameter_search",
        parameters: { trials: [{ ckpt: 1 }, { ckpt: 2 }, { ckpt: 3 }], lease_seconds: 6 },
      },
      {},
      { [PRIORITY_LABEL]: "10" },
    ),
  },
  {
    gate: `none: any node, each task on 2 of them (${REPLICAS_LABEL}: "2")`,
    verified: true,
    spec: jobSpec(
      "verified-eval",
      {
        type: "hyperparameter_search",
        parameters: { trials: Array.from({ length: 8 }, (_, i) => ({ seed: i + 1 })), lease_seconds: 10 },
      },
      {},
      { [REPLICAS_LABEL]: "2" },
    ),
  },
];

// ---- main ----------------------------------------------------------------------

/**
 * What the coordinator answers, as far as the demo reads it.
 * @typedef {{ PENDING: number, LEASED: number, COMPLETED: number, FAILED: number, CANCELLED: number }} TaskCounts
 * @typedef {{ job_id: string, state: string, task_counts: TaskCounts }} JobRecord
 * @typedef {{ lease_id: string, job_id: string, task_id: string, deadline: string, attempt_number: number,
 *   payload: { output_prefix?: string } }} Lease
 * @typedef {{ task_id: string, state: string, node_id: string }} TaskRow
 * @typedef {{ summary: string, unplaceable: boolean, nodes: { node_id: string, eligible: boolean, reason: string }[] }} PlacementReport
 * @typedef {{ node_id: string, consecutive_failures: number, held_until: string | null, valid_results: number,
 *   invalid_results: number }} NodeRecord
 * @typedef {{ replica: number, node_id: string, output_sha256: string, verdict: string }} ReplicaVerdict
 */
/**
 * A ledger event; `data` as the lease and commit events read below carry it
 * (a replica's, SPEC §14, also its number, verdict, or every replica's).
 * @typedef {{ seq: number, type: string, timestamp: string, message: string,
 *   data: { task_id: string, node_id: string, attempt: number, replica?: number, verdict?: string,
 *     replicas?: ReplicaVerdict[] } }} LedgerEvent
 */
/**
 * A job as the demo follows it; `requeued` maps a task back in the queue to
 * the node whose attempt ended without a commit, and how it ended;
 * `results` counts each replicated task's committed replicas, and
 * `disputed` holds the tasks whose replicas disagreed, until the next
 * replica is claimed. `phase` is the step that runs it.
 * @typedef {{ name: string, job_id: string, gate: string, unplaceable: boolean, counts: TaskCounts, state: string,
 *   cursor: number, priority: number, submittedAt: number, phase: Phase,
 *   requeued: Record<string, { from: string, why: "expired" | "failed" }>, results: Record<string, number>,
 *   disputed: Set<string> }} WatchedJob
 * @typedef {"fleet" | "verified"} Phase
 */
/**
 * What the demo saw of the broken node being held back (GET /nodes).
 * @typedef {{ node: string, failures: number, until: string, seconds: number }} HeldBack
 */
/**
 * What the demo saw of the cheater: its invalid_results when it joined, its
 * commit with lying evidence and the answer, the tasks it made metrics up for,
 * and its tries at copying another replica's output: the key, whether its
 * artifact list showed it, what its GET got ("404" is refused, "200" a copy), and
 * whether the output was there to copy (the operator's GET, just before).
 * @typedef {{ task: string, replica: number, key: string, listed: boolean, answer: string, existed: boolean }} CopyTry
 * @typedef {{ before: number, lie: { task: string, seconds: number, accepted: boolean, detail: string } | null,
 *   fakes: { task: string, replica: number }[], copies: CopyTry[] }} Cheating
 */

/**
 * @type {{ stopping: boolean, interrupted: boolean, coordinator: import("node:child_process").ChildProcess | null,
 *   base: string, jobs: WatchedJob[], phase: Phase, died: { node: string, task_id: string, job: string, lease_id: string, at: number } | null,
 *   moved: { job: string, task: string, from: string, to: string, attempt: number, why: "expired" | "failed" }[],
 *   failed: { job: string, task: string, node: string }[], held: HeldBack | null, cheating: Cheating,
 *   stop: AbortController, lines: number }}
 */
const run = {
  stopping: false,
  interrupted: false,
  coordinator: null, // the wrangler child we started, if any
  base: "",
  jobs: [], // { name, job_id, gate, unplaceable, counts, state }
  phase: "fleet", // the step running: its jobs are the progress block
  died: null, // { node, task_id, job, lease_id, at }
  moved: [], // reassignments seen
  failed: [], // attempts the broken node failed
  held: null, // the broken node, once GET /nodes shows it held back
  cheating: { before: 0, lie: null, fakes: [], copies: [] }, // the cheater, in the verified-results step
  stop: new AbortController(), // aborts the agents' waiting claims when the run ends
  lines: 0, // lines of the progress block on screen
};

async function main() {
  const started = Date.now();
  const url = await startCoordinator();
  const pool = `demo-${randomBytes(3).toString("hex")}`;
  run.base = `${url}/pools/${pool}/v1alpha1`;

  say(`${bold("flashedge demo")} — a simulated fleet against a local coordinator`);
  say(`  coordinator  ${url}${dim("  (wrangler dev, state in .wrangler/state; enforcing this run's tokens)")}`);
  say(`  pool         ${pool}`);
  say(`  dashboard    ${cyan(`${url}/pools/${pool}/`)}  ← open this in a browser`);
  say(`  operator     ${OPERATOR.operator}, token ${TOKENS.operator}  ${dim("← the dashboard asks for it")}`);
  say("");

  say(bold("Fleet"));
  for (const node of FLEET) {
    await register(node);
    say(`  ${node.node_id.padEnd(10)} ${dim(node.note)}`);
  }
  say("");

  say(bold("Jobs"));
  for (const job of JOBS) {
    if (job.later || job.verified) continue;
    const record = await submit(job);
    say(
      `  ${job.spec.metadata.name.padEnd(15)} ${dim(record.job_id)}  ${plural(countTasks(record.task_counts), "task")}  ${dim(`gate: ${job.gate}`)}`,
    );
  }
  await showFleet();
  const later = JOBS.filter((j) => j.later);
  for (const job of later) say(`  ${job.spec.metadata.name.padEnd(15)} ${dim(`submitted later — gate: ${job.gate}`)}`);
  const verified = JOBS.filter((j) => j.verified);
  for (const job of verified)
    say(`  ${job.spec.metadata.name.padEnd(15)} ${dim(`submitted once these finish — gate: ${job.gate}`)}`);
  say("");
  say(bold("Running") + dim(" (claim → heartbeat → upload → commit; durations are random)"));

  const agents = FLEET.map((node) => agent(node));
  const running = Date.now();
  const deadline = started + options.maxSeconds * 1000;
  const finished = await watchUntil(deadline, async () => {
    // The priority job comes once the broken node is held back, so only
    // healthy nodes compete for it (or after 10 s, whatever happened).
    if (later.length > 0 && (run.held !== null || Date.now() - running > 10_000)) {
      for (const job of later.splice(0)) await submitPriorityJob(job);
    }
    const placeable = run.jobs.filter((j) => !j.unplaceable && j.phase === "fleet");
    return later.length === 0 && placeable.every((j) => TERMINAL.has(j.state));
  });
  // The fleet's agents keep running into the next step: one stopped while
  // its claim waits (long-poll) would leave the coordinator holding that
  // claim, and the next job's first lease would go to a closed connection.
  if (finished && verified.length > 0) {
    lastPrinted = 0; // the fleet's final state is printed
    await watch();
    run.lines = 0; // and stays on screen
    await verifiedResults(verified, deadline, agents);
  }
  run.stopping = true;
  run.stop.abort(); // idle agents wait in a long-poll claim: no need to hear it out
  await Promise.race([Promise.all(agents), sleep(15_000)]);
  lastPrinted = 0; // the final state is always printed
  await watch();
  run.lines = 0; // and stays on screen

  if (run.interrupted) {
    say(yellow("interrupted — stopping"));
    return;
  }
  const ok = await summary(url, pool);
  if (!ok) process.exitCode = 1;

  if (options.keep) {
    say("");
    say(
      `The coordinator keeps running: ${cyan(`${url}/pools/${pool}/`)} (operator token ${TOKENS.operator}) — Ctrl-C to stop.`,
    );
    while (!run.interrupted) await sleep(500);
    process.exitCode = ok ? 0 : 1; // Ctrl-C is how --keep ends: not a failure
  } else {
    // npm run dev serves on 8787 whatever port this run used, with .dev.vars' tokens, not this run's.
    say(
      dim(
        `The state stays in .wrangler/state: \`npm run dev\` and open http://127.0.0.1:8787/pools/${pool}/ to look again (with a token .dev.vars configures; this run's end with it).`,
      ),
    );
  }
}

/**
 * Watches the jobs every second: true once `done` says so, false when the
 * deadline passes or on Ctrl-C.
 * @param {number} deadline
 * @param {() => Promise<boolean>} done
 */
async function watchUntil(deadline, done) {
  while (!run.stopping) {
    await watch();
    if (await done()) return true;
    if (Date.now() > deadline) {
      say(yellow(`stopping: --max-seconds ${options.maxSeconds} reached`));
      return false;
    }
    await sleep(1000);
  }
  return false;
}

/**
 * The verified-results step (SPEC §14): a job whose every task runs on two
 * nodes, taken by the fleet's agents as before and by a cheater that joins
 * for it (its agent is added to `agents`).
 * @param {(typeof JOBS)[number][]} jobs
 * @param {number} deadline
 * @param {Promise<void>[]} agents
 */
async function verifiedResults(jobs, deadline, agents) {
  say("");
  say(
    bold("Verified results") +
      dim(` (${REPLICAS_LABEL}: each task runs on distinct nodes, and counts once their metrics agree)`),
  );
  await register(CHEATER);
  const row = /** @type {NodeRecord[]} */ (await api(OPERATOR, "GET", "/nodes")).find(
    (n) => n.node_id === CHEATER.node_id,
  );
  run.cheating.before = row?.invalid_results ?? 0;
  say(
    `  ${CHEATER.node_id.padEnd(15)} ${dim(`joins: ${CHEATER.note}, ${JSON.stringify(FAKE_METRICS)} for any task (GET /nodes: invalid_results ${run.cheating.before})`)}`,
  );
  agents.push(agent(CHEATER));
  run.phase = "verified";
  for (const job of jobs) {
    const record = await submit(job);
    say(
      `  ${job.spec.metadata.name.padEnd(15)} ${dim(record.job_id)}  ${plural(countTasks(record.task_counts), "task")} × ${job.spec.metadata.labels[REPLICAS_LABEL]} replicas  ${dim(`gate: ${job.gate}`)}`,
    );
  }
  say(dim(`  taken by the fleet's agents, as before, and by ${CHEATER.node_id}`));
  await watchUntil(deadline, async () =>
    run.jobs.filter((j) => j.phase === "verified").every((j) => TERMINAL.has(j.state)),
  );
}

/**
 * Submits a job and starts following it.
 * @param {(typeof JOBS)[number]} job
 */
async function submit(job) {
  const record = /** @type {JobRecord} */ (await api(OPERATOR, "POST", "/jobs", job.spec));
  run.jobs.push({
    name: job.spec.metadata.name,
    job_id: record.job_id,
    gate: job.gate,
    unplaceable: job.unplaceable === true,
    counts: record.task_counts,
    state: record.state,
    cursor: 0,
    priority: Number(job.spec.metadata.labels[PRIORITY_LABEL] ?? 0),
    submittedAt: Date.now(),
    phase: job.verified ? "verified" : "fleet",
    requeued: {},
    results: {},
    disputed: new Set(),
  });
  return record;
}

/**
 * Submits the priority job while earlier jobs still have tasks queued.
 * @param {(typeof JOBS)[number]} job
 */
async function submitPriorityJob(job) {
  const queued = run.jobs.filter((j) => !j.unplaceable).reduce((n, j) => n + j.counts.PENDING, 0);
  const record = await submit(job);
  note(
    bold(
      `⚡ ${job.spec.metadata.name} submitted with ${PRIORITY_LABEL}: "${job.spec.metadata.labels[PRIORITY_LABEL]}" (${plural(countTasks(record.task_counts), "task")}) — about ${plural(queued, "task")} of earlier jobs are queued ahead of it`,
    ),
  );
}

/** @param {string} why */
function interrupt(why) {
  if (run.interrupted) {
    killCoordinator("SIGKILL");
    process.exit(130);
  }
  run.interrupted = true;
  run.stopping = true;
  run.stop.abort();
  process.exitCode = 130;
  say(yellow(`\n${why}: stopping the agents and the coordinator…`));
}

// ---- one simulated agent ---------------------------------------------------------

/** @param {FleetNode} node */
async function agent(node) {
  let alive = true;
  const beat = setInterval(() => {
    if (alive)
      api(node, "POST", `/nodes/${node.node_id}/heartbeat`, { node_id: node.node_id, status: "online" }).catch(
        () => {},
      );
  }, 3000);
  try {
    // The cheater wastes no time.
    await sleep(node.cheats ? 0 : Math.random() * 800);
    while (!run.stopping) {
      try {
        if ((await attempt(node, () => (alive = false))) === "died") return;
      } catch (error) {
        // A flaky moment (or the coordinator stopping): report, back off, go on.
        if (!run.stopping)
          note(yellow(`! ${node.node_id}: ${/** @type {Error | undefined} */ (error)?.message ?? error}`));
        await sleep(1000);
      }
    }
  } finally {
    clearInterval(beat);
  }
}

/**
 * One claim and, when a lease comes back, the work, the upload and the commit.
 * @param {FleetNode} node
 * @param {() => void} die
 */
async function attempt(node, die) {
  const lease = /** @type {Lease | null} */ (
    await api(node, "POST", "/leases/claim", { node_id: node.node_id }, { signal: run.stop.signal })
  );
  if (!lease) {
    await sleep(600 + Math.random() * 600);
    return "idle";
  }
  const claimedAt = Date.now();
  const window = Date.parse(lease.deadline) - claimedAt;
  if (node.dies && run.died === null) {
    // Take the lease, then go silent: no attempt heartbeats, no node
    // heartbeats, no commit. The coordinator must notice on its own.
    await sleep(1500);
    die();
    run.died = {
      node: node.node_id,
      task_id: lease.task_id,
      job: jobName(lease.job_id),
      lease_id: lease.lease_id,
      at: Date.now(),
    };
    note(
      red(
        `✖ ${node.node_id} died holding ${jobName(lease.job_id)}/${lease.task_id} (lease ${lease.lease_id}); it expires at its deadline, ${Math.round(window / 1000)} s after the claim`,
      ),
    );
    return "died";
  }
  if (node.broken) {
    // The runtime aborts soon after the task starts; the agent reports it.
    // Five in a row and the coordinator holds the node back (its claims get
    // 204); each task it failed is retried on another node.
    await sleep(300 + Math.random() * 500);
    await api(node, "POST", `/attempts/${lease.lease_id}/fail`, { reason: BROKEN_REASON });
    run.failed.push({ job: jobName(lease.job_id), task: lease.task_id, node: node.node_id });
    note(
      red(
        `✖ ${node.node_id} failed ${jobName(lease.job_id)}/${lease.task_id}: ${BROKEN_REASON} ${dim(`(${run.failed.length} in a row)`)}`,
      ),
    );
    return "failed";
  }
  if (node.cheats) return cheat(node, lease, claimedAt);
  const work = 1000 + Math.random() * 3500;
  const startedAt = Date.now();
  let gone = false;
  while (!gone && Date.now() - startedAt < work && !run.stopping) {
    await sleep(Math.min(work - (Date.now() - startedAt), Math.max(500, window / 3)));
    if (Date.now() - startedAt >= work) break;
    const renewed = await api(node, "POST", `/attempts/${lease.lease_id}/heartbeat`, undefined, { allow: [410] });
    if (renewed === GONE) gone = true;
  }
  if (gone) {
    note(yellow(`! ${node.node_id}: lease on ${lease.task_id} is gone (410) — dropping the attempt`));
    return "gone";
  }
  if (run.stopping) return "stopped";
  const output = JSON.stringify(taskMetrics(lease.job_id, lease.task_id));
  await api(node, "PUT", `/artifacts/${outputPrefix(lease)}metrics.json`, output, { raw: true });
  const answer = /** @type {{ accepted?: boolean } | null} */ (
    await api(node, "POST", `/attempts/${lease.lease_id}/complete`, {
      output_sha256: sha256(output),
      evidence: { wall_seconds: Math.round(work) / 1000, exit_code: 0 },
    })
  );
  const seconds = ((Date.now() - startedAt) / 1000).toFixed(1);
  const replica = replicaOf(lease);
  if (answer?.accepted && replica > 0)
    note(
      `${green("✓")} ${jobName(lease.job_id)}/${lease.task_id} replica ${replica} committed by ${node.node_id} ${dim(`(${seconds} s; taken for judging against the other replicas)`)}`,
    );
  else if (answer?.accepted)
    note(
      `${green("✓")} ${jobName(lease.job_id)}/${lease.task_id} committed by ${node.node_id} ${dim(`(${seconds} s, attempt ${lease.attempt_number})`)}`,
    );
  else note(yellow(`✗ ${jobName(lease.job_id)}/${lease.task_id}: commit from ${node.node_id} rejected`));
  return "committed";
}

/**
 * The cheater's attempt: no work; first a try at copying the other
 * replicas' outputs (tryToCopy), then a made-up metrics object under the
 * lease's prefix, committed a moment later, with evidence claiming no more
 * time than passed: only the other replicas can tell. Once one of those is
 * taken for judging, its next commit also claims LIE_SECONDS of run time,
 * once: refused. (Lying first would end its cheating before it began: a
 * lie holds the node back and distrusts it, SPEC §14.)
 * @param {FleetNode} node
 * @param {Lease} lease
 * @param {number} claimedAt
 */
async function cheat(node, lease, claimedAt) {
  if (replicaOf(lease) > 0) await tryToCopy(node, lease);
  await sleep(200 + Math.random() * 200);
  const output = JSON.stringify({ task_id: lease.task_id, ...FAKE_METRICS });
  await api(node, "PUT", `/artifacts/${outputPrefix(lease)}metrics.json`, output, { raw: true });
  const seconds = (Date.now() - claimedAt) / 1000;
  const lies = run.cheating.lie === null && run.cheating.fakes.length > 0;
  const wall = lies ? LIE_SECONDS : Math.floor(seconds * 10) / 10;
  const answer = /** @type {{ accepted?: boolean, detail?: string } | null} */ (
    await api(node, "POST", `/attempts/${lease.lease_id}/complete`, {
      output_sha256: sha256(output),
      evidence: { wall_seconds: wall, exit_code: 0 },
    })
  );
  const task = `${jobName(lease.job_id)}/${lease.task_id}`;
  const replica = replicaOf(lease);
  const made = `${node.node_id} committed ${JSON.stringify(FAKE_METRICS)} for ${task} replica ${replica} ${seconds.toFixed(1)} s after its claim, with evidence wall_seconds ${wall}`;
  if (lies) {
    const detail = answer?.detail ?? "";
    run.cheating.lie = { task: lease.task_id, seconds, accepted: answer?.accepted === true, detail };
    note(
      red(
        `✖ ${made} — ${answer?.accepted ? "taken" : "refused"}: {accepted: ${answer?.accepted}, detail: "${detail}"}`,
      ),
    );
  } else {
    if (answer?.accepted) run.cheating.fakes.push({ task: lease.task_id, replica });
    note(red(`✖ ${made} — ${answer?.accepted ? "taken for judging (accepted: true)" : "refused"}`));
  }
  return "committed";
}

/**
 * The cheater as a copier: before committing its replica of a task it looks
 * for the other replicas' outputs, to commit one as its own. It lists the
 * job's artifacts every 500 ms while an honest replica may still be working
 * (for up to 4 s; the demo, as the operator who may read sealed outputs,
 * ends the wait early once another replica's output is there, so the tries
 * are at something to copy), then GETs `jobs/{job}/{task}/r{k}/metrics.json`
 * for every other k up to COPY_REPLICAS, all with its own token. Until the
 * task's verdict another replica's output is sealed (SPEC §14): absent from
 * its list, 404 to its GET. Just before each GET the operator looks whether
 * that output exists. Each try is recorded (run.cheating.copies) and
 * printed with its answer; a copy would not be used, the summary's check
 * fails instead.
 * @param {FleetNode} node
 * @param {Lease} lease
 */
async function tryToCopy(node, lease) {
  const own = replicaOf(lease);
  const prefix = `jobs/${lease.job_id}/${lease.task_id}/`;
  /** @param {string} key */
  const otherReplica = (key) =>
    key.startsWith(prefix) && /^r\d+\//.test(key.slice(prefix.length)) && !key.startsWith(`${prefix}r${own}/`);
  /** @type {Set<string>} */
  let listed = new Set();
  /** @param {Caller} caller */
  const list = async (caller) => {
    const page = /** @type {{ key: string }[]} */ (
      await api(caller, "GET", `/jobs/${lease.job_id}/artifacts?limit=1000`)
    );
    return new Set(page.map((a) => a.key).filter(otherReplica));
  };
  for (const started = Date.now(); Date.now() - started < 4000 && !run.stopping; await sleep(500)) {
    listed = await list(node);
    if (listed.size > 0) break; // something to copy: the pool let it show
    if ((await list(OPERATOR)).size > 0) break; // there is something to copy
  }
  const task = `${jobName(lease.job_id)}/${lease.task_id}`;
  for (let k = 1; k <= COPY_REPLICAS; k++) {
    if (k === own || run.stopping) continue;
    const key = `${prefix}r${k}/metrics.json`;
    const existed = (await api(OPERATOR, "GET", `/artifacts/${key}`, undefined, { allow: [404] })) !== GONE;
    /** @type {string} 404 is "no such output", the answer sealing gives; anything else tells something */
    let answer;
    try {
      const copied = await api(node, "GET", `/artifacts/${key}`, undefined, { allow: [404] });
      answer = copied === GONE ? "404" : "200";
    } catch (error) {
      answer = /** @type {Error} */ (error).message;
    }
    const seen = [...listed].some((l) => l.startsWith(`${prefix}r${k}/`));
    run.cheating.copies.push({ task: lease.task_id, replica: own, key, listed: seen, answer, existed });
    const there = existed ? "it exists, sealed until the verdict" : "not written yet";
    const shown = seen ? "shown in its GET …/artifacts" : "absent from its GET …/artifacts";
    if (answer === "404" && !seen)
      note(
        red(
          `✖ ${node.node_id} tried to copy ${task} replica ${k}'s metrics.json before committing replica ${own}: refused — 404, ${shown} ${dim(`(${there})`)}`,
        ),
      );
    else
      note(
        yellow(
          `! ${node.node_id} tried to copy ${task} replica ${k}'s metrics.json before committing replica ${own}: ${answer}, ${shown} — not sealed`,
        ),
      );
  }
}

/**
 * What running a task yields: a function of the task alone (a seeded run),
 * so every honest node that runs it reports the same object.
 * @param {string} jobId
 * @param {string} taskId
 */
function taskMetrics(jobId, taskId) {
  const seed = createHash("sha256").update(`${jobId}/${taskId}`).digest();
  return { task_id: taskId, accuracy: (700 + Math.round(((seed[0] ?? 0) / 255) * 200)) / 1000 };
}

/**
 * Where the lease's outputs go: its payload's output_prefix (a replica's
 * own, SPEC §14), else the task's.
 * @param {Lease} lease
 */
function outputPrefix(lease) {
  return lease.payload?.output_prefix ?? `jobs/${lease.job_id}/${lease.task_id}/`;
}

/**
 * The replica a lease runs, from its output prefix; 0 for an unreplicated task.
 * @param {Lease} lease
 */
function replicaOf(lease) {
  return Number(/\/r(\d+)\/$/.exec(outputPrefix(lease))?.[1] ?? 0);
}

/** @param {string} text */
function sha256(text) {
  return createHash("sha256").update(text).digest("hex");
}

// ---- watching the jobs -----------------------------------------------------------------

const TERMINAL = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);

/**
 * Refreshes job counts and reads new ledger events, reporting expiries,
 * moves and retries; watches the broken node until it is held back.
 */
async function watch() {
  let records;
  try {
    records = /** @type {JobRecord[]} */ (await api(OPERATOR, "GET", "/jobs"));
    if (run.held === null) await watchBrokenNode();
  } catch {
    return; // the next round retries
  }
  for (const job of run.jobs) {
    const record = records.find((r) => r.job_id === job.job_id);
    if (!record) continue;
    if (!TERMINAL.has(job.state) && TERMINAL.has(record.state)) {
      const ok = record.state === "SUCCEEDED";
      const after = job.priority > 0 ? ` ${((Date.now() - job.submittedAt) / 1000).toFixed(1)} s after submission` : "";
      const still = run.jobs.filter((j) => j.priority < job.priority && !j.unplaceable && !TERMINAL.has(j.state));
      const overtaken =
        job.priority > 0 && still.length > 0
          ? ` — earlier jobs still running: ${still.map((j) => `${j.name} (${j.counts.COMPLETED}/${countTasks(j.counts)})`).join(", ")}`
          : "";
      note(`${ok ? green("●") : red("●")} ${job.name} ${record.state}${after}${overtaken}`);
    }
    job.counts = record.task_counts;
    job.state = record.state;
    const events = /** @type {LedgerEvent[]} */ (
      await api(OPERATOR, "GET", `/jobs/${job.job_id}/events?after=${job.cursor}&limit=1000`).catch(() => [])
    );
    for (const event of events) {
      job.cursor = event.seq;
      const task = event.data?.task_id;
      if (event.type === "LEASE_EXPIRED") {
        note(
          yellow(
            `⌛ lease on ${job.name}/${task} held by ${event.data.node_id} expired — the task goes back to the queue`,
          ),
        );
        job.requeued[task] = { from: event.data.node_id, why: "expired" };
      } else if (event.type === "TASK_ATTEMPT_FAILED") {
        job.requeued[task] = { from: event.data.node_id, why: "failed" };
      } else if (event.type === "LEASE_CLAIMED" && job.requeued[task]) {
        const { from, why } = job.requeued[task];
        delete job.requeued[task];
        const to = event.data.node_id;
        run.moved.push({ job: job.name, task, from, to, attempt: event.data.attempt, why });
        const how = why === "expired" ? "moved" : to === from ? "retried on the same node" : "retried elsewhere";
        const which = event.data.replica ? `replica ${event.data.replica}` : `attempt ${event.data.attempt}`;
        note(cyan(`↻ ${job.name}/${task} ${how}: ${from} → ${to} (${which})`));
      } else if (event.type === "TASK_ATTEMPT_COMPLETED" && event.data.replica) {
        job.results[task] = (job.results[task] ?? 0) + 1;
      } else if (disagreed(event, job.results[task] ?? 0)) {
        job.disputed.add(task);
        note(
          cyan(
            `⚖ ${job.name}/${task}: its ${job.results[task]} replicas disagree, no quorum yet — it wants another one`,
          ),
        );
      } else if (event.type === "LEASE_CLAIMED" && job.disputed.delete(task)) {
        note(
          cyan(
            `↻ ${job.name}/${task} replica ${event.data.replica} → ${event.data.node_id}, a node that ran no replica of it`,
          ),
        );
      } else if (event.type === "TASK_COMMIT_REJECTED" && event.data.verdict === "invalid") {
        const from = event.data.node_id;
        note(
          red(
            `✗ ${job.name}/${task}: ${from}'s result disagrees with the quorum — outvoted, an invalid result for ${from}`,
          ),
        );
      } else if (event.type === "TASK_COMMIT_REJECTED") {
        note(yellow(`✗ ${job.name}/${task}: a commit was rejected (${event.message})`));
      } else if (event.type === "TASK_COMMIT_ACCEPTED" && event.data.replicas) {
        const votes = event.data.replicas.map((r) => `r${r.replica} ${r.node_id} ${r.verdict === "valid" ? "✓" : "✗"}`);
        const agreed = event.data.replicas.filter((r) => r.verdict === "valid").length;
        note(
          green(
            `✓ ${job.name}/${task} verified: ${agreed} of ${plural(event.data.replicas.length, "replica")} agree (${votes.join(", ")})`,
          ),
        );
      }
    }
  }
  clearProgress();
  drawProgress(false);
}

/**
 * Whether the event is a replicated task wanting another replica because
 * the `results` its replicas committed disagree (SPEC §14). No attempt
 * ended (no node), and there are two results at least: with one, the task
 * merely wants the replica not yet issued.
 * @param {LedgerEvent} event
 * @param {number} results
 */
function disagreed(event, results) {
  return event.type === "TASK_REQUEUED" && event.data.node_id === undefined && results >= 2;
}

/** Reports the broken node once GET /nodes shows it held back. */
async function watchBrokenNode() {
  const broken = FLEET.find((n) => n.broken);
  if (!broken) return;
  const nodes = /** @type {NodeRecord[]} */ (await api(OPERATOR, "GET", "/nodes"));
  const row = nodes.find((n) => n.node_id === broken.node_id);
  if (!row?.held_until) return;
  const seconds = Math.round((Date.parse(row.held_until) - Date.now()) / 1000);
  run.held = { node: row.node_id, failures: row.consecutive_failures, until: row.held_until, seconds };
  note(
    yellow(
      `⏸ ${row.node_id} held back: ${row.consecutive_failures} failures in a row, its claims get 204 until ${row.held_until} (${seconds} s); what it failed runs elsewhere`,
    ),
  );
}

function progressLines() {
  const width = 24;
  return run.jobs
    .filter((job) => job.phase === run.phase)
    .map((job) => {
      const c = job.counts;
      const total = c.PENDING + c.LEASED + c.COMPLETED + c.FAILED + c.CANCELLED;
      /** @param {number} n */
      const cells = (n) => Math.round((n / Math.max(1, total)) * width);
      const done = cells(c.COMPLETED);
      const failed = cells(c.FAILED);
      const leased = Math.min(width - done - failed, cells(c.LEASED));
      const bar =
        green("█".repeat(done)) +
        red("█".repeat(failed)) +
        cyan("▒".repeat(leased)) +
        dim("░".repeat(Math.max(0, width - done - failed - leased)));
      const state =
        job.unplaceable && c.PENDING > 0
          ? yellow("STUCK: no node can take it")
          : job.state === "SUCCEEDED"
            ? green(job.state)
            : job.state;
      const priority = job.priority !== 0 ? dim(`  priority ${job.priority}`) : "";
      return `  ${job.name.padEnd(15)} ${bar} ${String(c.COMPLETED).padStart(2)}/${String(total).padEnd(2)} ${state}${priority}`;
    });
}

let lastPrinted = 0;

/** @param {boolean} force */
function drawProgress(force) {
  if (!TTY && !force && Date.now() - lastPrinted < 5000) return;
  lastPrinted = Date.now();
  const lines = progressLines();
  process.stdout.write(`${lines.join("\n")}\n`);
  run.lines = TTY ? lines.length : 0;
}

function clearProgress() {
  if (run.lines > 0) process.stdout.write(`\x1b[${run.lines}A\x1b[J`);
  run.lines = 0;
}

/**
 * A log line above the progress block (redrawn beneath it on a terminal).
 * @param {string} line
 */
function note(line) {
  if (TTY) {
    const had = run.lines > 0;
    clearProgress();
    process.stdout.write(`${line}\n`);
    if (had) drawProgress(true);
  } else {
    process.stdout.write(`${line}\n`);
  }
}

/** @param {string} line */
function say(line) {
  process.stdout.write(`${line}\n`);
}

// ---- the summary -----------------------------------------------------------------------

/**
 * @param {string} url
 * @param {string} pool
 */
async function summary(url, pool) {
  say("");
  say(bold("Summary"));
  const cast = run.jobs.some((j) => j.phase === "verified") ? [...FLEET, CHEATER] : FLEET;
  const nodes = Object.fromEntries(cast.map((n) => [n.node_id, n]));
  const perNode = Object.fromEntries(cast.map((n) => [n.node_id, 0]));
  /** @type {[boolean, string][]} */
  const checks = [];
  let commits = 0;
  let duplicates = 0;
  /** @type {Map<string, { tasks: Map<string, TaskRow>, events: LedgerEvent[] }>} by job name */
  const ledger = new Map();
  for (const job of run.jobs) {
    const tasks = /** @type {TaskRow[]} */ (await api(OPERATOR, "GET", `/jobs/${job.job_id}/tasks`));
    const events = /** @type {LedgerEvent[]} */ (await api(OPERATOR, "GET", `/jobs/${job.job_id}/events?limit=1000`));
    ledger.set(job.name, { tasks: new Map(tasks.map((t) => [t.task_id, t])), events });
    /** @type {Map<string, number>} */
    const accepted = new Map();
    for (const e of events)
      if (e.type === "TASK_COMMIT_ACCEPTED") accepted.set(e.data.task_id, (accepted.get(e.data.task_id) ?? 0) + 1);
    for (const n of accepted.values()) {
      commits += n;
      if (n > 1) duplicates += n - 1;
    }
    const completed = tasks.filter((t) => t.state === "COMPLETED");
    for (const t of completed) perNode[t.node_id] = (perNode[t.node_id] ?? 0) + 1;
    const spec = /** @type {(typeof JOBS)[number]} */ (JOBS.find((j) => j.spec.metadata.name === job.name)).spec;
    const gpus = spec.spec.resources?.gpuPerTask ?? 0;
    const labels = spec.metadata.labels;
    const memoryMb = Number(labels[GPU_MEMORY_LABEL] ?? 0);
    const capability = labels[GPU_CAPABILITY_LABEL] ?? "0.0";
    /** @param {Gpu} g */
    const qualifies = (g) => g.memory_total_mb >= memoryMb && capabilityAtLeast(g.compute_capability, capability);
    const datasets = spec.spec.workload.parameters.local_inputs ?? [];
    const sandboxed = spec.spec.isolation?.tier === "sandboxed";
    const misplaced = completed.filter((t) => {
      const n = nodes[t.node_id];
      if (!n) return true;
      if ((n.capabilities.gpus ?? []).filter(qualifies).length < gpus) return true;
      if (!datasets.every((d) => (n.local_datasets ?? []).includes(d))) return true;
      if (sandboxed && n.sandbox_capable !== true) return true;
      return false;
    });
    if (gpus > 0 && !job.unplaceable)
      checks.push([
        misplaced.length === 0,
        `every ${job.name} task ran on a node with ≥ ${gpus} GPU${memoryMb ? ` of ≥ ${memoryMb} MB` : ""} (${completed.map((t) => t.node_id).join(", ") || "none"})`,
      ]);
    else if (datasets.length > 0)
      checks.push([
        misplaced.length === 0,
        `every ${job.name} task ran on a node offering ${datasets.join(", ")} (${[...new Set(completed.map((t) => t.node_id))].join(", ")})`,
      ]);
    else if (sandboxed)
      checks.push([
        misplaced.length === 0,
        `every ${job.name} task ran on a sandbox-capable node (${[...new Set(completed.map((t) => t.node_id))].join(", ")})`,
      ]);
    if (!job.unplaceable)
      checks.push([
        job.state === "SUCCEEDED",
        `${job.name} ${job.state}: ${countTasks(job.counts)} tasks, ${job.counts.COMPLETED} completed`,
      ]);
  }
  checks.push([duplicates === 0, `nothing committed twice (${commits} accepted commits, ${duplicates} duplicates)`]);
  const died = run.died;
  if (died) {
    const moved = run.moved.find((m) => m.job === died.job && m.task === died.task_id && m.from === died.node);
    checks.push([
      moved !== undefined,
      moved
        ? `${died.node} died holding ${died.job}/${died.task_id}; its lease expired (a worker loss, not one of the task's attempts) and ${moved.to} took it over`
        : `${died.node}'s task ${died.task_id} was not seen moving`,
    ]);
  }
  const broken = FLEET.find((n) => n.broken);
  if (broken) checks.push(...brokenNodeChecks(broken.node_id, ledger));
  checks.push(...priorityChecks(ledger));

  const fleet = /** @type {NodeRecord[]} */ (await api(OPERATOR, "GET", "/nodes"));
  if (JOBS.some((j) => j.verified)) checks.push(...(await verifiedChecks(ledger, fleet)));
  say("  tasks committed per node:");
  const most = Math.max(1, ...Object.values(perNode));
  for (const [node, n] of Object.entries(perNode)) {
    const row = fleet.find((r) => r.node_id === node);
    const why = nodes[node]?.dies
      ? "  (died)"
      : row && row.invalid_results > 0
        ? `  (GET /nodes: valid_results ${row.valid_results}, invalid_results ${row.invalid_results}, consecutive_failures ${row.consecutive_failures})`
        : row && row.consecutive_failures > 0
          ? `  (GET /nodes: consecutive_failures ${row.consecutive_failures}, held_until ${row.held_until ?? "null"})`
          : "";
    say(`    ${node.padEnd(10)} ${"■".repeat(Math.round((n / most) * 20)).padEnd(20)} ${n}${dim(why)}`);
  }
  const stuck = run.jobs.find((j) => j.unplaceable);
  if (stuck) {
    const report = /** @type {PlacementReport} */ (
      await api(OPERATOR, "GET", `/jobs/${stuck.job_id}/tasks/trial-000/placement`)
    );
    say(
      `  why is ${stuck.name}/trial-000 not running?  ${dim(`GET …/jobs/${stuck.job_id}/tasks/trial-000/placement`)}`,
    );
    say(`    ${yellow(report.summary)}`);
    for (const n of report.nodes) say(dim(`    ${n.node_id.padEnd(10)} ${n.eligible ? "eligible" : n.reason}`));
    checks.push([report.unplaceable === true, `${stuck.name} is reported unplaceable, and the dashboard flags it`]);
  }
  const fleetSummary = /** @type {{ demand: { classes: { servable: boolean, summary: string }[] } }} */ (
    await api(OPERATOR, "GET", "/nodes/summary")
  );
  const unservable = fleetSummary.demand.classes.find((c) => !c.servable && c.summary.includes("≥ 81920 MB"));
  say(`  demand no node can serve:  ${yellow(unservable?.summary ?? "(none flagged)")}`);
  checks.push([unservable !== undefined, "the demand panel flags the 2 × 80 GB tasks: no node has that"]);
  say("  checks:");
  for (const [ok, text] of checks) say(`    ${ok ? green("✔") : red("✘")} ${text}`);
  say("");
  say(`Dashboard: ${cyan(`${url}/pools/${pool}/`)}`);
  return checks.every(([ok]) => ok);
}

/**
 * The broken node was held back (as GET /nodes showed it during the run)
 * and leased nothing while held; every task it failed completed elsewhere.
 * @param {string} nodeId
 * @param {Map<string, { tasks: Map<string, TaskRow>, events: LedgerEvent[] }>} ledger
 * @returns {[boolean, string][]}
 */
function brokenNodeChecks(nodeId, ledger) {
  const events = [...ledger.entries()]
    .flatMap(([job, { events }]) => events.map((e) => ({ job, ...e })))
    .filter((e) => e.data?.node_id === nodeId)
    .sort((a, b) => a.seq - b.seq);
  const failures = events.filter((e) => e.type === "TASK_ATTEMPT_FAILED");
  const held = run.held;
  /** @type {[boolean, string][]} */
  const checks = [];
  if (held === null) {
    checks.push([
      false,
      `${nodeId} was never seen held back (GET /nodes), after ${plural(failures.length, "failure")}`,
    ]);
  } else {
    // The failure that held it back; a claim after it, before the hold ends, would be a leak.
    const holding = failures[held.failures - 1];
    const leased = events.filter(
      (e) => e.type === "LEASE_CLAIMED" && holding && e.seq > holding.seq && e.timestamp < held.until,
    );
    checks.push([
      holding !== undefined && leased.length === 0,
      `${nodeId} was held back after ${held.failures} failures in a row (GET /nodes: consecutive_failures ${held.failures}, held_until ${held.until}) and leased ${plural(leased.length, "task")} while held`,
    ]);
  }
  const ends = failures.map((f) => {
    const task = ledger.get(f.job)?.tasks.get(f.data.task_id);
    const elsewhere = task?.state === "COMPLETED" && task.node_id !== nodeId;
    return { ok: elsewhere, text: `${f.job}/${f.data.task_id} → ${elsewhere ? task.node_id : (task?.state ?? "?")}` };
  });
  checks.push([
    failures.length > 0 && ends.every((e) => e.ok),
    `the ${plural(failures.length, "task")} ${nodeId} failed ("${BROKEN_REASON}") completed on other nodes, none FAILED (${ends.map((e) => e.text).join(", ")})`,
  ]);
  return checks;
}

/**
 * The priority job's tasks were all claimed before any lower-priority task
 * queued when it came (the policy's promise), and it finished before the
 * earlier job with the most tasks queued then.
 * @param {Map<string, { tasks: Map<string, TaskRow>, events: LedgerEvent[] }>} ledger
 * @returns {[boolean, string][]}
 */
function priorityChecks(ledger) {
  const urgent = run.jobs.find((j) => j.priority > 0);
  const mine = urgent && ledger.get(urgent.name)?.events;
  if (!urgent || !mine) {
    const never = JOBS.filter((j) => j.later).map((j) => j.spec.metadata.name);
    return never.length > 0 ? [[false, `${never.join(", ")} was never submitted: the run ended first`]] : [];
  }
  const submitted = mine.find((e) => e.type === "JOB_ACCEPTED")?.seq ?? 0;
  /** @type {Map<string, number>} the first claim of each of its tasks */
  const firstClaims = new Map();
  for (const e of mine)
    if (e.type === "LEASE_CLAIMED" && !firstClaims.has(e.data.task_id)) firstClaims.set(e.data.task_id, e.seq);
  const allClaimed = Math.max(...firstClaims.values());
  const lower = run.jobs.filter((j) => j.priority < urgent.priority && !j.unplaceable && j.phase === "fleet");
  /** @type {Map<string, number>} tasks queued when the priority job came, by job */
  const queued = new Map();
  let overtaken = 0;
  let cutIn = 0;
  for (const job of lower) {
    const events = ledger.get(job.name)?.events ?? [];
    const pending = pendingAt(events, submitted);
    queued.set(job.name, pending.size);
    overtaken += pending.size;
    cutIn += events.filter((e) => e.type === "LEASE_CLAIMED" && e.seq > submitted && e.seq < allClaimed).length;
  }
  const name = `${urgent.name} (${PRIORITY_LABEL} ${urgent.priority})`;
  /** @type {[boolean, string][]} */
  const checks = [
    [
      overtaken > 0 && firstClaims.size === countTasks(urgent.counts) && cutIn === 0,
      `${name} overtook ${plural(overtaken, "queued task")}: its ${plural(firstClaims.size, "task")} were claimed before any of them (${cutIn} lower-priority claims in between)`,
    ],
  ];
  const [biggest, most] = [...queued.entries()].sort((a, b) => b[1] - a[1])[0] ?? ["", 0];
  const done = (/** @type {string} */ job) =>
    ledger.get(job)?.events.find((e) => e.type === "JOB_SUCCEEDED")?.seq ?? Number.POSITIVE_INFINITY;
  checks.push([
    most > 0 && done(urgent.name) < done(biggest),
    `${urgent.name} finished first: SUCCEEDED before ${biggest}, submitted earlier with ${plural(most, "task")} still queued when ${urgent.name} came`,
  ]);
  return checks;
}

/**
 * The cheater's made-up metrics lost every vote: each task it cheated on was
 * settled by two other nodes agreeing, the second one issued after the
 * disagreement; its commit with lying evidence was refused; every task's
 * key serves the honest metrics; GET /nodes counts each lie and each loss
 * as an invalid result, and none for the honest nodes.
 * @param {Map<string, { tasks: Map<string, TaskRow>, events: LedgerEvent[] }>} ledger
 * @param {NodeRecord[]} fleet
 * @returns {Promise<[boolean, string][]>}
 */
async function verifiedChecks(ledger, fleet) {
  const job = run.jobs.find((j) => j.phase === "verified");
  const mine = job && ledger.get(job.name);
  if (!job || !mine) {
    const never = JOBS.filter((j) => j.verified).map((j) => j.spec.metadata.name);
    return [[false, `${never.join(", ")} was never submitted: the run ended first`]];
  }
  const cheater = CHEATER.node_id;
  const { lie, fakes, before } = run.cheating;
  /** @type {[boolean, string][]} */
  const checks = [
    [
      lie !== null && !lie.accepted && lie.detail.startsWith("evidence claims"),
      lie
        ? `${cheater}'s commit of ${job.name}/${lie.task} ${lie.seconds.toFixed(1)} s after its claim, with evidence wall_seconds ${LIE_SECONDS}, was refused: {accepted: ${lie.accepted}, detail: "${lie.detail}"}`
        : `${cheater} never committed its lying evidence (it lies on its first claim after a made-up commit was taken for judging, ${plural(fakes.length, "such commit")}; it claimed nothing after)`,
    ],
  ];

  const { events } = mine;
  const votes = fakes.map(({ task }) => {
    const ofTask = events.filter((e) => e.data?.task_id === task);
    const replicas = ofTask.find((e) => e.type === "TASK_COMMIT_ACCEPTED")?.data.replicas ?? [];
    const valid = replicas.filter((r) => r.verdict === "valid").map((r) => r.node_id);
    const results = (/** @type {number} */ seq) =>
      ofTask.filter((e) => e.type === "TASK_ATTEMPT_COMPLETED" && e.seq < seq).length;
    const disputed = ofTask.find((e) => disagreed(e, results(e.seq)));
    const ran = new Set(
      ofTask.filter((e) => e.type === "LEASE_CLAIMED" && disputed && e.seq < disputed.seq).map((e) => e.data.node_id),
    );
    const next = disputed && ofTask.find((e) => e.type === "LEASE_CLAIMED" && e.seq > disputed.seq);
    const ok =
      replicas.find((r) => r.node_id === cheater)?.verdict === "invalid" &&
      valid.length >= 2 &&
      new Set([cheater, ...valid]).size === valid.length + 1 &&
      next !== undefined &&
      !ran.has(next.data.node_id) &&
      valid.includes(next.data.node_id) &&
      ofTask.some(
        (e) => e.type === "TASK_COMMIT_REJECTED" && e.data.node_id === cheater && e.data.verdict === "invalid",
      );
    const text = replicas.map((r) => `r${r.replica} ${r.node_id} ${r.verdict === "valid" ? "✓" : "✗"}`).join(", ");
    return { ok, text: `${task}: ${text || "not settled"}` };
  });
  checks.push([
    votes.length > 0 && votes.every((v) => v.ok),
    `${cheater}'s made-up ${JSON.stringify(FAKE_METRICS)} was outvoted on ${plural(votes.length, "task")}: after the disagreement another replica ran on a node that had run none, and agreed with the honest one (${votes.map((v) => v.text).join("; ")})`,
  ]);

  /** @type {string[]} */
  const served = [];
  let honest = 0;
  for (const task of mine.tasks.keys()) {
    const key = `jobs/${job.job_id}/${task}/metrics.json`;
    const object = await api(OPERATOR, "GET", `/artifacts/${key}`, undefined, { allow: [404] });
    const ok = JSON.stringify(object) === JSON.stringify(taskMetrics(job.job_id, task));
    if (ok) honest++;
    const value = /** @type {{ accuracy?: number } | null} */ (object === GONE ? null : object);
    served.push(`${task} ${value?.accuracy ?? "404"}`);
  }
  checks.push([
    honest > 0 && honest === mine.tasks.size,
    `every ${job.name} task's key jobs/${job.job_id}/{task}/metrics.json serves the honest metrics, ${honest} of ${mine.tasks.size}, none the made-up ones (accuracy: ${served.join(", ")})`,
  ]);

  // Refused is a 404 to its GET and nothing of another replica's in its list; anything else is a leak.
  const { copies } = run.cheating;
  const copied = copies.filter((c) => c.answer !== "404" || c.listed);
  const there = copies.filter((c) => c.existed).length;
  checks.push([
    copies.length > 0 && copied.length === 0,
    `the cheater's copy attempts were all refused (${copies.length} tries, ${copied.length} copies): each other replica's metrics.json was 404 to ${cheater} and absent from its GET /jobs/${job.job_id}/artifacts before the verdict, ${there} of them written already (the operator read them)${copied.length > 0 ? `; not refused: ${copied.map((c) => `${c.key} ${c.answer}${c.listed ? ", listed" : ""}`).join("; ")}` : ""}`,
  ]);

  const row = fleet.find((r) => r.node_id === cheater);
  const lies = lie && !lie.accepted ? 1 : 0;
  const crew = FLEET.filter((n) => !n.dies && !n.broken).map((n) => fleet.find((r) => r.node_id === n.node_id));
  const clean = crew.every((r) => r !== undefined && r.invalid_results === 0);
  checks.push([
    row !== undefined && row.invalid_results > before && row.invalid_results === before + lies + fakes.length && clean,
    `GET /nodes: ${cheater}'s invalid_results went ${before} → ${row?.invalid_results ?? "?"} (${plural(lies, "lie")}, outvoted ${fakes.length}×; consecutive_failures ${row?.consecutive_failures ?? "?"}); the honest nodes' stayed 0 (valid_results ${crew.map((r) => `${r?.node_id} ${r?.valid_results}`).join(", ")})`,
  ]);
  return checks;
}

/**
 * The tasks of one job that were queued (PENDING) just before ledger
 * position `seq`, replayed from its events.
 * @param {LedgerEvent[]} events
 * @param {number} seq
 */
function pendingAt(events, seq) {
  /** @type {Set<string>} */
  const pending = new Set();
  for (const e of events) {
    if (e.seq >= seq) break;
    if (e.type === "TASK_CREATED" || e.type === "TASK_REQUEUED") pending.add(e.data.task_id);
    else if (e.type === "LEASE_CLAIMED") pending.delete(e.data.task_id);
  }
  return pending;
}

// ---- HTTP, exactly as an agent speaks it -------------------------------------------

const GONE = Symbol("gone");

/**
 * The `Authorization` header of every request `caller` sends: its own
 * bearer token, the one place that picks it.
 * @param {Caller} caller
 */
function authorization(caller) {
  const token = "node_id" in caller ? TOKENS.nodes.get(caller.node_id) : TOKENS.operator;
  if (token === undefined) throw new Error(`no token for ${JSON.stringify(caller)}`);
  return `Bearer ${token}`;
}

/** @param {Caller} caller */
function callerName(caller) {
  return "node_id" in caller ? caller.node_id : `operator ${caller.operator}`;
}

/**
 * One request from `caller`, with its token; the parsed JSON answer (the
 * caller states its shape), null for 204 or an empty body, GONE for a
 * status in `allow`.
 * @param {Caller} caller
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body] JSON, or with `raw` the bytes as a string
 * @param {{ raw?: boolean, allow?: number[], signal?: AbortSignal }} [options]
 * @returns {Promise<unknown>}
 */
async function api(caller, method, path, body, { raw = false, allow = [], signal } = {}) {
  /** @type {Record<string, string>} */
  const headers = { authorization: authorization(caller) };
  /** @type {string | undefined} */
  let payload;
  if (body !== undefined) {
    payload = raw ? /** @type {string} */ (body) : JSON.stringify(body);
    headers["content-type"] = raw ? "application/octet-stream" : "application/json";
  }
  // The agent's own client timeout: a claim may be held up to 13 s (long-poll).
  const timeout = AbortSignal.timeout(15_000);
  const init = { method, headers, body: payload, signal: signal ? AbortSignal.any([timeout, signal]) : timeout };
  let r;
  for (let tries = 1; ; tries++) {
    try {
      r = await fetch(run.base + path, init);
      break;
    } catch (error) {
      // wrangler dev rebuilds when a source file changes and refuses
      // connections meanwhile: a read is safe to ask again.
      if (method !== "GET" || tries >= 10 || run.interrupted || init.signal.aborted) throw error;
      await sleep(500);
    }
  }
  if (allow.includes(r.status)) {
    await r.arrayBuffer();
    return GONE;
  }
  if (r.status === 204) return null;
  const text = await r.text();
  if (!r.ok) {
    if (r.status === 401)
      throw new Error(
        `${method} ${path} as ${callerName(caller)}: 401 — the coordinator does not know this run's token (the demo configures its own on the wrangler dev it starts)`,
      );
    throw new Error(`${method} ${path} as ${callerName(caller)}: ${r.status} ${text}`);
  }
  return text ? JSON.parse(text) : null;
}

/** @param {FleetNode} node */
async function register(node) {
  const { note: _note, dies: _dies, broken: _broken, ...fields } = node;
  await api(node, "POST", "/nodes/register", {
    kubernetes_node: "",
    hostname: `${node.node_id}.demo.local`,
    agent_version: "demo",
    labels: { fleet: "demo" },
    ...fields,
    capabilities: { os: "linux", architecture: "amd64", memory_bytes: 16 * 2 ** 30, gpus: [], ...fields.capabilities },
  });
}

/**
 * The fleet's GPUs and the demand on them, as the dashboard's GPU and demand
 * panels show them (GET /nodes/summary).
 */
async function showFleet() {
  const fleet =
    /** @type {{ gpus: { items: { model: string, memory_total_mb: number | null, compute_capability: string, gpus: number, nodes: number }[] }, demand: { classes: { servable: boolean, summary: string }[] } }} */ (
      await api(OPERATOR, "GET", "/nodes/summary")
    );
  say("");
  say(bold("GPUs") + dim(" (GET /nodes/summary; the dashboard's GPU panel)"));
  for (const g of fleet.gpus.items)
    say(
      `  ${String(g.gpus).padStart(2)} × ${g.model.padEnd(24)} ${String(g.memory_total_mb).padStart(6)} MB  cc ${g.compute_capability}  ${dim(`on ${plural(g.nodes, "node")}`)}`,
    );
  say(bold("Demand") + dim(" (the dashboard's demand panel: pending tasks by what they need)"));
  for (const c of fleet.demand.classes) say(`  ${c.servable ? "" : yellow("⚠ ")}${c.summary}`);
}

/**
 * "M.m" ≥ "M.m", compared as integers.
 * @param {string} have
 * @param {string} want
 */
function capabilityAtLeast(have, want) {
  const [a = 0, b = 0] = have.split(".").map(Number);
  const [c = 0, d = 0] = want.split(".").map(Number);
  return a > c || (a === c && b >= d);
}

/** @param {string} jobId */
function jobName(jobId) {
  return run.jobs.find((j) => j.job_id === jobId)?.name ?? jobId;
}

/**
 * @param {number} n
 * @param {string} noun
 */
function plural(n, noun) {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/** @param {TaskCounts} c */
function countTasks(c) {
  return c.PENDING + c.LEASED + c.COMPLETED + c.FAILED + c.CANCELLED;
}

// ---- the coordinator -----------------------------------------------------------------

/**
 * @param {number} port
 * @returns {Promise<boolean>}
 */
function portFree(port) {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** @returns {Promise<number>} */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = /** @type {import("node:net").AddressInfo} */ (server.address());
      server.close(() => resolve(port));
    });
  });
}

async function startCoordinator() {
  const url = `http://127.0.0.1:${options.port}`;
  if (!(await portFree(options.port))) {
    throw new Error(
      `port ${options.port} is in use (\`npm run dev\`?): pick another with --port — the demo starts its own coordinator, with this run's tokens`,
    );
  }
  say(dim(`starting wrangler dev on ${url} …`));
  const args = [
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(options.port),
    "--inspector-port",
    String(await freePort()),
    "--persist-to",
    ".wrangler/state",
    "--show-interactive-dev-session=false",
    "--log-level",
    "warn",
    // This run's tokens, whatever .dev.vars says (they replace its tokens):
    // enforcing, as replicated jobs need (SPEC §14), and never served open.
    "--var",
    `FLASHML_NODE_TOKENS:${[...TOKENS.nodes].map(([node, token]) => `${node}:${token}`).join(",")}`,
    "--var",
    `FLASHML_OPERATOR_TOKENS:${OPERATOR.operator}:${TOKENS.operator}`,
    "--var",
    "FLASHML_JOIN_CODE:",
    "--var",
    "FLASHML_REQUIRE_NODE_AUTH:1",
  ];
  const child = spawn(join(ROOT, "node_modules", ".bin", "wrangler"), args, {
    cwd: ROOT,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true, // its own process group: stopped with workerd by one kill
  });
  run.coordinator = child;
  let output = "";
  child.stdout.on("data", (d) => (output = (output + d).slice(-4000)));
  child.stderr.on("data", (d) => (output = (output + d).slice(-4000)));
  const until = Date.now() + 90_000;
  while (Date.now() < until && !run.interrupted) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited (${child.exitCode}):\n${output}`);
    try {
      const headers = { authorization: authorization(OPERATOR) };
      if ((await fetch(`${url}/healthz`, { headers, signal: AbortSignal.timeout(2000) })).ok) return url;
    } catch {
      // not up yet
    }
    await sleep(300);
  }
  throw new Error(run.interrupted ? "interrupted" : `wrangler dev did not start within 90 s:\n${output}`);
}

/** @param {NodeJS.Signals} signal */
function killCoordinator(signal) {
  const child = run.coordinator;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-(/** @type {number} */ (child.pid)), signal);
  } catch {
    // already gone
  }
}

async function stopCoordinator() {
  const child = run.coordinator;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  killCoordinator("SIGTERM");
  const stopped = await Promise.race([exited.then(() => true), sleep(5000).then(() => false)]);
  if (!stopped) killCoordinator("SIGKILL");
  say(dim("coordinator stopped"));
}

// ---- odds and ends -------------------------------------------------------------------

/** @param {number} ms */
function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

/** @param {string[]} argv */
function parseOptions(argv) {
  /** @type {{ port: number, maxSeconds: number, keep: boolean }} */
  const out = { port: 8787, maxSeconds: 120, keep: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) usage(`${arg} needs a value`);
      return v;
    };
    if (arg === "--port") out.port = Number(value());
    else if (arg === "--max-seconds") out.maxSeconds = Number(value());
    else if (arg === "--url")
      usage(
        "--url is not supported: the demo configures its own tokens (one per simulated node, one operator) on the coordinator it starts, and cannot know those of one already running; pick a free port with --port",
      );
    else if (arg === "--keep") out.keep = true;
    else if (arg === "--help" || arg === "-h") usage();
    else usage(`unknown option ${arg}`);
  }
  if (!Number.isInteger(out.port) || out.port < 1 || out.port > 65535) usage("--port must be a port number");
  if (!(out.maxSeconds > 0)) usage("--max-seconds must be a positive number");
  return out;
}

/**
 * @param {string} [problem]
 * @returns {never}
 */
function usage(problem) {
  if (problem) process.stderr.write(`demo: ${problem}\n`);
  process.stderr.write(
    "usage: npm run demo -- [--port 8787] [--max-seconds 120] [--keep]\n" +
      "  starts wrangler dev on 127.0.0.1:PORT with this run's fresh tokens (one per simulated node, one operator)\n",
  );
  process.exit(problem ? 2 : 0);
}

// ---- run (last, so every declaration above is initialised) -----------------

process.on("SIGINT", () => interrupt("Ctrl-C"));
process.on("SIGTERM", () => interrupt("SIGTERM"));
process.on("exit", () => killCoordinator("SIGKILL"));

try {
  await main();
} catch (error) {
  const e = /** @type {{ message?: string, cause?: { message?: string } } | undefined} */ (error);
  say(red(`demo failed: ${e?.message ?? error}${e?.cause?.message ? ` (${e.cause.message})` : ""}`));
  process.exitCode = 1;
} finally {
  await stopCoordinator();
  // Done: don't wait for the agents' back-off timers to run out.
  process.exit();
}
