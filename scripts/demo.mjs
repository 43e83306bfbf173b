#!/usr/bin/env node
// @ts-check
// `npm run demo`: watch flashedge work. Starts the coordinator locally
// (`wrangler dev` on 127.0.0.1:8787, state in .wrangler/state), registers a
// small simulated fleet, submits jobs that exercise the placement gates, and
// runs one simulated agent per node through claim → heartbeat → upload →
// commit. One node dies mid-task: its lease expires and the task moves to
// another node. Prints a progress bar per job as it goes, and at the end a
// summary with checks (every GPU task on a GPU node, nothing committed twice).
//
// The agents speak only HTTP, exactly as the Python agent does. Plain
// Node 20, no dependencies. Stops by itself (at most --max-seconds), and
// cleanly on Ctrl-C; a coordinator it started is stopped by its pid.
//
//   npm run demo                        # start a coordinator on :8787 and run
//   npm run demo -- --keep              # leave it running afterwards (Ctrl-C stops)
//   npm run demo -- --url http://127.0.0.1:8787   # use one already running (npm run dev)
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
 * @property {{ cpu_cores: number, gpus?: { index: number, name: string, memory_total_mb: number }[] }} capabilities
 * @property {boolean} [dies]
 * @property {boolean} [argv_capable]
 * @property {boolean} [sandbox_capable]
 * @property {string[]} [local_datasets]
 */

/**
 * @param {number} n
 * @param {string} name
 */
const gpu = (n, name) => Array.from({ length: n }, (_, index) => ({ index, name, memory_total_mb: 24576 }));

/**
 * What each simulated node says about itself on registration.
 * @type {FleetNode[]}
 */
const FLEET = [
  { node_id: "cpu-1", note: "CPU only", capabilities: { cpu_cores: 8 } },
  { node_id: "cpu-2", note: "CPU only — dies mid-task", capabilities: { cpu_cores: 4 }, dies: true },
  { node_id: "gpu-1", note: "1 × NVIDIA L4", capabilities: { cpu_cores: 16, gpus: gpu(1, "NVIDIA L4") } },
  {
    node_id: "gpu-2",
    note: "2 × NVIDIA A100, runs argv but has no sandbox",
    capabilities: { cpu_cores: 32, gpus: gpu(2, "NVIDIA A100") },
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
 * @param {string} name
 * @param {{ type: string, parameters: { local_inputs?: string[], [name: string]: unknown } }} workload
 * @param {{ resources?: { gpuPerTask: number }, isolation?: { tier: string } }} [spec]
 */
function jobSpec(name, workload, spec = {}) {
  return {
    apiVersion: "flashml.dev/v1alpha1",
    kind: "Job",
    metadata: { name, labels: { demo: "fleet" } },
    spec: {
      execution: { backend: "leases" },
      image: { repository: "ghcr.io/flashml/runner", tag: "0.4.1" },
      workload,
      retryPolicy: { maxTaskAttempts: 3 },
      ...spec,
    },
  };
}

/**
 * Submitted in this order; `gate` is what the job shows off.
 * @type {{ gate: string, unplaceable?: boolean, spec: ReturnType<typeof jobSpec> }[]}
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
    gate: "gpu: needs 8 GPUs — no node has them",
    unplaceable: true,
    spec: jobSpec(
      "needs-8-gpus",
      { type: "hyperparameter_search", parameters: { trials: [{}] } },
      { resources: { gpuPerTask: 8 } },
    ),
  },
];

// ---- main ----------------------------------------------------------------------

/**
 * What the coordinator answers, as far as the demo reads it.
 * @typedef {{ PENDING: number, LEASED: number, COMPLETED: number, FAILED: number, CANCELLED: number }} TaskCounts
 * @typedef {{ job_id: string, state: string, task_counts: TaskCounts }} JobRecord
 * @typedef {{ lease_id: string, job_id: string, task_id: string, deadline: string, attempt_number: number }} Lease
 * @typedef {{ state: string, node_id: string }} TaskRow
 * @typedef {{ summary: string, unplaceable: boolean, nodes: { node_id: string, eligible: boolean, reason: string }[] }} PlacementReport
 */
/**
 * A ledger event; `data` as the lease and commit events read below carry it.
 * @typedef {{ seq: number, type: string, message: string, data: { task_id: string, node_id: string, attempt: number } }} LedgerEvent
 */
/**
 * A job as the demo follows it; `expired` maps a task to the node whose lease on it expired.
 * @typedef {{ name: string, job_id: string, gate: string, unplaceable: boolean, counts: TaskCounts, state: string,
 *   cursor: number, expired?: Record<string, string> }} WatchedJob
 */

/**
 * @type {{ stopping: boolean, interrupted: boolean, coordinator: import("node:child_process").ChildProcess | null,
 *   base: string, jobs: WatchedJob[], died: { node: string, task_id: string, job: string, lease_id: string, at: number } | null,
 *   moved: { job: string, task: string, from: string, to: string, attempt: number }[], lines: number }}
 */
const run = {
  stopping: false,
  interrupted: false,
  coordinator: null, // the wrangler child we started, if any
  base: "",
  jobs: [], // { name, job_id, gate, unplaceable, counts, state }
  died: null, // { node, task_id, job, lease_id, at }
  moved: [], // reassignments seen
  lines: 0, // lines of the progress block on screen
};

async function main() {
  const started = Date.now();
  const url = options.url ?? (await startCoordinator());
  const pool = `demo-${randomBytes(3).toString("hex")}`;
  run.base = `${url}/pools/${pool}/v1alpha1`;

  say(`${bold("flashedge demo")} — a simulated fleet against a local coordinator`);
  say(`  coordinator  ${url}${options.url ? "" : dim("  (wrangler dev, state in .wrangler/state)")}`);
  say(`  pool         ${pool}`);
  say(`  dashboard    ${cyan(`${url}/pools/${pool}/`)}  ← open this in a browser`);
  say("");

  say(bold("Fleet"));
  for (const node of FLEET) {
    await register(node);
    say(`  ${node.node_id.padEnd(10)} ${dim(node.note)}`);
  }
  say("");

  say(bold("Jobs"));
  for (const job of JOBS) {
    const record = /** @type {JobRecord} */ (await api("POST", "/jobs", job.spec));
    run.jobs.push({
      name: job.spec.metadata.name,
      job_id: record.job_id,
      gate: job.gate,
      unplaceable: job.unplaceable === true,
      counts: record.task_counts,
      state: record.state,
      cursor: 0,
    });
    say(
      `  ${job.spec.metadata.name.padEnd(15)} ${dim(record.job_id)}  ${plural(countTasks(record.task_counts), "task")}  ${dim(`gate: ${job.gate}`)}`,
    );
  }
  say("");
  say(bold("Running") + dim(" (claim → heartbeat → upload → commit; durations are random)"));

  const agents = FLEET.map((node) => agent(node));
  const deadline = started + options.maxSeconds * 1000;
  while (!run.stopping) {
    await watch();
    const placeable = run.jobs.filter((j) => !j.unplaceable);
    if (placeable.every((j) => TERMINAL.has(j.state))) break;
    if (Date.now() > deadline) {
      say(yellow(`stopping: --max-seconds ${options.maxSeconds} reached`));
      break;
    }
    await sleep(1000);
  }
  run.stopping = true;
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

  if (options.keep && !options.url) {
    say("");
    say(`The coordinator keeps running: ${cyan(`${url}/pools/${pool}/`)} — Ctrl-C to stop.`);
    while (!run.interrupted) await sleep(500);
    process.exitCode = ok ? 0 : 1; // Ctrl-C is how --keep ends: not a failure
  } else if (!options.url) {
    // npm run dev serves on 8787 whatever port this run used.
    say(
      dim(
        `The state stays in .wrangler/state: \`npm run dev\` and open http://127.0.0.1:8787/pools/${pool}/ to look again.`,
      ),
    );
  }
}

/** @param {string} why */
function interrupt(why) {
  if (run.interrupted) {
    killCoordinator("SIGKILL");
    process.exit(130);
  }
  run.interrupted = true;
  run.stopping = true;
  process.exitCode = 130;
  say(yellow(`\n${why}: stopping the agents and the coordinator…`));
}

// ---- one simulated agent ---------------------------------------------------------

/** @param {FleetNode} node */
async function agent(node) {
  let alive = true;
  const beat = setInterval(() => {
    if (alive)
      api("POST", `/nodes/${node.node_id}/heartbeat`, { node_id: node.node_id, status: "online" }).catch(() => {});
  }, 3000);
  try {
    await sleep(Math.random() * 800);
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
  const lease = /** @type {Lease | null} */ (await api("POST", "/leases/claim", { node_id: node.node_id }));
  if (!lease) {
    await sleep(600 + Math.random() * 600);
    return "idle";
  }
  const window = Date.parse(lease.deadline) - Date.now();
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
  const work = 1000 + Math.random() * 3500;
  const startedAt = Date.now();
  let gone = false;
  while (!gone && Date.now() - startedAt < work && !run.stopping) {
    await sleep(Math.min(work - (Date.now() - startedAt), Math.max(500, window / 3)));
    if (Date.now() - startedAt >= work) break;
    const renewed = await api("POST", `/attempts/${lease.lease_id}/heartbeat`, undefined, { allow: [410] });
    if (renewed === GONE) gone = true;
  }
  if (gone) {
    note(yellow(`! ${node.node_id}: lease on ${lease.task_id} is gone (410) — dropping the attempt`));
    return "gone";
  }
  if (run.stopping) return "stopped";
  const output = JSON.stringify({
    task_id: lease.task_id,
    node_id: node.node_id,
    score: Math.round(Math.random() * 1000) / 1000,
  });
  const key = `jobs/${lease.job_id}/${lease.task_id}/metrics.json`;
  await api("PUT", `/artifacts/${key}`, output, { raw: true });
  const sha = createHash("sha256").update(output).digest("hex");
  const answer = /** @type {{ accepted?: boolean } | null} */ (
    await api("POST", `/attempts/${lease.lease_id}/complete`, {
      output_sha256: sha,
      evidence: { wall_seconds: Math.round(work) / 1000, exit_code: 0 },
    })
  );
  const seconds = ((Date.now() - startedAt) / 1000).toFixed(1);
  if (answer?.accepted)
    note(
      `${green("✓")} ${jobName(lease.job_id)}/${lease.task_id} committed by ${node.node_id} ${dim(`(${seconds} s, attempt ${lease.attempt_number})`)}`,
    );
  else note(yellow(`✗ ${jobName(lease.job_id)}/${lease.task_id}: commit from ${node.node_id} rejected`));
  return "committed";
}

// ---- watching the jobs -----------------------------------------------------------------

const TERMINAL = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);

/** Refreshes job counts and reads new ledger events, reporting expiries and moves. */
async function watch() {
  let records;
  try {
    records = /** @type {JobRecord[]} */ (await api("GET", "/jobs"));
  } catch {
    return; // the next round retries
  }
  for (const job of run.jobs) {
    const record = records.find((r) => r.job_id === job.job_id);
    if (!record) continue;
    if (!TERMINAL.has(job.state) && TERMINAL.has(record.state))
      note(`${record.state === "SUCCEEDED" ? green("●") : red("●")} ${job.name} ${record.state}`);
    job.counts = record.task_counts;
    job.state = record.state;
    const events = /** @type {LedgerEvent[]} */ (
      await api("GET", `/jobs/${job.job_id}/events?after=${job.cursor}&limit=1000`).catch(() => [])
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
        job.expired = { ...(job.expired ?? {}), [task]: event.data.node_id };
      } else if (event.type === "LEASE_CLAIMED" && job.expired?.[task]) {
        const from = job.expired[task];
        delete job.expired[task];
        run.moved.push({ job: job.name, task, from, to: event.data.node_id, attempt: event.data.attempt });
        note(cyan(`↻ ${job.name}/${task} moved: ${from} → ${event.data.node_id} (attempt ${event.data.attempt})`));
      } else if (event.type === "TASK_COMMIT_REJECTED") {
        note(yellow(`✗ ${job.name}/${task}: a commit was rejected (${event.message})`));
      }
    }
  }
  clearProgress();
  drawProgress(false);
}

function progressLines() {
  const width = 24;
  return run.jobs.map((job) => {
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
    return `  ${job.name.padEnd(15)} ${bar} ${String(c.COMPLETED).padStart(2)}/${String(total).padEnd(2)} ${state}`;
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
  const nodes = Object.fromEntries(FLEET.map((n) => [n.node_id, n]));
  const perNode = Object.fromEntries(FLEET.map((n) => [n.node_id, 0]));
  /** @type {[boolean, string][]} */
  const checks = [];
  let commits = 0;
  let duplicates = 0;
  for (const job of run.jobs) {
    const tasks = /** @type {TaskRow[]} */ (await api("GET", `/jobs/${job.job_id}/tasks`));
    const events = /** @type {LedgerEvent[]} */ (await api("GET", `/jobs/${job.job_id}/events?limit=1000`));
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
    const datasets = spec.spec.workload.parameters.local_inputs ?? [];
    const sandboxed = spec.spec.isolation?.tier === "sandboxed";
    const misplaced = completed.filter((t) => {
      const n = nodes[t.node_id];
      if (!n) return true;
      if ((n.capabilities.gpus?.length ?? 0) < gpus) return true;
      if (!datasets.every((d) => (n.local_datasets ?? []).includes(d))) return true;
      if (sandboxed && n.sandbox_capable !== true) return true;
      return false;
    });
    if (gpus > 0 && !job.unplaceable)
      checks.push([
        misplaced.length === 0,
        `every ${job.name} task ran on a node with ≥ ${gpus} GPU (${completed.map((t) => t.node_id).join(", ") || "none"})`,
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
    const moved = run.moved.find((m) => m.task === died.task_id && m.from === died.node);
    checks.push([
      moved !== undefined,
      moved
        ? `${died.node} died holding ${died.job}/${died.task_id}; its lease expired and ${moved.to} took it over (attempt ${moved.attempt})`
        : `${died.node}'s task ${died.task_id} was not seen moving`,
    ]);
  }

  say("  tasks committed per node:");
  const most = Math.max(1, ...Object.values(perNode));
  for (const [node, n] of Object.entries(perNode)) {
    say(
      `    ${node.padEnd(10)} ${"■".repeat(Math.round((n / most) * 20)).padEnd(20)} ${n}${nodes[node]?.dies ? dim("  (died)") : ""}`,
    );
  }
  const stuck = run.jobs.find((j) => j.unplaceable);
  if (stuck) {
    const report = /** @type {PlacementReport} */ (await api("GET", `/jobs/${stuck.job_id}/tasks/trial-000/placement`));
    say(
      `  why is ${stuck.name}/trial-000 not running?  ${dim(`GET …/jobs/${stuck.job_id}/tasks/trial-000/placement`)}`,
    );
    say(`    ${yellow(report.summary)}`);
    for (const n of report.nodes) say(dim(`    ${n.node_id.padEnd(10)} ${n.eligible ? "eligible" : n.reason}`));
    checks.push([report.unplaceable === true, `${stuck.name} is reported unplaceable, and the dashboard flags it`]);
  }
  say("  checks:");
  for (const [ok, text] of checks) say(`    ${ok ? green("✔") : red("✘")} ${text}`);
  say("");
  say(`Dashboard: ${cyan(`${url}/pools/${pool}/`)}`);
  return checks.every(([ok]) => ok);
}

// ---- HTTP, exactly as an agent speaks it -------------------------------------------

const GONE = Symbol("gone");

/**
 * One request; the parsed JSON answer (the caller states its shape), null for
 * 204 or an empty body, GONE for a status in `allow`.
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body] JSON, or with `raw` the bytes as a string
 * @param {{ raw?: boolean, allow?: number[] }} [options]
 * @returns {Promise<unknown>}
 */
async function api(method, path, body, { raw = false, allow = [] } = {}) {
  /** @type {Record<string, string>} */
  const headers = {};
  /** @type {string | undefined} */
  let payload;
  if (body !== undefined) {
    payload = raw ? /** @type {string} */ (body) : JSON.stringify(body);
    headers["content-type"] = raw ? "application/octet-stream" : "application/json";
  }
  // The agent's own client timeout: a claim may be held up to 13 s (long-poll).
  const r = await fetch(run.base + path, { method, headers, body: payload, signal: AbortSignal.timeout(15_000) });
  if (allow.includes(r.status)) {
    await r.arrayBuffer();
    return GONE;
  }
  if (r.status === 204) return null;
  const text = await r.text();
  if (!r.ok) {
    if (r.status === 401)
      throw new Error(
        `${method} ${path}: 401 — this coordinator enforces tokens; the demo needs an open one (no FLASHML_*_TOKENS)`,
      );
    throw new Error(`${method} ${path}: ${r.status} ${text}`);
  }
  return text ? JSON.parse(text) : null;
}

/** @param {FleetNode} node */
async function register(node) {
  const { note: _note, dies: _dies, ...fields } = node;
  await api("POST", "/nodes/register", {
    kubernetes_node: "",
    hostname: `${node.node_id}.demo.local`,
    agent_version: "demo",
    labels: { fleet: "demo" },
    ...fields,
    capabilities: { os: "linux", architecture: "amd64", memory_bytes: 16 * 2 ** 30, gpus: [], ...fields.capabilities },
  });
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
      `port ${options.port} is in use. If it is \`npm run dev\`, run \`npm run demo -- --url ${url}\`; else pick another with --port`,
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
    // The demo runs open, whatever .dev.vars says: its agents carry no tokens.
    "--var",
    "FLASHML_NODE_TOKENS:",
    "--var",
    "FLASHML_OPERATOR_TOKENS:",
    "--var",
    "FLASHML_JOIN_CODE:",
    "--var",
    "FLASHML_REQUIRE_NODE_AUTH:0",
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
      if ((await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) })).ok) return url;
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
  /** @type {{ port: number, maxSeconds: number, keep: boolean, url: string | undefined }} */
  const out = { port: 8787, maxSeconds: 120, keep: false, url: undefined };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) usage(`${arg} needs a value`);
      return v;
    };
    if (arg === "--port") out.port = Number(value());
    else if (arg === "--max-seconds") out.maxSeconds = Number(value());
    else if (arg === "--url") out.url = value().replace(/\/+$/, "");
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
    "usage: npm run demo -- [--port 8787] [--max-seconds 120] [--keep] [--url http://127.0.0.1:8787]\n",
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
  say(red(`demo failed: ${/** @type {Error | undefined} */ (error)?.message ?? error}`));
  process.exitCode = 1;
} finally {
  await stopCoordinator();
  // Done: don't wait for the agents' back-off timers to run out.
  process.exit();
}
