// Lease routes (docs/protocol.md §5): claim, and the attempt heartbeat/complete/fail.

import { Hono } from "hono";
import { describeRoute } from "hono-openapi";
import type { ClaimResult } from "../pool/claims/claim-result";
import { newClaimId } from "../protocol/ids";
import { documented, jsonBody, NO_NODE_IDENTITY, parameter, request, served } from "../protocol/openapi-operations";
import { ClaimRequestSchema, CompleteRequestSchema, FailRequestSchema } from "../protocol/tasks";
import { isObjectReset } from "../rules/object-errors";
import { type AppContext, type AppEnv, readJson } from "./context";
import { actingNode, leaseCaller } from "./identity";

export const leases = new Hono<AppEnv>().post(
  "/claim",
  describeRoute(
    documented({
      id: "claimLease",
      tag: "leases",
      summary: "Claim a lease on the next task this node may take",
      description:
        "200 with a Lease, or 204 when nothing is claimable for this node. With nothing to take the claim is held (long-poll, FLASHML_CLAIM_WAIT_SECONDS, 12.5 s by default, at most 13 s) and answered the moment a task this node may take is queued; 204 when the hold ends.",
      parameters: [parameter("onBehalfOf")],
      body: request("ClaimRequest"),
      ok: {
        200: jsonBody(served("Lease"), "A new lease: run the task, heartbeat the attempt, then complete or fail it."),
        204: { description: "Nothing claimable for this node now; an empty body." },
      },
      refusals: { 401: NO_NODE_IDENTITY, 403: "Unregistered node: register first." },
    }),
  ),
  async (c) => {
    const body = await readJson(c, ClaimRequestSchema);
    if (!body.ok) return body.response;
    const acting = actingNode(c, body.value.node_id);
    if (!acting.ok) return acting.response;
    const result = await claimWithin(c, acting.value, body.value.job_id ?? null);
    if (result.ok) return c.json(result.lease);
    if (result.reason === "unregistered") return c.json({ detail: "unregistered node — register first" }, 403);
    return c.body(null, 204);
  },
);

/**
 * The object's answer to a claim held up to the configured wait. The Worker
 * sets no timer of its own: a timer of the Worker's can fire while the
 * object still holds the claim (a busy object reads the claim late and
 * starts its hold late), and a lease issued after that 204 would go to a
 * caller that already left. The object decides the hold's end by its own
 * clock and answers by then at the latest, never with a lease after it
 * (src/pool/claims/held-claims.ts), so whatever this answers is the whole truth.
 *
 * Each claim has an id of its own, which its forwards to other shards carry
 * (docs/sharding.md §13.1). A home that restarts under the claim loses it
 * with its memory, held or forwarded; the Worker asks it once more, under a
 * new id naming the lost one, for what is left of the wait: the new home
 * takes over what the lost claim left on other shards, the lease one issued
 * it included, so no lease is left behind for a node told 204. A second
 * restart reads as "nothing yet".
 */
async function claimWithin(c: AppContext, nodeId: string, jobId: string | null): Promise<ClaimResult> {
  const waitMs = c.var.settings.claimWaitMs;
  const ends = Date.now() + waitMs;
  const first = newClaimId();
  try {
    return await c.var.shards.home(nodeId, async (s) => s.claim(nodeId, jobId, waitMs, { claimId: first }));
  } catch (e) {
    if (!isObjectReset(e)) throw e;
  }
  const ids = { claimId: newClaimId(), lost: first };
  const left = Math.max(0, ends - Date.now());
  try {
    return await c.var.shards.home(nodeId, async (s) => s.claim(nodeId, jobId, left, ids));
  } catch (e) {
    if (isObjectReset(e)) return { ok: false, reason: "nothing" };
    throw e;
  }
}

/** 403 for a lease the caller does not hold, and for an id never issued (no oracle). */
function notHolder(c: AppContext, leaseId: string, caller: string | null) {
  return c.json({ detail: `node ${caller} does not hold lease ${leaseId}` }, 403);
}

export const attempts = new Hono<AppEnv>()
  .post(
    "/:lease_id/heartbeat",
    describeRoute(
      documented({
        id: "renewLease",
        tag: "attempts",
        summary: "Renew a live lease",
        parameters: [parameter("onBehalfOf")],
        ok: { 200: jsonBody(served("Lease"), "The renewed lease, with its new deadline.") },
        refusals: {
          401: NO_NODE_IDENTITY,
          403: "The lease was not issued to the caller (also for an id never issued).",
          410: "The lease is not live (expired, superseded, cancelled or unknown): stop working on it.",
        },
      }),
    ),
    async (c) => {
      const leaseId = c.req.param("lease_id");
      const caller = leaseCaller(c);
      if (!caller.ok) return caller.response;
      const result = await c.var.shards.lease(leaseId, async (s) => s.renewLease(leaseId, caller.value));
      if (result.ok) return c.json(result.lease);
      if (result.reason === "not_holder") return notHolder(c, leaseId, caller.value);
      return c.json({ detail: `lease ${leaseId} is not live — stop working on it` }, 410);
    },
  )
  .post(
    "/:lease_id/complete",
    describeRoute(
      documented({
        id: "completeAttempt",
        tag: "attempts",
        summary: "Commit an attempt's output by its sha256",
        description:
          "The output at the task's commit key must exist with this sha256. Exactly one commit per task is ever accepted; every other is answered `accepted: false`.",
        parameters: [parameter("onBehalfOf")],
        body: request("CompleteRequest"),
        ok: {
          200: jsonBody(served("CommitOutcome"), "Whether the commit was accepted (`detail` when validation failed)."),
        },
        refusals: {
          401: NO_NODE_IDENTITY,
          403: "The lease was not issued to the caller.",
          404: "Unknown lease.",
        },
      }),
    ),
    async (c) => {
      const leaseId = c.req.param("lease_id");
      const caller = leaseCaller(c);
      if (!caller.ok) return caller.response;
      const body = await readJson(c, CompleteRequestSchema);
      if (!body.ok) return body.response;
      const { output_sha256, evidence } = body.value;
      const outcome = await c.var.shards.lease(leaseId, async (s) =>
        s.completeLease(leaseId, output_sha256, evidence ?? null, caller.value),
      );
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
    },
  )
  .post(
    "/:lease_id/fail",
    describeRoute(
      documented({
        id: "failAttempt",
        tag: "attempts",
        summary: "Give up an attempt: the task is requeued while attempts remain",
        parameters: [parameter("onBehalfOf")],
        body: request("FailRequest"),
        ok: { 200: jsonBody(served("AttemptFailed"), "The attempt failed; the task was requeued or exhausted.") },
        refusals: {
          401: NO_NODE_IDENTITY,
          403: "The lease was not issued to the caller.",
          410: "The lease is not live.",
        },
      }),
    ),
    async (c) => {
      const leaseId = c.req.param("lease_id");
      const caller = leaseCaller(c);
      if (!caller.ok) return caller.response;
      const body = await readJson(c, FailRequestSchema);
      if (!body.ok) return body.response;
      const result = await c.var.shards.lease(leaseId, async (s) =>
        s.failLease(leaseId, body.value.reason, caller.value),
      );
      if (result.ok) return c.json({ status: "requeued-or-exhausted" });
      if (result.reason === "not_holder") return notHolder(c, leaseId, caller.value);
      return c.json({ detail: `lease ${leaseId} is not live` }, 410);
    },
  );
