// Checkpoint routes (docs/protocol.md §8), mounted at
// `/jobs/:job_id/tasks/:task_id/checkpoints`: thin — parse, authorize, one
// RPC call, map the outcome to a status. The catalog's rules (parts first,
// manifest last; what `latest` picks) live in src/pool/artifacts/checkpoints.ts only.
//
// A refused commit is 409 `{"detail": [problem, ...]}`: a list of sentences,
// one per problem, so a client sees every missing or mismatched part at once.

import { Hono } from "hono";
import { describeRoute } from "hono-openapi";
import { archiveOf } from "../archive/reader";
import type { Writer } from "../pool/artifacts/artifacts";
import {
  CommitCheckpointRequestSchema,
  QuarantineCheckpointRequestSchema,
  RegisterPartRequestSchema,
} from "../protocol/checkpoints";
import {
  documented,
  jsonBody,
  NOT_AN_OPERATOR,
  OPERATOR_ONLY,
  parameter,
  query,
  request,
  served,
  validation,
} from "../protocol/openapi-operations";
import { latestManifest, lostWork } from "../rules/checkpoints";
import { type AppContext, type AppEnv, queryInt, readJson } from "./context";
import { requireOperator, writerOf } from "./identity";

const noCheckpointWriter = "The caller holds no live lease on this task.";

export const checkpoints = new Hono<AppEnv>()
  .post(
    "/parts",
    describeRoute(
      documented({
        id: "registerCheckpointPart",
        tag: "checkpoints",
        summary: "Register one uploaded part of a checkpoint",
        parameters: [parameter("onBehalfOf")],
        body: request("RegisterPartRequest"),
        ok: { 200: jsonBody(served("PartRegistered"), "Registered (a re-registered key replaces the previous one).") },
        refusals: { 403: noCheckpointWriter, 404: "Unknown task." },
      }),
    ),
    async (c) => {
      const { jobId, taskId } = taskOf(c);
      const writer = writerOf(c);
      const body = await readJson(c, RegisterPartRequestSchema);
      if (!body.ok) return body.response;
      const result = await c.var.shards.job(jobId, async (s) =>
        s.registerCheckpointPart(jobId, taskId, body.value, writer),
      );
      if (!result.ok) return refusal(c, result.reason, writer);
      return c.json({ status: "registered", key: result.key });
    },
  )
  .post(
    "/commit",
    describeRoute(
      documented({
        id: "commitCheckpoint",
        tag: "checkpoints",
        summary: "Commit a checkpoint manifest over registered parts",
        parameters: [parameter("onBehalfOf")],
        body: request("CommitCheckpointRequest"),
        ok: { 200: jsonBody(served("CheckpointManifest"), "The committed manifest.") },
        refusals: {
          403: noCheckpointWriter,
          404: "Unknown task.",
          409: jsonBody(
            served("CheckpointRejected"),
            "Refused, with every problem: no parts, a part never registered, a hash different from the registered one.",
          ),
        },
      }),
    ),
    async (c) => {
      const { jobId, taskId } = taskOf(c);
      const writer = writerOf(c);
      const body = await readJson(c, CommitCheckpointRequestSchema);
      if (!body.ok) return body.response;
      const result = await c.var.shards.job(jobId, async (s) => s.commitCheckpoint(jobId, taskId, body.value, writer));
      if (result.ok) return c.json(result.manifest);
      if (result.reason === "rejected") return c.json({ detail: result.problems }, 409);
      return refusal(c, result.reason, writer);
    },
  )
  .get(
    "/latest",
    describeRoute(
      documented({
        id: "latestCheckpoint",
        tag: "checkpoints",
        summary: "The newest valid checkpoint of a task",
        parameters: [
          query("world_size", "Only manifests compatible with this world size.", { type: "integer", minimum: 1 }),
        ],
        ok: { 200: jsonBody(served("CheckpointManifest"), "The newest valid manifest.") },
        refusals: {
          404: "Unknown task, or no valid checkpoint.",
          422: validation("`world_size` is not an integer ≥ 1."),
        },
      }),
    ),
    async (c) => {
      const { jobId, taskId } = taskOf(c);
      const worldSize = queryInt(c, "world_size", { min: 1 });
      if (!worldSize.ok) return worldSize.response;
      const result = await c.var.shards.job(jobId, async (s) => s.latestCheckpoint(jobId, taskId, worldSize.value));
      if (result === "archived") {
        const manifests = await archiveOf(c, jobId).manifests(taskId);
        if (!manifests) return unknownTask(c);
        const manifest = latestManifest(manifests, worldSize.value);
        return manifest ? c.json(manifest) : c.json({ detail: "no valid checkpoint" }, 404);
      }
      if (!result.ok) return unknownTask(c);
      if (!result.manifest) return c.json({ detail: "no valid checkpoint" }, 404);
      return c.json(result.manifest);
    },
  )
  .get(
    "/lost-work",
    describeRoute(
      documented({
        id: "checkpointLostWork",
        tag: "checkpoints",
        summary: "How many steps a failure at a step loses, given the latest checkpoint",
        parameters: [query("failed_at_step", "The step the attempt failed at.", { type: "integer", minimum: 0 }, true)],
        ok: { 200: jsonBody(served("LostWork"), "Steps lost, or both null when there is no checkpoint.") },
        refusals: { 404: "Unknown task.", 422: validation("`failed_at_step` is missing or not an integer ≥ 0.") },
      }),
    ),
    async (c) => {
      const { jobId, taskId } = taskOf(c);
      const failedAt = queryInt(c, "failed_at_step", { min: 0 });
      if (!failedAt.ok) return failedAt.response;
      if (failedAt.value === null) {
        return c.json({ detail: [{ loc: ["query", "failed_at_step"], msg: "Field required", type: "missing" }] }, 422);
      }
      const step = failedAt.value;
      const result = await c.var.shards.job(jobId, async (s) => s.checkpointLostWork(jobId, taskId, step));
      if (result === "archived") {
        const manifests = await archiveOf(c, jobId).manifests(taskId);
        if (!manifests) return unknownTask(c);
        return c.json(lostWork(latestManifest(manifests, null)?.step ?? null, failedAt.value));
      }
      if (!result.ok) return unknownTask(c);
      return c.json({ lost_steps: result.lost_steps, latest_step: result.latest_step });
    },
  )
  // Operator-only: the auth layer's requireOperator decides who that is.
  .post(
    "/:manifest_id/verify",
    describeRoute(
      documented({
        id: "verifyCheckpoint",
        tag: "checkpoints",
        summary: "Mark a checkpoint restore-verified",
        description: OPERATOR_ONLY,
        ok: { 200: jsonBody(served("CheckpointManifest"), "The manifest, restore_verified.") },
        refusals: {
          403: NOT_AN_OPERATOR,
          404: "Unknown task or manifest.",
          409: "The manifest is quarantined: it can never be restore-verified.",
        },
      }),
    ),
    async (c) => {
      const refused = requireOperator(c);
      if (refused) return refused;
      const { jobId, taskId } = taskOf(c);
      const manifestId = c.req.param("manifest_id");
      const result = await c.var.shards.job(jobId, async (s) => s.verifyCheckpoint(jobId, taskId, manifestId));
      if (result.ok) return c.json(result.manifest);
      if (result.reason === "invalid") {
        return c.json({ detail: `checkpoint ${manifestId} is quarantined; it can never be restore-verified` }, 409);
      }
      if (result.reason === "archived") return archived(c);
      return result.reason === "unknown_task" ? unknownTask(c) : unknownManifest(c, manifestId);
    },
  )
  .post(
    "/:manifest_id/quarantine",
    describeRoute(
      documented({
        id: "quarantineCheckpoint",
        tag: "checkpoints",
        summary: "Quarantine a checkpoint: it is never restored",
        description: OPERATOR_ONLY,
        body: request("QuarantineCheckpointRequest"),
        ok: { 200: jsonBody(served("CheckpointManifest"), "The manifest, invalid.") },
        refusals: { 403: NOT_AN_OPERATOR, 404: "Unknown task or manifest." },
      }),
    ),
    async (c) => {
      const refused = requireOperator(c);
      if (refused) return refused;
      const { jobId, taskId } = taskOf(c);
      const manifestId = c.req.param("manifest_id");
      const body = await readJson(c, QuarantineCheckpointRequestSchema);
      if (!body.ok) return body.response;
      const result = await c.var.shards.job(jobId, async (s) =>
        s.quarantineCheckpoint(jobId, taskId, manifestId, body.value.reason),
      );
      if (result.ok) return c.json(result.manifest);
      if (result.reason === "archived") return archived(c);
      return result.reason === "unknown_task" ? unknownTask(c) : unknownManifest(c, manifestId);
    },
  );

/** The (job, task) from the mount path `/jobs/:job_id/tasks/:task_id/checkpoints`. */
function taskOf(c: AppContext): { jobId: string; taskId: string } {
  const jobId = c.req.param("job_id");
  const taskId = c.req.param("task_id");
  // Unreachable when mounted as intended: the mount path always binds both.
  if (jobId === undefined || taskId === undefined)
    throw new Error("checkpoint routes mounted without :job_id/:task_id");
  return { jobId, taskId };
}

function refusal(c: AppContext, reason: "forbidden" | "unknown_task" | "archived", writer: Writer) {
  if (reason === "unknown_task") return unknownTask(c);
  if (reason === "archived") return archived(c);
  const { jobId, taskId } = taskOf(c);
  return c.json({ detail: `node ${writer ?? "?"} holds no live lease on task ${jobId}/${taskId}` }, 403);
}

/** docs/protocol.md §12: an archived job is read-only (409, as for any write a finished job refuses). */
function archived(c: AppContext) {
  return c.json({ detail: `job ${taskOf(c).jobId} is archived; its checkpoints are read-only` }, 409);
}

function unknownTask(c: AppContext) {
  const { jobId, taskId } = taskOf(c);
  return c.json({ detail: `unknown task ${jobId}/${taskId}` }, 404);
}

function unknownManifest(c: AppContext, manifestId: string) {
  const { jobId, taskId } = taskOf(c);
  return c.json({ detail: `no checkpoint ${manifestId} for task ${jobId}/${taskId}` }, 404);
}
