// Test-side helpers: talk to the Worker over its real fetch handler, exactly
// as an agent would, and reach a pool's object for what HTTP cannot show.

import { runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import type { TaskSpec } from "../../src/protocol/tasks";

/** A fresh pool name per test, so tests never share state. */
export function freshPool(): string {
  return `t-${crypto.randomUUID().slice(0, 8)}`;
}

export function stub(pool: string) {
  return env.POOL.get(env.POOL.idFromName(pool));
}

export function call(pool: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body);
    if (!(body instanceof Uint8Array)) (init.headers as Record<string, string>)["content-type"] = "application/json";
  }
  return exports.default.fetch(new Request(`http://flashedge.test/pools/${pool}/v1alpha1${path}`, init));
}

export async function json<T = Record<string, unknown>>(response: Response): Promise<T> {
  return (await response.json()) as T;
}

export function registration(nodeId: string, extra: Record<string, unknown> = {}, gpus = 0) {
  return {
    node_id: nodeId,
    kubernetes_node: "",
    hostname: `${nodeId}.local`,
    capabilities: {
      cpu_cores: 8,
      memory_bytes: 16e9,
      gpus: Array.from({ length: gpus }, (_, i) => ({ index: i, name: "NVIDIA A10G", memory_total_mb: 22731 })),
      os: "linux",
      architecture: "amd64",
    },
    ...extra,
  };
}

export async function register(pool: string, nodeId: string, extra: Record<string, unknown> = {}, gpus = 0) {
  const r = await call(pool, "POST", "/nodes/register", registration(nodeId, extra, gpus));
  if (r.status !== 200) throw new Error(`register ${nodeId}: ${r.status} ${await r.text()}`);
}

export function task(
  jobId: string,
  taskId: string,
  payload: Record<string, unknown> = {},
  extra: Partial<TaskSpec> = {},
): TaskSpec {
  return {
    schema_version: "v1alpha1",
    task_id: taskId,
    job_id: jobId,
    payload,
    commit_key: `jobs/${jobId}/${taskId}/metrics.json`,
    max_attempts: 3,
    lease_seconds: 60,
    ...extra,
  };
}

export async function addTasks(pool: string, tasks: TaskSpec[], options: { outputJson?: boolean } = {}) {
  const result = await stub(pool).addTasks(tasks, options);
  if (!result.ok) throw new Error(`addTasks refused: ${JSON.stringify(result)}`);
}

export async function claim(pool: string, nodeId: string, jobId?: string) {
  return call(
    pool,
    "POST",
    "/leases/claim",
    jobId === undefined ? { node_id: nodeId } : { node_id: nodeId, job_id: jobId },
  );
}

export async function sha256(bytes: Uint8Array | string): Promise<string> {
  const data = typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes;
  const digest = await crypto.subtle.digest("SHA-256", data);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

export function upload(pool: string, key: string, bytes: Uint8Array | string) {
  const data = typeof bytes === "string" ? new TextEncoder().encode(bytes) : bytes;
  return call(pool, "PUT", `/artifacts/${key}`, data);
}

/** Objects stored in R2 for a pool (the bytes behind its keys). */
export async function storedObjects(pool: string): Promise<string[]> {
  const listed = await env.ARTIFACTS.list({ prefix: `pools/${pool}/` });
  return listed.objects.map((o) => o.key);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A job's ledger straight from the object's table: each event's type and data. */
export async function ledger(
  pool: string,
  jobId: string,
): Promise<Array<{ type: string; data: Record<string, unknown> }>> {
  return runInDurableObject(stub(pool), (_o, state) =>
    state.storage.sql
      .exec<{ type: string; data: string }>("SELECT type, data FROM events WHERE job_id = ? ORDER BY seq", jobId)
      .toArray()
      .map((e) => ({ type: e.type, data: JSON.parse(e.data) as Record<string, unknown> })),
  );
}

export { jobSpec } from "../fixtures/jobspec";
