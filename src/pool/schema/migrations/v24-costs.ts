// Steps 24 to 28 of the pool's schema: what a pool costs (docs/protocol.md §16).
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
//
// 28: a task's change of state wrote seven counter rows: its job's count in
// the old state and the new (job_task_counts), the pool's two
// (task_counts), its class's, its (job, class)'s and its job's pending
// count. The per-state counts now live as columns, a job's in its queue row
// (job_queues, which already counted its pending tasks) and the pool's in
// one row (pool_task_counts): one row each per change, four for a claim, two
// for a commit. The same trigger keeps them all. Work bounded by the jobs:
// each queue row is filled from its job's counters once.

import type { Migration } from "./migration";

/** Step 28's count triggers; `classLines` are its class counter's (step 35 takes them out, src/pool/schema/migrations/v30-fewer-rows.ts). */
export const countTriggers = (classLines: { state: string; delete: string }) =>
  `${countStateTrigger(classLines.state)}
  ${countDeleteTrigger(classLines.delete)}`;

/** Step 28's trigger counting a task's change of state (step 39 makes its own). */
export const countStateTrigger = (
  classLines: string,
) => `CREATE TRIGGER tasks_count_state AFTER UPDATE OF state ON tasks WHEN OLD.state <> NEW.state BEGIN
    UPDATE job_queues SET pending = pending + (NEW.state = 'PENDING') - (OLD.state = 'PENDING'),
        leased = leased + (NEW.state = 'LEASED') - (OLD.state = 'LEASED'),
        completed = completed + (NEW.state = 'COMPLETED') - (OLD.state = 'COMPLETED'),
        failed = failed + (NEW.state = 'FAILED') - (OLD.state = 'FAILED'),
        cancelled = cancelled + (NEW.state = 'CANCELLED') - (OLD.state = 'CANCELLED')
      WHERE job_id = NEW.job_id AND (OLD.state = 'PENDING') <> (NEW.state = 'PENDING');
    UPDATE job_queues SET leased = leased + (NEW.state = 'LEASED') - (OLD.state = 'LEASED'),
        completed = completed + (NEW.state = 'COMPLETED') - (OLD.state = 'COMPLETED'),
        failed = failed + (NEW.state = 'FAILED') - (OLD.state = 'FAILED'),
        cancelled = cancelled + (NEW.state = 'CANCELLED') - (OLD.state = 'CANCELLED')
      WHERE job_id = NEW.job_id AND (OLD.state = 'PENDING') = (NEW.state = 'PENDING');
    UPDATE pool_task_counts SET pending = pending + (NEW.state = 'PENDING') - (OLD.state = 'PENDING'),
        leased = leased + (NEW.state = 'LEASED') - (OLD.state = 'LEASED'),
        completed = completed + (NEW.state = 'COMPLETED') - (OLD.state = 'COMPLETED'),
        failed = failed + (NEW.state = 'FAILED') - (OLD.state = 'FAILED'),
        cancelled = cancelled + (NEW.state = 'CANCELLED') - (OLD.state = 'CANCELLED');${classLines}
    UPDATE queue_classes SET pending = pending + IIF(NEW.state = 'PENDING', 1, -1)
      WHERE job_id = NEW.job_id AND class_id = NEW.class_id AND (OLD.state = 'PENDING') <> (NEW.state = 'PENDING');
  END;`;

/** Step 28's trigger counting a task's delete; `when` its condition (step 38 adds one). */
export const countDeleteTrigger = (
  classLines: string,
  when = "",
) => `CREATE TRIGGER tasks_count_delete AFTER DELETE ON tasks${when} BEGIN
    UPDATE job_queues SET pending = pending - (OLD.state = 'PENDING'),
        leased = leased - (OLD.state = 'LEASED'),
        completed = completed - (OLD.state = 'COMPLETED'),
        failed = failed - (OLD.state = 'FAILED'),
        cancelled = cancelled - (OLD.state = 'CANCELLED')
      WHERE job_id = OLD.job_id AND OLD.state = 'PENDING';
    UPDATE job_queues SET leased = leased - (OLD.state = 'LEASED'),
        completed = completed - (OLD.state = 'COMPLETED'),
        failed = failed - (OLD.state = 'FAILED'),
        cancelled = cancelled - (OLD.state = 'CANCELLED')
      WHERE job_id = OLD.job_id AND OLD.state <> 'PENDING';
    UPDATE pool_task_counts SET pending = pending - (OLD.state = 'PENDING'),
        leased = leased - (OLD.state = 'LEASED'),
        completed = completed - (OLD.state = 'COMPLETED'),
        failed = failed - (OLD.state = 'FAILED'),
        cancelled = cancelled - (OLD.state = 'CANCELLED');${classLines}
    UPDATE queue_classes SET pending = pending - 1
      WHERE job_id = OLD.job_id AND class_id = OLD.class_id AND OLD.state = 'PENDING';
  END;`;
export const CLASS_COUNT_LINES_28 = {
  state: `
    UPDATE classes SET pending = pending - 1 WHERE class_id = OLD.class_id AND OLD.state = 'PENDING';
    UPDATE classes SET pending = pending + 1 WHERE class_id = NEW.class_id AND NEW.state = 'PENDING';`,
  delete: `
    UPDATE classes SET pending = pending - 1 WHERE class_id = OLD.class_id AND OLD.state = 'PENDING';`,
};

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
  {
    id: 28,
    description: "a task's counts by state kept per change: its job's in its queue row, the pool's in one row",
    up: `ALTER TABLE job_queues ADD COLUMN leased INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE job_queues ADD COLUMN completed INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE job_queues ADD COLUMN failed INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE job_queues ADD COLUMN cancelled INTEGER NOT NULL DEFAULT 0;
  INSERT INTO job_queues (job_id) SELECT DISTINCT job_id FROM job_task_counts
    WHERE job_id NOT IN (SELECT job_id FROM job_queues);
  UPDATE job_queues SET
    leased = COALESCE((SELECT n FROM job_task_counts c WHERE c.job_id = job_queues.job_id AND c.state = 'LEASED'), 0),
    completed = COALESCE((SELECT n FROM job_task_counts c WHERE c.job_id = job_queues.job_id AND c.state = 'COMPLETED'), 0),
    failed = COALESCE((SELECT n FROM job_task_counts c WHERE c.job_id = job_queues.job_id AND c.state = 'FAILED'), 0),
    cancelled = COALESCE((SELECT n FROM job_task_counts c WHERE c.job_id = job_queues.job_id AND c.state = 'CANCELLED'), 0);
  CREATE TABLE pool_task_counts (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    pending INTEGER NOT NULL, leased INTEGER NOT NULL, completed INTEGER NOT NULL,
    failed INTEGER NOT NULL, cancelled INTEGER NOT NULL
  );
  INSERT INTO pool_task_counts (one, pending, leased, completed, failed, cancelled) SELECT 1,
    COALESCE((SELECT n FROM task_counts WHERE state = 'PENDING'), 0),
    COALESCE((SELECT n FROM task_counts WHERE state = 'LEASED'), 0),
    COALESCE((SELECT n FROM task_counts WHERE state = 'COMPLETED'), 0),
    COALESCE((SELECT n FROM task_counts WHERE state = 'FAILED'), 0),
    COALESCE((SELECT n FROM task_counts WHERE state = 'CANCELLED'), 0);
  DROP TRIGGER tasks_count_state;
  DROP TRIGGER tasks_queue_state;
  DROP TRIGGER tasks_count_delete;
  DROP TRIGGER tasks_queue_delete;
  DROP TABLE job_task_counts;
  DROP TABLE task_counts;
  ${countTriggers(CLASS_COUNT_LINES_28)}`,
    down: `DROP TRIGGER tasks_count_state;
  DROP TRIGGER tasks_count_delete;
  CREATE TABLE job_task_counts (
    job_id TEXT NOT NULL, state TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (job_id, state)
  );
  INSERT INTO job_task_counts (job_id, state, n)
    SELECT job_id, 'PENDING', pending FROM job_queues WHERE pending <> 0
    UNION ALL SELECT job_id, 'LEASED', leased FROM job_queues WHERE leased <> 0
    UNION ALL SELECT job_id, 'COMPLETED', completed FROM job_queues WHERE completed <> 0
    UNION ALL SELECT job_id, 'FAILED', failed FROM job_queues WHERE failed <> 0
    UNION ALL SELECT job_id, 'CANCELLED', cancelled FROM job_queues WHERE cancelled <> 0;
  CREATE TABLE task_counts (state TEXT PRIMARY KEY, n INTEGER NOT NULL);
  INSERT INTO task_counts (state, n)
    SELECT 'PENDING', pending FROM pool_task_counts UNION ALL SELECT 'LEASED', leased FROM pool_task_counts
    UNION ALL SELECT 'COMPLETED', completed FROM pool_task_counts UNION ALL SELECT 'FAILED', failed FROM pool_task_counts
    UNION ALL SELECT 'CANCELLED', cancelled FROM pool_task_counts;
  DROP TABLE pool_task_counts;
  ALTER TABLE job_queues DROP COLUMN leased;
  ALTER TABLE job_queues DROP COLUMN completed;
  ALTER TABLE job_queues DROP COLUMN failed;
  ALTER TABLE job_queues DROP COLUMN cancelled;
  CREATE TRIGGER tasks_count_delete AFTER DELETE ON tasks BEGIN
    UPDATE job_task_counts SET n = n - 1 WHERE job_id = OLD.job_id AND state = OLD.state;
    UPDATE task_counts SET n = n - 1 WHERE state = OLD.state;
    UPDATE classes SET pending = pending - 1 WHERE class_id = OLD.class_id AND OLD.state = 'PENDING';
  END;
  CREATE TRIGGER tasks_count_state AFTER UPDATE OF state ON tasks WHEN OLD.state <> NEW.state BEGIN
    UPDATE job_task_counts SET n = n - 1 WHERE job_id = OLD.job_id AND state = OLD.state;
    INSERT INTO job_task_counts (job_id, state, n) VALUES (NEW.job_id, NEW.state, 1)
      ON CONFLICT (job_id, state) DO UPDATE SET n = n + 1;
    UPDATE task_counts SET n = n - 1 WHERE state = OLD.state;
    INSERT INTO task_counts (state, n) VALUES (NEW.state, 1) ON CONFLICT (state) DO UPDATE SET n = n + 1;
    UPDATE classes SET pending = pending - 1 WHERE class_id = OLD.class_id AND OLD.state = 'PENDING';
    UPDATE classes SET pending = pending + 1 WHERE class_id = NEW.class_id AND NEW.state = 'PENDING';
  END;
  CREATE TRIGGER tasks_queue_delete AFTER DELETE ON tasks WHEN OLD.state = 'PENDING' BEGIN
    UPDATE queue_classes SET pending = pending - 1 WHERE job_id = OLD.job_id AND class_id = OLD.class_id;
    UPDATE job_queues SET pending = pending - 1 WHERE job_id = OLD.job_id;
  END;
  CREATE TRIGGER tasks_queue_state AFTER UPDATE OF state ON tasks
    WHEN (OLD.state = 'PENDING') <> (NEW.state = 'PENDING') BEGIN
    UPDATE queue_classes SET pending = pending + IIF(NEW.state = 'PENDING', 1, -1)
      WHERE job_id = NEW.job_id AND class_id = NEW.class_id;
    UPDATE job_queues SET pending = pending + IIF(NEW.state = 'PENDING', 1, -1) WHERE job_id = NEW.job_id;
  END;`,
    triggers: {
      tasks_count_state:
        "docs/protocol.md §12, counters not scans, and §16, a row per counter per change: in the same transaction as a task's change of state, its job's counts by state (job_queues: pending and the others, one row), the pool's (pool_task_counts, one row), its class's pending count (classes) and its (job, class)'s (queue_classes). TypeScript half: src/pool/jobs/jobs.ts taskCounts and poolTaskCounts read the counts (a job's state and the pool's totals), src/pool/jobs/tasks.ts countAdded counts a submission's tasks, src/pool/scheduling/scheduling.ts walks job_queues, queue_classes and classes for the claim (docs/protocol.md §13 rules 1 and 2).",
      tasks_count_delete:
        "docs/protocol.md §12, counters not scans: a task's delete (archiving its job) takes it out of the same counts as tasks_count_state, in the same transaction. TypeScript half: src/pool/alarm/archive.ts deletes an archived job's tasks, then its queue row.",
    },
  },
];
