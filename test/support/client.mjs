// @ts-check
// The coordinator's HTTP calls as the Node-side tools make them (an agent's
// and an operator's), typed from the wire protocol in src/protocol. Every
// call answers { status, text } and leaves the policy to its caller:
// whether a status is a failure, retries, tallies. `send` is the one place
// a request is built, so a caller's wrapper sees every call.

import { createHash } from "node:crypto";

/**
 * @typedef {import("../../src/protocol/index").Lease} Lease
 * @typedef {import("../../src/protocol/index").Event} LedgerEvent
 * @typedef {import("../../src/protocol/index").JobRecord} JobRecord
 * @typedef {import("../../src/protocol/index").JobState} JobState
 * @typedef {import("../../src/protocol/index").NodeCapabilities} NodeCapabilities
 * @typedef {import("zod").input<typeof import("../../src/protocol/index").NodeRegistrationSchema>} NodeRegistration
 * @typedef {import("zod").input<typeof import("../../src/protocol/index").NodeHeartbeatSchema>} NodeHeartbeat
 * @typedef {import("zod").input<typeof import("../../src/protocol/index").JobSpecSchema>} JobSpec
 * @typedef {import("../../src/protocol/index").CompleteRequest} CompleteRequest
 * @typedef {import("../../src/protocol/index").ExecutionEvidence} ExecutionEvidence
 * @typedef {{ PENDING: number, LEASED: number, COMPLETED: number, FAILED: number, CANCELLED: number }} TaskCounts
 * @typedef {JobRecord & { task_counts: TaskCounts }} JobAnswer  a job as GET/POST /jobs serve it
 */

/**
 * @typedef {{ status: number, text: string }} Answer
 * @typedef {object} SendOptions
 * @property {unknown} [body]  sent as JSON
 * @property {string | Uint8Array} [raw]  sent as is, with `contentType`
 * @property {string} [contentType]  of a raw body; default application/octet-stream
 * @property {string | null} [token]  a bearer token for this call, over the client's
 * @property {AbortSignal} [signal]
 * @property {number | null} [timeoutMs]  over the client's (null: none)
 */
/**
 * Wraps one call: `call` sends it (and may be called again, to retry).
 * @callback Around
 * @param {string} method
 * @param {string} path
 * @param {() => Promise<Answer>} call
 * @returns {Promise<Answer>}
 */

/** @param {string | Uint8Array} bytes */
export function sha256(bytes) {
  return createHash("sha256").update(bytes).digest("hex");
}

/**
 * The JSON of a 2xx answer, or an error naming the call, its status and body.
 * @template T
 * @param {Answer} answer
 * @param {string} what  e.g. "POST /jobs"
 * @returns {T}
 */
export function ok(answer, what) {
  if (answer.status < 200 || answer.status >= 300) throw new Error(`${what}: ${answer.status} ${answer.text}`);
  return /** @type {T} */ (answer.text ? JSON.parse(answer.text) : null);
}

/**
 * A client of one pool's API (or the default pool's, `pool` null).
 * @param {string} url  the coordinator, e.g. http://127.0.0.1:8790
 * @param {{ pool?: string | null, token?: string | null, timeoutMs?: number | null, around?: Around }} [options]
 *   `timeoutMs`: the agent's client timeout (15 s: a claim may be held 12.5 s; null, none: a bench
 *   timing each request); `around`: wraps every call (a tally, retries, a timer)
 */
export function coordinator(url, { pool = null, token = null, timeoutMs = 15_000, around } = {}) {
  const base = pool ? `${url}/pools/${pool}/v1alpha1` : `${url}/v1alpha1`;

  /**
   * One request. Rejects only when no answer came (connection refused, timeout, abort).
   * @param {string} method
   * @param {string} path  under the pool's base, e.g. "/jobs"
   * @param {SendOptions} [options]
   * @returns {Promise<Answer>}
   */
  function send(method, path, options = {}) {
    const call = () => request(method, path, options);
    return around ? around(method, path, call) : call();
  }

  /**
   * @param {string} method
   * @param {string} path
   * @param {SendOptions} options
   * @returns {Promise<Answer>}
   */
  async function request(method, path, options) {
    /** @type {Record<string, string>} */
    const headers = {};
    const bearer = options.token === undefined ? token : options.token;
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    /** @type {string | Uint8Array | undefined} */
    let body;
    if (options.raw !== undefined) {
      body = options.raw;
      headers["content-type"] = options.contentType ?? "application/octet-stream";
    } else if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers["content-type"] = "application/json";
    }
    const ms = options.timeoutMs === undefined ? timeoutMs : options.timeoutMs;
    const signals = [...(ms === null ? [] : [AbortSignal.timeout(ms)]), ...(options.signal ? [options.signal] : [])];
    const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
    const r = await fetch(base + path, { method, headers, body, signal });
    // Read inside the caller's try: a connection cut mid-answer is an error like any other.
    return { status: r.status, text: await r.text() };
  }

  return {
    url,
    base,
    send,
    /** @param {NodeRegistration} registration @param {SendOptions} [o] */
    register: (registration, o) => send("POST", "/nodes/register", { ...o, body: registration }),
    /** @param {string} nodeId @param {Partial<NodeHeartbeat>} [body] @param {SendOptions} [o] */
    nodeHeartbeat: (nodeId, body = { node_id: nodeId }, o) =>
      send("POST", `/nodes/${encodeURIComponent(nodeId)}/heartbeat`, { ...o, body }),
    /** A claim (may be held: long-poll). 200 is a Lease, 204 nothing to run. @param {string} nodeId @param {SendOptions & { jobId?: string }} [o] */
    claim: (nodeId, o = {}) =>
      send("POST", "/leases/claim", {
        ...o,
        body: o.jobId === undefined ? { node_id: nodeId } : { node_id: nodeId, job_id: o.jobId },
      }),
    /** @param {string} leaseId @param {SendOptions} [o] */
    heartbeat: (leaseId, o) => send("POST", `/attempts/${leaseId}/heartbeat`, o),
    /** @param {string} key  e.g. jobs/{job}/{task}/metrics.json @param {string | Uint8Array} bytes @param {SendOptions} [o] */
    upload: (key, bytes, o) => send("PUT", `/artifacts/${key}`, { ...o, raw: bytes }),
    /** @param {string} key @param {SendOptions} [o] */
    download: (key, o) => send("GET", `/artifacts/${key}`, o),
    /** @param {string} leaseId @param {{ output_sha256: string, evidence?: Partial<ExecutionEvidence> }} body @param {SendOptions} [o] */
    complete: (leaseId, body, o) => send("POST", `/attempts/${leaseId}/complete`, { ...o, body }),
    /** @param {string} leaseId @param {string} reason @param {SendOptions} [o] */
    fail: (leaseId, reason, o) => send("POST", `/attempts/${leaseId}/fail`, { ...o, body: { reason } }),
    /** @param {JobSpec | Record<string, unknown>} spec @param {SendOptions} [o] */
    submit: (spec, o) => send("POST", "/jobs", { ...o, body: spec }),
    /** @param {SendOptions} [o] */
    jobs: (o) => send("GET", "/jobs", o),
    /** @param {string} jobId @param {SendOptions} [o] */
    tasks: (jobId, o) => send("GET", `/jobs/${jobId}/tasks`, o),
    /** @param {string} jobId @param {{ after?: number, limit?: number }} [page] @param {SendOptions} [o] */
    events: (jobId, { after, limit } = {}, o) => {
      const query = [after === undefined ? "" : `after=${after}`, limit === undefined ? "" : `limit=${limit}`]
        .filter(Boolean)
        .join("&");
      return send("GET", `/jobs/${jobId}/events${query ? `?${query}` : ""}`, o);
    },
    /** @param {SendOptions} [o] */
    nodes: (o) => send("GET", "/nodes", o),
  };
}

/** @typedef {ReturnType<typeof coordinator>} Client */
