import { it, expect } from "vitest";
import { env, exports } from "cloudflare:workers";
it("serves healthz", async () => {
  const r = await exports.default.fetch("http://x/healthz");
  expect(await r.json()).toEqual({ status: "ok" });
  const stub = env.POOL.get(env.POOL.idFromName("t"));
  expect(await stub.ping()).toBe("pong");
});
