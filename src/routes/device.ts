// Device-code enrolment routes (SPEC §9 "Enrolled machines", RFC 8628): the
// agent's two calls, which need no credential, and the operator's decisions.
// An open pool needs no enrolment and says so. The token endpoint answers
// every code that is not approved and unredeemed with the same
// `authorization_pending`, so nobody can probe which codes exist.

import { Hono } from "hono";
import {
  ApproveRequestSchema,
  DenyRequestSchema,
  DeviceCodeRequestSchema,
  DeviceTokenRequestSchema,
} from "../protocol/device";
import { normalizeUserCode, POLL_INTERVAL_S } from "../rules/enrolment";
import { type AppContext, type AppEnv, readJson } from "./context";
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
  .post("/code", async (c) => {
    const open = refuseOpen(c);
    if (open) return open;
    const body = await readJson(c, DeviceCodeRequestSchema);
    if (!body.ok) return body.response;
    const result = await c.var.stub.requestDeviceCode(body.value, c.req.header("cf-connecting-ip") ?? null);
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
  })
  .post("/token", async (c) => {
    const open = refuseOpen(c);
    if (open) return open;
    const body = await readJson(c, DeviceTokenRequestSchema);
    if (!body.ok) return body.response;
    const issued = await c.var.stub.redeemDeviceCode(body.value.device_code);
    c.header("cache-control", "no-store");
    if (issued === null) return c.json({ error: "authorization_pending", interval: POLL_INTERVAL_S }, 400);
    return c.json(issued);
  });

/** Mounted after the identity middleware: an operator's. */
export const deviceOperator = new Hono<AppEnv>()
  .get("/pending", async (c) => {
    const operator = enrolmentOperator(c);
    if (!operator.ok) return operator.response;
    c.header("cache-control", "no-store");
    return c.json(await c.var.stub.pendingDeviceCodes());
  })
  .post("/approve", async (c) => {
    const operator = enrolmentOperator(c);
    if (!operator.ok) return operator.response;
    // An approval may name the machine's owner (SPEC §14); absent or null, it is its own.
    const body = await readJson(c, ApproveRequestSchema);
    if (!body.ok) return body.response;
    // It may name the team pools the machine is assigned (SPEC §9); absent or null, none.
    return decide(
      c,
      body.value.user_code,
      "approved",
      operator.name,
      body.value.owner ?? null,
      body.value.pools ?? null,
    );
  })
  .post("/deny", async (c) => {
    const operator = enrolmentOperator(c);
    if (!operator.ok) return operator.response;
    const body = await readJson(c, DenyRequestSchema);
    if (!body.ok) return body.response;
    if (body.value.all) {
      const nodeIds = await c.var.stub.denyAllDeviceCodes(operator.name);
      return c.json({ denied: true, count: nodeIds.length });
    }
    return decide(c, body.value.user_code ?? "", "denied", operator.name);
  });

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
    userCode === null ? null : await c.var.stub.decideDeviceCode(userCode, decision, operator, owner, pools);
  if (nodeId === null)
    return c.json({ detail: "no pending enrolment with this code (expired, decided or unknown)" }, 404);
  return c.json(
    decision === "approved"
      ? { approved: true, node_id: nodeId, owner: owner ?? nodeId, ...(pools === null ? {} : { pools }) }
      : { denied: true, node_id: nodeId },
  );
}
