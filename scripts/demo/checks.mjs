// @ts-check
// The summary at the end and its checks, read back from the coordinator:
// every task placed where its gates allow, nothing committed twice, the
// dead node's task moved, the broken node held back and its tasks finished
// elsewhere, the priority job first, the cheater outvoted, refused and
// counted. Any check that fails fails the run (exit 1).

import { taskMetrics } from "./agents.mjs";
import {
  BROKEN_REASON,
  CHEATER,
  FAKE_METRICS,
  FLEET,
  GPU_CAPABILITY_LABEL,
  GPU_MEMORY_LABEL,
  JOBS,
  LIE_SECONDS,
  OPERATOR,
  PRIORITY_LABEL,
} from "./cast.mjs";
import { bold, cyan, dim, green, red, say, yellow } from "./output.mjs";
import { api, capabilityAtLeast, countTasks, GONE, plural, run } from "./state.mjs";
import { disagreed } from "./watch.mjs";

/** @import { Gpu } from "./cast.mjs" */
/** @import { LedgerEvent, NodeRecord, PlacementReport, TaskRow } from "./state.mjs" */

/**
 * @param {string} url
 * @param {string} pool
 */
export async function summary(url, pool) {
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
  const fleetView = /** @type {{ demand: { classes: { servable: boolean, summary: string }[] } }} */ (
    await api(OPERATOR, "GET", "/nodes/summary")
  );
  const unservable = fleetView.demand.classes.find((c) => !c.servable && c.summary.includes("≥ 81920 MB"));
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
