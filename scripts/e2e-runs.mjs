#!/usr/bin/env node
// @ts-check
// End to end: a hosted federated-averaging run (POST /v1alpha1/runs,
// docs/protocol.md §17) on a local `wrangler dev` at 4 shards, worked by three
// UNCHANGED reference agents (`flashnode work --runner subprocess`,
// Zolli-Labs/flashml d5b29dd) running the reference's fedavg_worker. One agent
// is SIGKILLed (with its task subprocess) while it holds a lease in round 1.
//
// Checks: the run ends SUCCEEDED; its history has its 4 rounds, each once,
// each with its own job; every round had its quorum; the last round's
// mean_loss is below the first's; the killed agent's round-1 task ended
// CANCELLED, is not among the round's participants, and the round was
// aggregated before that task's lease could have expired (the quorum, not
// the lease, ended it); and no agent other than the killed one exited.
//
// An agent that exits on its own is restarted, as a supervisor (systemd,
// Kubernetes) restarts a volunteer's, so the run's own checks still get an
// answer; the exit is reported with its traceback and fails its check
// (with --tolerate-agent-exits it is reported only).
//
// Prints a summary, exits 1 on any failed check (2 when the reference agent
// cannot run here), and always stops what it started.
//
//   node scripts/e2e-runs.mjs [--keep-logs] [--in-place] [--tolerate-agent-exits]
//
// The coordinator serves a snapshot of this checkout's Worker sources taken
// at the start (scripts/e2e/coordinator.mjs), so edits made while it runs do
// not reload it mid-run; --in-place serves the checkout itself.
// The Python side (checkout, PYTHONPATH, what the agent needs) is
// scripts/e2e/flashnode.mjs; see its header for the FLASHML_* settings.

import { randomBytes } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { killAllNow, ROOT, sleep, startWrangler } from "../test/support/wrangler.mjs";
import { snapshot } from "./e2e/coordinator.mjs";
import {
  COMMIT,
  initialWeights,
  installDependencies,
  preflight,
  pythonPath,
  referenceCheckout,
  scratchDir,
  startAgent,
  tail,
} from "./e2e/flashnode.mjs";

/** @typedef {import("./e2e/flashnode.mjs").Agent} Agent */

const KEEP_LOGS = process.argv.includes("--keep-logs");
const IN_PLACE = process.argv.includes("--in-place");
const TOLERATE_AGENT_EXITS = process.argv.includes("--tolerate-agent-exits");
const ROUNDS = 4;
const NUM_SHARDS = 3;
const MIN_PARTICIPANTS = 2;
const LEASE_SECONDS = 30;
/** The reference's own FedAvg e2e values (scripts/fedavg_local_demo.py, tests/test_fedavg_convergence.py). */
const WORKER_PARAMS = {
  local_steps: 20,
  lr: 0.1,
  batch_size: 16,
  seed: 0,
  in_dim: 8,
  hidden: 16,
  out_dim: 2,
  dataset_size: 256,
};
const KILL_ROUND = 1;
/** The whole run, wrangler's start excluded. */
const RUN_BUDGET_MS = 300_000;

const NODES = ["e2e-node-1", "e2e-node-2", "e2e-node-3"];
const TOKENS = new Map(NODES.map((n) => [n, randomBytes(12).toString("hex")]));
const OPERATOR = "e2e-operator";
const OPERATOR_TOKEN = randomBytes(12).toString("hex");

/** @param {string} message */
const say = (message) => process.stdout.write(`[e2e-runs] ${message}\n`);

/** The agent now serving each node (a restarted one replaces its predecessor). */
const agents = new Map(/** @type {[string, Agent][]} */ ([]));
/** Agents that exited without being told to: which node, when, how, and the end of their output. */
const exits = /** @type {{ nodeId: string, at: number, code: number | null, round: string, tail: string }[]} */ ([]);
/** The coordinator, once started (a holder: it is set inside main). */
const held = /** @type {{ coordinator: import("../test/support/wrangler.mjs").Wrangler | null }} */ ({
  coordinator: null,
});
const scratch = scratchDir();
let finished = false;

function killEverythingNow() {
  for (const a of agents.values()) if (a.running()) a.signal("SIGKILL");
  killAllNow();
}
process.on("exit", killEverythingNow);
for (const sig of /** @type {NodeJS.Signals[]} */ (["SIGINT", "SIGTERM"])) {
  process.on(sig, () => {
    say(`${sig}: stopping`);
    killEverythingNow();
    process.exit(130);
  });
}

/**
 * One operator request; answers { status, body } (body parsed when JSON).
 * @param {string} url
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 */
async function call(url, method, path, body) {
  const r = await fetch(`${url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${OPERATOR_TOKEN}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
  const text = await r.text();
  let parsed;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text;
  }
  return { status: r.status, body: parsed, text };
}

/**
 * @param {Awaited<ReturnType<typeof call>>} answer
 * @param {string} what
 */
function ok(answer, what) {
  if (answer.status < 200 || answer.status >= 300) throw new Error(`${what}: ${answer.status} ${answer.text}`);
  return answer.body;
}

/** @type {{ name: string, pass: boolean, detail: string }[]} */
const checks = [];
/**
 * @param {string} name
 * @param {boolean} pass
 * @param {string} detail
 */
function check(name, pass, detail) {
  checks.push({ name, pass, detail });
}

/**
 * What one agent's log says it did: claims, commits accepted and declined, leases lost, failures, crashes.
 * @param {string} log
 */
function agentTally(log) {
  let text = "";
  try {
    text = readFileSync(log, "utf8");
  } catch {
    // no log: nothing done
  }
  const count = (/** @type {RegExp} */ re) => (text.match(re) ?? []).length;
  return {
    claimed: count(/"text": "claimed"/g),
    accepted: count(/"accepted": true/g),
    declined: count(/"accepted": false/g),
    lost: count(/"text": "lease lost/g),
    failed: count(/"text": "task failed"/g),
    crashed: count(/^Traceback/gm),
  };
}

async function main() {
  // ---- the reference, and whether it runs here ----
  const reference = referenceCheckout(scratch);
  let pypath = pythonPath(reference);
  let missing = preflight(pypath);
  if (missing !== null) {
    say("installing the reference's Python dependencies into node_modules/.cache/flashml-pydeps …");
    if (installDependencies()) {
      pypath = pythonPath(reference);
      missing = preflight(pypath);
    }
  }
  if (missing !== null) {
    say(missing);
    process.exitCode = 2;
    return;
  }
  say(`reference  Zolli-Labs/flashml ${COMMIT} at ${reference}`);
  const weights = initialWeights(pypath, WORKER_PARAMS);
  say(
    `initial weights: ${Object.keys(weights).length} tensors (fedavg_worker.build_model, seed ${WORKER_PARAMS.seed})`,
  );

  // ---- the coordinator ----
  const cwd = IN_PLACE ? ROOT : snapshot(join(scratch, "coordinator"));
  say(`starting wrangler dev (4 shards, tokens enforced) in ${IN_PLACE ? ROOT : `a snapshot of ${ROOT}`} …`);
  const coordinator = await startWrangler({
    cwd,
    persistTo: join(scratch, "state"),
    log: join(scratch, "wrangler.log"),
    vars: {
      FLASHML_POOL_SHARDS: "*=4",
      FLASHML_NODE_TOKENS: NODES.map((n) => `${n}:${TOKENS.get(n)}`).join(","),
      FLASHML_OPERATOR_TOKENS: `${OPERATOR}:${OPERATOR_TOKEN}`,
      FLASHML_JOIN_CODE: "",
      FLASHML_REQUIRE_NODE_AUTH: "1",
      FLASHML_CLAIM_WAIT_SECONDS: "2",
    },
  });
  held.coordinator = coordinator;
  const url = coordinator.url;
  say(`coordinator ${url}`);

  // ---- the agents ----
  const launch = (/** @type {string} */ nodeId) => {
    const agent = startAgent({
      url,
      nodeId,
      token: /** @type {string} */ (TOKENS.get(nodeId)),
      dir: join(scratch, nodeId),
      pypath,
    });
    agents.set(nodeId, agent);
    return agent;
  };
  for (const nodeId of NODES) launch(nodeId);
  const registeredBy = Date.now() + 60_000;
  for (;;) {
    const nodes = ok(await call(url, "GET", "/v1alpha1/nodes"), "GET /v1alpha1/nodes");
    const list = Array.isArray(nodes) ? nodes : (nodes?.items ?? nodes?.nodes ?? []);
    const ids = new Set(list.map((/** @type {{ node_id: string }} */ n) => n.node_id));
    if (NODES.every((n) => ids.has(n))) break;
    const dead = [...agents.values()].find((a) => !a.running());
    if (dead) throw new Error(`agent ${dead.nodeId} exited before registering:\n${tail(dead.log, 40)}`);
    if (Date.now() > registeredBy)
      throw new Error(`agents not all registered after 60 s (have ${[...ids].join(", ") || "none"})`);
    await sleep(500);
  }
  say(`agents     ${[...agents.values()].map((a) => `${a.nodeId} (pid ${a.pid})`).join(", ")} — registered`);

  // ---- the run ----
  const request = {
    kind: "federated_averaging",
    rounds: ROUNDS,
    num_shards: NUM_SHARDS,
    min_participants: MIN_PARTICIPANTS,
    worker_params: WORKER_PARAMS,
    initial_weights: weights,
    round_timeout_seconds: 300,
    lease_seconds: LEASE_SECONDS,
    image: "local/tier1:dev",
  };
  const started = await call(url, "POST", "/v1alpha1/runs", request);
  if (started.status !== 201) throw new Error(`POST /v1alpha1/runs: ${started.status} ${started.text}`);
  const runId = started.body.run_id;
  say(`run        ${runId} started (${ROUNDS} rounds × ${NUM_SHARDS} shards, quorum ${MIN_PARTICIPANTS})`);

  /** @type {{ agent: Agent, jobId: string, taskId: string, at: number } | null} */
  let killed = null;
  let lastLine = "";
  let run;
  const deadline = Date.now() + RUN_BUDGET_MS;
  for (;;) {
    run = ok(await call(url, "GET", `/v1alpha1/runs/${runId}`), `GET /v1alpha1/runs/${runId}`);
    const live = run.live_round;
    const where = live ? `round ${live.round} ${live.job_id}${live.frozen ? " (frozen)" : ""}` : "none";
    const line = `state ${run.state}, rounds_completed ${run.rounds_completed}, live ${where}`;
    if (line !== lastLine) say(`  ${line}`);
    lastLine = line;
    if (run.state !== "RUNNING") break;
    if (killed === null && live && live.round === KILL_ROUND && !live.frozen) {
      const tasks = ok(await call(url, "GET", `/v1alpha1/jobs/${live.job_id}/tasks`), "GET tasks");
      const leased = tasks.filter(
        (/** @type {{ state: string, node_id: string | null }} */ t) =>
          t.state === "LEASED" && t.node_id !== null && agents.get(t.node_id)?.running(),
      );
      if (leased.length > 0) {
        const victimTask = leased[leased.length - 1];
        const agent = /** @type {Agent} */ (agents.get(victimTask.node_id));
        agent.signal("SIGKILL");
        killed = { agent, jobId: live.job_id, taskId: victimTask.task_id, at: Date.now() };
        say(
          `  SIGKILL ${agent.nodeId} (pid ${agent.pid}) holding ${live.job_id}/${victimTask.task_id} in round ${KILL_ROUND}`,
        );
        say(
          `    tasks then: ${tasks.map((/** @type {any} */ t) => `${t.task_id}=${t.state}@${t.node_id ?? "-"}`).join(" ")}`,
        );
      }
    }
    for (const [nodeId, agent] of agents) {
      if (agent === killed?.agent || agent.running()) continue;
      const code = await agent.exited;
      const last = tail(agent.log, 3);
      exits.push({ nodeId, at: Date.now(), code, round: where, tail: tail(agent.log, 30) });
      say(`  ${nodeId} exited on its own (code ${code}) during ${where}; restarting it. Its last lines:`);
      for (const l of last.split("\n")) say(`    ${l}`);
      launch(nodeId);
    }
    if (Date.now() > deadline) throw new Error(`run still ${run.state} after ${RUN_BUDGET_MS / 1000} s`);
    await sleep(killed === null ? 150 : 1000);
  }

  // ---- the checks ----
  const history =
    /** @type {{ round: number, job_id: string, participants: number, task_ids: string[], mean_loss?: number, result_uri: string, finished_at: string }[]} */ (
      run.history
    );
  say("");
  say(`run ${runId}: ${run.state}${run.reason ? ` (${run.reason})` : ""}, rounds_completed ${run.rounds_completed}`);
  for (const h of history) {
    say(
      `  round ${h.round}  job ${h.job_id}  participants ${h.participants} [${h.task_ids.join(", ")}]  mean_loss ${h.mean_loss?.toFixed(4) ?? "-"}  ${h.result_uri}`,
    );
  }
  say(`  result_uri ${run.result_uri}`);
  for (const h of history) {
    const tasks = ok(
      await call(url, "GET", `/v1alpha1/jobs/${h.job_id}/tasks`),
      `GET /v1alpha1/jobs/${h.job_id}/tasks`,
    );
    say(
      `  round ${h.round} tasks: ${tasks.map((/** @type {any} */ t) => `${t.task_id}=${t.state}@${t.node_id ?? "-"}`).join("  ")}`,
    );
  }
  for (const nodeId of NODES) {
    const t = agentTally(join(scratch, nodeId, "agent.log"));
    say(
      `  agent ${nodeId}: claimed ${t.claimed}, committed ${t.accepted} accepted / ${t.declined} declined, leases lost ${t.lost}, tasks failed ${t.failed}, crashes ${t.crashed}${killed?.agent.nodeId === nodeId ? " (SIGKILLed in round 1)" : ""}`,
    );
  }
  say("");

  check("run SUCCEEDED", run.state === "SUCCEEDED", `state ${run.state}, reason ${run.reason ?? "null"}`);
  check(
    `rounds_completed is ${ROUNDS}`,
    run.rounds_completed === ROUNDS,
    `rounds_completed ${run.rounds_completed}, live_round ${JSON.stringify(run.live_round)}`,
  );
  const roundNumbers = history.map((h) => h.round);
  check(
    `history has rounds 0..${ROUNDS - 1}, each once`,
    history.length === ROUNDS && roundNumbers.every((r, i) => r === i),
    `rounds [${roundNumbers.join(", ")}]`,
  );
  const jobIds = new Set(history.map((h) => h.job_id));
  check("every round its own job", jobIds.size === history.length, `${jobIds.size} distinct of ${history.length}`);
  check(
    `every round had its quorum (${MIN_PARTICIPANTS}), its task_ids distinct`,
    history.length > 0 &&
      history.every(
        (h) =>
          h.participants >= MIN_PARTICIPANTS &&
          h.task_ids.length === h.participants &&
          new Set(h.task_ids).size === h.task_ids.length,
      ),
    history.map((h) => `${h.round}:${h.participants}/${h.task_ids.length}`).join(" "),
  );
  const first = history[0]?.mean_loss;
  const last = history[history.length - 1]?.mean_loss;
  check(
    "last round's mean_loss < first round's",
    typeof first === "number" && typeof last === "number" && history.length > 1 && last < first,
    `${first} → ${last}`,
  );
  check(
    "result_uri is the last round's",
    run.result_uri !== null && run.result_uri === history.at(-1)?.result_uri,
    `${run.result_uri}`,
  );

  if (killed === null) {
    check(`an agent was killed in round ${KILL_ROUND}`, false, "no leased round-1 task seen before its quorum froze");
  } else {
    const k = killed;
    const tasks = ok(await call(url, "GET", `/v1alpha1/jobs/${k.jobId}/tasks`), `GET /v1alpha1/jobs/${k.jobId}/tasks`);
    const victim = tasks.find((/** @type {{ task_id: string }} */ t) => t.task_id === k.taskId);
    const round = history.find((h) => h.round === KILL_ROUND);
    check(
      `the killed agent's task (${k.taskId}) ended CANCELLED`,
      victim?.state === "CANCELLED",
      JSON.stringify(victim),
    );
    check(
      "the killed agent's task is not among its round's participants",
      round !== undefined && round.job_id === k.jobId && !round.task_ids.includes(k.taskId),
      round ? `${round.job_id} [${round.task_ids.join(", ")}]` : "no such round",
    );
    const after = round ? (Date.parse(round.finished_at) - k.at) / 1000 : Number.NaN;
    check(
      `round ${KILL_ROUND} aggregated by its quorum, before the dead lease could expire`,
      Number.isFinite(after) && after < LEASE_SECONDS,
      `finished ${after.toFixed(1)} s after the kill (lease ${LEASE_SECONDS} s)`,
    );
  }
  const exitCheck = {
    name: "no agent exited but the one killed",
    pass: exits.length === 0,
    detail:
      exits.length === 0
        ? "none"
        : exits
            .map((e) => `${e.nodeId} (code ${e.code}, during ${e.round}): ${e.tail.split("\n").filter(Boolean).at(-1)}`)
            .join("; "),
  };
  if (TOLERATE_AGENT_EXITS && !exitCheck.pass) say(`note: ${exitCheck.name} — not so: ${exitCheck.detail}`);
  else checks.push(exitCheck);

  for (const c of checks) say(`${c.pass ? "ok  " : "FAIL"} ${c.name} — ${c.detail}`);
  const failedChecks = checks.filter((c) => !c.pass).length;
  say(`${checks.length - failedChecks} passed, ${failedChecks} failed`);
  if (failedChecks > 0) {
    process.exitCode = 1;
    for (const e of exits) say(`--- ${e.nodeId} exited on its own (code ${e.code}) during ${e.round} ---\n${e.tail}`);
  }
  finished = true;
}

function dumpLogs() {
  for (const a of agents.values()) say(`--- ${a.nodeId} (last lines of ${a.log}) ---\n${tail(a.log, 25)}`);
  const log = join(scratch, "wrangler.log");
  say(
    `--- wrangler (last lines of ${log}) ---\n${tail(log, 200)
      .split("\n")
      .filter((l) => !/Request\.cf|ENOTFOUND workers\.cloudflare\.com|GetAddrInfoReqWrap/.test(l))
      .slice(-25)
      .join("\n")}`,
  );
}

try {
  await main();
} catch (error) {
  say(`ERROR ${error instanceof Error ? error.message : String(error)}`);
  dumpLogs();
  process.exitCode = 1;
} finally {
  await Promise.all([...agents.values()].map((a) => a.stop()));
  await held.coordinator?.stop();
  if (KEEP_LOGS || !finished || process.exitCode) say(`logs kept in ${scratch}`);
  else rmSync(scratch, { recursive: true, force: true });
}
