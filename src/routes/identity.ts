// Who is calling (docs/protocol.md §9), decided in one place. The middleware resolves the
// caller once per request; every route asks the questions below instead of
// reading credentials itself. The delegation header is read nowhere else.

import type { MiddlewareHandler } from "hono";
import type { Writer } from "../pool/artifacts/artifacts";
import type { Viewer } from "../pool/ledger/sealing";
import { CREDENTIAL_REFUSED } from "../pool/session";
import { authenticate, delegation } from "../rules/auth";
import { sha256Hex } from "../rules/enrolment";
import type { AppContext, AppEnv } from "./context";
import { poolShards } from "./shards";

type Answer<T> = { ok: true; value: T } | { ok: false; response: Response };

/** Resolves the caller; when enforcing, no valid credential is a 401 on every route. */
export const identify: MiddlewareHandler<AppEnv> = async (c, next) => {
  const config = c.var.settings.auth;
  if (config.mode !== "enforcing") {
    c.set("caller", { kind: "open" });
    return next();
  }
  const credential = authenticate(config, c.req.header("authorization"));
  if (credential === null || credential === "invalid") return refuseCredential(c);
  if (credential.kind === "node") {
    // For anyone but an operator the delegation header is not authoritative: ignored.
    c.set("caller", { kind: "node", nodeId: credential.nodeId });
    return next();
  }
  if (credential.kind === "enrolled") {
    // The token names its node; the pool checks it with every call this
    // request makes. The session is not awaited: each call pipelines on it,
    // so a call costs one round trip, and the runtime disposes the sessions'
    // stubs when the request ends (a streamed events answer still uses it).
    const proof = { nodeId: credential.nodeId, tokenSha256: await sha256Hex(credential.token) };
    c.set("caller", { kind: "node", nodeId: credential.nodeId });
    c.set(
      "shards",
      poolShards(c.env, c.var.settings, c.var.pool, proof, (work) => c.executionCtx.waitUntil(work)),
    );
    return next();
  }
  const delegated = delegation(c.req.header("x-flashml-on-behalf-of") ?? null);
  if (!delegated.ok) return c.json({ detail: delegated.detail }, delegated.status);
  c.set("caller", { kind: "operator", name: credential.name, onBehalfOf: delegated.node });
  return next();
};

/**
 * The 401 for a missing or invalid credential. The challenge names Bearer;
 * Basic only when the request tried Basic (a URL with credentials), since a
 * Basic challenge on a browser's fetch makes it pop its own login dialog
 * over the dashboard and enrolment pages, which keep a bearer token instead.
 * Basic's challenge must carry a realm (RFC 7617 §2); UTF-8 is what we decode.
 */
export function refuseCredential(c: AppContext): Response {
  const triedBasic = /^Basic(\s|$)/i.test(c.req.header("authorization") ?? "");
  c.header("www-authenticate", triedBasic ? 'Bearer, Basic realm="flashedge", charset="UTF-8"' : "Bearer");
  return c.json({ detail: "invalid or missing node token" }, 401);
}

/**
 * An enrolled credential the pool did not accept (unknown, replaced or
 * revoked) on one of this request's calls: a 401, like any invalid token.
 */
export function credentialRefused(err: unknown): boolean {
  return err instanceof Error && err.message === CREDENTIAL_REFUSED;
}

/**
 * The node this request acts as: the credential's node, or the node an
 * operator names. Open mode trusts the body's `node_id`; an operator that
 * names nobody has no node identity (401).
 */
export function actingNode(c: AppContext, bodyNodeId: string): Answer<string> {
  const caller = c.var.caller;
  if (caller.kind === "open") return { ok: true, value: bodyNodeId };
  if (caller.kind === "node") return { ok: true, value: caller.nodeId };
  if (caller.onBehalfOf !== null) return { ok: true, value: caller.onBehalfOf };
  return {
    ok: false,
    response: c.json(
      {
        detail: "operator credential is not a node identity — name the machine in X-FlashML-On-Behalf-Of to act for it",
      },
      401,
    ),
  };
}

/** The writer to authorize an artifact or checkpoint write as (null = unscoped). */
export function writerOf(c: AppContext): Writer {
  const caller = c.var.caller;
  if (caller.kind === "open") return null;
  return caller.kind === "node" ? caller.nodeId : caller.onBehalfOf;
}

/** Job submission, cancel and checkpoint administration need an operator. */
export function requireOperator(c: AppContext): Response | null {
  const caller = c.var.caller;
  if (caller.kind === "node") return c.json({ detail: "an operator token is required for this route" }, 403);
  return null;
}

/**
 * The node a lease route acts as, for the pool object to check against the
 * lease's holder in the same transaction: null when nobody is authenticated
 * (open mode). An operator must name the node it acts for (401 otherwise).
 */
export function leaseCaller(c: AppContext): Answer<string | null> {
  return c.var.caller.kind === "open" ? { ok: true, value: null } : actingNode(c, "");
}

/**
 * Whose view a read is served in (docs/protocol.md §14): a node's own, where replicas
 * before their verdict are sealed, or null for an operator and on an open
 * coordinator (which serves no replicated jobs). An operator acting for a
 * node still reads as an operator.
 */
export function viewerOf(c: AppContext): Viewer {
  return c.var.caller.kind === "node" ? c.var.caller.nodeId : null;
}
