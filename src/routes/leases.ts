// Lease routes (SPEC §5): claim, and the attempt heartbeat/complete/fail.

import { Hono } from "hono";
import type { ClaimResult } from "../pool/leases";
import { ClaimRequestSchema, CompleteRequestSchema, FailRequestSchema } from "../protocol/tasks";
import { type AppContext, type AppEnv, readJson } from "./context";
import { actingNode, leaseCaller } from "./identity";

export const leases = new Hono<AppEnv>().post("/claim", async (c) => {
  const body = await readJson(c, ClaimRequestSchema);
  if (!body.ok) return body.response;
  const acting = actingNode(c, body.value.node_id);
  if (!acting.ok) return acting.response;
  const result = await claimWithin(c, acting.value, body.value.job_id ?? null);
  if (result.ok) return c.json(result.lease);
  if (result.reason === "unregistered") return c.json({ detail: "unregistered node — register first" }, 403);
  return c.body(null, 204);
});

/** How long past its hold the Worker waits for a held claim's answer. */
const HOLD_GRACE_MS = 500;

/**
 * The object's answer to a claim held up to the configured wait. A held
 * claim whose object restarts may never be answered, so the Worker stops
 * waiting just after the hold: the agent always hears back inside its own
 * timeout. No answer reads as "nothing yet"; a lease issued meanwhile that
 * the caller never saw simply expires back to the queue.
 */
async function claimWithin(c: AppContext, nodeId: string, jobId: string | null): Promise<ClaimResult> {
  const wait = c.var.claimWaitMs;
  const nothing: ClaimResult = { ok: false, reason: "nothing" };
  try {
    const claimed = c.var.stub.claim(nodeId, jobId, wait);
    if (wait === 0) return await claimed;
    return await Promise.race([
      claimed,
      new Promise<ClaimResult>((r) => setTimeout(() => r(nothing), wait + HOLD_GRACE_MS)),
    ]);
  } catch (e) {
    if (isObjectReset(e)) return nothing;
    throw e;
  }
}

/** An error the runtime raises when the object was reset or restarted mid-call. */
function isObjectReset(e: unknown): boolean {
  const flags = e as { retryable?: unknown; durableObjectReset?: unknown } | null;
  return typeof flags === "object" && flags !== null && (flags.retryable === true || flags.durableObjectReset === true);
}

/** 403 for a lease the caller does not hold, and for an id never issued (no oracle). */
function notHolder(c: AppContext, leaseId: string, caller: string | null) {
  return c.json({ detail: `node ${caller} does not hold lease ${leaseId}` }, 403);
}

export const attempts = new Hono<AppEnv>()
  .post("/:lease_id/heartbeat", async (c) => {
    const leaseId = c.req.param("lease_id");
    const caller = leaseCaller(c);
    if (!caller.ok) return caller.response;
    const result = await c.var.stub.renewLease(leaseId, caller.value);
    if (result.ok) return c.json(result.lease);
    if (result.reason === "not_holder") return notHolder(c, leaseId, caller.value);
    return c.json({ detail: `lease ${leaseId} is not live — stop working on it` }, 410);
  })
  .post("/:lease_id/complete", async (c) => {
    const leaseId = c.req.param("lease_id");
    const caller = leaseCaller(c);
    if (!caller.ok) return caller.response;
    const body = await readJson(c, CompleteRequestSchema);
    if (!body.ok) return body.response;
    const { output_sha256, evidence } = body.value;
    const outcome = await c.var.stub.completeLease(leaseId, output_sha256, evidence ?? null, caller.value);
    switch (outcome.status) {
      case "not_holder":
        return notHolder(c, leaseId, caller.value);
      case "unknown":
        return c.json({ detail: `unknown lease ${leaseId}` }, 404);
      case "accepted":
        return c.json({ accepted: true });
      case "invalid":
        return c.json({ accepted: false, detail: outcome.detail });
      case "rejected":
        return c.json({ accepted: false });
    }
  })
  .post("/:lease_id/fail", async (c) => {
    const leaseId = c.req.param("lease_id");
    const caller = leaseCaller(c);
    if (!caller.ok) return caller.response;
    const body = await readJson(c, FailRequestSchema);
    if (!body.ok) return body.response;
    const result = await c.var.stub.failLease(leaseId, body.value.reason, caller.value);
    if (result.ok) return c.json({ status: "requeued-or-exhausted" });
    if (result.reason === "not_holder") return notHolder(c, leaseId, caller.value);
    return c.json({ detail: `lease ${leaseId} is not live` }, 410);
  });
