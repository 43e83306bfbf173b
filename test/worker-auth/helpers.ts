// Requests through the real Worker with this project's tokens configured
// (vitest.config.ts): a pool's API path, the caller's headers, a JSON or
// byte body.

import { exports } from "cloudflare:workers";

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
