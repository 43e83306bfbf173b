import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import app from "../../src/index";
import { commandJob } from "../fixtures/jobspec";

// Settings other than the project's go to the app as its environment (in-process).
function send(settings: Record<string, string>, path: string, init: RequestInit = {}) {
  return app.fetch(
    new Request(`http://flashedge.test${path}`, init),
    { ...env, ...settings },
    createExecutionContext(),
  );
}

describe("FLASHML_MAX_ARTIFACT_MB", () => {
  it.each(["abc", "0", "-1", "1e3", "100 MB"])(
    "an unreadable value (%j) refuses every request with a 503",
    async (raw) => {
      const r = await send({ FLASHML_MAX_ARTIFACT_MB: raw }, "/healthz");
      expect(r.status).toBe(503);
      expect(await r.json()).toEqual({
        detail: "coordinator refuses to serve: FLASHML_MAX_ARTIFACT_MB must be a number of MiB greater than 0",
      });
    },
  );

  it.each([
    ["1", 1024 * 1024],
    ["", 100 * 1024 * 1024],
  ])("%j MiB refuses an upload one byte past %d bytes, before reading it", async (raw, limit) => {
    const r = await send({ FLASHML_MAX_ARTIFACT_MB: raw }, `/pools/${crypto.randomUUID()}/v1alpha1/artifacts/big.bin`, {
      method: "PUT",
      headers: { "content-length": String(limit + 1) },
    });
    expect(r.status).toBe(413);
    expect(await r.json()).toEqual({ detail: `artifact exceeds ${limit} bytes (FLASHML_MAX_ARTIFACT_MB)` });
  });
});

describe("FLASHML_POOL_SHARDS", () => {
  it.each(["big=0", "big=257", "big", "big=4,=2"])(
    "an unreadable value (%j) refuses every request with a 503 naming the entry",
    async (raw) => {
      const r = await send({ FLASHML_POOL_SHARDS: raw }, "/healthz");
      expect(r.status).toBe(503);
      const { detail } = (await r.json()) as { detail: string };
      expect(detail).toMatch(/^coordinator refuses to serve: FLASHML_POOL_SHARDS entry [12] is not pattern=count/);
    },
  );

  // Only the Worker sees a setting given here, not the pool's objects, so the pool is given one shard; the
  // worker-shards project runs pools of 4, objects and Worker alike.
  it("a readable value serves the pool its entry names", async () => {
    const pool = `p${crypto.randomUUID().slice(0, 8)}`;
    const settings = { FLASHML_POOL_SHARDS: `other-*=4,${pool}=1` };
    const submit = await send(settings, `/pools/${pool}/v1alpha1/jobs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(commandJob()),
    });
    expect(submit.status).toBe(201);
    const { job_id } = (await submit.json()) as { job_id: string };
    const read = await send(settings, `/pools/${pool}/v1alpha1/jobs/${job_id}`);
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ job_id });
  });
});
