// GET /v1alpha1/metrics: the pool's counters for Prometheus.

import { Hono } from "hono";
import { renderMetrics } from "../rules/metrics";
import type { AppEnv } from "./context";
import { viewerOf } from "./identity";

export const metrics = new Hono<AppEnv>().get("/", async (c) => {
  const sample = await c.var.stub.metrics(viewerOf(c));
  return c.body(renderMetrics(c.var.pool, sample), 200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
});
