// The coordinator's settings, checked before anything is served. A setting
// that cannot be read (tokens, SPEC §9; pool locations, SPEC §2; the claim
// hold, SPEC §5; retention, SPEC §12; tenant weights, worker losses and the
// retry-elsewhere window, SPEC §13) refuses every request, /healthz
// included, with a 503 naming the problem and never a token: a coordinator
// that would serve the wrong pools, or serve them open, must not look healthy.

import type { MiddlewareHandler } from "hono";
import type { PoolObject } from "../pool/object";
import { authConfig } from "../rules/auth";
import { claimWaitMs } from "../rules/long-poll";
import { type PoolLocationRule, parsePoolLocations, poolLocation } from "../rules/pool-location";
import { jobRetentionMs } from "../rules/retention";
import { maxWorkerLosses, retryElsewhereMs, tenantWeights } from "../rules/scheduling";
import type { AppEnv } from "./context";

export const refuseMisconfigured: MiddlewareHandler<AppEnv> = async (c, next) => {
  const config = authConfig(c.env);
  if (config.mode === "refusing") return c.json({ detail: `coordinator refuses to serve: ${config.detail}` }, 503);
  const locations = parsePoolLocations(c.env.FLASHML_POOL_LOCATIONS);
  if (typeof locations === "string") return c.json({ detail: `coordinator refuses to serve: ${locations}` }, 503);
  const claimWait = claimWaitMs(c.env.FLASHML_CLAIM_WAIT_SECONDS);
  if (typeof claimWait === "string") return c.json({ detail: `coordinator refuses to serve: ${claimWait}` }, 503);
  const retention = jobRetentionMs(c.env.FLASHML_JOB_RETENTION_SECONDS);
  if (typeof retention === "string") return c.json({ detail: `coordinator refuses to serve: ${retention}` }, 503);
  const weights = tenantWeights(c.env.FLASHML_TENANT_WEIGHTS);
  if (typeof weights === "string") return c.json({ detail: `coordinator refuses to serve: ${weights}` }, 503);
  const workerLosses = maxWorkerLosses(c.env.FLASHML_MAX_WORKER_LOSSES);
  if (typeof workerLosses === "string") return c.json({ detail: `coordinator refuses to serve: ${workerLosses}` }, 503);
  // Read by the pool object itself, like the weights; checked here so a bad value refuses.
  const retryElsewhere = retryElsewhereMs(c.env.FLASHML_RETRY_ELSEWHERE_SECONDS);
  if (typeof retryElsewhere === "string")
    return c.json({ detail: `coordinator refuses to serve: ${retryElsewhere}` }, 503);
  c.set("poolLocations", locations);
  c.set("maxWorkerLosses", workerLosses);
  c.set("claimWaitMs", claimWait);
  await next();
};

/**
 * The stub of `pool`'s object, in the jurisdiction and near the location its
 * rule names. A jurisdiction is part of the object's identity: the same pool
 * name in another jurisdiction is another, empty object.
 */
export function poolStub(env: Env, rules: readonly PoolLocationRule[], pool: string): DurableObjectStub<PoolObject> {
  const { jurisdiction, locationHint } = poolLocation(rules, pool);
  const namespace = jurisdiction ? env.POOL.jurisdiction(jurisdiction) : env.POOL;
  return namespace.get(namespace.idFromName(pool), locationHint ? { locationHint } : undefined);
}
