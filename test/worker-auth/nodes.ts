// Requests as the callers of an enforcing coordinator (vitest.config.ts):
// nodes n1 and n2 with their own tokens, any other node through the
// operator acting for it (X-FlashML-On-Behalf-Of), everything else as the
// operator. The worker project's helpers, with identities.

import * as open from "../worker/helpers";
import { bearer } from "./helpers";

export const OPERATOR = bearer("tok-ops");

/** The credential a node's requests carry: its own token where it has one, else the operator acting for it. */
export function asNode(nodeId: string): Record<string, string> {
  return nodeId === "n1" || nodeId === "n2"
    ? bearer(`tok-${nodeId}`)
    : { ...OPERATOR, "x-flashml-on-behalf-of": nodeId };
}

/** A request as the operator, or as `nodeId` when given. */
export function call(pool: string, method: string, path: string, body?: unknown, nodeId?: string) {
  return open.call(pool, method, path, body, nodeId === undefined ? OPERATOR : asNode(nodeId));
}

export async function register(pool: string, nodeId: string, extra: Record<string, unknown> = {}) {
  const r = await call(pool, "POST", "/nodes/register", open.registration(nodeId, extra), nodeId);
  if (r.status !== 200) throw new Error(`register ${nodeId}: ${r.status} ${await r.text()}`);
}

export function claim(pool: string, nodeId: string) {
  return call(pool, "POST", "/leases/claim", { node_id: nodeId }, nodeId);
}

export function upload(pool: string, key: string, bytes: string, nodeId?: string) {
  return call(pool, "PUT", `/artifacts/${key}`, new TextEncoder().encode(bytes), nodeId);
}

export function submitJob(pool: string, spec: unknown) {
  return open.submitJob(pool, spec, OPERATOR);
}
