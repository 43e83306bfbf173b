import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

describe("the API description under enforced authentication", () => {
  it("is served without a credential: it holds no pool data", async () => {
    const r = await exports.default.fetch(new Request("http://flashedge.test/openapi.json"));
    expect(r.status).toBe(200);
    expect(((await r.json()) as { openapi: string }).openapi).toBe("3.1.0");
  });

  it("while the pool's own routes still need one", async () => {
    const r = await exports.default.fetch(new Request("http://flashedge.test/v1alpha1/nodes"));
    expect(r.status).toBe(401);
  });
});
