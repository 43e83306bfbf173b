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
// Then a replicated job (each task run on two nodes, docs/protocol.md §14) runs on the
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
// The coordinator enforces tokens (docs/protocol.md §9; replicated jobs need node
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
//   npm run demo -- --quick             # as CI runs it: a free port, throwaway state
//
// Exits 1 when a check of the summary fails (.ci/run relies on it). The
// parts live in scripts/demo/: the cast (fleet, jobs, tokens), the run's
// state and HTTP, the agents, the watching, the output and the checks; the
// coordinator and the agent loop are test/support's.

import { randomBytes } from "node:crypto";
import { killAllNow, portFree, sleep, startWrangler } from "../test/support/index.mjs";
import { agent } from "./demo/agents.mjs";
import { CHEATER, FAKE_METRICS, FLEET, JOBS, OPERATOR, PRIORITY_LABEL, REPLICAS_LABEL, TOKENS } from "./demo/cast.mjs";
import { summary } from "./demo/checks.mjs";
import { bold, cyan, dim, note, printNext, red, say, yellow } from "./demo/output.mjs";
import { api, countTasks, plural, register, run } from "./demo/state.mjs";
import { showFleet, TERMINAL, watch } from "./demo/watch.mjs";

/** @import { JobRecord, NodeRecord } from "./demo/state.mjs" */

const options = parseOptions(process.argv.slice(2));

// ---- main ----------------------------------------------------------------------

async function main() {
  const started = Date.now();
  const url = await startCoordinator();
  const pool = `demo-${randomBytes(3).toString("hex")}`;
  run.url = url;
  run.pool = pool;

  say(`${bold("flashedge demo")} — a simulated fleet against a local coordinator`);
  const state = options.quick ? "throwaway state" : "state in .wrangler/state";
  say(`  coordinator  ${url}${dim(`  (wrangler dev, ${state}; enforcing this run's tokens)`)}`);
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
    printNext(); // the fleet's final state is printed
    await watch();
    run.lines = 0; // and stays on screen
    await verifiedResults(verified, deadline, agents);
  }
  run.stopping = true;
  run.stop.abort(); // idle agents wait in a long-poll claim: no need to hear it out
  await Promise.race([Promise.all(agents), sleep(15_000)]);
  printNext(); // the final state is always printed
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
  } else if (!options.quick) {
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
 * The verified-results step (docs/protocol.md §14): a job whose every task runs on two
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
    killAllNow();
    process.exit(130);
  }
  run.interrupted = true;
  run.stopping = true;
  run.stop.abort();
  process.exitCode = 130;
  say(yellow(`\n${why}: stopping the agents and the coordinator…`));
}

// ---- the coordinator -----------------------------------------------------------------

/**
 * Starts this run's coordinator with this run's tokens, whatever .dev.vars
 * says: enforcing, as replicated jobs need (docs/protocol.md §14), and never served
 * open. On --port (default 8787) with its state in .wrangler/state, or with
 * --quick on a free port with throwaway state.
 */
async function startCoordinator() {
  if (options.port !== null && !(await portFree(options.port))) {
    throw new Error(
      `port ${options.port} is in use (\`npm run dev\`?): pick another with --port — the demo starts its own coordinator, with this run's tokens`,
    );
  }
  say(dim(`starting wrangler dev on ${options.port === null ? "a free port" : `http://127.0.0.1:${options.port}`} …`));
  run.coordinator = await startWrangler({
    ...(options.port === null ? {} : { port: options.port }),
    ...(options.quick ? {} : { persistTo: ".wrangler/state" }),
    vars: {
      FLASHML_NODE_TOKENS: [...TOKENS.nodes].map(([node, token]) => `${node}:${token}`).join(","),
      FLASHML_OPERATOR_TOKENS: `${OPERATOR.operator}:${TOKENS.operator}`,
      FLASHML_JOIN_CODE: "",
      FLASHML_REQUIRE_NODE_AUTH: "1",
    },
    signal: run.stop.signal,
  });
  return run.coordinator.url;
}

async function stopCoordinator() {
  const server = run.coordinator;
  if (!server?.running()) return;
  await server.stop();
  say(dim("coordinator stopped"));
}

// ---- options -------------------------------------------------------------------------

/** @param {string[]} argv */
function parseOptions(argv) {
  /** @type {{ port: number | null, maxSeconds: number, keep: boolean, quick: boolean }} */
  const out = { port: 8787, maxSeconds: 120, keep: false, quick: false };
  let portGiven = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) usage(`${arg} needs a value`);
      return v;
    };
    if (arg === "--port") {
      out.port = Number(value());
      portGiven = true;
    } else if (arg === "--quick") out.quick = true;
    else if (arg === "--max-seconds") out.maxSeconds = Number(value());
    else if (arg === "--url")
      usage(
        "--url is not supported: the demo configures its own tokens (one per simulated node, one operator) on the coordinator it starts, and cannot know those of one already running; pick a free port with --port",
      );
    else if (arg === "--keep") out.keep = true;
    else if (arg === "--help" || arg === "-h") usage();
    else usage(`unknown option ${arg}`);
  }
  if (!Number.isInteger(out.port) || Number(out.port) < 1 || Number(out.port) > 65535)
    usage("--port must be a port number");
  if (out.quick && !portGiven) out.port = null; // a free one
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
    "usage: npm run demo -- [--port 8787] [--max-seconds 120] [--keep] [--quick]\n" +
      "  starts wrangler dev on 127.0.0.1:PORT with this run's fresh tokens (one per simulated node, one operator)\n" +
      "  --quick: on a free port (unless --port), with throwaway state instead of .wrangler/state\n",
  );
  process.exit(problem ? 2 : 0);
}

// ---- run (last, so every declaration above is initialised) -----------------

process.on("SIGINT", () => interrupt("Ctrl-C"));
process.on("SIGTERM", () => interrupt("SIGTERM"));
process.on("exit", () => killAllNow());

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
