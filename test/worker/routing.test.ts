// Routing through the real Worker: which pool a URL names (and which names
// are refused), which method a path is served under (405 with the Allow
// header a client can act on), and paths no method serves (404). A refused
// request changes nothing, even with a body that is valid for the path.

import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, claim, freshPool, jobSpec, json, register, registration } from "./helpers";

describe("pools in the URL", () => {
  it("an unknown pool name is 404 with a detail naming the pool", async () => {
    for (const bad of ["UPPER", "a_b", "-x", "%00", "%C3%B1", "x".repeat(64)]) {
      const r = await exports.default.fetch(new Request(`http://flashedge.test/pools/${bad}/v1alpha1/nodes`));
      expect(r.status, bad).toBe(404);
      expect((await json<{ detail: string }>(r)).detail).toMatch(/^invalid pool name/);
    }
  });

  it("a pool named 'artifacts' stores a key under that key, not under a piece of the URL", async () => {
    const pool = "artifacts";
    const put = await call(pool, "PUT", "/artifacts/k1", new Uint8Array([7, 7]));
    expect(put.status).toBe(200);
    expect((await json(put)).object_key).toBe("k1");
    const get = await call(pool, "GET", "/artifacts/k1");
    expect(get.status).toBe(200);
    expect(new Uint8Array(await get.arrayBuffer())).toEqual(new Uint8Array([7, 7]));
  });
});

describe("methods and paths", () => {
  it.each([
    ["DELETE", "/nodes", "GET, HEAD"],
    ["GET", "/leases/claim", "POST"],
    ["PUT", "/jobs", "GET, HEAD, POST"],
    ["PATCH", "/artifacts/x", "GET, HEAD, PUT"],
    ["POST", "/artifacts/x", "GET, HEAD, PUT"],
    ["DELETE", "/jobs/000000000000", "GET, HEAD"],
    ["GET", "/attempts/ls-000000000000/heartbeat", "POST"],
    ["OPTIONS", "/jobs/j/tasks/t/checkpoints/parts", "POST"],
    ["POST", "/jobs/j/tasks/t/checkpoints/latest", "GET, HEAD"],
  ])("%s %s is 405 with Allow: %s", async (method, path, allow) => {
    const r = await call(freshPool(), method, path);
    expect(r.status).toBe(405);
    expect(r.headers.get("allow")).toBe(allow);
    expect((await json<{ detail: string }>(r)).detail).toContain(`allowed: ${allow}`);
  });

  it("a path no method serves stays 404", async () => {
    for (const path of ["/nope", "/jobs/", "/nodes/n1", "/leases"]) {
      const r = await call(freshPool(), "GET", path);
      expect(r.status, path).toBe(404);
      expect(r.headers.get("allow")).toBeNull();
      expect(await json(r)).toEqual({ detail: "Not Found" });
    }
  });

  it("a wrong method with a valid body changes nothing", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const job = jobSpec({ type: "hyperparameter_search", parameters: { trials: [{}] } });
    const requests = [
      ["PUT", "POST", "/nodes/register", registration("n2")],
      ["PATCH", "POST", "/leases/claim", { node_id: "n1" }],
      ["DELETE", "POST", "/jobs", job],
    ] as const;
    for (const [wrong, , path, body] of requests) {
      const r = await call(pool, wrong, path, body);
      expect(r.status, `${wrong} ${path}`).toBe(405);
    }
    expect((await json<unknown[]>(await call(pool, "GET", "/nodes"))).length).toBe(1);
    expect(await json(await call(pool, "GET", "/jobs"))).toEqual([]);
    expect((await claim(pool, "n1")).status).toBe(204);
    // The same bodies under the right method do change state: only the method refused them.
    const statuses = [];
    for (const [, right, path, body] of requests) statuses.push((await call(pool, right, path, body)).status);
    expect(statuses).toEqual([200, 204, 201]);
    expect((await json<unknown[]>(await call(pool, "GET", "/nodes"))).length).toBe(2);
    expect((await claim(pool, "n1")).status).toBe(200);
  });
});
