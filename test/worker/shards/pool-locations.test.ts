// FLASHML_POOL_LOCATIONS is applied where the Worker addresses a pool's
// object. Location hints run in workerd (and are ignored there); jurisdictions
// do not ("not implemented in workerd"), so for those the namespace is
// wrapped to record the jurisdiction asked for and serve the request from the
// real object beside it. Everything else is the real Worker and object.

import { createExecutionContext, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import app from "../../../src/index";
import { type Addressed, freshPool, json, recordingNamespace, registration } from "../helpers";

function send(settings: Record<string, unknown>, path: string, body?: unknown) {
  const init: RequestInit =
    body === undefined
      ? { method: "GET" }
      : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
  return app.fetch(new Request(`http://x${path}`, init), { ...env, ...settings }, createExecutionContext());
}

function nodesIn(pool: string) {
  return runInDurableObject(env.POOL.get(env.POOL.idFromName(pool)), (object) =>
    object.listNodes(null, 1000).items.map((n) => n.node_id),
  );
}

describe("pool locations", () => {
  it("every request of a pool matching a rule addresses its jurisdiction, near its hint", async () => {
    const pool = `eu-${freshPool()}`;
    const addressed: Addressed[] = [];
    const settings = { FLASHML_POOL_LOCATIONS: "eu-*=eu+weur,*=apac", POOL: recordingNamespace(addressed) };
    expect((await send(settings, `/pools/${pool}/v1alpha1/nodes/register`, registration("laptop-1"))).status).toBe(200);
    const nodes = await json<Array<{ node_id: string }>>(await send(settings, `/pools/${pool}/v1alpha1/nodes`));
    expect(nodes.map((n) => n.node_id)).toEqual(["laptop-1"]);
    expect(addressed).toEqual([
      { jurisdiction: "eu", name: pool, locationHint: "weur" },
      { jurisdiction: "eu", name: pool, locationHint: "weur" },
    ]);
  });

  it("the first matching rule wins, and a pool no rule names is addressed plainly", async () => {
    const addressed: Addressed[] = [];
    const settings = {
      FLASHML_POOL_LOCATIONS: "gov-*=fedramp,gov-*=eu,*-gpu=enam",
      POOL: recordingNamespace(addressed),
    };
    const pools = [`gov-${freshPool()}`, `${freshPool()}-gpu`, freshPool()];
    for (const pool of pools) {
      expect((await send(settings, `/pools/${pool}/v1alpha1/nodes/register`, registration("n1"))).status).toBe(200);
    }
    expect(addressed).toEqual([
      { jurisdiction: "fedramp", name: pools[0], locationHint: null },
      { jurisdiction: null, name: pools[1], locationHint: "enam" },
      { jurisdiction: null, name: pools[2], locationHint: null },
    ]);
  });

  it("the pool `local` of /v1alpha1 follows the rules like any other", async () => {
    const addressed: Addressed[] = [];
    const settings = { FLASHML_POOL_LOCATIONS: "local=fedramp-high", POOL: recordingNamespace(addressed) };
    expect((await send(settings, "/v1alpha1/nodes", undefined)).status).toBe(200);
    expect(addressed).toEqual([{ jurisdiction: "fedramp-high", name: "local", locationHint: null }]);
  });

  it("a location hint is accepted by the real runtime and the pool keeps its object", async () => {
    const pool = `team-${freshPool()}`;
    const settings = { FLASHML_POOL_LOCATIONS: "team-*=apac" };
    expect((await send(settings, `/pools/${pool}/v1alpha1/nodes/register`, registration("n1"))).status).toBe(200);
    expect(await nodesIn(pool)).toEqual(["n1"]);
  });

  it("a setting that cannot be read refuses every request, /healthz included, and changes nothing", async () => {
    const pool = `eu-${freshPool()}`;
    const settings = { FLASHML_POOL_LOCATIONS: "eu-*=europe" };
    for (const r of [
      await send(settings, "/healthz"),
      await send(settings, `/pools/${pool}/v1alpha1/nodes/register`, registration("n1")),
    ]) {
      expect(r.status).toBe(503);
      expect(((await r.json()) as { detail: string }).detail).toBe(
        "coordinator refuses to serve: FLASHML_POOL_LOCATIONS entry 1 names 'europe': use at most one jurisdiction (eu, fedramp, fedramp-high) and one location hint (wnam, enam, sam, weur, eeur, apac, oc, afr, me)",
      );
    }
    expect(await nodesIn(pool)).toEqual([]);
  });
});
