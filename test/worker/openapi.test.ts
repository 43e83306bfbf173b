// GET /openapi.json through the real Worker, and the document against the
// app's own route table: a route added without documentation (or documented
// but never served) fails here.

import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import app from "../../src/index";
import type { OpenApiDocument } from "../../src/protocol/openapi";

async function served(): Promise<{ response: Response; doc: OpenApiDocument }> {
  const response = await exports.default.fetch(new Request("http://flashedge.test/openapi.json"));
  return { response, doc: (await response.json()) as OpenApiDocument };
}

/** A path with every parameter spelled `{}`: Hono's `:name` and `*`, OpenAPI's `{name}`. */
function shape(path: string): string {
  return path.replace(/:\w+|\{\w+\}|\*/g, "{}");
}

describe("GET /openapi.json", () => {
  it("answers the OpenAPI 3.1 document as JSON, without credentials", async () => {
    const { response, doc } = await served();
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.paths["/v1alpha1/leases/claim"]?.post?.operationId).toBe("claimLease");
    expect(doc.paths["/pools/{pool}/v1alpha1/leases/claim"]?.post?.operationId).toBe("claimLeaseInPool");
  });

  it("answers the same bytes every time", async () => {
    const first = await exports.default.fetch(new Request("http://flashedge.test/openapi.json"));
    const second = await exports.default.fetch(new Request("http://flashedge.test/openapi.json"));
    expect(await second.text()).toBe(await first.text());
  });

  it("refuses other methods with 405 naming GET", async () => {
    const response = await exports.default.fetch(new Request("http://flashedge.test/openapi.json", { method: "POST" }));
    expect(response.status).toBe(405);
    expect(response.headers.get("allow")).toBe("GET, HEAD");
  });

  it("documents exactly the routes the app serves", async () => {
    const { doc } = await served();
    const registered = new Set(app.routes.filter((r) => r.method !== "ALL").map((r) => `${r.method} ${shape(r.path)}`));
    const documented = new Set(
      Object.entries(doc.paths).flatMap(([path, item]) =>
        Object.keys(item).map((method) => `${method.toUpperCase()} ${shape(path)}`),
      ),
    );
    expect(registered.size).toBeGreaterThan(50);
    expect([...registered].filter((r) => !documented.has(r)).sort(), "served but not documented").toEqual([]);
    expect([...documented].filter((d) => !registered.has(d)).sort(), "documented but not served").toEqual([]);
  });
});
