// A task's placement report (SPEC §11): every registered node's gate answer
// for one task, read from the task's stored payload and each node's
// claim-time view. Read-only: it never changes state, and it asks the same
// `explain` the claim path asks, so the report cannot disagree with a claim.

import { type NodePlacement, summarizePlacement } from "../rules/explanations";
import { explain } from "../rules/placement";
import { nodeView } from "./nodes";

export type PlacementReport = {
  job_id: string;
  task_id: string;
  state: string;
  nodes: NodePlacement[];
  unplaceable: boolean;
  summary: string;
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
    .exec<{ state: string; payload: string }>(
      "SELECT state, payload FROM tasks WHERE job_id = ? AND task_id = ?",
      jobId,
      taskId,
    )
    .toArray()[0];
  if (!task) {
    const job = sql.exec("SELECT 1 FROM jobs WHERE job_id = ?", jobId).toArray();
    return { ok: false, reason: job.length > 0 ? "unknown_task" : "unknown_job" };
  }
  const payload: unknown = JSON.parse(task.payload);
  const nodes = sql
    .exec<RegisteredNode>(
      "SELECT node_id, registration, status, last_heartbeat_ms, live_until_ms FROM nodes ORDER BY node_id",
    )
    .toArray()
    .map((node) => placementOn(payload, node, nodeView(node.registration), now));
  const { unplaceable, summary } = summarizePlacement(nodes);
  return { ok: true, report: { job_id: jobId, task_id: taskId, state: task.state, nodes, unplaceable, summary } };
}
