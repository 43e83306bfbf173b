// @ts-check
// The one simulated agent loop, as flashruntime's agent (ExecutorLoop) runs:
// register, then until told to stop: a node heartbeat when one is due, a
// claim (held by the coordinator up to its long-poll window), and on a lease
// the caller's work; on no lease a pause. The variations the callers need
// (the benches' tallies, the drivers' retries and misbehaving nodes, the
// demo's dying and cheating ones) are options and the `onLease` callback;
// runTask is the honest work most of them do.

import { ok, sha256 } from "./client.mjs";
import { sleep } from "./wrangler.mjs";

/** @import { Answer, Client, ExecutionEvidence, Lease, NodeRegistration } from "./client.mjs" */

/**
 * @typedef {object} AgentOptions
 * @property {Client} client  the node's client (its token, and any tally or retry around its calls)
 * @property {string} nodeId
 * @property {NodeRegistration} [registration]  sent first (and again on a 403 claim with `reregister`);
 *   none: the caller registered it already
 * @property {() => boolean} done  checked before every claim
 * @property {number} [startAfterMs]  a fleet is not in step: when this agent starts
 * @property {number} [nodeHeartbeatMs]  a node heartbeat before a claim once this long has passed since the last
 *   (ExecutorLoop: 5 s)
 * @property {number} [backgroundHeartbeatMs]  node heartbeats on a timer instead, also while a task runs, until
 *   the agent stops or `silence()` is called
 * @property {AbortSignal} [signal]  aborts a claim the coordinator is holding
 * @property {boolean} [reregister]  on a 403 claim (a node the pool does not know) register again
 * @property {(answer: Answer) => number} [idleMs]  the pause after a claim with no lease (default 1 s)
 * @property {(answer: Answer) => void} [onRefused]  a claim answered neither 200, 204 nor 0 (no answer);
 *   default: a pause like no lease
 * @property {(lease: Lease, agent: Agent) => Promise<"stop" | unknown>} onLease  "stop" ends the loop
 * @property {(error: unknown) => Promise<void>} [onError]  a call that threw: default, the loop ends with it
 */

/**
 * What `onLease` may do besides calls: go silent (the background heartbeats stop).
 * @typedef {{ nodeId: string, client: Client, silence: () => void }} Agent
 */

/**
 * Runs one agent until `done()`, a lease handler says "stop", or an error without `onError`.
 * @param {AgentOptions} o
 */
export async function runAgent(o) {
  const { client, nodeId } = o;
  let alive = true;
  const beat =
    o.backgroundHeartbeatMs === undefined
      ? undefined
      : setInterval(() => {
          if (alive) client.nodeHeartbeat(nodeId, { node_id: nodeId, status: "online" }).catch(() => {});
        }, o.backgroundHeartbeatMs);
  /** @type {Agent} */
  const agent = { nodeId, client, silence: () => (alive = false) };
  try {
    await sleep(o.startAfterMs ?? 0);
    if (o.registration) await client.register(o.registration);
    let lastHeartbeat = Number.NEGATIVE_INFINITY;
    while (!o.done()) {
      try {
        if (o.nodeHeartbeatMs !== undefined && Date.now() - lastHeartbeat >= o.nodeHeartbeatMs) {
          await client.nodeHeartbeat(nodeId);
          lastHeartbeat = Date.now();
        }
        const answer = await client.claim(nodeId, { signal: o.signal });
        if (answer.status === 200) {
          if ((await o.onLease(/** @type {Lease} */ (JSON.parse(answer.text)), agent)) === "stop") return;
          continue;
        }
        if (answer.status === 403 && o.reregister && o.registration) {
          await client.register(o.registration);
          continue;
        }
        if (answer.status !== 204 && answer.status !== 0) o.onRefused?.(answer);
        await sleep(o.idleMs ? o.idleMs(answer) : 1000);
      } catch (error) {
        if (!o.onError) throw error;
        await o.onError(error);
      }
    }
  } finally {
    if (beat !== undefined) clearInterval(beat);
  }
}

/**
 * A registration as the agent sends it: the node's id and capabilities, the rest its defaults.
 * @param {string} nodeId
 * @param {Partial<NodeRegistration>} [fields]
 * @returns {NodeRegistration}
 */
export function registration(nodeId, fields = {}) {
  return {
    node_id: nodeId,
    kubernetes_node: "",
    hostname: nodeId,
    ...fields,
    capabilities: { cpu_cores: 4, gpus: [], ...fields.capabilities },
  };
}

/**
 * Where a lease's outputs go: its payload's output_prefix (a replica's own), else the task's.
 * @param {Lease} lease
 */
export function outputPrefix(lease) {
  const prefix = lease.payload?.output_prefix;
  return typeof prefix === "string" ? prefix : `jobs/${lease.job_id}/${lease.task_id}/`;
}

/**
 * @typedef {object} TaskOptions
 * @property {number} [workMs]  how long the task runs (default 0)
 * @property {number} [heartbeatMs]  attempt heartbeats while it runs, this far apart
 * @property {string} [output]  the metrics.json it uploads (default a small fixed object)
 * @property {string} [key]  where (default metrics.json under outputPrefix(lease))
 * @property {Partial<ExecutionEvidence>} [evidence]  sent with the commit
 * @property {() => boolean} [stopped]  ends the run early, without an upload
 */

/**
 * The task's end: "gone" (a heartbeat answered 410: the lease moved on),
 * "stopped", "upload refused" (its answer), or "committed" with the
 * commit's answer.
 * @typedef {{ outcome: "gone" } | { outcome: "stopped" } | { outcome: "upload refused", answer: Answer }
 *   | { outcome: "committed", answer: Answer }} TaskEnd
 */

/**
 * Runs a leased task as the agent does: attempt heartbeats while it works,
 * then one upload and the commit with the output's digest.
 * @param {Client} client
 * @param {Lease} lease
 * @param {TaskOptions} [o]
 * @returns {Promise<TaskEnd>}
 */
export async function runTask(client, lease, o = {}) {
  const workMs = o.workMs ?? 0;
  const heartbeatMs = o.heartbeatMs ?? workMs;
  const stopped = o.stopped ?? (() => false);
  const startedAt = Date.now();
  while (Date.now() - startedAt < workMs && !stopped()) {
    await sleep(Math.min(workMs - (Date.now() - startedAt), heartbeatMs));
    if (Date.now() - startedAt >= workMs) break;
    if ((await client.heartbeat(lease.lease_id)).status === 410) return { outcome: "gone" };
  }
  if (stopped()) return { outcome: "stopped" };
  const output = o.output ?? JSON.stringify({ task: lease.task_id, loss: 0.1 });
  const uploaded = await client.upload(o.key ?? `${outputPrefix(lease)}metrics.json`, output);
  if (uploaded.status !== 200) return { outcome: "upload refused", answer: uploaded };
  const body = o.evidence ? { output_sha256: sha256(output), evidence: o.evidence } : { output_sha256: sha256(output) };
  return { outcome: "committed", answer: await client.complete(lease.lease_id, body) };
}

/**
 * Whether a commit's answer accepted it.
 * @param {Answer} answer
 */
export function accepted(answer) {
  return (
    answer.status === 200 && /** @type {{ accepted?: boolean } | null} */ (ok(answer, "commit"))?.accepted === true
  );
}
