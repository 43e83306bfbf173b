// Steps 24 to 27 of the pool's schema: what a pool costs (docs/protocol.md §16).
//
// 24: tasks_claim_job indexed a job's pending tasks by class, which steps 16's
// tasks_fresh_job and tasks_replicating_job now split between them: every
// claim walks those two, and the one other reader of a job's pending tasks
// (the placement report's count before a task) seeks tasks_job_state. It
// cost a row on each task's insert and on each change of its state. Bounded
// work on any history: dropping an index frees its pages and reads no row.
//
// 25: a renewal writes its lease's row and nothing else. The expiry sweep
// and the alarm seek a live lease by when to look at it again (check_ms),
// no longer by its deadline, which a renewal moves: check_ms starts at the
// deadline and moves only when the sweep finds the lease renewed past it,
// about once per lease length. And a renewal is counted on its lease
// (renewals), added to event_counts when the lease ends (the trigger) and
// read with the live leases' count: no tally row per renewal. Work bounded
// by the live leases (at most a few per node), but for the index's build,
// which reads the leases once (steps 15–16 read every task).
//
// 26: a task's insert counted it in five counter rows by trigger, once per
// task: a 10,000-task submission rewrote the same five rows 10,000 times.
// The one place that inserts tasks (src/pool/jobs/tasks.ts addTasks) now
// counts its batch, a statement per counter row, in the same transaction;
// the triggers for a task's change of state and delete stay. Bounded work.
//
// 27: tasks_job_state goes, written at a task's insert and at each change
// of its state: since step 5's counters only a job's cancel (which reads
// the job's tasks by their (job_id, task_id) key instead) and the placement
// report (which counts per class, in the fresh and replicating indexes)
// sought it. A task's lifecycle writes 3 rows fewer. Bounded work.

import type { Migration } from "./migration";

export const COSTS: readonly Migration[] = [
  {
    id: 24,
    description: "drops tasks_claim_job, which the fresh and replicating indexes of step 16 replaced",
    up: "DROP INDEX tasks_claim_job;",
    down: "CREATE INDEX tasks_claim_job ON tasks (job_id, class_id, seq) WHERE state = 'PENDING';",
  },
  {
    id: 25,
    description:
      "a renewal writes one row: leases seek the sweep by check_ms; renewals reach event_counts at the lease's end",
    up: `ALTER TABLE leases ADD COLUMN check_ms INTEGER;
  UPDATE leases SET check_ms = deadline_ms WHERE status = 'live';
  CREATE INDEX leases_live_check ON leases (check_ms) WHERE status = 'live';
  DROP INDEX leases_live_deadline;
  UPDATE event_counts SET n = n - (SELECT TOTAL(renewals) FROM leases WHERE status = 'live')
    WHERE type = 'LEASE_RENEWED';
  CREATE TRIGGER leases_end_renewals AFTER UPDATE OF status ON leases
    WHEN OLD.status = 'live' AND NEW.status <> 'live' AND NEW.renewals > 0 BEGIN
    INSERT INTO event_counts (type, n) VALUES ('LEASE_RENEWED', NEW.renewals)
      ON CONFLICT (type) DO UPDATE SET n = n + excluded.n;
  END;`,
    down: `DROP TRIGGER leases_end_renewals;
  UPDATE event_counts SET n = n + (SELECT TOTAL(renewals) FROM leases WHERE status = 'live')
    WHERE type = 'LEASE_RENEWED';
  CREATE INDEX leases_live_deadline ON leases (deadline_ms) WHERE status = 'live';
  DROP INDEX leases_live_check;
  ALTER TABLE leases DROP COLUMN check_ms;`,
    triggers: {
      leases_end_renewals:
        "docs/protocol.md §16, a renewal writes one row: when a lease stops being live (commit, fail, expiry, cancel), its renewals are added to event_counts' LEASE_RENEWED. TypeScript half: src/pool/leases/leases.ts renew() counts on the lease only, src/pool/reads/metrics.ts adds the live leases' renewals to the tally.",
    },
  },
  {
    id: 26,
    description: "a submission counts its tasks a statement per counter, not a trigger row per task",
    up: "DROP TRIGGER tasks_count_insert; DROP TRIGGER tasks_queue_insert;",
    down: `CREATE TRIGGER tasks_count_insert AFTER INSERT ON tasks BEGIN
    INSERT INTO job_task_counts (job_id, state, n) VALUES (NEW.job_id, NEW.state, 1)
      ON CONFLICT (job_id, state) DO UPDATE SET n = n + 1;
    INSERT INTO task_counts (state, n) VALUES (NEW.state, 1) ON CONFLICT (state) DO UPDATE SET n = n + 1;
    UPDATE classes SET pending = pending + 1 WHERE class_id = NEW.class_id AND NEW.state = 'PENDING';
  END;
  CREATE TRIGGER tasks_queue_insert AFTER INSERT ON tasks WHEN NEW.state = 'PENDING' BEGIN
    INSERT INTO job_queues (job_id, pending) VALUES (NEW.job_id, 1)
      ON CONFLICT (job_id) DO UPDATE SET pending = pending + 1;
    INSERT INTO queue_classes (job_id, class_id, priority, pending)
      VALUES (NEW.job_id, NEW.class_id, (SELECT priority FROM job_queues WHERE job_id = NEW.job_id), 1)
      ON CONFLICT (job_id, class_id) DO UPDATE SET pending = pending + 1;
  END;`,
  },
  {
    id: 27,
    description: "drops tasks_job_state: a job's cancel and the placement report read what they need by other keys",
    up: "DROP INDEX tasks_job_state;",
    down: "CREATE INDEX tasks_job_state ON tasks (job_id, state);",
  },
];
