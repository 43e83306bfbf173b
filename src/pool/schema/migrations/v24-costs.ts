// Step 24 of the pool's schema: what a pool costs (docs/protocol.md §16).
// tasks_claim_job indexed a job's pending tasks by class, which steps 16's
// tasks_fresh_job and tasks_replicating_job now split between them: every
// claim walks those two, and the one other reader of a job's pending tasks
// (the placement report's count before a task) seeks tasks_job_state. It
// cost a row on each task's insert and on each change of its state. Bounded
// work on any history: dropping an index frees its pages and reads no row.

import type { Migration } from "./migration";

export const COSTS: readonly Migration[] = [
  {
    id: 24,
    description: "drops tasks_claim_job, which the fresh and replicating indexes of step 16 replaced",
    up: "DROP INDEX tasks_claim_job;",
    down: "CREATE INDEX tasks_claim_job ON tasks (job_id, class_id, seq) WHERE state = 'PENDING';",
  },
];
