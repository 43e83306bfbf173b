// Node registry routes (SPEC §3.1, §5, §9, §13): register, heartbeat, list, release, revoke.

import { Hono } from "hono";
import { DASHBOARD_LIMIT_DEFAULT, DASHBOARD_LIMIT_MAX, MAX_REGISTRATION_BYTES } from "../protocol/limits";
import {
  NodeHeartbeatSchema,
  NodePoolsRequestSchema,
  NodeRegistrationSchema,
  REGISTRATION_TOO_LARGE,
  registrationFits,
} from "../protocol/nodes";
import { decodeNodeCursor, encodeNodeCursor } from "../protocol/paging";
import { type AppContext, type AppEnv, pagedList, queryInt, readJson } from "./context";
import { enrolmentOperator } from "./device";
import { actingNode, requireOperator, viewerOf } from "./identity";

const OPEN_POOLS =
  "this coordinator is open (no tokens configured): the pools a node reports make it a member, " +
  "so there is nothing to assign";

/**
 * The operator whose word a node request's pools are (SPEC §9): one acting
 * for the node (delegation), as the reference's proxy does. A node's own
 * report, and anything on an open coordinator, assigns nothing.
 */
function assigningOperator(c: AppContext): string | null {
  const caller = c.var.caller;
  return caller.kind === "operator" && caller.onBehalfOf !== null ? caller.name : null;
}

export const nodes = new Hono<AppEnv>()
  .post("/register", async (c) => {
    const joinCode = c.var.settings.joinCode;
    if (joinCode && c.req.header("x-flashml-join-code") !== joinCode) {
      return c.json({ detail: "invalid or missing join code" }, 403);
    }
    const body = await readJson(c, NodeRegistrationSchema, { maxBytes: MAX_REGISTRATION_BYTES });
    if (!body.ok) return body.response;
    // Identity comes from the credential, never the body; the URL names the
    // pool, not the body's `pool` (the agent defaults it to "local").
    const acting = actingNode(c, body.value.node_id);
    if (!acting.ok) return acting.response;
    const registration = { ...body.value, node_id: acting.value, pool: c.var.pool };
    // The body fits, but defaults can grow it (SPEC §12): measured as stored.
    if (!registrationFits(registration)) return c.json({ detail: REGISTRATION_TOO_LARGE }, 413);
    await c.var.stub.register(registration, assigningOperator(c));
    return c.json({ node_id: registration.node_id, status: "registered" });
  })
  .post("/:node_id/heartbeat", async (c) => {
    const nodeId = c.req.param("node_id");
    if (c.var.caller.kind !== "open") {
      const acting = actingNode(c, nodeId);
      if (!acting.ok) return acting.response;
      if (acting.value !== nodeId) return c.json({ detail: "a node may only heartbeat itself" }, 403);
    }
    const body = await readJson(c, NodeHeartbeatSchema);
    if (!body.ok) return body.response;
    const result = await c.var.stub.heartbeatNode(nodeId, body.value, assigningOperator(c));
    if (result.ok) return c.json({ status: "ok" });
    if (result.reason === "too_large") {
      return c.json({ detail: `these pools would make the registration too large: ${REGISTRATION_TOO_LARGE}` }, 413);
    }
    return c.json({ detail: `unknown node ${nodeId} — register first` }, 404);
  })
  .post("/:node_id/release", async (c) => {
    // SPEC §13: an operator lets a held-back node claim again before its back-off ends.
    const refused = requireOperator(c);
    if (refused) return refused;
    const nodeId = c.req.param("node_id");
    if (!(await c.var.stub.releaseNode(nodeId))) return c.json({ detail: `unknown node ${nodeId}` }, 404);
    return c.json({ node_id: nodeId, consecutive_failures: 0, held_until: null });
  })
  .put("/:node_id/pools", async (c) => {
    // SPEC §9: when enforcing, a node's team pools are those an operator assigned.
    const caller = c.var.caller;
    if (caller.kind === "open") return c.json({ detail: OPEN_POOLS }, 400);
    const refused = requireOperator(c);
    if (refused) return refused;
    // requireOperator refused nodes; open was answered above: the caller is an operator.
    const operator = caller.kind === "operator" ? caller.name : "";
    const body = await readJson(c, NodePoolsRequestSchema);
    if (!body.ok) return body.response;
    const nodeId = c.req.param("node_id");
    if (!(await c.var.stub.assignNodePools(nodeId, body.value.pools, operator)))
      return c.json({ detail: `unknown node ${nodeId}` }, 404);
    return c.json({ node_id: nodeId, pools: body.value.pools, assigned_by: operator });
  })
  .delete("/:node_id/credential", async (c) => {
    // SPEC §9: revoking an enrolled machine's credential; its next request is a 401.
    const operator = enrolmentOperator(c);
    if (!operator.ok) return operator.response;
    const nodeId = c.req.param("node_id");
    if (!(await c.var.stub.revokeCredential(nodeId, operator.name)))
      return c.json({ detail: `node ${nodeId} has no enrolled credential` }, 404);
    return c.json({ node_id: nodeId, revoked: true });
  })
  // The fleet's GPUs and the demand on them (issue 26): a summary beside the
  // list, so GET /nodes stays the plain list the reference returns.
  .get("/summary", async (c) => {
    const limit = queryInt(c, "limit", { min: 1, max: DASHBOARD_LIMIT_MAX });
    if (!limit.ok) return limit.response;
    c.header("cache-control", "no-store");
    return c.json(await c.var.stub.fleet(c.var.pool, limit.value ?? DASHBOARD_LIMIT_DEFAULT, viewerOf(c)));
  })
  .get("/", (c) =>
    pagedList(c, { decode: decodeNodeCursor, encode: encodeNodeCursor }, (after, limit) =>
      c.var.stub.listNodes(after, limit),
    ),
  );
