// The placement explanation route (docs/protocol.md §11), mounted at
// `/jobs/:job_id/tasks/:task_id/placement`: "why is my task not running?".
// Thin: one read-only RPC call at one shard, else one to the job's shard and
// one to every shard, merged by a pure function; the gate lives in src/rules/placement.ts,
// the report in src/pool/reads/placement-report.ts and its grouped summary in
// src/rules/placement-summary.ts. A read: any valid credential
// when enforcing (the identity middleware has already checked it).

import { Hono } from "hono";
import { describeRoute } from "hono-openapi";
import { documented, jsonBody, served } from "../protocol/openapi-operations";
import { mergePlacement } from "../rules/placement-summary";
import type { AppEnv } from "./context";
import { viewerOf } from "./identity";

export const placement = new Hono<AppEnv>().get(
  "/",
  describeRoute(
    documented({
      id: "explainPlacement",
      tag: "observability",
      summary: "Why a task is (not) running: every node's gate answer",
      ok: { 200: jsonBody(served("PlacementReport"), "Every registered node, eligible or refused by a gate.") },
      refusals: { 404: "Unknown job, or unknown task in the job." },
    }),
  ),
  async (c) => {
    const jobId = c.req.param("job_id");
    const taskId = c.req.param("task_id");
    // Unreachable when mounted as intended: the mount path always binds both.
    if (jobId === undefined || taskId === undefined)
      throw new Error("placement route mounted without :job_id/:task_id");
    const shards = c.var.shards;
    const refused = (reason: "unknown_job" | "unknown_task") => {
      const detail = reason === "unknown_job" ? `no such job: ${jobId}` : `unknown task ${taskId} in job ${jobId}`;
      return c.json({ detail }, 404);
    };
    if (shards.count === 1) {
      const result = await shards.job(jobId, async (s) => s.explainPlacement(jobId, taskId, viewerOf(c)));
      return result.ok ? c.json(result.report) : refused(result.reason);
    }
    // Two passes (docs/sharding.md §10): the job's shard knows the task, every
    // shard knows its own registered nodes.
    const found = await shards.job(jobId, async (s) => s.placementFacts(jobId, taskId, viewerOf(c)));
    if (!found.ok) return refused(found.reason);
    const { payload, replicas, queue } = found.facts;
    const queued = queue && { priority: queue.priority, tenant: queue.tenant };
    const answers = await Promise.all(
      Array.from({ length: shards.count }, async (_, k) =>
        shards.visit(k, async (s) => s.placementNodes(payload, replicas?.items ?? null, queued ?? undefined)),
      ),
    );
    return c.json(mergePlacement(found.facts, answers));
  },
);
