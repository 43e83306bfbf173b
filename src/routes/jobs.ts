// Job routes (docs/protocol.md §6, §7, §12): submission, reads (the list paged, the
// whole ledger streamed, an archived job's from its archive), cancel, and
// the job's artifacts.

import { Hono } from "hono";
import { describeRoute } from "hono-openapi";
import { archiveOf, type JobArchive } from "../archive/reader";
import { JobSpecSchema } from "../protocol/jobs";
import { EVENTS_PAGE_DEFAULT, EVENTS_PAGE_MAX, EVENTS_STREAM_PAGE } from "../protocol/limits";
import {
  badPage,
  documented,
  jsonBody,
  list,
  NOT_AN_OPERATOR,
  OPERATOR_ONLY,
  PAGED,
  pageOf,
  pageParameters,
  query,
  request,
  served,
  validation,
} from "../protocol/openapi-operations";
import { decodeArtifactCursor, encodeArtifactCursor, jobShardCursor } from "../protocol/paging";
import { expandJob } from "../recipes";
import { jobPriority, jobTenant } from "../rules/scheduling";
import { jobReplication, replicatedCheckpoints, replicationWithoutIdentities } from "../rules/verification";
import { type AppContext, type AppEnv, pagedList, queryInt, readJson, shardedList } from "./context";
import { requireOperator, viewerOf } from "./identity";

/** Fresh job ids tried before a submission is refused (48 random bits: a retry is already rare). */
const JOB_ID_ATTEMPTS = 5;

export const jobs = new Hono<AppEnv>()
  .post(
    "/",
    describeRoute(
      documented({
        id: "submitJob",
        tag: "jobs",
        summary: "Submit a job: it expands into tasks, all queued or none",
        description: `Only \`spec.execution.backend: leases\` is served. ${OPERATOR_ONLY}`,
        body: request("JobSpec"),
        ok: { 201: jsonBody(served("JobRecord"), "Accepted: every task is queued.") },
        refusals: {
          403: NOT_AN_OPERATOR,
          422: jsonBody(
            { anyOf: [served("HTTPValidationError"), served("Refusal")] },
            "The spec does not fit its schema or names another backend (a `{loc, msg, type}` list), or cannot be expanded into tasks (one message listing every problem).",
          ),
          503: "Every fresh job id tried was already used in the pool: nothing was queued, submit again.",
        },
      }),
    ),
    async (c) => {
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
      const caller = c.var.caller;
      const priority = jobPriority(spec.metadata.labels);
      const tenant = jobTenant(spec.metadata.labels, caller.kind === "operator" ? caller.name : null);
      const replication = jobReplication(spec.metadata.labels);
      const unverifiable = replication.ok
        ? replicationWithoutIdentities(replication.value, caller.kind !== "open")
        : null;
      if (!priority.ok || !tenant.ok || !replication.ok || unverifiable !== null) {
        const problems = [priority, tenant, replication].flatMap((r) => (r.ok ? [] : [r.problem]));
        if (unverifiable !== null) problems.push(unverifiable);
        return c.json({ detail: `job cannot be scheduled: ${problems.join("; ")}` }, 422);
      }
      const place = { priority: priority.value, tenant: tenant.value, replication: replication.value };
      const options = {
        allowUnsandboxedArgv: c.var.settings.allowUnsandboxedArgv,
        maxWorkerLosses: c.var.settings.maxWorkerLosses,
      };
      // The job is judged whole before any shard is asked for a slot, so a
      // refused spec costs no object a request. A job id the pool already
      // has is refused by the object; mint another (docs/protocol.md §12).
      // Its tasks carry the id, so each id tried is expanded anew.
      const expand = (jobId: string) => {
        const expansion = expandJob(spec, jobId, options);
        if (!expansion.ok) return c.json({ detail: `job cannot be expanded: ${expansion.problems.join("; ")}` }, 422);
        const unverifiable = replicatedCheckpoints(place.replication, expansion.tasks);
        if (unverifiable) return c.json({ detail: `job cannot be scheduled: ${unverifiable}` }, 422);
        return expansion.tasks;
      };
      let jobId = c.var.shards.newId(0); // docs/protocol.md §3.3: 12 lowercase hex
      let tasks = expand(jobId);
      if (tasks instanceof Response) return tasks;
      const { shard, reservation } = await c.var.shards.place(tasks.length);
      for (let attempt = 0; attempt < JOB_ID_ATTEMPTS; attempt++) {
        if (attempt > 0 || shard !== 0) {
          jobId = c.var.shards.newId(shard);
          tasks = expand(jobId);
          if (tasks instanceof Response) return tasks;
        }
        const [id, queued] = [jobId, tasks];
        const submitted = await c.var.shards.visit(shard, async (s) =>
          s.submitJob(id, spec, queued, c.var.pool, place, reservation),
        );
        if (submitted.ok) return c.json(submitted.job, 201);
      }
      return c.json(
        { detail: `no unused job id found in ${JOB_ID_ATTEMPTS} tries; nothing was queued: submit the job again` },
        503,
      );
    },
  )
  .get(
    "/",
    describeRoute(
      documented({
        id: "listJobs",
        tag: "jobs",
        summary: "The pool's jobs",
        description: PAGED,
        parameters: pageParameters,
        ok: { 200: pageOf(served("JobRecord"), "A page of the jobs, oldest first.") },
        refusals: { 422: badPage },
      }),
    ),
    (c) =>
      shardedList(c, jobShardCursor(c.var.shards.count), async (shard, after, limit, maxBytes) =>
        c.var.shards.visit(shard, async (s) => s.listJobs(c.var.pool, after ?? 0, limit, viewerOf(c), maxBytes)),
      ),
  )
  .get(
    "/:job_id",
    describeRoute(
      documented({
        id: "getJob",
        tag: "jobs",
        summary: "One job, its state derived from its tasks",
        ok: { 200: jsonBody(served("JobRecord"), "The job.") },
        refusals: { 404: "Unknown job." },
      }),
    ),
    async (c) => {
      const job = await c.var.shards.job(c.req.param("job_id"), async (s) =>
        s.getJob(c.req.param("job_id"), c.var.pool, viewerOf(c)),
      );
      if (job === "archived") return c.json(await archiveOf(c, jobIdOf(c)).job());
      return job ? c.json(job) : unknownJob(c);
    },
  )
  .get(
    "/:job_id/events",
    describeRoute(
      documented({
        id: "listJobEvents",
        tag: "jobs",
        summary: "A job's event ledger, in order, paged by each event's `seq`",
        description:
          "With neither `after` nor `limit`, the whole ledger as one JSON array, streamed (as the reference CLI reads it). With either, one page: `after` defaults to 0 and `limit` to " +
          `${EVENTS_PAGE_DEFAULT}; the next page is \`after\` = the last event's \`seq\`.`,
        parameters: [
          query("after", "Only events with a greater `seq`. Given alone, pages by the default `limit`.", {
            type: "integer",
            minimum: 0,
            default: 0,
          }),
          query(
            "limit",
            `Events per page: ${EVENTS_PAGE_DEFAULT} when only \`after\` is given; every event when neither is.`,
            { type: "integer", minimum: 1, maximum: EVENTS_PAGE_MAX },
          ),
        ],
        ok: { 200: jsonBody(list(served("Event")), "The page of events, or with no query every event.") },
        refusals: {
          404: "Unknown job.",
          422: validation(`\`after\` or \`limit\` is not an integer in range (limit ≤ ${EVENTS_PAGE_MAX}).`),
        },
      }),
    ),
    async (c) => {
      const after = queryInt(c, "after", { min: 0 });
      if (!after.ok) return after.response;
      const limit = queryInt(c, "limit", { min: 1, max: EVENTS_PAGE_MAX });
      if (!limit.ok) return limit.response;
      const jobId = c.req.param("job_id");
      // The ledger comes from the pool, or from the archive once the pool says
      // the job is archived (then it stays archived: archiving is final).
      let archive: JobArchive | null = null;
      const read = async (after: number, limit: number) => {
        if (archive) return archive.events(after, limit);
        const events = await c.var.shards.job(jobId, async (s) => s.jobEvents(jobId, after, limit, viewerOf(c)));
        if (events !== "archived") return events;
        archive = archiveOf(c, jobId);
        return archive.events(after, limit);
      };
      if (after.value === null && limit.value === null) {
        // The whole ledger, as the reference CLI reads it (docs/protocol.md §6). The first
        // page decides the status before any byte is sent; a ledger that fits
        // in it is answered as is, a longer one streamed a page at a time.
        const first = await read(0, EVENTS_STREAM_PAGE);
        if (!first) return unknownJob(c);
        if (first.length < EVENTS_STREAM_PAGE) return c.json(first);
        const rest = (seq: number) => read(seq, EVENTS_STREAM_PAGE);
        return c.body(ledgerStream(first, rest, c.req.path), 200, { "content-type": "application/json" });
      }
      const events = await read(after.value ?? 0, limit.value ?? EVENTS_PAGE_DEFAULT);
      return events ? c.json(events) : unknownJob(c);
    },
  )
  .get(
    "/:job_id/tasks",
    describeRoute(
      documented({
        id: "listJobTasks",
        tag: "jobs",
        summary: "A job's tasks: state, attempts, node and live deadline",
        ok: { 200: jsonBody(list(served("TaskRow")), "One row per task, sorted by task_id.") },
        refusals: { 404: "Unknown job." },
      }),
    ),
    async (c) => {
      const tasks = await c.var.shards.job(c.req.param("job_id"), async (s) =>
        s.jobTasks(c.req.param("job_id"), viewerOf(c)),
      );
      if (tasks === "archived") return c.json(await archiveOf(c, jobIdOf(c)).tasks());
      return tasks ? c.json(tasks) : unknownJob(c);
    },
  )
  .post(
    "/:job_id/cancel",
    describeRoute(
      documented({
        id: "cancelJob",
        tag: "jobs",
        summary: "Cancel a job (idempotent): its live leases die",
        description: OPERATOR_ONLY,
        ok: { 200: jsonBody(served("JobRecord"), "The job, cancelled.") },
        refusals: { 403: NOT_AN_OPERATOR, 404: "Unknown job." },
      }),
    ),
    async (c) => {
      const refused = requireOperator(c);
      if (refused) return refused;
      const job = await c.var.shards.job(c.req.param("job_id"), async (s) =>
        s.cancelJob(c.req.param("job_id"), c.var.pool),
      );
      // Cancelling a finished job changes nothing and answers it; so for an archived one.
      if (job === "archived") return c.json(await archiveOf(c, jobIdOf(c)).job());
      return job ? c.json(job) : unknownJob(c);
    },
  )
  .get(
    "/:job_id/logs",
    describeRoute(
      documented({
        id: "getJobLogs",
        tag: "jobs",
        summary: "A job's backend log (always empty: lease jobs have none)",
        ok: { 200: jsonBody(served("JobLogs"), "The log.") },
        refusals: { 404: "Unknown job." },
      }),
    ),
    async (c) => {
      // Lease jobs have no backend log; the reference CLI's `logs` calls this.
      const job = await c.var.shards.job(c.req.param("job_id"), async (s) =>
        s.getJob(c.req.param("job_id"), c.var.pool, viewerOf(c)),
      );
      return job ? c.json({ logs: "" }) : unknownJob(c);
    },
  )
  .get(
    "/:job_id/artifacts",
    describeRoute(
      documented({
        id: "listJobArtifacts",
        tag: "jobs",
        summary: "The artifacts under `jobs/{job_id}/`",
        description: `${PAGED} To a node, another replica's outputs before the task's verdict are left out (a page may then hold fewer than \`limit\`).`,
        parameters: pageParameters,
        ok: { 200: pageOf(served("JobArtifact"), "A page of the artifacts, sorted by key; empty for an unknown job.") },
        refusals: { 422: badPage },
      }),
    ),
    (c) =>
      // A page at a time, live or archived (docs/protocol.md §12); the archive holds no sealed keys (every task ended).
      pagedList(c, { decode: decodeArtifactCursor, encode: encodeArtifactCursor }, async (after, limit) => {
        const page = await c.var.shards.job(jobIdOf(c), async (s) =>
          s.listJobArtifacts(jobIdOf(c), after, limit, viewerOf(c)),
        );
        return page === "archived" ? archiveOf(c, jobIdOf(c)).artifacts(after, limit) : page;
      }),
  );

function jobIdOf(c: AppContext): string {
  return c.req.param("job_id")!;
}

function unknownJob(c: AppContext) {
  return c.json({ detail: `no such job: ${c.req.param("job_id")}` }, 404);
}

/**
 * A JSON array of every event, written page by page as the client reads:
 * `first`, then each page after the last seq served, until a page comes
 * back short. The bytes are those of `JSON.stringify(allEvents)`; the
 * Worker holds one page at a time. The 200 is already sent, so a failure
 * mid-way errors the body: the client sees it cut short, never a
 * well-formed list missing events.
 */
function ledgerStream<E extends { seq: number }>(
  first: readonly E[],
  rest: (after: number) => Promise<readonly E[] | null>,
  path: string,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let page = first;
  let opened = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk = opened ? "" : "[";
      for (const event of page) {
        chunk += `${opened ? "," : ""}${JSON.stringify(event)}`;
        opened = true;
      }
      if (page.length < EVENTS_STREAM_PAGE) {
        controller.enqueue(encoder.encode(`${chunk}]`));
        controller.close();
        return;
      }
      controller.enqueue(encoder.encode(chunk));
      try {
        const next = await rest(page[page.length - 1]!.seq);
        if (next === null) throw new Error("the job disappeared while its ledger was streamed");
        page = next;
      } catch (err) {
        console.error(JSON.stringify({ level: "error", path, error: String(err) }));
        controller.error(err);
      }
    },
  });
}
