// Hosted runs (docs/protocol.md §17): start one, read them, cancel one. A
// run is a row at one shard of its pool, beside its round jobs, and a
// Workflow instance that drives it (src/runs/workflow.ts).

import { Hono } from "hono";
import { describeRoute } from "hono-openapi";
import { runInstanceId } from "../pool/runs/tell";
import {
  badPage,
  documented,
  jsonBody,
  NOT_AN_OPERATOR,
  OPERATOR_ONLY,
  PAGED,
  pageOf,
  pageParameters,
  request,
  served,
} from "../protocol/openapi-operations";
import { runShardCursor } from "../protocol/paging";
import { RUN_ID_RE, type RunRequest, RunRequestSchema } from "../protocol/runs";
import { planRound, runProblem } from "../rules/runs";
import type { RunParams } from "../runs/workflow";
import { type AppContext, type AppEnv, readJson, shardedList } from "./context";
import { requireOperator } from "./identity";

/** Fresh run ids tried before a start is refused (48 random bits: a retry is already rare). */
const RUN_ID_ATTEMPTS = 5;

export const runs = new Hono<AppEnv>()
  .post(
    "/",
    describeRoute(
      documented({
        id: "startRun",
        tag: "runs",
        summary: "Start a hosted run: federated averaging or K-means, one job per round",
        description: `Each round is submitted as the reference driver submits it, labelled with the run; the run aggregates each round's first quorum of accepted commits and cancels the rest. ${OPERATOR_ONLY}`,
        body: request("RunRequest"),
        ok: { 201: jsonBody(served("RunRecord"), "Started: its first round is being submitted.") },
        refusals: {
          403: NOT_AN_OPERATOR,
          422: "The run does not fit its schema (a `{loc, msg, type}` list naming the field), or its rounds could not be submitted as jobs.",
          503: "No fresh run id, or its Workflow could not be started: nothing runs; start it again.",
        },
      }),
    ),
    async (c) => {
      const refused = requireOperator(c);
      if (refused) return refused;
      const body = await readJson(c, RunRequestSchema);
      if (!body.ok) return body.response;
      const run = body.value;
      const problem = refusal(c, run);
      if (problem !== null) return problem;
      const caller = c.var.caller;
      const operator = caller.kind === "operator" ? caller.name : null;
      // A run and its rounds live at one shard, drawn at random: runs are few next to jobs.
      const shard = Math.floor(Math.random() * c.var.shards.count);
      for (let attempt = 0; attempt < RUN_ID_ATTEMPTS; attempt++) {
        const runId = `run-${c.var.shards.newId(shard)}`;
        const created = await c.var.shards.visit(shard, (s) => s.createRun(runId, run, operator, c.var.pool));
        if (created === null) continue;
        const params: RunParams = { pool: c.var.pool, runId };
        try {
          await c.env.RUNS.create({ id: runInstanceId(c.var.pool, runId), params });
        } catch (error) {
          const reason = `its Workflow could not be started: ${String(error)}`;
          await c.var.shards.visit(shard, (s) => s.finishRun(runId, "FAILED", reason));
          return c.json({ detail: `run ${runId} did not start: ${reason}; start it again` }, 503);
        }
        return c.json(created, 201);
      }
      return c.json({ detail: `no unused run id found in ${RUN_ID_ATTEMPTS} tries; start the run again` }, 503);
    },
  )
  .get(
    "/",
    describeRoute(
      documented({
        id: "listRuns",
        tag: "runs",
        summary: "The pool's hosted runs",
        description: PAGED,
        parameters: pageParameters,
        ok: { 200: pageOf(served("RunRecord"), "A page of the runs, oldest first.") },
        refusals: { 422: badPage },
      }),
    ),
    (c) =>
      shardedList(c, runShardCursor(c.var.shards.count), (shard, after, limit, maxBytes) =>
        c.var.shards.visit(shard, (s) => s.listRuns(after ?? 0, limit, maxBytes)),
      ),
  )
  .get(
    "/:run_id",
    describeRoute(
      documented({
        id: "getRun",
        tag: "runs",
        summary: "One run: its state, its live round and every round it aggregated",
        ok: { 200: jsonBody(served("RunRecord"), "The run.") },
        refusals: { 404: "Unknown run." },
      }),
    ),
    async (c) => {
      const runId = c.req.param("run_id");
      if (!RUN_ID_RE.test(runId)) return unknownRun(c);
      const run = await c.var.shards.visit(shardOfRun(c, runId), (s) => s.getRun(runId));
      return run ? c.json(run) : unknownRun(c);
    },
  )
  .post(
    "/:run_id/cancel",
    describeRoute(
      documented({
        id: "cancelRun",
        tag: "runs",
        summary: "Cancel a run (idempotent): it ends CANCELLED and its live round's job is cancelled",
        description: `A run that already ended is answered as it ended. ${OPERATOR_ONLY}`,
        ok: { 200: jsonBody(served("RunRecord"), "The run.") },
        refusals: { 403: NOT_AN_OPERATOR, 404: "Unknown run." },
      }),
    ),
    async (c) => {
      const refused = requireOperator(c);
      if (refused) return refused;
      const runId = c.req.param("run_id");
      if (!RUN_ID_RE.test(runId)) return unknownRun(c);
      const caller = c.var.caller;
      const by = caller.kind === "operator" ? `cancelled by ${caller.onBehalfOf ?? caller.name}` : "cancelled";
      const run = await c.var.shards.visit(shardOfRun(c, runId), (s) => s.finishRun(runId, "CANCELLED", by));
      // Its live round's job is cancelled with it, which tells its Workflow (src/pool/runs/tell.ts): it ends at once.
      return run ? c.json(run) : unknownRun(c);
    },
  );

function unknownRun(c: AppContext): Response {
  return c.json({ detail: `unknown run ${c.req.param("run_id")}` }, 404);
}

/** The shard a run id names (docs/sharding.md §4.1, as a job id's); shard 0 at one shard. */
function shardOfRun(c: AppContext, runId: string): number {
  return c.var.shards.ofId(runId, "run-");
}

/**
 * Why `run` cannot start, as a 422, or null: its own values must be what
 * the reference reads, and its first round must be a job POST /jobs would
 * take from this caller (src/rules/runs.ts).
 */
function refusal(c: AppContext, run: RunRequest): Response | null {
  const field = (loc: (string | number)[], msg: string) =>
    c.json({ detail: [{ loc: ["body", ...loc], msg, type: "value_error" }] }, 422);
  const own = runProblem(run);
  if (own !== null) return field(own.field, own.message);
  const caller = c.var.caller;
  const input = { weightsUri: null, centroids: run.kind === "sharded_kmeans" ? run.centroids : [] };
  const plan = planRound(
    run,
    "run-000000000000",
    0,
    input,
    "000000000000",
    caller.kind === "operator" ? caller.name : null,
    {
      allowUnsandboxedArgv: c.var.settings.allowUnsandboxedArgv,
      maxWorkerLosses: c.var.settings.maxWorkerLosses,
      enforcing: caller.kind !== "open",
    },
  );
  if (plan.ok) return null;
  if (plan.field !== null) return field(plan.field, plan.problem);
  return c.json({ detail: `run cannot be expanded into jobs: ${plan.problem}` }, 422);
}
