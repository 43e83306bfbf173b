// Steps 9-10 of the pool's schema: the scheduling policy of docs/protocol.md §13. Its
// triggers keep the queues' pending counts and the tenants' shares in the
// transaction of every change to a task; the claim that reads them and
// advances the passes is src/pool/scheduling.ts. The schema as a whole:
// src/pool/schema.sql.

import type { Migration } from "./migration";

/** The note of a trigger keeping the queues' pending counts, in the transaction of `change`. */
const queueCounts = (change: string, also = "") =>
  `docs/protocol.md §13 rules 1 and 2 (priority, then fair share): keeps job_queues.pending and queue_classes.pending, the pending tasks per job and per (job, class), in the same transaction as ${change}${also}, so a claim finds the jobs holding work a node may take by index. TypeScript half: src/pool/scheduling.ts pickTask walks those rows (POLICY_SQL.level, firstJob, jobs); src/pool/jobs.ts creates the job's queue with its priority and tenant (src/rules/scheduling.ts jobPriority, jobTenant).`;
/** The note of a trigger keeping the tenants' shares: what it does. */
const fairShare = (does: string) =>
  `docs/protocol.md §13 rule 2 (fair share, no banked turns): ${does} TypeScript half: src/pool/scheduling.ts useTurn advances the passes a granted claim uses (1 for the job, 1/weight for its tenant, weights from src/rules/scheduling.ts tenantWeights) and pickTask orders by them; src/pool/placement-report.ts reads the shares for the placement report.`;

// Step 9's trigger counting a task's insert, as step 10 found it (its down puts it back).
const TASKS_QUEUE_INSERT_9 = `  CREATE TRIGGER tasks_queue_insert AFTER INSERT ON tasks WHEN NEW.state = 'PENDING' BEGIN
    INSERT INTO queue_classes (job_id, class_id, pending) VALUES (NEW.job_id, NEW.class_id, 1)
      ON CONFLICT (job_id, class_id) DO UPDATE SET pending = pending + 1;
    INSERT INTO job_queues (job_id, pending) VALUES (NEW.job_id, 1)
      ON CONFLICT (job_id) DO UPDATE SET pending = pending + 1;
  END;`;

export const SCHEDULING: readonly Migration[] = [
  // 9: the scheduling policy (docs/protocol.md §13). Each job's queue carries its
  // priority, tenant and pass (claims granted to it, the stride scheduler's
  // clock); a tenant's share at a priority carries the tenant's pass. Pending
  // counts per job and per (job, class) are kept by triggers like step 5's;
  // a job whose count leaves 0 catches its pass up to its tenant's other
  // active jobs, and its tenant's share (a row only while it has active
  // jobs) starts at the lowest pass at its priority, so nothing idle banks
  // turns. Jobs queued before this step keep priority 0 and tenant
  // 'default'. Backfilled from the pending tasks (the partial index) and the
  // live leases only, never from history; a task's insert creates its rows.
  {
    id: 9,
    description:
      "the scheduling policy: job queues, tenant shares, task failures, held-back nodes (docs/protocol.md §13)",
    up: `
  CREATE TABLE job_queues (
    job_id TEXT PRIMARY KEY,
    priority INTEGER NOT NULL DEFAULT 0,
    tenant TEXT NOT NULL DEFAULT 'default',
    pass REAL NOT NULL DEFAULT 0,         -- claims granted to the job (its turns within its tenant)
    turn INTEGER NOT NULL DEFAULT 0,      -- when it last got one: at equal pass, the longest waiting goes first
    pending INTEGER NOT NULL DEFAULT 0,
    worker_losses INTEGER NOT NULL DEFAULT 0
  );
  CREATE INDEX job_queues_next ON job_queues (priority, tenant, pass, turn) WHERE pending > 0;
  CREATE TABLE queue_classes (
    job_id TEXT NOT NULL, class_id INTEGER NOT NULL, pending INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job_id, class_id)
  ) WITHOUT ROWID;
  CREATE INDEX queue_classes_pending ON queue_classes (class_id, job_id) WHERE pending > 0;
  CREATE TABLE tenant_shares (
    priority INTEGER NOT NULL,
    tenant TEXT NOT NULL,
    pass REAL NOT NULL DEFAULT 0,         -- claims granted, each 1/weight
    turn INTEGER NOT NULL DEFAULT 0,
    active INTEGER NOT NULL DEFAULT 0,    -- its jobs at this priority with pending tasks
    PRIMARY KEY (priority, tenant)
  );
  CREATE INDEX tenant_shares_next ON tenant_shares (priority, pass, turn, tenant);

  -- Who failed which task (fail, rejected output, expiry): its retry goes elsewhere.
  CREATE TABLE task_failures (
    task_seq INTEGER NOT NULL, node_id TEXT NOT NULL, PRIMARY KEY (task_seq, node_id)
  ) WITHOUT ROWID;
  ALTER TABLE tasks ADD COLUMN worker_losses INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE tasks ADD COLUMN max_worker_losses INTEGER NOT NULL DEFAULT 0; -- 0: an expiry uses an attempt
  ALTER TABLE nodes ADD COLUMN consecutive_failures INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE nodes ADD COLUMN held_until_ms INTEGER NOT NULL DEFAULT 0;

  INSERT INTO job_queues (job_id, pending) SELECT job_id, COUNT(*) FROM tasks WHERE state = 'PENDING' GROUP BY job_id;
  INSERT INTO queue_classes (job_id, class_id, pending)
    SELECT job_id, class_id, COUNT(*) FROM tasks WHERE state = 'PENDING' GROUP BY job_id, class_id;
  -- Leased tasks may come back: their queues exist too (found through the live leases).
  INSERT OR IGNORE INTO job_queues (job_id)
    SELECT t.job_id FROM leases l JOIN tasks t ON t.seq = l.task_seq WHERE l.status = 'live';
  INSERT OR IGNORE INTO queue_classes (job_id, class_id)
    SELECT t.job_id, t.class_id FROM leases l JOIN tasks t ON t.seq = l.task_seq WHERE l.status = 'live';
  INSERT INTO tenant_shares (priority, tenant, active)
    SELECT 0, 'default', COUNT(*) FROM job_queues HAVING COUNT(*) > 0;

${TASKS_QUEUE_INSERT_9}
  -- A task's rows exist from its insert (or the backfill above): plain updates, the cheapest form.
  CREATE TRIGGER tasks_queue_state AFTER UPDATE OF state ON tasks
    WHEN (OLD.state = 'PENDING') <> (NEW.state = 'PENDING') BEGIN
    UPDATE queue_classes SET pending = pending + IIF(NEW.state = 'PENDING', 1, -1)
      WHERE job_id = NEW.job_id AND class_id = NEW.class_id;
    UPDATE job_queues SET pending = pending + IIF(NEW.state = 'PENDING', 1, -1) WHERE job_id = NEW.job_id;
  END;
  CREATE TRIGGER tasks_queue_delete AFTER DELETE ON tasks WHEN OLD.state = 'PENDING' BEGIN
    UPDATE queue_classes SET pending = pending - 1 WHERE job_id = OLD.job_id AND class_id = OLD.class_id;
    UPDATE job_queues SET pending = pending - 1 WHERE job_id = OLD.job_id;
  END;

  CREATE TRIGGER job_queues_activate_insert AFTER INSERT ON job_queues WHEN NEW.pending > 0 BEGIN
    INSERT INTO tenant_shares (priority, tenant, pass, active)
      VALUES (NEW.priority, NEW.tenant,
              COALESCE((SELECT MIN(s.pass) FROM tenant_shares s WHERE s.priority = NEW.priority), 0), 1)
      ON CONFLICT (priority, tenant) DO UPDATE SET active = active + 1;
  END;
  CREATE TRIGGER job_queues_activate AFTER UPDATE OF pending ON job_queues
    WHEN OLD.pending <= 0 AND NEW.pending > 0 BEGIN
    UPDATE job_queues SET pass = MAX(pass, COALESCE((SELECT MIN(q.pass) FROM job_queues q
        WHERE q.priority = NEW.priority AND q.tenant = NEW.tenant AND q.pending > 0 AND q.job_id <> NEW.job_id), 0))
      WHERE job_id = NEW.job_id;
    INSERT INTO tenant_shares (priority, tenant, pass, active)
      VALUES (NEW.priority, NEW.tenant,
              COALESCE((SELECT MIN(s.pass) FROM tenant_shares s WHERE s.priority = NEW.priority), 0), 1)
      ON CONFLICT (priority, tenant) DO UPDATE SET active = active + 1;
  END;
  CREATE TRIGGER job_queues_deactivate AFTER UPDATE OF pending ON job_queues
    WHEN OLD.pending > 0 AND NEW.pending <= 0 BEGIN
    UPDATE tenant_shares SET active = active - 1 WHERE priority = NEW.priority AND tenant = NEW.tenant;
    DELETE FROM tenant_shares WHERE priority = NEW.priority AND tenant = NEW.tenant AND active <= 0;
  END;
  CREATE TRIGGER job_queues_delete AFTER DELETE ON job_queues WHEN OLD.pending > 0 BEGIN
    UPDATE tenant_shares SET active = active - 1 WHERE priority = OLD.priority AND tenant = OLD.tenant;
    DELETE FROM tenant_shares WHERE priority = OLD.priority AND tenant = OLD.tenant AND active <= 0;
  END;
  `,
    down: `DROP TRIGGER tasks_queue_insert; DROP TRIGGER tasks_queue_state; DROP TRIGGER tasks_queue_delete;
      DROP TRIGGER job_queues_activate_insert; DROP TRIGGER job_queues_activate; DROP TRIGGER job_queues_deactivate;
      DROP TRIGGER job_queues_delete;
      DROP TABLE job_queues; DROP INDEX queue_classes_pending; DROP TABLE queue_classes; DROP TABLE tenant_shares; DROP TABLE task_failures;
      ALTER TABLE tasks DROP COLUMN worker_losses; ALTER TABLE tasks DROP COLUMN max_worker_losses;
      ALTER TABLE nodes DROP COLUMN consecutive_failures; ALTER TABLE nodes DROP COLUMN held_until_ms;`,
    triggers: {
      tasks_queue_insert: queueCounts("a task's insert", " (replaced by migration 10's)"),
      tasks_queue_state: queueCounts("a task's move into or out of PENDING"),
      tasks_queue_delete: queueCounts("a pending task's delete"),
      job_queues_activate_insert: fairShare(
        "a job queue created with pending work makes its tenant active at its priority; a tenant new there starts at the lowest pass at that priority.",
      ),
      job_queues_activate: fairShare(
        "a job whose pending count leaves 0 catches its pass up to the lowest of its tenant's other active jobs, and makes its tenant active at its priority (a tenant new there starts at the lowest pass at that priority), so nothing idle banks turns.",
      ),
      job_queues_deactivate: fairShare(
        "a job whose pending count reaches 0 leaves its tenant's share; a share with no active job is deleted, so an idle tenant banks no turns.",
      ),
      job_queues_delete: fairShare(
        "a job queue deleted while it counts pending work (src/pool/archive.ts deletes an archived job's queue) leaves its tenant's share; a share with no active job is deleted.",
      ),
    },
  },
  // 10: a job's requirement classes carry its priority, so the highest
  // priority holding work a node may take is one index seek per class the
  // node accepts (docs/protocol.md §13), never a walk over the jobs of the levels above.
  // A job's priority never changes; its classes copy it when inserted.
  {
    id: 10,
    description:
      "a job's requirement classes carry its priority: one seek per class finds the highest level (docs/protocol.md §13)",
    up: `
  ALTER TABLE queue_classes ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
  UPDATE queue_classes SET priority = (SELECT q.priority FROM job_queues q WHERE q.job_id = queue_classes.job_id)
    WHERE job_id IN (SELECT job_id FROM job_queues WHERE priority <> 0);
  DROP INDEX queue_classes_pending;
  CREATE INDEX queue_classes_level ON queue_classes (class_id, priority) WHERE pending > 0;
  DROP TRIGGER tasks_queue_insert;
  CREATE TRIGGER tasks_queue_insert AFTER INSERT ON tasks WHEN NEW.state = 'PENDING' BEGIN
    INSERT INTO job_queues (job_id, pending) VALUES (NEW.job_id, 1)
      ON CONFLICT (job_id) DO UPDATE SET pending = pending + 1;
    INSERT INTO queue_classes (job_id, class_id, priority, pending)
      VALUES (NEW.job_id, NEW.class_id, (SELECT priority FROM job_queues WHERE job_id = NEW.job_id), 1)
      ON CONFLICT (job_id, class_id) DO UPDATE SET pending = pending + 1;
  END;
  `,
    down: `DROP TRIGGER tasks_queue_insert; DROP INDEX queue_classes_level; ALTER TABLE queue_classes DROP COLUMN priority;
  CREATE INDEX queue_classes_pending ON queue_classes (class_id, job_id) WHERE pending > 0;
${TASKS_QUEUE_INSERT_9}`,
    triggers: {
      tasks_queue_insert: queueCounts(
        "a task's insert",
        ", and copies the job's priority into its queue_classes row (rule 1: one seek per class the node accepts finds the highest level)",
      ),
    },
  },
];
