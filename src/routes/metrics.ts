// GET /v1alpha1/metrics: the pool's counters for Prometheus.

import { Hono } from "hono";
import { describeRoute } from "hono-openapi";
import { documented, string } from "../protocol/openapi-operations";
import { mergeMetrics, renderMetrics } from "../rules/metrics";
import { summaryStub } from "../summary/address";
import type { AppEnv } from "./context";
import { everyShard, poolNodeAnswers } from "./every-shard";
import { viewerOf } from "./identity";

export const metrics = new Hono<AppEnv>().get(
  "/",
  describeRoute(
    documented({
      id: "metrics",
      tag: "observability",
      summary: "The pool's counters for Prometheus",
      ok: {
        200: {
          description: "The Prometheus text exposition format, version 0.0.4.",
          content: { "text/plain": { schema: string } },
        },
      },
    }),
  ),
  async (c) => {
    const headers = { "content-type": "text/plain; version=0.0.4; charset=utf-8" };
    if (c.var.shards.count === 1) {
      return c.body(renderMetrics(c.var.pool, await c.var.shards.shard(0).metrics(viewerOf(c))), 200, headers);
    }
    // The calls between objects are an operator's to read (docs/protocol.md §11, §14): a node's
    // read leaves them out, and the summary's counts, asked once beside the shards' reads, unasked.
    const traffic = viewerOf(c) === null;
    const [summary, samples] = await Promise.all([
      traffic ? summaryStub(c.env, c.var.settings.poolLocations, c.var.pool).load() : undefined,
      poolNodeAnswers(c).then((answers) => everyShard(c, (calls) => calls.shardMetrics(viewerOf(c), answers))),
    ]);
    return c.body(renderMetrics(c.var.pool, mergeMetrics(samples), samples, summary, traffic), 200, headers);
  },
);
