// A job's state follows from its tasks' states (docs/protocol.md §6); this is that rule,
// pure. The pool object counts, this decides.

import type { JobState } from "../protocol/jobs";
import { TASK_STATES, type TaskState } from "../protocol/tasks";
import { OPEN_TASK_STATES } from "./task-states";

export type TaskCounts = Record<TaskState, number>;

/** Zero tasks in every state. */
export function emptyTaskCounts(): TaskCounts {
  return Object.fromEntries(TASK_STATES.map((s) => [s, 0])) as TaskCounts;
}

/** docs/protocol.md §6: the job state that follows from its task counts. */
export function deriveJobState(c: TaskCounts): JobState {
  const total = TASK_STATES.reduce((sum, s) => sum + c[s], 0);
  if (total === 0) return "PENDING";
  if (OPEN_TASK_STATES.some((s) => c[s] > 0)) return "RUNNING";
  if (c.FAILED > 0) return "FAILED";
  if (c.COMPLETED === total) return "SUCCEEDED";
  return "CANCELLED";
}
