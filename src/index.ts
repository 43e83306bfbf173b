// The flashedge Worker: routes each v1alpha1 request to the Durable Object of
// its pool. `/pools/{pool}/v1alpha1/...` names the pool; `/v1alpha1/...` is
// the pool `local`. Holds no state of its own.

import { Hono } from "hono";
import { isPoolName } from "./protocol/keys";
import { artifacts } from "./routes/artifacts";
import { checkpoints } from "./routes/checkpoints";
import type { AppEnv } from "./routes/context";
import { jobs } from "./routes/jobs";
import { attempts, leases } from "./routes/leases";
import { identify, refuseMisconfigured } from "./routes/identity";
import { nodes } from "./routes/nodes";

export { PoolObject } from "./pool/object";

const api = new Hono<AppEnv>();
api.use(async (c, next) => {
  const pool = c.req.param("pool") ?? "local";
  if (!isPoolName(pool)) {
    return c.json({ detail: `invalid pool name '${pool}': use lowercase letters, digits and '-' (at most 63)` }, 404);
  }
  c.set("pool", pool);
  c.set("stub", c.env.POOL.get(c.env.POOL.idFromName(pool)));
  await next();
});
api.use(identify);
api.route("/nodes", nodes);
api.route("/leases", leases);
api.route("/attempts", attempts);
api.route("/artifacts", artifacts);
api.route("/jobs/:job_id/tasks/:task_id/checkpoints", checkpoints);
api.route("/jobs", jobs);

const app = new Hono<AppEnv>();
app.use(refuseMisconfigured);
app.get("/healthz", (c) => c.json({ status: "ok" }));
app.route("/pools/:pool/v1alpha1", api);
app.route("/v1alpha1", api);
app.notFound((c) => c.json({ detail: "Not Found" }, 404));
app.onError((err, c) => {
  const requestId = crypto.randomUUID();
  console.error(JSON.stringify({ level: "error", request_id: requestId, path: c.req.path, error: String(err) }));
  return c.json({ detail: "internal error", request_id: requestId }, 500);
});

export default app;
