// The documented statuses against the sent ones: the fuzz generator's
// malformed requests (test/fuzz/) go to the seeded pool through the Worker,
// and every status a route answers must be one its operation in the served
// OpenAPI document lists — so a refusal added to a handler without its
// describeRoute, or a route mounted under a middleware that sends what its
// description omits, fails here. The generator is the fuzz test's own, so
// every route and defect it drives is covered; the good paths are below.

import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import app from "../../src/index";
import type { Method, OpenApiDocument } from "../../src/protocol/openapi";
import { documentOf } from "../../src/routes/openapi";
import { Rng } from "../fixtures/rng";
import { type FuzzRequest, generator, mightBeValid } from "../fuzz/generator";
import { seed } from "./fuzz-world";
import { call, claim, freshPool, json, registration, trialsJob } from "./helpers";

const SEED = 0x0a11_57a7;
const REQUESTS = 2500;
const CHUNK = 24;

const doc = documentOf(app.routes);

/** A documented path as a regex source: `{name}` is one segment. */
function pattern(path: string): string {
  return path
    .split("/")
    .map((segment) => (/^\{\w+\}$/.test(segment) ? "[^/]+" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
}

/** Each documented path as a matcher; a path with fewer parameters wins (`/nodes/summary` over `/nodes/{node_id}`). */
const matchers = Object.keys(doc.paths)
  .map((path) => {
    // An artifact key is the rest of the path, as Hono's `/*` matches it: an empty one is its route's 400.
    const source = path.endsWith("/{key}") ? `${pattern(path.slice(0, -"/{key}".length))}(?:/.*)?` : pattern(path);
    return { path, regex: new RegExp(`^${source}$`, "s"), parameters: (path.match(/\{/g) ?? []).length };
  })
  .sort((a, b) => a.parameters - b.parameters);

/** The documented operation a request reaches, or null (no such path, or not under this method: a 404 or 405). */
function operationOf(method: string, url: string): { name: string; statuses: string[] } | null {
  // Routed as Hono routes it: percent-decoded, as `decodeURI` does (`%2F` stays).
  const raw = new URL(url).pathname;
  let pathname = raw;
  try {
    pathname = decodeURI(raw);
  } catch {}
  for (const { path, regex } of matchers) {
    if (!regex.test(pathname)) continue;
    const operation = (doc.paths as OpenApiDocument["paths"])[path]?.[method.toLowerCase() as Method];
    if (operation) return { name: `${method} ${path}`, statuses: Object.keys(operation.responses) };
  }
  return null;
}

async function send(r: FuzzRequest): Promise<Response> {
  const headers = { ...r.headers };
  if (r.body !== undefined) headers["content-length"] = String(r.body.byteLength);
  const init: RequestInit = { method: r.method, headers };
  if (r.body !== undefined) init.body = r.body;
  return app.fetch(new Request(r.url, init), env, createExecutionContext());
}

describe("every status a route sends is one its OpenAPI operation documents", () => {
  it(`${REQUESTS} of the fuzz generator's malformed requests`, { timeout: 120_000 }, async () => {
    const world = await seed();
    const { next, routes } = generator(world, new Rng(SEED));
    const requests: FuzzRequest[] = [];
    while (requests.length < REQUESTS) {
      const r = next();
      if (!mightBeValid(world, r)) requests.push(r);
    }
    const undocumented = new Map<string, string>();
    const reached = new Set<string>();
    for (let i = 0; i < requests.length; i += CHUNK) {
      const chunk = requests.slice(i, i + CHUNK);
      const statuses = await Promise.all(
        chunk.map(async (r) => {
          const response = await send(r);
          await response.body?.cancel();
          return response.status;
        }),
      );
      chunk.forEach((r, j) => {
        const status = String(statuses[j]);
        const operation = operationOf(r.method, r.url);
        if (operation === null) {
          // Not a documented operation: the app-wide 404 and 405 (the document's description).
          expect(["404", "405"], `${r.method} ${r.url}`).toContain(status);
          return;
        }
        reached.add(operation.name);
        if (!operation.statuses.includes(status)) undocumented.set(`${status} ${operation.name}`, `[${r.defect}]`);
      });
    }
    expect(Object.fromEntries(undocumented), `seed 0x${SEED.toString(16)}`).toEqual({});
    // Its requests reach most operations, in both path forms (41 of 77 with this seed; its routes are the
    // generator's own names, and their coverage is the fuzz test's to check).
    expect(routes.length).toBeGreaterThan(40);
    expect(reached.size).toBeGreaterThanOrEqual(40);
  });

  it("and the answers of the good paths", async () => {
    const pool = freshPool();
    const sent: [string, string, Response][] = [];
    const record = async (method: string, path: string, r: Response | Promise<Response>) => {
      const response = await r;
      sent.push([method, `http://flashedge.test/pools/${pool}/v1alpha1${path}`, response]);
      return response;
    };
    await record("POST", "/nodes/register", call(pool, "POST", "/nodes/register", registration("n1")));
    const job = await json<{ job_id: string }>(
      await record("POST", "/jobs", call(pool, "POST", "/jobs", trialsJob(1))),
    );
    await record("POST", "/leases/claim", claim(pool, "n1"));
    await record("POST", "/leases/claim", claim(pool, "n1"));
    for (const path of [
      `/jobs/${job.job_id}`,
      `/jobs/${job.job_id}/tasks`,
      "/jobs",
      "/nodes",
      "/dashboard",
      "/metrics",
    ])
      await record("GET", path, call(pool, "GET", path));
    for (const [method, url, response] of sent) {
      const operation = operationOf(method, url);
      expect(operation, `${method} ${url}`).not.toBeNull();
      expect(operation?.statuses, `${method} ${url}`).toContain(String(response.status));
    }
  });
});
