// Requests through the real Worker with this project's tokens configured
// (vitest.config.ts): a pool's API path, the caller's headers, a JSON or
// byte body.

import { exports } from "cloudflare:workers";
import { expect } from "vitest";

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

export function call(pool: string, method: string, path: string, headers: Record<string, string> = {}, body?: unknown) {
  const init: RequestInit = { method, headers: { ...headers } };
  if (typeof body === "string") {
    init.body = body;
    (init.headers as Record<string, string>)["content-length"] = String(new TextEncoder().encode(body).length);
  } else if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)["content-type"] = "application/json";
  }
  return exports.default.fetch(new Request(`http://x/pools/${pool}/v1alpha1${path}`, init));
}

/** Enrols `nodeId` by a device code an operator approves (with `approval`'s fields), and answers its token. */
export async function enrol(pool: string, nodeId: string, approval: Record<string, unknown> = {}): Promise<string> {
  const asked = await call(pool, "POST", "/device/code", {}, { node_id: nodeId, hostname: `${nodeId}.local` });
  expect(asked.status).toBe(200);
  const code = await asked.json<{ device_code: string; user_code: string }>();
  const approved = await call(pool, "POST", "/device/approve", bearer("tok-ops"), {
    user_code: code.user_code,
    ...approval,
  });
  expect(approved.status).toBe(200);
  const r = await call(pool, "POST", "/device/token", {}, { device_code: code.device_code });
  expect(r.status).toBe(200);
  return (await r.json<{ token: string }>()).token;
}
