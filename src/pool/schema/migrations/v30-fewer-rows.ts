// Steps 30 on of the pool's schema: fewer rows written per task
// (docs/protocol.md §16). Each drops what a request paid for on every
// task and what a cheaper path now keeps. Bounded work on any history.

import type { Migration } from "./migration";
import { CLASS_COUNT_LINES_28, countDeleteTrigger, countStateTrigger, countTriggers } from "./v24-costs";

/** The note of a trigger keeping the tenants' shares (as step 9's): what it does. */
const fairShare = (does: string) =>
  `docs/protocol.md §13 rule 2 (fair share, no banked turns): ${does} TypeScript half: src/pool/scheduling/scheduling.ts useTurn advances the passes a granted claim uses (1 for the job, 1/weight for its tenant, weights from src/rules/scheduling.ts tenantWeights) and pickTask orders by them; src/pool/reads/placement-report.ts reads the shares for the placement report.`;
/** The note of a trigger keeping a table's `queued` flag. */
const queued = (table: string, index: string) =>
  `docs/protocol.md §16, rows written: ${table}.queued is 1 exactly while its pending count is above 0, written only when the count crosses 0, so ${index} (which reads the flag) is not rewritten by every change of the count. TypeScript half: the claim (src/pool/scheduling/scheduling.ts) and the reads (src/pool/reads/) select queued rows by it; test/invariants/check.ts holds the flag to the count.`;

/** The note of a trigger keeping a (job, class) queue's flag and its class's count of queued jobs. */
const classQueued = (does: string) =>
  `docs/protocol.md §16, rows written: ${does} so neither queue_classes_level nor classes_queued (which read the flags) is rewritten by every change of a count. TypeScript half: the claim (src/pool/scheduling/scheduling.ts) and the reads (src/pool/reads/) select queued rows by the flags; src/pool/reads/fleet.ts sums a class's pending tasks over its queued jobs; test/invariants/check.ts holds the flags and counts to the tasks.`;

const JOB_QUEUES_TRIGGERS_9 = `CREATE TRIGGER job_queues_activate AFTER UPDATE OF pending ON job_queues
    WHEN OLD.pending <= 0 AND NEW.pending > 0 BEGIN
    UPDATE job_queues SET pass = MAX(pass, COALESCE((SELECT MIN(q.pass) FROM job_queues q
        WHERE q.priority = NEW.priority AND q.tenant = NEW.tenant AND q.pending > 0 AND q.job_id <> NEW.job_id), 0))
      WHERE job_id = NEW.job_id;
    INSERT INTO tenant_shares (priority, tenant, pass, active)
      VALUES (NEW.priority, NEW.tenant,
              COALESCE((SELECT MIN(s.pass) FROM tenant_shares s WHERE s.priority = NEW.priority), 0), 1)
      ON CONFLICT (priority, tenant) DO UPDATE SET active = active + 1;
  END;
  CREATE TRIGGER job_queues_activate_insert AFTER INSERT ON job_queues WHEN NEW.pending > 0 BEGIN
    INSERT INTO tenant_shares (priority, tenant, pass, active)
      VALUES (NEW.priority, NEW.tenant,
              COALESCE((SELECT MIN(s.pass) FROM tenant_shares s WHERE s.priority = NEW.priority), 0), 1)
      ON CONFLICT (priority, tenant) DO UPDATE SET active = active + 1;
  END;
  CREATE TRIGGER job_queues_deactivate AFTER UPDATE OF pending ON job_queues
    WHEN OLD.pending > 0 AND NEW.pending <= 0 BEGIN
    UPDATE tenant_shares SET active = active - 1 WHERE priority = NEW.priority AND tenant = NEW.tenant;
    DELETE FROM tenant_shares WHERE priority = NEW.priority AND tenant = NEW.tenant AND active <= 0;
  END;`;

/** Step 33's triggers of the job queues' flag. */
const JOB_QUEUES_TRIGGERS_33 = `CREATE TRIGGER job_queues_activate AFTER UPDATE OF pending ON job_queues
    WHEN OLD.pending <= 0 AND NEW.pending > 0 BEGIN
    UPDATE job_queues SET queued = 1, pass = MAX(pass, COALESCE((SELECT MIN(q.pass) FROM job_queues q
        WHERE q.priority = NEW.priority AND q.tenant = NEW.tenant AND q.queued = 1 AND q.job_id <> NEW.job_id), 0))
      WHERE job_id = NEW.job_id;
    INSERT INTO tenant_shares (priority, tenant, pass, active)
      VALUES (NEW.priority, NEW.tenant,
              COALESCE((SELECT MIN(s.pass) FROM tenant_shares s WHERE s.priority = NEW.priority), 0), 1)
      ON CONFLICT (priority, tenant) DO UPDATE SET active = active + 1;
  END;
  CREATE TRIGGER job_queues_activate_insert AFTER INSERT ON job_queues WHEN NEW.pending > 0 BEGIN
    UPDATE job_queues SET queued = 1 WHERE job_id = NEW.job_id;
    INSERT INTO tenant_shares (priority, tenant, pass, active)
      VALUES (NEW.priority, NEW.tenant,
              COALESCE((SELECT MIN(s.pass) FROM tenant_shares s WHERE s.priority = NEW.priority), 0), 1)
      ON CONFLICT (priority, tenant) DO UPDATE SET active = active + 1;
  END;
  CREATE TRIGGER job_queues_deactivate AFTER UPDATE OF pending ON job_queues
    WHEN OLD.pending > 0 AND NEW.pending <= 0 BEGIN
    UPDATE job_queues SET queued = 0 WHERE job_id = NEW.job_id;
    UPDATE tenant_shares SET active = active - 1 WHERE priority = NEW.priority AND tenant = NEW.tenant;
    DELETE FROM tenant_shares WHERE priority = NEW.priority AND tenant = NEW.tenant AND active <= 0;
  END;`;
/** Step 33's trigger of a class's flag (step 35 drops it). */
const CLASSES_QUEUED_33 = `CREATE TRIGGER classes_queued AFTER UPDATE OF pending ON classes
    WHEN (OLD.pending > 0) <> (NEW.pending > 0) BEGIN
    UPDATE classes SET queued = NEW.pending > 0 WHERE class_id = NEW.class_id;
  END;`;
/** Step 33's triggers of a (job, class) queue's flag (step 35 makes them count the class's queued jobs). */
const QUEUE_CLASSES_TRIGGERS_33 = `CREATE TRIGGER queue_classes_queued AFTER UPDATE OF pending ON queue_classes
    WHEN (OLD.pending > 0) <> (NEW.pending > 0) BEGIN
    UPDATE queue_classes SET queued = NEW.pending > 0 WHERE job_id = NEW.job_id AND class_id = NEW.class_id;
  END;
  CREATE TRIGGER queue_classes_queued_insert AFTER INSERT ON queue_classes WHEN NEW.pending > 0 BEGIN
    UPDATE queue_classes SET queued = 1 WHERE job_id = NEW.job_id AND class_id = NEW.class_id;
  END;`;
const QUEUED_TRIGGERS = `${JOB_QUEUES_TRIGGERS_33}
  ${CLASSES_QUEUED_33}
  ${QUEUE_CLASSES_TRIGGERS_33}`;

/** Step 20's trigger telling a foreign node's home that its lease here ended; `ends` is its condition on the new status. */
const tellHome = (ends: string) => `CREATE TRIGGER leases_end_tell_home AFTER UPDATE OF status ON leases
    WHEN OLD.status = 'live' AND ${ends} BEGIN
    INSERT INTO outbox (to_shard, kind, body, created_ms)
      SELECT p.home, 'outcome', json_object('node_id', p.node_id, 'outcome', 'seen', 'at', p.last_request_ms,
          'until', COALESCE((SELECT MAX(l.deadline_ms) FROM leases l WHERE l.node_id = p.node_id AND l.status = 'live'), 0),
          'ended', 1), p.last_request_ms
        FROM passports p WHERE p.node_id = NEW.node_id;
  END;`;

/** `text` with `from` replaced by `to`; throws where `from` is absent, so a changed trigger text cannot slip by. */
function replaced(text: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`schema step text not found: ${from}`);
  return text.replace(from, to);
}

/** Step 39's count trigger: step 28's, but for a claim's PENDING → LEASED, whose job counts useTurn writes. */
const CLAIMED_APART = replaced(
  countStateTrigger(""),
  "WHERE job_id = NEW.job_id AND (OLD.state = 'PENDING') <> (NEW.state = 'PENDING');",
  "WHERE job_id = NEW.job_id AND (OLD.state = 'PENDING') <> (NEW.state = 'PENDING')\n        AND NOT (OLD.state = 'PENDING' AND NEW.state = 'LEASED');",
);

/** The task count columns, a job's (job_queues) and the pool's (pool_task_counts). */
const COUNT_COLUMNS = ["pending", "leased", "completed", "failed", "cancelled"];

/** Step 40's condition on the pool's counts: a task of a running job is not in them (a finished job's is). */
const NOT_RUNNING = (job: string) =>
  `WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE job_id = ${job}.job_id AND terminal_state IS NULL)`;

/** Step 40's count triggers: step 39's and step 38's, the pool's counts for no running job's task. */
const NOT_RUNNING_STATE = replaced(
  CLAIMED_APART,
  "cancelled = cancelled + (NEW.state = 'CANCELLED') - (OLD.state = 'CANCELLED');",
  `cancelled = cancelled + (NEW.state = 'CANCELLED') - (OLD.state = 'CANCELLED')\n      ${NOT_RUNNING("NEW")};`,
);
const NOT_RUNNING_DELETE = replaced(
  countDeleteTrigger("", " WHEN EXISTS (SELECT 1 FROM job_queues WHERE job_id = OLD.job_id)"),
  "cancelled = cancelled - (OLD.state = 'CANCELLED');",
  `cancelled = cancelled - (OLD.state = 'CANCELLED')\n      ${NOT_RUNNING("OLD")};`,
);

/** Step 40: a job's queue counts move into the pool's when it finishes (out, should it ever run again). */
const JOBS_POOL_COUNTS = `CREATE TRIGGER jobs_pool_counts AFTER UPDATE OF terminal_state ON jobs
    WHEN (OLD.terminal_state IS NULL) <> (NEW.terminal_state IS NULL) BEGIN
    UPDATE pool_task_counts SET ${COUNT_COLUMNS.map(
      (c) =>
        `${c} = ${c} + IIF(NEW.terminal_state IS NULL, -1, 1) * COALESCE((SELECT ${c} FROM job_queues WHERE job_id = NEW.job_id), 0)`,
    ).join(",\n        ")};
  END;`;

/** Step 40's migration of the pool's counts: the running jobs' tasks leave them (or come back). */
const runningJobs = (sign: string) =>
  COUNT_COLUMNS.map(
    (c) =>
      `${c} = ${c} ${sign} (SELECT COALESCE(SUM(q.${c}), 0) FROM jobs j JOIN job_queues q ON q.job_id = j.job_id WHERE (j.terminal_state IS NULL) = 1)`,
  ).join(",\n    ");

export const FEWER_ROWS: readonly Migration[] = [
  // 30: a lease's end no longer writes its node's row. A node that ended a
  // lease by a request (commit, fail) was just seen: soft liveness writes its
  // row down once it goes silent (src/pool/nodes/registry.ts settleLiveness),
  // as for any other request. A lease that ends with no request from its node
  // (an expiry, a revocation) writes it down then (registry.ts lostLease).
  {
    id: 30,
    description: "a lease's end writes its node's row only when the node made no request (expiry, revocation)",
    up: "DROP TRIGGER leases_end_liveness;",
    down: `CREATE TRIGGER leases_end_liveness AFTER UPDATE OF status ON leases
    WHEN OLD.status = 'live' AND NEW.status <> 'live' BEGIN
    UPDATE nodes SET live_until_ms = MAX(last_heartbeat_ms + 15000, COALESCE(
        (SELECT MAX(l.deadline_ms) FROM leases l WHERE l.node_id = NEW.node_id AND l.status = 'live'), 0))
      WHERE node_id = NEW.node_id;
  END;`,
  },
  // 31: a renewal is counted in memory when it is made (src/pool/ledger/tally.ts), as every
  // event is, so a lease's end no longer adds its renewals to event_counts: the live
  // leases' renewals so far are added now, once.
  {
    id: 31,
    description: "renewals are tallied when made, in memory with every event, not at the lease's end",
    up: `DROP TRIGGER leases_end_renewals;
  INSERT INTO event_counts (type, n)
    SELECT 'LEASE_RENEWED', SUM(renewals) FROM leases WHERE status = 'live' HAVING SUM(renewals) > 0
    ON CONFLICT (type) DO UPDATE SET n = n + excluded.n;`,
    down: `UPDATE event_counts SET n = n - (SELECT TOTAL(renewals) FROM leases WHERE status = 'live')
    WHERE type = 'LEASE_RENEWED';
  CREATE TRIGGER leases_end_renewals AFTER UPDATE OF status ON leases
    WHEN OLD.status = 'live' AND NEW.status <> 'live' AND NEW.renewals > 0 BEGIN
    INSERT INTO event_counts (type, n) VALUES ('LEASE_RENEWED', NEW.renewals)
      ON CONFLICT (type) DO UPDATE SET n = n + excluded.n;
  END;`,
  },
  // 32: drops tasks_claim, a pending task's index by class: a row when a task is queued and one
  // when it is claimed, for two reads (the stuck tasks, the demand's earliest classes) that now
  // seek each (job, class) of the class in the job indexes the claim uses (src/pool/reads/
  // placement-report.ts classHeadSql).
  {
    id: 32,
    description: "drops tasks_claim: a class's earliest pending task is sought per job in the claim's own indexes",
    up: "DROP INDEX tasks_claim;",
    down: "CREATE INDEX tasks_claim ON tasks (class_id, seq) WHERE state = 'PENDING';",
  },
  // 33: the queue indexes' condition is a flag written when a count crosses 0, not the count.
  // An index whose condition reads a column the statement sets is rewritten (a row billed) by
  // every change of that column, and job_queues_next, classes_pending and queue_classes_level
  // all read `pending > 0`: three rows on every claim and requeue for an answer that changes
  // only when a queue fills or empties. Now each reads `queued = 1`, which triggers set on
  // those crossings only. O(jobs + classes) over any history.
  {
    id: 33,
    description: "queue indexes read a flag set when a pending count crosses 0, not the count each claim changes",
    up: `ALTER TABLE job_queues ADD COLUMN queued INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE classes ADD COLUMN queued INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE queue_classes ADD COLUMN queued INTEGER NOT NULL DEFAULT 0;
  UPDATE job_queues SET queued = 1 WHERE pending > 0;
  UPDATE classes SET queued = 1 WHERE pending > 0;
  UPDATE queue_classes SET queued = 1 WHERE pending > 0;
  DROP INDEX job_queues_next;
  DROP INDEX classes_pending;
  DROP INDEX queue_classes_level;
  CREATE INDEX job_queues_next ON job_queues (priority, tenant, pass, turn) WHERE queued = 1;
  CREATE INDEX classes_queued ON classes (class_id) WHERE queued = 1;
  CREATE INDEX queue_classes_level ON queue_classes (class_id, priority) WHERE queued = 1;
  DROP TRIGGER job_queues_activate;
  DROP TRIGGER job_queues_activate_insert;
  DROP TRIGGER job_queues_deactivate;
  ${QUEUED_TRIGGERS}`,
    down: `DROP TRIGGER job_queues_activate;
  DROP TRIGGER job_queues_activate_insert;
  DROP TRIGGER job_queues_deactivate;
  DROP TRIGGER classes_queued;
  DROP TRIGGER queue_classes_queued;
  DROP TRIGGER queue_classes_queued_insert;
  DROP INDEX job_queues_next;
  DROP INDEX classes_queued;
  DROP INDEX queue_classes_level;
  ALTER TABLE job_queues DROP COLUMN queued;
  ALTER TABLE classes DROP COLUMN queued;
  ALTER TABLE queue_classes DROP COLUMN queued;
  CREATE INDEX job_queues_next ON job_queues (priority, tenant, pass, turn) WHERE pending > 0;
  CREATE INDEX classes_pending ON classes (class_id) WHERE pending > 0;
  CREATE INDEX queue_classes_level ON queue_classes (class_id, priority) WHERE pending > 0;
  ${JOB_QUEUES_TRIGGERS_9}`,
    triggers: {
      job_queues_activate: fairShare(
        "a job whose pending count leaves 0 is queued (job_queues_next), catches its pass up to the lowest of its tenant's other queued jobs, and makes its tenant active at its priority (a tenant new there starts at the lowest pass at that priority), so nothing idle banks turns.",
      ),
      job_queues_activate_insert: fairShare(
        "a job queue created with pending work is queued (job_queues_next) and makes its tenant active at its priority; a tenant new there starts at the lowest pass at that priority.",
      ),
      job_queues_deactivate: fairShare(
        "a job whose pending count reaches 0 is no longer queued (job_queues_next) and leaves its tenant's share; a share with no active job is deleted, so an idle tenant banks no turns.",
      ),
      classes_queued: queued("classes", "classes_queued"),
      queue_classes_queued: queued("queue_classes", "queue_classes_level"),
      queue_classes_queued_insert: queued("queue_classes", "queue_classes_level"),
    },
  },
  // 34: an upload streaming is recorded in a table of its own, keyed by its object and with no
  // other index: a row written when it starts and one deleted at its bind, where a row of
  // `unreferenced` cost three to write (its row, its key, its due index) and one to delete.
  // Uploads recorded before this step stay in `unreferenced`, bindable there as before.
  {
    id: 34,
    description: "an upload streaming is a row of uploads, keyed by its object alone: two rows an upload, not four",
    up: `CREATE TABLE uploads (
    object TEXT PRIMARY KEY,
    started_ms INTEGER NOT NULL
  ) WITHOUT ROWID;`,
    down: `INSERT INTO unreferenced (object, collect_after_ms) SELECT object, started_ms + 3600000 FROM uploads WHERE true
    ON CONFLICT (object) DO NOTHING;
  DROP TABLE uploads;`,
  },
  // 35: a class counts its queued jobs, not its pending tasks. A claim or requeue changed the
  // class's count (a row written) though only whether the class holds work is read on the claim's
  // path; the jobs' own counts (queue_classes) say how many wait, summed when the demand is read.
  // Now the class's row is written when one of its (job, class) queues fills or empties.
  // O(classes + queued (job, class) pairs) over any history.
  {
    id: 35,
    description: "a class counts its queued (job, class) pairs, written when one fills or empties, not per task",
    up: `DROP TRIGGER tasks_count_state;
  DROP TRIGGER tasks_count_delete;
  DROP TRIGGER classes_queued;
  DROP TRIGGER queue_classes_queued;
  DROP TRIGGER queue_classes_queued_insert;
  ALTER TABLE classes RENAME COLUMN pending TO queued_jobs;
  UPDATE classes SET queued_jobs = (SELECT COUNT(*) FROM queue_classes q WHERE q.class_id = classes.class_id AND q.queued = 1)
    WHERE true;
  ${countTriggers({ state: "", delete: "" })}
  CREATE TRIGGER queue_classes_queued AFTER UPDATE OF pending ON queue_classes
    WHEN (OLD.pending > 0) <> (NEW.pending > 0) BEGIN
    UPDATE queue_classes SET queued = NEW.pending > 0 WHERE job_id = NEW.job_id AND class_id = NEW.class_id;
    UPDATE classes SET queued_jobs = queued_jobs + IIF(NEW.pending > 0, 1, -1),
        queued = queued_jobs + IIF(NEW.pending > 0, 1, -1) > 0
      WHERE class_id = NEW.class_id;
  END;
  CREATE TRIGGER queue_classes_queued_insert AFTER INSERT ON queue_classes WHEN NEW.pending > 0 BEGIN
    UPDATE queue_classes SET queued = 1 WHERE job_id = NEW.job_id AND class_id = NEW.class_id;
    UPDATE classes SET queued_jobs = queued_jobs + 1, queued = 1 WHERE class_id = NEW.class_id;
  END;
  CREATE TRIGGER queue_classes_queued_delete AFTER DELETE ON queue_classes WHEN OLD.queued = 1 BEGIN
    UPDATE classes SET queued_jobs = queued_jobs - 1, queued = queued_jobs > 1 WHERE class_id = OLD.class_id;
  END;`,
    down: `DROP TRIGGER tasks_count_state;
  DROP TRIGGER tasks_count_delete;
  DROP TRIGGER queue_classes_queued;
  DROP TRIGGER queue_classes_queued_insert;
  DROP TRIGGER queue_classes_queued_delete;
  ALTER TABLE classes RENAME COLUMN queued_jobs TO pending;
  UPDATE classes SET pending = (SELECT TOTAL(q.pending) FROM queue_classes q WHERE q.class_id = classes.class_id)
    WHERE true;
  ${countTriggers(CLASS_COUNT_LINES_28)}
  ${CLASSES_QUEUED_33}
  ${QUEUE_CLASSES_TRIGGERS_33}`,
    triggers: {
      tasks_count_state:
        "docs/protocol.md §12, counters not scans, and §16, a row per counter per change: in the same transaction as a task's change of state, its job's counts by state (job_queues: pending and the others, one row), the pool's (pool_task_counts, one row) and its (job, class)'s pending count (queue_classes). TypeScript half: src/pool/jobs/jobs.ts taskCounts and poolTaskCounts read the counts (a job's state and the pool's totals), src/pool/jobs/tasks.ts countAdded counts a submission's tasks, src/pool/scheduling/scheduling.ts walks job_queues, queue_classes and classes for the claim (docs/protocol.md §13 rules 1 and 2), src/pool/reads/fleet.ts sums a class's pending tasks over its queued jobs.",
      tasks_count_delete:
        "docs/protocol.md §12, counters not scans: a task's delete (archiving its job) takes it out of the same counts as tasks_count_state, in the same transaction. TypeScript half: src/pool/alarm/archive.ts deletes an archived job's tasks, then its queue row.",
      queue_classes_queued: classQueued(
        "queue_classes.queued is 1 exactly while its pending count is above 0, written only when the count crosses 0, and its class counts it among its queued jobs (classes.queued_jobs, classes.queued while above 0),",
      ),
      queue_classes_queued_insert: classQueued(
        "a (job, class) queue created with pending work is queued and counted among its class's queued jobs,",
      ),
      queue_classes_queued_delete: classQueued("a queued (job, class) queue deleted leaves its class's count,"),
    },
  },
  // 36: a commit tells a foreign node's home its request and what the commit earned it in one outbox
  // row (src/pool/nodes/outcomes.ts committedHere), where step 20's trigger wrote the request and the
  // commit a second row for its outcome: three rows written and one deleted fewer a commit.
  {
    id: 36,
    description: "a commit at another shard than the node's home tells the home in one outbox row, not two",
    up: `DROP TRIGGER leases_end_tell_home;
  ${tellHome("NEW.status NOT IN ('live', 'completed')")}`,
    down: `DROP TRIGGER leases_end_tell_home;
  ${tellHome("NEW.status <> 'live'")}`,
    triggers: {
      leases_end_tell_home:
        "docs/sharding.md §8.3, liveness: when a lease of a node whose home is another shard stops being live without a commit (a fail, an expiry, a cancel), an outcome row tells the home the node's last request here and its latest live deadline here, so the home lowers live_until_ms as a lease's end here does for its own. A commit tells the home the same with its outcome, in one row. TypeScript half: src/pool/nodes/outcomes.ts applies the 'seen' outcome (ONLINE_WINDOW_MS, 15 s) and writes a commit's (committedHere); src/pool/nodes/registry.ts seen() marks the request first.",
    },
  },
  // 37: the outbox keeps no index by destination. Its rows live until their home acks them, a few at a
  // time but for a home out of reach, so the sender reads them in seq order (the table's own key) and
  // filters by shard; the index cost a row on every outcome sent (each commit, fail and renewal that
  // tells a home, at S > 1). Bounded work: the outbox holds only unsent rows.
  {
    id: 37,
    description: "the outbox is read in seq order and filtered by shard: no index written per outcome sent",
    up: "DROP INDEX outbox_to;",
    down: "CREATE INDEX outbox_to ON outbox (to_shard, seq);",
  },
  // 38: archiving a job takes its counts out once, not per task. Its tasks' delete ran the count
  // trigger once per task, writing the job's queue row and the pool's counts each time (two rows a
  // task), though the job's row goes with it. Now src/pool/alarm/archive.ts takes the job's counts out
  // of the pool's and deletes its queue row first, and the trigger counts a task's delete only while
  // its job's queue row is there. Trigger work only.
  {
    id: 38,
    description: "a task's delete is counted only while its job's queue row is there: archiving counts a job once",
    up: `DROP TRIGGER tasks_count_delete;
  ${countDeleteTrigger("", " WHEN EXISTS (SELECT 1 FROM job_queues WHERE job_id = OLD.job_id)")}`,
    down: `DROP TRIGGER tasks_count_delete;
  ${countDeleteTrigger("")}`,
    triggers: {
      tasks_count_delete:
        "docs/protocol.md §12, counters not scans: a task's delete while its job stays (its queue row there) takes it out of the same counts as tasks_count_state, in the same transaction. Archiving a whole job takes the job's counts out of the pool's at once and deletes its queue row before its tasks (§16: two rows a task fewer). TypeScript half: src/pool/alarm/archive.ts finishArchive.",
    },
  },
  // 39: a claim writes its job's queue row once. Its task's PENDING → LEASED moved the job's counts
  // (this trigger) and then its turn (useTurn): the same row written twice. The claim now moves the
  // counts with the turn, and the trigger leaves that one change to it. Trigger work only.
  {
    id: 39,
    description: "a claim moves its job's counts with its turn, in one write of the job's queue row",
    up: `DROP TRIGGER tasks_count_state;
  ${CLAIMED_APART}`,
    down: `DROP TRIGGER tasks_count_state;
  ${countStateTrigger("")}`,
    triggers: {
      tasks_count_state:
        "docs/protocol.md §12, counters not scans, and §16, a row per counter per change: in the same transaction as a task's change of state, its job's counts by state (job_queues: pending and the others, one row), the pool's (pool_task_counts, one row) and its (job, class)'s pending count (queue_classes). A claim's PENDING → LEASED is the one change whose job counts it leaves to the claim, which writes them with the job's turn. TypeScript half: src/pool/scheduling/scheduling.ts useTurn moves a claimed task's job counts; src/pool/jobs/jobs.ts taskCounts and poolTaskCounts read the counts (a job's state and the pool's totals), src/pool/jobs/tasks.ts countAdded counts a submission's tasks, src/pool/scheduling/scheduling.ts walks job_queues, queue_classes and classes for the claim (docs/protocol.md §13 rules 1 and 2), src/pool/reads/fleet.ts sums a class's pending tasks over its queued jobs.",
    },
  },
  // 40: a claim and a commit no longer write the pool's task counts. Every change of a task's
  // state wrote that one row (pool_task_counts), though its job's queue row counts the same change.
  // The row now holds finished jobs' tasks only: a job's counts move into it once, when it
  // finishes (jobs_pool_counts), and a running job's are summed from the queue rows of the running
  // jobs when read (src/pool/jobs/jobs.ts poolTaskCounts, by jobs_live_first). The pool's pending
  // tasks are read from the queued jobs alone (job_queues_next). Work bounded by the running jobs:
  // their counts leave the pool's row once.
  {
    id: 40,
    description: "the pool's task counts keep finished jobs' tasks; a running job's are read from its queue row",
    up: `DROP TRIGGER tasks_count_state;
  ${NOT_RUNNING_STATE}
  DROP TRIGGER tasks_count_delete;
  ${NOT_RUNNING_DELETE}
  ${JOBS_POOL_COUNTS}
  UPDATE pool_task_counts SET ${runningJobs("-")};`,
    down: `UPDATE pool_task_counts SET ${runningJobs("+")};
  DROP TRIGGER jobs_pool_counts;
  DROP TRIGGER tasks_count_delete;
  ${countDeleteTrigger("", " WHEN EXISTS (SELECT 1 FROM job_queues WHERE job_id = OLD.job_id)")}
  DROP TRIGGER tasks_count_state;
  ${CLAIMED_APART}`,
    triggers: {
      tasks_count_state:
        "docs/protocol.md §12, counters not scans, and §16, a row per counter per change: in the same transaction as a task's change of state, its job's counts by state (job_queues: pending and the others, one row) and its (job, class)'s pending count (queue_classes); the pool's (pool_task_counts) only for a finished job's task. A claim's PENDING → LEASED is the one change whose job counts it leaves to the claim, which writes them with the job's turn. TypeScript half: src/pool/scheduling/scheduling.ts useTurn moves a claimed task's job counts; src/pool/jobs/jobs.ts taskCounts reads a job's counts and poolTaskCounts the pool's (the finished jobs' row plus the running jobs' queue rows), src/pool/jobs/tasks.ts countAdded counts a submission's tasks, src/pool/scheduling/scheduling.ts walks job_queues, queue_classes and classes for the claim (docs/protocol.md §13 rules 1 and 2), src/pool/reads/fleet.ts sums a class's pending tasks over its queued jobs.",
      tasks_count_delete:
        "docs/protocol.md §12, counters not scans: a task's delete while its job stays (its queue row there) takes it out of the same counts as tasks_count_state, in the same transaction. Archiving a whole job takes the job's counts out of the pool's at once and deletes its queue row before its tasks (§16: two rows a task fewer). TypeScript half: src/pool/alarm/archive.ts finishArchive.",
      jobs_pool_counts:
        "docs/protocol.md §16, a row per counter per change: the pool's task counts (pool_task_counts) hold the finished jobs' tasks, so a running job's changes write only its queue row; when a job finishes, in the same transaction, its queue row's counts are added to the pool's. TypeScript half: src/pool/jobs/jobs.ts poolTaskCounts adds the running jobs' queue rows; src/pool/alarm/archive.ts finishArchive takes an archived (finished) job's counts out.",
    },
  },
  // docs/protocol.md §16: a submission's TASK_CREATED events, one per task, each telling only the task's
  // id, are one row per run of a job's tasks (src/pool/ledger/created.ts): where the run's event seqs and task
  // seqs start, how many, and when. A read makes each event from its task's row. Events appended before
  // the step stay rows of `events`; no work over history.
  {
    id: 41,
    description: "a submission's TASK_CREATED events are one row per run of tasks, made from the task rows when read",
    up: `CREATE TABLE tasks_created (
    first_seq INTEGER PRIMARY KEY,        -- the run's first event seq; its events are first_seq … first_seq + count - 1
    job_id TEXT NOT NULL,
    first_task INTEGER NOT NULL,          -- the tasks.seq of the run's first task; the others follow, in order
    count INTEGER NOT NULL,
    ts_ms INTEGER NOT NULL
  );
  CREATE INDEX tasks_created_job ON tasks_created (job_id, first_seq);`,
    // As event rows again (json_object writes the data JSON.stringify did, for the ids a job spec holds).
    down: `INSERT INTO events (seq, job_id, type, ts_ms, message, data, sealed_task)
    SELECT c.first_seq + (t.seq - c.first_task), c.job_id, 'TASK_CREATED', c.ts_ms,
           'task ' || t.task_id || ' created', json_object('task_id', t.task_id), NULL
    FROM tasks_created c JOIN tasks t ON t.seq >= c.first_task AND t.seq < c.first_task + c.count;
  DROP TABLE tasks_created;`,
  },
];
