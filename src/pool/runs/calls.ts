// The pool object's hosted-run calls (docs/protocol.md §17). A run lives at
// one shard with all its round jobs: its row says what it is and how it
// ended; each round job's row, what its quorum froze and, once aggregated,
// the round's result. The Workflow driving the run (src/runs/workflow.ts)
// asks here before each step and records each step's outcome here, each
// record written once: a step the Workflow retries finds it written and
// does nothing twice.

import type { JobSpec } from "../../protocol/jobs";
import { replicaPrefix } from "../../protocol/keys";
import { fillPage } from "../../protocol/paging";
import type { RunRequest, RunRound, RunState } from "../../protocol/runs";
import type { TaskSpec } from "../../protocol/tasks";
import { cancelJob, insertJob, type JobPlace } from "../jobs/jobs";
import { iso } from "../ledger/events";
import type { Pool } from "../pool";
import { afterNewWork } from "../shards/exchange";

type RunRow = {
  seq: number;
  run_id: string;
  kind: string;
  request: string;
  operator: string | null;
  state: RunState;
  reason: string | null;
  result_uri: string | null;
  created_ms: number;
  finished_ms: number | null;
};

type RoundRow = {
  job_id: string;
  run_id: string;
  round: number;
  quorum: number;
  frozen: string | null;
  ended: string | null;
  result: string | null;
};

/** A run as GET /runs/{id} answers it. */
export type RunRecord = ReturnType<typeof runRecord>;

/** Records a new run, RUNNING; false when the id is already used here (the caller mints another). */
export function createRun(pool: Pool, runId: string, request: RunRequest, operator: string | null, name: string) {
  return pool.change((now) => {
    pool.sql.exec("INSERT INTO pool_name (name) SELECT ? WHERE NOT EXISTS (SELECT 1 FROM pool_name)", name);
    const inserted = pool.sql.exec(
      "INSERT INTO runs (run_id, kind, request, operator, created_ms) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
      runId,
      request.kind,
      JSON.stringify(request),
      operator,
      now,
    ).rowsWritten;
    return inserted > 0 ? runRecord(pool.sql, findRun(pool.sql, runId)!) : null;
  });
}

export function getRun(pool: Pool, runId: string) {
  const row = findRun(pool.sql, runId);
  return row ? runRecord(pool.sql, row) : null;
}

/** One page of this shard's runs after the run with number `after`. */
export function listRuns(pool: Pool, after: number, limit: number, maxBytes: number) {
  const rows = pool.sql.exec<RunRow>("SELECT * FROM runs WHERE seq > ? ORDER BY seq LIMIT ?", after, limit);
  const { items, last } = fillPage(rows, maxBytes, (row) => runRecord(pool.sql, row));
  const more =
    last !== undefined && pool.sql.exec("SELECT 1 FROM runs WHERE seq > ? LIMIT 1", last.seq).toArray().length > 0;
  return { items, next: more ? last.seq : null };
}

/**
 * Ends a RUNNING run `state` (SUCCEEDED, FAILED, CANCELLED) with `reason`
 * and its last result; a run that ended already is left as it ended. A run
 * that did not succeed has its live round cancelled with it.
 */
export function finishRun(
  pool: Pool,
  runId: string,
  state: Exclude<RunState, "RUNNING">,
  reason: string | null,
  resultUri: string | null = null,
) {
  return pool.change(
    (now) => {
      const ended = pool.sql.exec(
        `UPDATE runs SET state = ?, reason = ?, result_uri = COALESCE(?, result_uri), finished_ms = ?
           WHERE run_id = ? AND state = 'RUNNING'`,
        state,
        reason,
        resultUri,
        now,
        runId,
      ).rowsWritten;
      if (ended > 0 && state !== "SUCCEEDED") {
        for (const { job_id } of pool.sql
          .exec<{ job_id: string }>("SELECT job_id FROM run_rounds WHERE run_id = ? AND result IS NULL", runId)
          .toArray())
          cancelJob(pool.sql, now, job_id);
      }
      const row = findRun(pool.sql, runId);
      return row ? runRecord(pool.sql, row) : null;
    },
    { wakesClaims: true },
  );
}

/** What a run's Workflow reads before each step: the run as accepted, and whether it still runs. */
export function runToDrive(pool: Pool, runId: string): RunToDrive | null {
  const row = findRun(pool.sql, runId);
  return row ? { request: JSON.parse(row.request) as RunRequest, state: row.state, operator: row.operator } : null;
}

export type SubmittedRound =
  | { ok: true; jobId: string }
  | { ok: false; reason: "job_id_taken" }
  | { ok: false; reason: "not_running"; state: RunState | null };

/**
 * Round `round` of the run as job `jobId` (its tasks expanded by the
 * caller), with the quorum that ends it; or the round's job already
 * submitted, whatever `jobId` was asked (a Workflow step retried after it
 * wrote: a round is never submitted twice).
 */
export async function submitRound(
  pool: Pool,
  runId: string,
  round: number,
  quorum: number,
  jobId: string,
  spec: JobSpec,
  tasks: TaskSpec[],
  place: JobPlace,
): Promise<SubmittedRound> {
  const submitted = await pool.change((now): SubmittedRound => {
    const known = roundOf(pool.sql, runId, round);
    if (known !== undefined) return { ok: true, jobId: known.job_id };
    const run = findRun(pool.sql, runId);
    if (run?.state !== "RUNNING") return { ok: false, reason: "not_running", state: run?.state ?? null };
    if (!insertJob(pool.sql, now, jobId, spec, tasks, place)) return { ok: false, reason: "job_id_taken" };
    pool.sql.exec(
      "INSERT INTO run_rounds (job_id, run_id, round, quorum) VALUES (?, ?, ?, ?)",
      jobId,
      runId,
      round,
      quorum,
    );
    return { ok: true, jobId };
  });
  if (submitted.ok && pool.shards > 1) await afterNewWork(pool);
  return submitted;
}

/** Where a round stands: its job, the participants its quorum froze, how its job ended short, its result. */
export type RoundState = {
  jobId: string;
  quorum: number;
  frozen: string[] | null;
  ended: string | null;
  committed: number;
  result: RunRound | null;
  /**
   * Once frozen, where each participant's accepted outputs lie: its task's
   * prefix, or for a replicated task the prefix of the replica the verdict
   * accepted (docs/protocol.md §14: the task's key is bound to that
   * replica's metrics, its other files stay under the replica's prefix).
   */
  prefixes: Record<string, string> | null;
};

export type RunToDrive = { request: RunRequest; state: RunState; operator: string | null };

export function roundState(pool: Pool, runId: string, round: number): RoundState | null {
  const row = roundOf(pool.sql, runId, round);
  if (row === undefined) return null;
  const job = pool.sql
    .exec<{ completed: number; state: string | null }>(
      `SELECT q.completed, j.terminal_state AS state FROM job_queues q JOIN jobs j USING (job_id) WHERE q.job_id = ?`,
      row.job_id,
    )
    .toArray()[0];
  return {
    jobId: row.job_id,
    quorum: row.quorum,
    frozen: row.frozen === null ? null : (JSON.parse(row.frozen) as string[]),
    prefixes: row.frozen === null ? null : acceptedPrefixes(pool.sql, row.job_id),
    ended: row.ended,
    committed: job?.completed ?? 0,
    result: row.result === null ? null : (JSON.parse(row.result) as RunRound),
  };
}

/** Records round `round`'s result once; a second record of it changes nothing. */
export function recordRound(pool: Pool, runId: string, round: number, result: RunRound) {
  return pool.change(
    () =>
      pool.sql.exec(
        "UPDATE run_rounds SET result = ? WHERE run_id = ? AND round = ? AND result IS NULL",
        JSON.stringify(result),
        runId,
        round,
      ).rowsWritten > 0,
  );
}

/** Marks the rounds the run has been told of (src/pool/runs/tell.ts). */
export function told(pool: Pool, jobIds: string[]) {
  return pool.change(() => {
    for (const jobId of jobIds) pool.sql.exec("UPDATE run_rounds SET told = 1 WHERE job_id = ?", jobId);
  });
}

function acceptedPrefixes(sql: SqlStorage, jobId: string): Record<string, string> {
  const rows = sql
    .exec<{ task_id: string; replica: number | null }>(
      `SELECT t.task_id, r.replica FROM tasks t
         LEFT JOIN replica_results r ON r.task_seq = t.seq AND r.object = t.accepted_object AND r.verdict = 'valid'
         WHERE t.job_id = ? AND t.state = 'COMPLETED'`,
      jobId,
    )
    .toArray();
  return Object.fromEntries(
    rows.map((t) => [
      t.task_id,
      t.replica === null ? `jobs/${jobId}/${t.task_id}/` : replicaPrefix(jobId, t.task_id, t.replica),
    ]),
  );
}

function findRun(sql: SqlStorage, runId: string): RunRow | undefined {
  return sql.exec<RunRow>("SELECT * FROM runs WHERE run_id = ?", runId).toArray()[0];
}

function roundOf(sql: SqlStorage, runId: string, round: number): RoundRow | undefined {
  return sql.exec<RoundRow>("SELECT * FROM run_rounds WHERE run_id = ? AND round = ?", runId, round).toArray()[0];
}

function runRecord(sql: SqlStorage, row: RunRow) {
  const request = JSON.parse(row.request) as RunRequest;
  const rounds = sql.exec<RoundRow>("SELECT * FROM run_rounds WHERE run_id = ? ORDER BY round", row.run_id).toArray();
  const history = rounds.flatMap((r) => (r.result === null ? [] : [JSON.parse(r.result) as RunRound]));
  const live = rounds.find((r) => r.result === null && r.ended === null && row.state === "RUNNING");
  return {
    run_id: row.run_id,
    kind: row.kind,
    state: row.state,
    reason: row.reason,
    rounds: request.kind === "federated_averaging" ? request.rounds : request.iterations,
    rounds_completed: history.length,
    live_round:
      live === undefined
        ? null
        : { round: live.round, job_id: live.job_id, quorum: live.quorum, frozen: live.frozen !== null },
    result_uri: row.result_uri,
    created_at: iso(row.created_ms),
    finished_at: row.finished_ms === null ? null : iso(row.finished_ms),
    started_by: row.operator,
    request,
    history,
  };
}
