// The flashedge Worker: routes each v1alpha1 request to the Durable Object of
// its pool. `/pools/{pool}/v1alpha1/...` names the pool; `/v1alpha1/...` is
// the pool `local`. Holds no state of its own.

import { Hono } from "hono";
import { describeRoute } from "hono-openapi";
import { invalidPoolDetail, isPoolName } from "./protocol/keys";
import { documented, jsonBody, refusedBy, served } from "./protocol/openapi-operations";
import { artifacts } from "./routes/artifacts";
import { checkpoints } from "./routes/checkpoints";
import type { AppEnv } from "./routes/context";
import { dashboardData, dashboardPage } from "./routes/dashboard";
import { deviceAgent, deviceOperator } from "./routes/device";
import { enrolPage } from "./routes/enrol";
import { credentialRefused, identify, refuseCredential } from "./routes/identity";
import { jobs } from "./routes/jobs";
import { attempts, leases } from "./routes/leases";
import { allowedMethods } from "./routes/methods";
import { metrics } from "./routes/metrics";
import { nodes } from "./routes/nodes";
import { openapiOf } from "./routes/openapi";
import { placement } from "./routes/placement";
import { runs } from "./routes/runs";
import { refuseMisconfigured } from "./routes/settings";
import { poolShards } from "./routes/shards";
import { layoutRefusal, upgrading } from "./rules/layout";

export { PoolObject } from "./pool/object";
export { RunWorkflow } from "./runs/workflow";
export { PoolSummary } from "./summary/object";

const api = new Hono<AppEnv>();
api.use(async (c, next) => {
  const pool = c.req.param("pool") ?? "local";
  if (!isPoolName(pool)) {
    return c.json({ detail: invalidPoolDetail(pool) }, 404);
  }
  c.set("pool", pool);
  c.set(
    "shards",
    poolShards(c.env, c.var.settings, pool, null, (work) => c.executionCtx.waitUntil(work)),
  );
  await next();
});
// A machine asking to join has no credential yet (docs/protocol.md §9): before identify.
api.route("/device", deviceAgent);
api.use(
  describeRoute(
    refusedBy({
      400: "An operator sent more than one X-FlashML-On-Behalf-Of value.",
      401: "Tokens are configured and no valid token was sent (as Bearer, or as HTTP Basic with its name as the user name).",
      403: "An operator sent an empty X-FlashML-On-Behalf-Of.",
    }),
  ),
  identify,
);
api.route("/device", deviceOperator);
api.route("/nodes", nodes);
api.route("/leases", leases);
api.route("/attempts", attempts);
api.route("/artifacts", artifacts);
api.route("/jobs/:job_id/tasks/:task_id/checkpoints", checkpoints);
api.route("/jobs/:job_id/tasks/:task_id/placement", placement);
api.route("/dashboard", dashboardData);
api.route("/metrics", metrics);
api.route("/jobs", jobs);
api.route("/runs", runs);

const app = new Hono<AppEnv>();
app.use(refuseMisconfigured);
app.get(
  "/healthz",
  describeRoute(
    documented({
      id: "health",
      tag: "service",
      summary: "Liveness: the Worker serves and its settings are sound",
      ok: { 200: jsonBody(served("StatusOk"), "Serving.") },
    }),
  ),
  (c) => c.json({ status: "ok" }),
);
app.route("/openapi.json", openapiOf(app));
app.route("/pools/:pool/v1alpha1", api);
app.route("/v1alpha1", api);
app.route("/", dashboardPage);
app.route("/", enrolPage);
app.notFound((c) => {
  // A path served under other methods is a 405 naming them, not a 404.
  const allowed = allowedMethods(app.routes, c.req.path);
  if (allowed.length === 0) return c.json({ detail: "Not Found" }, 404);
  c.header("allow", allowed.join(", "));
  return c.json({ detail: `method ${c.req.method} is not allowed here; allowed: ${allowed.join(", ")}` }, 405);
});
app.onError((err, c) => {
  if (credentialRefused(err)) return refuseCredential(c);
  // A pool laid out over unreachable work (docs/sharding.md §11): its detail names the pool and why.
  const refusedLayout = layoutRefusal(err);
  if (refusedLayout !== null) {
    if (upgrading(refusedLayout)) c.header("retry-after", "1");
    return c.json({ detail: refusedLayout }, 503);
  }
  const requestId = crypto.randomUUID();
  console.error(JSON.stringify({ level: "error", request_id: requestId, path: c.req.path, error: String(err) }));
  return c.json({ detail: "internal error", request_id: requestId }, 500);
});

export default app;
