// Device-code enrolment routes (docs/protocol.md §9 "Enrolled machines", RFC 8628): the
// agent's two calls, which need no credential, and the operator's decisions.
// An open pool needs no enrolment and says so. The token endpoint answers
// every code that is not approved and unredeemed with the same
// `authorization_pending`, so nobody can probe which codes exist.

import { Hono } from "hono";
import { describeRoute } from "hono-openapi";
import {
  ApproveRequestSchema,
  DenyRequestSchema,
  DeviceCodeRequestSchema,
  DeviceTokenRequestSchema,
} from "../protocol/device";
import {
  documented,
  jsonBody,
  list,
  NOT_AN_OPERATOR,
  OPEN_COORDINATOR,
  OPERATOR_ONLY,
  request,
  served,
  validation,
} from "../protocol/openapi-operations";
import { normalizeUserCode, POLL_INTERVAL_S } from "../rules/enrolment";
import { type AppContext, type AppEnv, localeOf, readJson } from "./context";
import { requireOperator } from "./identity";

const OPEN_POOL =
  "this coordinator is open (no tokens configured): no credential is needed and there is nothing to enrol — " +
  "run `flashnode work` against it directly";

/** 400 when the coordinator is open, else null. */
function refuseOpen(c: AppContext): Response | null {
  return c.var.settings.auth.mode === "open" ? c.json({ detail: OPEN_POOL }, 400) : null;
}

/**
 * The operator deciding on enrolments and credentials, by name: 400 when
 * the coordinator is open (nothing to decide), 403 for a node.
 */
export function enrolmentOperator(c: AppContext): { ok: true; name: string } | { ok: false; response: Response } {
  const refused = refuseOpen(c) ?? requireOperator(c);
  if (refused) return { ok: false, response: refused };
  const caller = c.var.caller;
  return { ok: true, name: caller.kind === "operator" ? caller.name : "" };
}

/** The page an operator approves codes on, for this request's pool. */
function verificationUri(c: AppContext): string {
  const origin = new URL(c.req.url).origin;
  return c.req.param("pool") === undefined ? `${origin}/enrol` : `${origin}/pools/${c.var.pool}/enrol`;
}

/** Mounted before the identity middleware: a machine asking to join has no credential yet. */
export const deviceAgent = new Hono<AppEnv>()
  .post(
    "/code",
    describeRoute(
      documented({
        id: "requestDeviceCode",
        tag: "enrolment",
        summary: "A machine asks to join: a short code for an operator to approve (RFC 8628)",
        description:
          "No credential. The device code is the machine's secret; the user code is what a person types on `verification_uri`. Codes expire after 15 minutes. A pool holds at most 100 pending codes, and at most 5 from one address (an IPv6 address counts by its /64).",
        body: request("DeviceCodeRequest"),
        ok: { 200: jsonBody(served("DeviceCode"), "The codes, the page to approve them on, and how often to poll.") },
        refusals: {
          400: OPEN_COORDINATOR,
          429: "Too many codes are waiting for an operator, in the pool or from this address (Retry-After: 60).",
        },
      }),
    ),
    async (c) => {
      const open = refuseOpen(c);
      if (open) return open;
      const body = await readJson(c, DeviceCodeRequestSchema);
      if (!body.ok) return body.response;
      const result = await c.var.shards.enrolment.requestDeviceCode(
        body.value,
        c.req.header("cf-connecting-ip") ?? null,
      );
      if (!result.ok) {
        c.header("retry-after", "60");
        const whose = result.reason === "source_full" ? "from your address " : "";
        return c.json(
          { detail: `too many enrolment requests ${whose}are waiting for an operator: try again later` },
          429,
        );
      }
      const uri = verificationUri(c);
      return c.json({
        device_code: result.deviceCode,
        user_code: result.userCode,
        verification_uri: uri,
        verification_uri_complete: `${uri}?code=${result.userCode}`,
        interval: POLL_INTERVAL_S,
        expires_in: Math.round((result.expiresMs - Date.now()) / 1000),
        expires_at: new Date(result.expiresMs).toISOString(),
      });
    },
  )
  .post(
    "/token",
    describeRoute(
      documented({
        id: "redeemDeviceCode",
        tag: "enrolment",
        summary: "Poll for the credential of an approved code",
        description:
          "No credential. 200 exactly once after approval; every other code (unknown, waiting, denied, expired, redeemed) gets the same 400 `authorization_pending`.",
        body: request("DeviceTokenRequest"),
        ok: { 200: jsonBody(served("EnrolledToken"), "The node's token: send it as `Authorization: Bearer`.") },
        refusals: {
          400: jsonBody(
            { anyOf: [served("AuthorizationPending"), served("Refusal")] },
            "`authorization_pending`: poll again after `interval` seconds. Or `{detail}`: the coordinator is open.",
          ),
        },
      }),
    ),
    async (c) => {
      const open = refuseOpen(c);
      if (open) return open;
      const body = await readJson(c, DeviceTokenRequestSchema);
      if (!body.ok) return body.response;
      const issued = await c.var.shards.enrolment.redeemDeviceCode(body.value.device_code, localeOf(c));
      c.header("cache-control", "no-store");
      if (issued === null) return c.json({ error: "authorization_pending", interval: POLL_INTERVAL_S }, 400);
      return c.json(issued);
    },
  );

/** Mounted after the identity middleware: an operator's. */
export const deviceOperator = new Hono<AppEnv>()
  .get(
    "/pending",
    describeRoute(
      documented({
        id: "pendingDeviceCodes",
        tag: "enrolment",
        summary: "The codes waiting for an operator",
        description: OPERATOR_ONLY,
        ok: { 200: jsonBody(list(served("PendingEnrolment")), "Oldest first.") },
        refusals: { 400: OPEN_COORDINATOR, 403: NOT_AN_OPERATOR },
      }),
    ),
    async (c) => {
      const operator = enrolmentOperator(c);
      if (!operator.ok) return operator.response;
      c.header("cache-control", "no-store");
      return c.json(await c.var.shards.enrolment.pendingDeviceCodes());
    },
  )
  .post(
    "/approve",
    describeRoute(
      documented({
        id: "approveDeviceCode",
        tag: "enrolment",
        summary: "Approve a pending code: its machine may redeem it for a node credential",
        description: `${OPERATOR_ONLY} \`owner\` (optional, 1–128 characters) names whose machine it is: replicas of one task run on nodes of distinct owners; absent, the machine is its own owner. An empty or longer owner is a 422. \`pools\` (optional, at most 64 names of 1–128 characters) are the team pools the machine is assigned when it redeems the code, by the approving operator (docs/protocol.md §9); absent, none are named and an earlier assignment stands.`,
        body: request("ApproveRequest"),
        ok: { 200: jsonBody(served("EnrolmentDecided"), "Approved.") },
        refusals: {
          400: OPEN_COORDINATOR,
          403: NOT_AN_OPERATOR,
          404: "No pending code with this user code.",
          422: validation(
            "`owner` is empty or longer than 128 characters, or `pools` is not a list of 1–128-character names.",
          ),
        },
      }),
    ),
    async (c) => {
      const operator = enrolmentOperator(c);
      if (!operator.ok) return operator.response;
      // An approval may name the machine's owner (docs/protocol.md §14); absent or null, it is its own.
      const body = await readJson(c, ApproveRequestSchema);
      if (!body.ok) return body.response;
      // It may name the team pools the machine is assigned (docs/protocol.md §9); absent or null, none.
      return decide(
        c,
        body.value.user_code,
        "approved",
        operator.name,
        body.value.owner ?? null,
        body.value.pools ?? null,
      );
    },
  )
  .post(
    "/deny",
    describeRoute(
      documented({
        id: "denyDeviceCode",
        tag: "enrolment",
        summary: "Deny a pending code, or every pending code at once: it never yields a credential",
        description: `Exactly one of \`user_code\` or \`"all": true\` (anything else is a 422). \`{"all": true}\` denies every pending code at once, for a pool flooded with requests. ${OPERATOR_ONLY}`,
        body: request("DenyRequest"),
        ok: {
          200: jsonBody(
            { anyOf: [served("EnrolmentDecided"), served("EnrolmentsDenied")] },
            "Denied: the code's node, or how many codes `all` denied (0 when none was pending).",
          ),
        },
        refusals: { 400: OPEN_COORDINATOR, 403: NOT_AN_OPERATOR, 404: "No pending code with this user code." },
      }),
    ),
    async (c) => {
      const operator = enrolmentOperator(c);
      if (!operator.ok) return operator.response;
      const body = await readJson(c, DenyRequestSchema);
      if (!body.ok) return body.response;
      if (body.value.all) {
        const nodeIds = await c.var.shards.enrolment.denyAllDeviceCodes(operator.name);
        return c.json({ denied: true, count: nodeIds.length });
      }
      return decide(c, body.value.user_code ?? "", "denied", operator.name);
    },
  );

async function decide(
  c: AppContext,
  typed: string,
  decision: "approved" | "denied",
  operator: string,
  owner: string | null = null,
  pools: string[] | null = null,
) {
  const userCode = normalizeUserCode(typed);
  const nodeId =
    userCode === null
      ? null
      : await c.var.shards.enrolment.decideDeviceCode(userCode, decision, operator, owner, pools);
  if (nodeId === null)
    return c.json({ detail: "no pending enrolment with this code (expired, decided or unknown)" }, 404);
  return c.json(
    decision === "approved"
      ? { approved: true, node_id: nodeId, owner: owner ?? nodeId, ...(pools === null ? {} : { pools }) }
      : { denied: true, node_id: nodeId },
  );
}
