// The placement explanation route (docs/protocol.md §11), mounted at
// `/jobs/:job_id/tasks/:task_id/placement`: "why is my task not running?".
// Thin: one read-only RPC call; the gate lives in src/rules/placement.ts,
// the report in src/pool/placement-report.ts and its grouped summary in
// src/rules/placement-summary.ts. A read: any valid credential
// when enforcing (the identity middleware has already checked it).

import { Hono } from "hono";
import { describeRoute } from "hono-openapi";
import { documented, jsonBody, served } from "../protocol/openapi-operations";
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
    const result = await (await c.var.shards.job(jobId)).explainPlacement(jobId, taskId, viewerOf(c));
    if (!result.ok) {
      const detail =
        result.reason === "unknown_job" ? `no such job: ${jobId}` : `unknown task ${taskId} in job ${jobId}`;
      return c.json({ detail }, 404);
    }
    return c.json(result.report);
  },
);
