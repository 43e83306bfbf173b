// Job routes (SPEC §6, §7): submission, reads, cancel, and the job's artifacts.

import { Hono } from "hono";
import { randomHex12 } from "../protocol/ids";
import { JobSpecSchema } from "../protocol/jobs";
import { EVENTS_PAGE_DEFAULT, EVENTS_PAGE_MAX } from "../protocol/limits";
import { expandJob } from "../recipes";
import { type AppContext, type AppEnv, queryInt, readJson } from "./context";
import { requireOperator } from "./identity";

export const jobs = new Hono<AppEnv>()
  .post("/", async (c) => {
    const refused = requireOperator(c);
    if (refused) return refused;
    const body = await readJson(c, JobSpecSchema);
    if (!body.ok) return body.response;
    const spec = body.value;
    if (spec.spec.execution.backend !== "leases") {
      return c.json(
        {
          detail: [
            {
              loc: ["body", "spec", "execution", "backend"],
              msg: `this coordinator serves only the lease backend: set spec.execution.backend to "leases" (got "${spec.spec.execution.backend}")`,
              type: "value_error",
            },
          ],
        },
        422,
      );
    }
    const jobId = randomHex12(); // SPEC §3.3: 12 lowercase hex
    const expansion = expandJob(spec, jobId, { allowUnsandboxedArgv: c.env.FLASHML_ALLOW_UNSANDBOXED_ARGV === "1" });
    if (!expansion.ok) return c.json({ detail: `job cannot be expanded: ${expansion.problems.join("; ")}` }, 422);
    return c.json(await c.var.stub.submitJob(jobId, spec, expansion.tasks, c.var.pool), 201);
  })
  .get("/", async (c) => c.json(await c.var.stub.listJobs(c.var.pool)))
  .get("/:job_id", async (c) => {
    const job = await c.var.stub.getJob(c.req.param("job_id"), c.var.pool);
    return job ? c.json(job) : unknownJob(c);
  })
  .get("/:job_id/events", async (c) => {
    const after = queryInt(c, "after", { min: 0 });
    if (!after.ok) return after.response;
    const limit = queryInt(c, "limit", { min: 1, max: EVENTS_PAGE_MAX });
    if (!limit.ok) return limit.response;
    const events = await c.var.stub.jobEvents(
      c.req.param("job_id"),
      after.value ?? 0,
      limit.value ?? EVENTS_PAGE_DEFAULT,
    );
    return events ? c.json(events) : unknownJob(c);
  })
  .get("/:job_id/tasks", async (c) => {
    const tasks = await c.var.stub.jobTasks(c.req.param("job_id"));
    return tasks ? c.json(tasks) : unknownJob(c);
  })
  .post("/:job_id/cancel", async (c) => {
    const refused = requireOperator(c);
    if (refused) return refused;
    const job = await c.var.stub.cancelJob(c.req.param("job_id"), c.var.pool);
    return job ? c.json(job) : unknownJob(c);
  })
  .get("/:job_id/logs", async (c) => {
    // Lease jobs have no backend log; the reference CLI's `logs` calls this.
    const job = await c.var.stub.getJob(c.req.param("job_id"), c.var.pool);
    return job ? c.json({ logs: "" }) : unknownJob(c);
  })
  .get("/:job_id/artifacts", async (c) => c.json(await c.var.stub.listJobArtifacts(c.req.param("job_id"))));

function unknownJob(c: AppContext) {
  return c.json({ detail: `unknown job ${c.req.param("job_id")}` }, 404);
}
