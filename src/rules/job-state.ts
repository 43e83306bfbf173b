// A job's state follows from its tasks' states (docs/protocol.md §6); this is that rule,
// pure. The pool object counts, this decides.

import type { JobState } from "../protocol/jobs";
import { TASK_STATES, type TaskState } from "../protocol/tasks";

export type TaskCounts = Record<TaskState, number>;

/** Zero tasks in every state. */
export function emptyTaskCounts(): TaskCounts {
  return Object.fromEntries(TASK_STATES.map((s) => [s, 0])) as TaskCounts;
}

/** docs/protocol.md §6: the job state that follows from its task counts. */
export function deriveJobState(c: TaskCounts): JobState {
  const total = c.PENDING + c.LEASED + c.COMPLETED + c.FAILED + c.CANCELLED;
  if (total === 0) return "PENDING";
  if (c.PENDING + c.LEASED > 0) return "RUNNING";
  if (c.FAILED > 0) return "FAILED";
  if (c.COMPLETED === total) return "SUCCEEDED";
  return "CANCELLED";
}
