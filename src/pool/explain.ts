// A task's placement report (SPEC §11): every registered node's gate answer
// for one task, read from the task's stored payload and each node's
// claim-time view. Read-only: it never changes state, and it asks the same
// `explain` the claim path asks, so the report cannot disagree with a claim.

import { type NodePlacement, type QueuePosition, summarizePlacement, waitingSummary } from "../rules/explanations";
import { explain } from "../rules/placement";
import { nodeView } from "./nodes";

export type PlacementReport = {
  job_id: string;
  task_id: string;
  state: string;
  nodes: NodePlacement[];
  unplaceable: boolean;
  summary: string;
  /** A pending task's place in the claim order (SPEC §13); null for any other state. */
  queue: QueuePosition | null;
  /** What a pending task waits for, in words; null for any other state. */
  waiting: string | null;
};

export type PlacementResult =
  | { ok: true; report: PlacementReport }
  | { ok: false; reason: "unknown_job" | "unknown_task" };

export type RegisteredNode = {
  node_id: string;
  registration: string;
  status: string;
  last_heartbeat_ms: number;
  live_until_ms: number;
  held_until_ms: number;
};

/** One node's answer for a payload, given its claim-time view, with its liveness. */
export function placementOn(payload: unknown, node: RegisteredNode, view: unknown, now: number): NodePlacement {
  const online = node.live_until_ms > now;
  const answer = explain(payload, view);
  const base = { node_id: node.node_id, online, status: node.status };
  return answer.eligible
    ? { ...base, eligible: true }
    : { ...base, eligible: false, gate: answer.gate, reason: answer.reason };
}

/** Every registered node, sorted by node_id, judged against the task's payload. */
export function placementReport(sql: SqlStorage, now: number, jobId: string, taskId: string): PlacementResult {
  const task = sql
    .exec<{ seq: number; state: string; payload: string }>(
      "SELECT seq, state, payload FROM tasks WHERE job_id = ? AND task_id = ?",
      jobId,
      taskId,
    )
    .toArray()[0];
  if (!task) {
    const job = sql.exec("SELECT 1 FROM jobs WHERE job_id = ?", jobId).toArray();
    return { ok: false, reason: job.length > 0 ? "unknown_task" : "unknown_job" };
  }
  const payload: unknown = JSON.parse(task.payload);
  const registered = sql
    .exec<RegisteredNode>(
      "SELECT node_id, registration, status, last_heartbeat_ms, live_until_ms, held_until_ms FROM nodes ORDER BY node_id",
    )
    .toArray();
  const nodes = registered.map((node) => placementOn(payload, node, nodeView(node.registration), now));
  const { unplaceable, summary } = summarizePlacement(nodes);
  const heldBack = registered.filter((node, i) => nodes[i]!.eligible && node.held_until_ms > now).length;
  const queue = task.state === "PENDING" ? queuePosition(sql, jobId, task.seq, heldBack) : null;
  return {
    ok: true,
    report: {
      job_id: jobId,
      task_id: taskId,
      state: task.state,
      nodes,
      unplaceable,
      summary,
      queue,
      waiting: queue && waitingSummary(queue),
    },
  };
}

/** Counts what is ahead of a pending task in the claim order, from the policy's tables. */
function queuePosition(sql: SqlStorage, jobId: string, seq: number, heldBack: number): QueuePosition {
  const place = sql
    .exec<{ priority: number; tenant: string }>("SELECT priority, tenant FROM job_queues WHERE job_id = ?", jobId)
    .one();
  const count = (query: string, ...args: (string | number)[]) => sql.exec<{ n: number }>(query, ...args).one().n;
  return {
    ...place,
    higher_priority: count(
      "SELECT TOTAL(pending) AS n FROM job_queues WHERE priority > ? AND pending > 0",
      place.priority,
    ),
    earlier_in_job: count(
      "SELECT COUNT(*) AS n FROM tasks WHERE state = 'PENDING' AND job_id = ? AND seq < ?",
      jobId,
      seq,
    ),
    other_tenants: count(
      "SELECT COUNT(*) AS n FROM tenant_shares WHERE priority = ? AND tenant <> ?",
      place.priority,
      place.tenant,
    ),
    other_jobs: count(
      "SELECT COUNT(*) AS n FROM job_queues WHERE priority = ? AND tenant = ? AND pending > 0 AND job_id <> ?",
      place.priority,
      place.tenant,
      jobId,
    ),
    failed_on: sql
      .exec<{ node_id: string }>("SELECT node_id FROM task_failures WHERE task_seq = ? ORDER BY node_id", seq)
      .toArray()
      .map((r) => r.node_id),
    eligible_held_back: heldBack,
  };
}
