// A pool of 4 shards over two locations (worker-locations: shards 0 and 1
// in eastern North America, 2 and 3 in western Europe; tokens configured):
// a node is homed in the group nearest its first request (docs/protocol.md
// §15, src/rules/homing.ts), at the shard its id hashes to within the
// group, and stays there. Its registry shard keeps a pointer, so every
// later call finds it without a lookup the Worker keeps.

import { createExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import app from "../../src/index";
import { NOT_HOME } from "../../src/pool/nodes/homes";
import { NodeRegistrationSchema } from "../../src/protocol/nodes";
import { jump, registryShard } from "../../src/rules/shard-ids";
import { type Addressed, freshPool, recordingNamespace, registration, trialsJob } from "../worker/helpers";
import { bearer } from "../worker-auth/helpers";
import { shard, shardsHolding, submitTo } from "../worker-shards/helpers";

const PARIS = { continent: "EU", longitude: "2.35", country: "FR" };
const NEW_YORK = { continent: "NA", longitude: "-74.0", country: "US" };
const OPS = bearer("tok-ops");
/** The operator acting for node `id` (docs/protocol.md §9): the tokens configured name other nodes. */
const forNode = (id: string) => ({ ...OPS, "x-flashml-on-behalf-of": id });

/** A request through the Worker as Cloudflare hands it over, from `cf`'s place. */
function callFrom(
  cf: Record<string, string> | null,
  pool: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
) {
  const init: RequestInit & { cf?: unknown } = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)["content-type"] = "application/json";
  }
  if (cf !== null) init.cf = cf;
  return exports.default.fetch(new Request(`http://x/pools/${pool}/v1alpha1${path}`, init));
}

/** The shards that hold `nodeId`'s registration. */
const registeredAt = (pool: string, nodeId: string) => shardsHolding(pool, "nodes", nodeId);

/** An id whose registry shard is `registry` (the first of `prefix`'s). */
function idWith(registry: number, prefix = "n"): string {
  for (let i = 0; ; i++) if (registryShard(`${prefix}${i}`, 4) === registry) return `${prefix}${i}`;
}

/** Where an id is homed within the European group (shards 2, 3) and the North American one (0, 1). */
const inEurope = (id: string) => [2, 3][jump(id, 2)]!;
const inAmerica = (id: string) => [0, 1][jump(id, 2)]!;

describe("a pool spread over two locations", () => {
  it("addresses each shard near the location its rule names", async () => {
    const pool = freshPool();
    const addressed: Addressed[] = [];
    // GET /jobs walks every shard of an empty pool, in order.
    const r = await app.fetch(
      new Request(`http://x/pools/${pool}/v1alpha1/jobs`, { headers: OPS }),
      { ...env, POOL: recordingNamespace(addressed) },
      createExecutionContext(),
    );
    expect(r.status).toBe(200);
    const hints = new Map(addressed.map((a) => [a.name, a.locationHint]));
    expect(Object.fromEntries(hints)).toEqual({
      [pool]: "enam",
      [`${pool}/1`]: "enam",
      [`${pool}/2`]: "weur",
      [`${pool}/3`]: "weur",
    });
  });

  it("homes a node from Paris in the European group, at its id's shard there, and serves it there", async () => {
    const pool = freshPool();
    const id = idWith(0); // registry shard 0, in North America
    const r = await callFrom(PARIS, pool, "POST", "/nodes/register", forNode(id), registration(id));
    expect(r.status).toBe(200);
    expect(await registeredAt(pool, id)).toEqual([inEurope(id)]);
    // Its registry shard points there, so a call that reaches it by hash is sent on.
    const refusal = await shard(pool, 0)
      .claim(id, null, 0)
      .then(
        () => "served",
        (e: Error) => e.message,
      );
    expect(refusal).toBe(`${NOT_HOME}${inEurope(id)}`);
    // Its work, wherever it is, reaches it: a job on shard 1 is leased to it through its home.
    const job = await submitTo(pool, 1, trialsJob(1));
    const claim = await callFrom(PARIS, pool, "POST", "/leases/claim", forNode(id), { node_id: id });
    expect(claim.status).toBe(200);
    expect(await claim.json()).toMatchObject({ job_id: job, node_id: id });
  });

  it("a node from New York is homed in North America; one whose request names no place at its registry shard", async () => {
    const pool = freshPool();
    const east = idWith(2);
    expect((await callFrom(NEW_YORK, pool, "POST", "/nodes/register", forNode(east), registration(east))).status).toBe(
      200,
    );
    expect(await registeredAt(pool, east)).toEqual([inAmerica(east)]);
    const nowhere = idWith(2, "m");
    expect(
      (await callFrom(null, pool, "POST", "/nodes/register", forNode(nowhere), registration(nowhere))).status,
    ).toBe(200);
    expect(await registeredAt(pool, nowhere)).toEqual([registryShard(nowhere, 4)]);
  });

  it("keeps the first request's home: the node registering again from elsewhere stays where it is", async () => {
    const pool = freshPool();
    const id = idWith(1);
    expect((await callFrom(PARIS, pool, "POST", "/nodes/register", forNode(id), registration(id))).status).toBe(200);
    expect((await callFrom(NEW_YORK, pool, "POST", "/nodes/register", forNode(id), registration(id))).status).toBe(200);
    expect(await registeredAt(pool, id)).toEqual([inEurope(id)]);
    const nodes = await (await callFrom(NEW_YORK, pool, "GET", "/nodes", OPS)).json<Array<{ node_id: string }>>();
    expect(nodes.map((n) => n.node_id)).toEqual([id]);
  });

  it("an enrolled node is homed by where it redeemed its code: its credential and then its registration", async () => {
    const pool = freshPool();
    const id = idWith(0);
    const asked = await callFrom(NEW_YORK, pool, "POST", "/device/code", {}, { node_id: id, hostname: "rig" });
    const code = await asked.json<{ device_code: string; user_code: string }>();
    expect((await callFrom(NEW_YORK, pool, "POST", "/device/approve", OPS, { user_code: code.user_code })).status).toBe(
      200,
    );
    // The machine's own first request is its poll for the token, from Paris.
    const polled = await callFrom(PARIS, pool, "POST", "/device/token", {}, { device_code: code.device_code });
    expect(polled.status).toBe(200);
    const { token } = await polled.json<{ token: string }>();
    expect(await shardsHolding(pool, "node_credentials", id)).toEqual([inEurope(id)]);
    expect(await shard(pool, 0).peer().whereIs(id)).toBe(inEurope(id));
    // Wherever it registers from, it lives where its credential does.
    expect((await callFrom(NEW_YORK, pool, "POST", "/nodes/register", bearer(token), registration(id))).status).toBe(
      200,
    );
    expect(await registeredAt(pool, id)).toEqual([inEurope(id)]);
  });

  it("a registration sent by hand to a shard of the node's group that is not its home places nothing there", async () => {
    const pool = freshPool();
    const id = idWith(0);
    const asked = NodeRegistrationSchema.parse({ ...registration(id), pool });
    const europe = { continent: "EU", longitude: 2.35 };
    // The other European shard: in the right group, but neither the node's registry shard nor its home there.
    const other = 5 - inEurope(id);
    const refusal = await shard(pool, other)
      .register(asked, null, europe)
      .then(
        () => "registered",
        (e: Error) => e.message,
      );
    expect(refusal).toBe(`${NOT_HOME}0`);
    expect(await registeredAt(pool, id)).toEqual([]);
  });
});
