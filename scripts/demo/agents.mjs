// @ts-check
// One simulated agent per node, speaking only HTTP as the Python agent
// does: claim → heartbeat → upload → commit, with random durations. One
// node dies holding a lease; the broken one fails every task it takes; the
// cheater commits made-up metrics, tries to copy the other replicas'
// outputs first, and once lies about its run time.

import { outputPrefix, runAgent, runTask, sha256, sleep } from "../../test/support/index.mjs";
import { BROKEN_REASON, COPY_REPLICAS, FAKE_METRICS, LIE_SECONDS, OPERATOR } from "./cast.mjs";
import { dim, green, note, red, yellow } from "./output.mjs";
import { api, clientOf, GONE, jobName, refusal, run } from "./state.mjs";

/** @import { Caller, FleetNode } from "./cast.mjs" */
/** @import { Lease } from "./state.mjs" */

/**
 * One node's agent (test/support's loop), until the run stops or the node
 * dies: node heartbeats every 3 s in the background, a claim the
 * coordinator may hold (aborted when the run ends), a short random pause
 * when there is nothing to run, and a flaky moment reported and backed off.
 * @param {FleetNode} node
 */
export function agent(node) {
  return runAgent({
    client: clientOf(node),
    nodeId: node.node_id,
    done: () => run.stopping,
    // The cheater wastes no time.
    startAfterMs: node.cheats ? 0 : Math.random() * 800,
    backgroundHeartbeatMs: 3000,
    signal: run.stop.signal,
    idleMs: () => 600 + Math.random() * 600,
    onRefused: (answer) => {
      throw refusal(node, "POST", "/leases/claim", answer);
    },
    onLease: (lease, self) => attempt(node, lease, self.silence),
    onError: async (error) => {
      // A flaky moment (or the coordinator stopping): report, back off, go on.
      if (!run.stopping)
        note(yellow(`! ${node.node_id}: ${/** @type {Error | undefined} */ (error)?.message ?? error}`));
      await sleep(1000);
    },
  });
}

/**
 * What a node does with a lease: the work, the upload and the commit — or
 * as the node misbehaves. "stop" when it died.
 * @param {FleetNode} node
 * @param {Lease} lease
 * @param {() => void} die
 */
async function attempt(node, lease, die) {
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
    return "stop";
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
  const client = clientOf(node);
  const end = await runTask(client, lease, {
    workMs: work,
    heartbeatMs: Math.max(500, window / 3),
    stopped: () => run.stopping,
    output: JSON.stringify(taskMetrics(lease.job_id, lease.task_id)),
    evidence: { wall_seconds: Math.round(work) / 1000, exit_code: 0 },
  });
  if (end.outcome === "gone") {
    note(yellow(`! ${node.node_id}: lease on ${lease.task_id} is gone (410) — dropping the attempt`));
    return "gone";
  }
  if (end.outcome === "stopped") return "stopped";
  if (end.outcome === "upload refused")
    throw refusal(node, "PUT", `/artifacts/${outputPrefix(lease)}metrics.json`, end.answer);
  if (end.answer.status < 200 || end.answer.status >= 300)
    throw refusal(node, "POST", `/attempts/${lease.lease_id}/complete`, end.answer);
  const answer = /** @type {{ accepted?: boolean }} */ (JSON.parse(end.answer.text));
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
 * lie holds the node back and distrusts it, docs/protocol.md §14.)
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
 * task's verdict another replica's output is sealed (docs/protocol.md §14): absent from
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
export function taskMetrics(jobId, taskId) {
  const seed = Buffer.from(sha256(`${jobId}/${taskId}`), "hex");
  return { task_id: taskId, accuracy: (700 + Math.round(((seed[0] ?? 0) / 255) * 200)) / 1000 };
}

/**
 * The replica a lease runs, from its output prefix; 0 for an unreplicated task.
 * @param {Lease} lease
 */
function replicaOf(lease) {
  return Number(/\/r(\d+)\/$/.exec(outputPrefix(lease))?.[1] ?? 0);
}
