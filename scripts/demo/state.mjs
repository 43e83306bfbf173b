// @ts-check
// What one demo run shares: its state (the jobs it follows, what it saw of
// the dying, broken and cheating nodes), the HTTP it speaks — every request
// with its caller's own token, as an agent or the operator — and small
// helpers.

import { coordinator, sleep } from "../../test/support/index.mjs";
import { TOKENS } from "./cast.mjs";

/** @import { Answer, Client, Wrangler } from "../../test/support/index.mjs" */
/** @import { Caller, FleetNode } from "./cast.mjs" */

/**
 * What the coordinator answers, as far as the demo reads it (the wire types
 * from src/protocol, through test/support).
 * @typedef {import("../../test/support/index.mjs").TaskCounts} TaskCounts
 * @typedef {import("../../test/support/index.mjs").JobAnswer} JobRecord
 * @typedef {import("../../test/support/index.mjs").Lease} Lease
 * @typedef {{ task_id: string, state: import("../../src/protocol/index").TaskState, node_id: string }} TaskRow
 * @typedef {{ summary: string, unplaceable: boolean, nodes: { node_id: string, eligible: boolean, reason: string }[] }} PlacementReport
 * @typedef {{ node_id: string, consecutive_failures: number, held_until: string | null, valid_results: number,
 *   invalid_results: number }} NodeRecord
 * @typedef {{ replica: number, node_id: string, output_sha256: string, verdict: string }} ReplicaVerdict
 */
/**
 * A ledger event; `data` as the lease and commit events read below carry it
 * (a replica's, docs/protocol.md §14, also its number, verdict, or every replica's).
 * @typedef {Omit<import("../../test/support/index.mjs").LedgerEvent, "data"> & { seq: number,
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
 * @type {{ stopping: boolean, interrupted: boolean, coordinator: Wrangler | null,
 *   url: string, pool: string, jobs: WatchedJob[], phase: Phase, died: { node: string, task_id: string, job: string, lease_id: string, at: number } | null,
 *   moved: { job: string, task: string, from: string, to: string, attempt: number, why: "expired" | "failed" }[],
 *   failed: { job: string, task: string, node: string }[], held: HeldBack | null, cheating: Cheating,
 *   stop: AbortController, lines: number }}
 */
export const run = {
  stopping: false,
  interrupted: false,
  coordinator: null, // the wrangler dev we started, if any
  url: "", // the coordinator
  pool: "",
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

export const GONE = Symbol("gone");

/**
 * The bearer token of every request `caller` sends: its own, the one place
 * that picks it.
 * @param {Caller} caller
 */
function tokenOf(caller) {
  const token = "node_id" in caller ? TOKENS.nodes.get(caller.node_id) : TOKENS.operator;
  if (token === undefined) throw new Error(`no token for ${JSON.stringify(caller)}`);
  return token;
}

/** @param {Caller} caller */
export function callerName(caller) {
  return "node_id" in caller ? caller.node_id : `operator ${caller.operator}`;
}

/** @type {Map<Caller, Client>} */
const clients = new Map();

/**
 * The caller's client of this run's pool, with its token. wrangler dev
 * rebuilds when a source file changes and refuses connections meanwhile: a
 * read is safe to ask again.
 * @param {Caller} caller
 * @returns {Client}
 */
export function clientOf(caller) {
  let client = clients.get(caller);
  if (client === undefined) {
    client = coordinator(run.url, {
      pool: run.pool,
      token: tokenOf(caller),
      around: async (method, _path, call) => {
        for (let tries = 1; ; tries++) {
          try {
            return await call();
          } catch (error) {
            if (method !== "GET" || tries >= 10 || run.interrupted) throw error;
            await sleep(500);
          }
        }
      },
    });
    clients.set(caller, client);
  }
  return client;
}

/**
 * The error for an answer the demo did not expect.
 * @param {Caller} caller
 * @param {string} method
 * @param {string} path
 * @param {Answer} answer
 */
export function refusal(caller, method, path, answer) {
  if (answer.status === 401)
    return new Error(
      `${method} ${path} as ${callerName(caller)}: 401 — the coordinator does not know this run's token (the demo configures its own on the wrangler dev it starts)`,
    );
  return new Error(`${method} ${path} as ${callerName(caller)}: ${answer.status} ${answer.text}`);
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
export async function api(caller, method, path, body, { raw = false, allow = [], signal } = {}) {
  /** @type {import("../../test/support/index.mjs").SendOptions} */
  const send = { signal };
  if (body !== undefined) {
    if (raw) send.raw = /** @type {string} */ (body);
    else send.body = body;
  }
  const answer = await clientOf(caller).send(method, path, send);
  if (allow.includes(answer.status)) return GONE;
  if (answer.status === 204) return null;
  if (answer.status < 200 || answer.status >= 300) throw refusal(caller, method, path, answer);
  return answer.text ? JSON.parse(answer.text) : null;
}

/** @param {FleetNode} node */
export async function register(node) {
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
 * "M.m" ≥ "M.m", compared as integers.
 * @param {string} have
 * @param {string} want
 */
export function capabilityAtLeast(have, want) {
  const [a = 0, b = 0] = have.split(".").map(Number);
  const [c = 0, d = 0] = want.split(".").map(Number);
  return a > c || (a === c && b >= d);
}

/** @param {string} jobId */
export function jobName(jobId) {
  return run.jobs.find((j) => j.job_id === jobId)?.name ?? jobId;
}

/**
 * @param {number} n
 * @param {string} noun
 */
export function plural(n, noun) {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/** @param {TaskCounts} c */
export function countTasks(c) {
  return c.PENDING + c.LEASED + c.COMPLETED + c.FAILED + c.CANCELLED;
}
