// Node registry routes (docs/protocol.md §3.1, §5, §9, §13): register, heartbeat, list, release, revoke.

import { Hono } from "hono";
import { describeRoute } from "hono-openapi";
import { DEMAND_CLASSES_CHECKED } from "../pool/reads/fleet";
import { DASHBOARD_LIMIT_DEFAULT, DASHBOARD_LIMIT_MAX, MAX_REGISTRATION_BYTES } from "../protocol/limits";
import {
  NodeHeartbeatSchema,
  NodePoolsRequestSchema,
  NodeRegistrationSchema,
  REGISTRATION_TOO_LARGE,
  registrationFits,
} from "../protocol/nodes";
import {
  badPage,
  documented,
  jsonBody,
  NO_NODE_IDENTITY,
  NOT_AN_OPERATOR,
  OPEN_COORDINATOR,
  OPERATOR_ONLY,
  PAGED,
  pageOf,
  pageParameters,
  parameter,
  query,
  request,
  served,
  validation,
} from "../protocol/openapi-operations";
import { nodeShardCursor } from "../protocol/paging";
import { mergeFleets } from "../rules/shard-merge";
import { type AppContext, type AppEnv, localeOf, queryInt, readJson, shardedList } from "./context";
import { enrolmentOperator } from "./device";
import { everyShard, poolNodeAnswers } from "./every-shard";
import { actingNode, requireOperator, viewerOf } from "./identity";

const OPEN_POOLS =
  "this coordinator is open (no tokens configured): the pools a node reports make it a member, " +
  "so there is nothing to assign";

/**
 * The operator whose word a node request's pools are (docs/protocol.md §9): one acting
 * for the node (delegation), as the reference's proxy does. A node's own
 * report, and anything on an open coordinator, assigns nothing.
 */
function assigningOperator(c: AppContext): string | null {
  const caller = c.var.caller;
  return caller.kind === "operator" && caller.onBehalfOf !== null ? caller.name : null;
}

export const nodes = new Hono<AppEnv>()
  .post(
    "/register",
    describeRoute(
      documented({
        id: "registerNode",
        tag: "nodes",
        summary: "Register a node (or update its registration)",
        description:
          "The URL's pool replaces the body's `pool`; when tokens are configured, the caller's node identity replaces `node_id`.",
        parameters: [parameter("joinCode"), parameter("onBehalfOf")],
        body: request("NodeRegistration"),
        ok: { 200: jsonBody(served("NodeRegistered"), "Registered.") },
        refusals: {
          401: NO_NODE_IDENTITY,
          403: "The join code is missing or wrong (FLASHML_JOIN_CODE is set).",
          413: `The registration, as sent or as stored with its defaults, is larger than ${MAX_REGISTRATION_BYTES} bytes.`,
        },
      }),
    ),
    async (c) => {
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
      // The body fits, but defaults can grow it (docs/protocol.md §12): measured as stored.
      if (!registrationFits(registration)) return c.json({ detail: REGISTRATION_TOO_LARGE }, 413);
      await c.var.shards.home(registration.node_id, async (s) =>
        s.register(registration, assigningOperator(c), localeOf(c)),
      );
      return c.json({ node_id: registration.node_id, status: "registered" });
    },
  )
  .post(
    "/:node_id/heartbeat",
    describeRoute(
      documented({
        id: "heartbeatNode",
        tag: "nodes",
        summary: "Say a node is alive, and whether it accepts work",
        parameters: [parameter("onBehalfOf")],
        body: request("NodeHeartbeat"),
        ok: { 200: jsonBody(served("StatusOk"), "Recorded.") },
        refusals: {
          401: NO_NODE_IDENTITY,
          403: "A node may only heartbeat itself.",
          404: "Unknown node: register first.",
          413: `The \`pools\` would make the node's stored registration larger than ${MAX_REGISTRATION_BYTES} bytes; nothing is recorded.`,
        },
      }),
    ),
    async (c) => {
      const nodeId = c.req.param("node_id");
      if (c.var.caller.kind !== "open") {
        const acting = actingNode(c, nodeId);
        if (!acting.ok) return acting.response;
        if (acting.value !== nodeId) return c.json({ detail: "a node may only heartbeat itself" }, 403);
      }
      const body = await readJson(c, NodeHeartbeatSchema);
      if (!body.ok) return body.response;
      const result = await c.var.shards.home(nodeId, async (s) =>
        s.heartbeatNode(nodeId, body.value, assigningOperator(c)),
      );
      if (result.ok) return c.json({ status: "ok" });
      if (result.reason === "too_large") {
        return c.json({ detail: `these pools would make the registration too large: ${REGISTRATION_TOO_LARGE}` }, 413);
      }
      return c.json({ detail: `unknown node ${nodeId} — register first` }, 404);
    },
  )
  .post(
    "/:node_id/release",
    describeRoute(
      documented({
        id: "releaseNode",
        tag: "nodes",
        summary: "Let a held-back node claim again before its back-off ends",
        description: `A node whose last attempts all failed is held back from claiming (docs/protocol.md §13); this clears its run of failures. ${OPERATOR_ONLY}`,
        ok: { 200: jsonBody(served("NodeReleased"), "Released: the node's next claim is served.") },
        refusals: { 403: NOT_AN_OPERATOR, 404: "Unknown node." },
      }),
    ),
    async (c) => {
      // docs/protocol.md §13: an operator lets a held-back node claim again before its back-off ends.
      const refused = requireOperator(c);
      if (refused) return refused;
      const nodeId = c.req.param("node_id");
      if (!(await c.var.shards.home(nodeId, async (s) => s.releaseNode(nodeId))))
        return c.json({ detail: `unknown node ${nodeId}` }, 404);
      return c.json({ node_id: nodeId, consecutive_failures: 0, held_until: null });
    },
  )
  .put(
    "/:node_id/pools",
    describeRoute(
      documented({
        id: "assignNodePools",
        tag: "nodes",
        summary: "Assign a node's team pools",
        description: `When tokens are enforced, a node is a member of the team pools an operator assigned (here, at the approval of its enrolment, or by registering or heartbeating for it with X-FlashML-On-Behalf-Of), never of those it reports for itself (docs/protocol.md §9, gate 6). The list replaces any earlier assignment (empty: no team pool) and survives the node's registrations and heartbeats; a claim the node holds open tries again at once. The placement report and the dashboard name who assigned it. ${OPERATOR_ONLY}`,
        body: request("NodePoolsRequest"),
        ok: { 200: jsonBody(served("NodePoolsAssigned"), "Assigned.") },
        refusals: {
          400: "The coordinator is open: the pools a node reports make it a member, so there is nothing to assign.",
          403: NOT_AN_OPERATOR,
          404: "Unknown node: neither registered nor enrolled.",
          422: validation("`pools` is not a list of 1–128-character names, or holds more than 64."),
        },
      }),
    ),
    async (c) => {
      // docs/protocol.md §9: when enforcing, a node's team pools are those an operator assigned.
      const caller = c.var.caller;
      if (caller.kind === "open") return c.json({ detail: OPEN_POOLS }, 400);
      const refused = requireOperator(c);
      if (refused) return refused;
      // requireOperator refused nodes; open was answered above: the caller is an operator.
      const operator = caller.kind === "operator" ? caller.name : "";
      const body = await readJson(c, NodePoolsRequestSchema);
      if (!body.ok) return body.response;
      const nodeId = c.req.param("node_id");
      if (!(await c.var.shards.home(nodeId, async (s) => s.assignNodePools(nodeId, body.value.pools, operator))))
        return c.json({ detail: `unknown node ${nodeId}` }, 404);
      return c.json({ node_id: nodeId, pools: body.value.pools, assigned_by: operator });
    },
  )
  .delete(
    "/:node_id/credential",
    describeRoute(
      documented({
        id: "revokeCredential",
        tag: "enrolment",
        summary: "Revoke an enrolled node's credential",
        description: `The node's next request is a 401 (docs/protocol.md §9); a claim it holds open is answered 204 at once, and its live leases end at once (requeued as worker losses). ${OPERATOR_ONLY}`,
        ok: { 200: jsonBody(served("CredentialRevoked"), "Revoked.") },
        refusals: { 400: OPEN_COORDINATOR, 403: NOT_AN_OPERATOR, 404: "The node has no enrolled credential." },
      }),
    ),
    async (c) => {
      // docs/protocol.md §9: revoking an enrolled machine's credential; its next request is a 401.
      const operator = enrolmentOperator(c);
      if (!operator.ok) return operator.response;
      const nodeId = c.req.param("node_id");
      if (!(await c.var.shards.home(nodeId, async (s) => s.revokeCredential(nodeId, operator.name))))
        return c.json({ detail: `node ${nodeId} has no enrolled credential` }, 404);
      return c.json({ node_id: nodeId, revoked: true });
    },
  )
  // The fleet's GPUs and the demand on them (issue 26): a summary beside the
  // list, so GET /nodes stays the plain list the reference returns.
  .get(
    "/summary",
    describeRoute(
      documented({
        id: "fleetView",
        tag: "nodes",
        summary: "The fleet's GPUs by model, memory and compute capability, and the demand on them",
        description:
          "Beside `GET /nodes`, whose body stays the plain list: the registered nodes' GPUs grouped (at most `limit` groups, most GPUs first) and the pending requirement classes with who could take them, flagging demand no registered node can serve. The dashboard summary carries the same two fields.",
        parameters: [
          query("limit", "GPU groups at most.", {
            type: "integer",
            minimum: 1,
            maximum: DASHBOARD_LIMIT_MAX,
            default: DASHBOARD_LIMIT_DEFAULT,
          }),
        ],
        ok: { 200: jsonBody(served("FleetSummary"), "The GPU groups and the demand.") },
        refusals: { 422: validation(`\`limit\` is not an integer in [1, ${DASHBOARD_LIMIT_MAX}].`) },
      }),
    ),
    async (c) => {
      const limit = queryInt(c, "limit", { min: 1, max: DASHBOARD_LIMIT_MAX });
      if (!limit.ok) return limit.response;
      c.header("cache-control", "no-store");
      const n = limit.value ?? DASHBOARD_LIMIT_DEFAULT;
      if (c.var.shards.count === 1) return c.json(await c.var.shards.shard(0).fleet(c.var.pool, n, viewerOf(c)));
      const answers = await poolNodeAnswers(c);
      const parts = await everyShard(c, (calls) => calls.shardFleet(c.var.pool, n, viewerOf(c), answers));
      return c.json(mergeFleets(parts, n, DEMAND_CLASSES_CHECKED));
    },
  )
  .get(
    "/",
    describeRoute(
      documented({
        id: "listNodes",
        tag: "nodes",
        summary: "The pool's nodes, with liveness and accepted-task counts",
        description: PAGED,
        parameters: pageParameters,
        ok: { 200: pageOf(served("RegisteredNode"), "A page of the registered nodes, sorted by node_id.") },
        refusals: { 422: badPage },
      }),
    ),
    (c) =>
      shardedList(c, nodeShardCursor(c.var.shards.count), async (shard, after, limit, maxBytes) =>
        c.var.shards.visit(shard, async (s) => s.listNodes(after, limit, maxBytes)),
      ),
  );
