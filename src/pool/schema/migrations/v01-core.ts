// Steps 1-8 of the pool's schema: the queue, leases, ledger and artifacts
// (1), the checkpoint catalog (2), counters kept by triggers instead of
// scans (3, 5), liveness (4), renewals in place (6), collection of
// unreferenced R2 objects (7) and the archive (8). Read the schema they
// and the later steps make in src/pool/schema.sql.

import type { Migration } from "./migration";

/** The note of a trigger keeping the task counts, in the transaction of `change`. */
const taskCounts = (change: string) =>
  `docs/protocol.md §12, counters not scans: keeps job_task_counts, task_counts and classes.pending equal to counts of tasks in the same transaction as ${change}. TypeScript half: src/pool/jobs.ts taskCounts and poolTaskCounts read the counts (a job's state and the pool's totals), and src/pool/scheduling.ts POLICY_SQL.pendingClasses reads classes.pending for the classes the gate judges at each claim.`;
/** The note of a trigger keeping the job counts, in the transaction of `change`. */
const jobCounts = (change: string) =>
  `docs/protocol.md §12, counters not scans: keeps job_counts (jobs per state, RUNNING while terminal_state is null) in the same transaction as ${change}. TypeScript half: src/pool/dashboard.ts reads it for the dashboard's job totals; src/pool/jobs.ts records terminal_state.`;

export const CORE: readonly Migration[] = [
  // 1: nodes, jobs, tasks, requirement classes, leases, events, artifacts.
  {
    id: 1,
    description: "nodes, jobs, tasks, requirement classes, leases, the event ledger and artifacts",
    up: `
  CREATE TABLE nodes (
    node_id TEXT PRIMARY KEY,
    registration TEXT NOT NULL,          -- NodeRegistration JSON, defaults applied
    status TEXT NOT NULL DEFAULT 'online',
    last_heartbeat_ms INTEGER NOT NULL,
    accepted_tasks INTEGER NOT NULL DEFAULT 0
  );

  CREATE TABLE jobs (
    job_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL UNIQUE,          -- submission order
    spec TEXT NOT NULL,                   -- JobSpec JSON
    workload_type TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    terminal_state TEXT,                  -- recorded once, with its event
    finished_ms INTEGER
  );

  -- Tasks with identical gate-relevant payload values share a class: the gate
  -- answers once per class, so a claim costs O(classes · log n), not O(n).
  CREATE TABLE classes (
    class_id INTEGER PRIMARY KEY,
    class_key TEXT NOT NULL UNIQUE,
    requirement TEXT NOT NULL             -- the reduced payload the gate reads
  );

  CREATE TABLE tasks (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, -- queue order; a requeue keeps it
    job_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    class_id INTEGER NOT NULL REFERENCES classes(class_id),
    payload TEXT NOT NULL,
    commit_key TEXT NOT NULL,
    max_attempts INTEGER NOT NULL,
    lease_seconds REAL NOT NULL,
    output_json INTEGER NOT NULL DEFAULT 0, -- output must parse as a JSON object
    state TEXT NOT NULL DEFAULT 'PENDING',
    attempts_used INTEGER NOT NULL DEFAULT 0,
    lease_id TEXT,                         -- the current or most recent lease
    accepted_object TEXT,                  -- the stored object the commit accepted
    UNIQUE (job_id, task_id)
  );
  CREATE INDEX tasks_claim ON tasks (class_id, seq) WHERE state = 'PENDING';
  CREATE INDEX tasks_claim_job ON tasks (job_id, class_id, seq) WHERE state = 'PENDING';
  CREATE INDEX tasks_job_state ON tasks (job_id, state);

  -- Every lease ever issued, so a late commit is identified, not "unknown".
  CREATE TABLE leases (
    lease_id TEXT PRIMARY KEY,
    task_seq INTEGER NOT NULL REFERENCES tasks(seq),
    node_id TEXT NOT NULL,
    attempt_number INTEGER NOT NULL,
    issued_ms INTEGER NOT NULL,
    deadline_ms INTEGER NOT NULL,
    status TEXT NOT NULL                   -- live|expired|failed|completed|cancelled
  );
  CREATE INDEX leases_live_deadline ON leases (deadline_ms) WHERE status = 'live';
  CREATE INDEX leases_live_node ON leases (node_id, task_seq) WHERE status = 'live';

  -- Append-only ledger.
  CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL,
    type TEXT NOT NULL,
    ts_ms INTEGER NOT NULL,
    message TEXT NOT NULL,
    data TEXT NOT NULL
  );
  CREATE INDEX events_job ON events (job_id, seq);

  -- Client key → the fresh R2 object holding its bytes.
  CREATE TABLE artifacts (
    key TEXT PRIMARY KEY,
    object TEXT NOT NULL UNIQUE,
    sha256 TEXT NOT NULL,
    size_bytes INTEGER NOT NULL,
    etag TEXT NOT NULL,
    created_ms INTEGER NOT NULL
  );
  `,
    down: "DROP TABLE artifacts; DROP TABLE events; DROP TABLE leases; DROP TABLE tasks; DROP TABLE classes; DROP TABLE jobs; DROP TABLE nodes;",
  },
  // 2: the checkpoint catalog (docs/protocol.md §8): registered parts, committed manifests.
  {
    id: 2,
    description: "the checkpoint catalog: registered parts and committed manifests (docs/protocol.md §8)",
    up: `
  -- One row per uploaded part; re-registering a key replaces its row. A
  -- commit reads the rows of exactly one (job, task, attempt, step).
  CREATE TABLE checkpoint_parts (
    job_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    attempt_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    key TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    size_bytes INTEGER NOT NULL,
    registered_ms INTEGER NOT NULL,
    PRIMARY KEY (job_id, task_id, attempt_id, step, key)
  );

  -- Never deleted: quarantine sets validation = 'invalid'.
  CREATE TABLE checkpoint_manifests (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,  -- commit order: the "newest" tie-break
    manifest_id TEXT NOT NULL UNIQUE,
    job_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    attempt_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    framework TEXT NOT NULL,
    strategy_family TEXT NOT NULL,
    world_size INTEGER NOT NULL,
    storage_prefix TEXT NOT NULL,
    parts TEXT NOT NULL,                    -- CheckpointPart[] JSON
    validation TEXT NOT NULL CHECK (validation IN ('hash_verified', 'restore_verified', 'invalid')),
    invalid_reason TEXT,                    -- the quarantine reason
    created_ms INTEGER NOT NULL
  );
  -- latest, with and without a world size: an index seek, newest valid first
  -- ('restore_verified' > 'hash_verified', so validation DESC prefers it).
  CREATE INDEX checkpoint_manifests_latest
    ON checkpoint_manifests (job_id, task_id, step DESC, validation DESC, seq DESC) WHERE validation <> 'invalid';
  CREATE INDEX checkpoint_manifests_latest_ws
    ON checkpoint_manifests (job_id, task_id, world_size, step DESC, validation DESC, seq DESC) WHERE validation <> 'invalid';
  -- the identical-commit lookup
  CREATE INDEX checkpoint_manifests_attempt ON checkpoint_manifests (job_id, task_id, attempt_id, step);
  `,
    down: "DROP TABLE checkpoint_manifests; DROP TABLE checkpoint_parts;",
  },
  // 3: a running count of events by type, kept in the same transaction as
  // each event, so metrics never scan the ledger. Backfilled from it.
  {
    id: 3,
    description: "a running count of events by type, backfilled from the ledger",
    up: `
  CREATE TABLE event_counts (type TEXT PRIMARY KEY, n INTEGER NOT NULL);
  INSERT INTO event_counts (type, n) SELECT type, COUNT(*) FROM events GROUP BY type;
  `,
    down: "DROP TABLE event_counts;",
  },
  // 4: liveness from every request of a node (docs/protocol.md §5). last_heartbeat_ms is
  // now the last request of any kind; live_until_ms is when the node stops
  // counting as online: that plus the online window, or the deadline of a
  // lease it holds, whichever is later. One column answers "online?".
  {
    id: 4,
    description: "liveness from every request of a node: nodes.live_until_ms (docs/protocol.md §5)",
    up: `
  ALTER TABLE nodes ADD COLUMN live_until_ms INTEGER NOT NULL DEFAULT 0;
  UPDATE nodes SET live_until_ms = MAX(last_heartbeat_ms + 15000,
    COALESCE((SELECT MAX(l.deadline_ms) FROM leases l WHERE l.node_id = nodes.node_id AND l.status = 'live'), 0));
  CREATE INDEX nodes_live_until ON nodes (live_until_ms);
  `,
    down: "DROP INDEX nodes_live_until; ALTER TABLE nodes DROP COLUMN live_until_ms;",
  },
  // 5: counters, not scans (docs/protocol.md §12). Tasks per job and state, tasks per
  // state, pending tasks per requirement class and jobs per state are kept by
  // triggers in the transaction of every change to a task or a job, whatever
  // code path makes it; the dashboard, metrics and the claim read them
  // instead of counting history. Backfilled once from the tables.
  {
    id: 5,
    description:
      "counters kept by triggers: tasks per job and state, tasks and jobs per state, pending tasks per class (docs/protocol.md §12)",
    up: `
  CREATE TABLE job_task_counts (
    job_id TEXT NOT NULL, state TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (job_id, state)
  );
  CREATE TABLE task_counts (state TEXT PRIMARY KEY, n INTEGER NOT NULL);
  CREATE TABLE job_counts (state TEXT PRIMARY KEY, n INTEGER NOT NULL);
  ALTER TABLE classes ADD COLUMN pending INTEGER NOT NULL DEFAULT 0;

  INSERT INTO job_task_counts (job_id, state, n) SELECT job_id, state, COUNT(*) FROM tasks GROUP BY job_id, state;
  INSERT INTO task_counts (state, n) SELECT state, COUNT(*) FROM tasks GROUP BY state;
  INSERT INTO job_counts (state, n) SELECT COALESCE(terminal_state, 'RUNNING'), COUNT(*) FROM jobs GROUP BY 1;
  UPDATE classes SET pending = (SELECT COUNT(*) FROM tasks t WHERE t.class_id = classes.class_id AND t.state = 'PENDING');
  CREATE INDEX classes_pending ON classes (class_id) WHERE pending > 0;
  -- The jobs page: live jobs first, newest first, without sorting every job.
  CREATE INDEX jobs_live_first ON jobs ((terminal_state IS NULL), seq);

  CREATE TRIGGER tasks_count_insert AFTER INSERT ON tasks BEGIN
    INSERT INTO job_task_counts (job_id, state, n) VALUES (NEW.job_id, NEW.state, 1)
      ON CONFLICT (job_id, state) DO UPDATE SET n = n + 1;
    INSERT INTO task_counts (state, n) VALUES (NEW.state, 1) ON CONFLICT (state) DO UPDATE SET n = n + 1;
    UPDATE classes SET pending = pending + 1 WHERE class_id = NEW.class_id AND NEW.state = 'PENDING';
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
  CREATE TRIGGER tasks_count_delete AFTER DELETE ON tasks BEGIN
    UPDATE job_task_counts SET n = n - 1 WHERE job_id = OLD.job_id AND state = OLD.state;
    UPDATE task_counts SET n = n - 1 WHERE state = OLD.state;
    UPDATE classes SET pending = pending - 1 WHERE class_id = OLD.class_id AND OLD.state = 'PENDING';
  END;
  CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs BEGIN
    INSERT INTO job_counts (state, n) VALUES (COALESCE(NEW.terminal_state, 'RUNNING'), 1)
      ON CONFLICT (state) DO UPDATE SET n = n + 1;
  END;
  CREATE TRIGGER jobs_count_state AFTER UPDATE OF terminal_state ON jobs
    WHEN COALESCE(OLD.terminal_state, 'RUNNING') <> COALESCE(NEW.terminal_state, 'RUNNING') BEGIN
    UPDATE job_counts SET n = n - 1 WHERE state = COALESCE(OLD.terminal_state, 'RUNNING');
    INSERT INTO job_counts (state, n) VALUES (COALESCE(NEW.terminal_state, 'RUNNING'), 1)
      ON CONFLICT (state) DO UPDATE SET n = n + 1;
  END;
  CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs BEGIN
    UPDATE job_counts SET n = n - 1 WHERE state = COALESCE(OLD.terminal_state, 'RUNNING');
  END;
  `,
    down: `DROP TRIGGER tasks_count_insert; DROP TRIGGER tasks_count_state; DROP TRIGGER tasks_count_delete;
      DROP TRIGGER jobs_count_insert; DROP TRIGGER jobs_count_state; DROP TRIGGER jobs_count_delete;
      DROP INDEX classes_pending; DROP INDEX jobs_live_first;
      DROP TABLE job_task_counts; DROP TABLE task_counts; DROP TABLE job_counts;
      ALTER TABLE classes DROP COLUMN pending;`,
    triggers: {
      tasks_count_insert: taskCounts("a task's insert"),
      tasks_count_state: taskCounts("a task's change of state"),
      tasks_count_delete: taskCounts("a task's delete (archiving a job)"),
      jobs_count_insert: jobCounts("a job's insert"),
      jobs_count_state: jobCounts("a job's terminal transition"),
      jobs_count_delete: jobCounts("a job's delete (archiving it)"),
    },
  },
  // 6: a renewal updates its lease instead of appending a ledger event, so a
  // lease costs O(1) storage however long it lives (docs/protocol.md §12). Leases renewed
  // before this keep their LEASE_RENEWED events and start counting at 0.
  {
    id: 6,
    description: "a renewal updates its lease in place: leases.renewals and renewed_ms (docs/protocol.md §12)",
    up: `
  ALTER TABLE leases ADD COLUMN renewals INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE leases ADD COLUMN renewed_ms INTEGER;
  `,
    down: "ALTER TABLE leases DROP COLUMN renewals; ALTER TABLE leases DROP COLUMN renewed_ms;",
  },
  // 7: R2 objects no key refers to (docs/protocol.md §12 "Nothing leaks"): uploads in
  // flight, and objects replaced, refused or abandoned, until the alarm has
  // deleted them from R2.
  {
    id: 7,
    description: "R2 objects no key refers to, kept until collection deletes them (docs/protocol.md §12)",
    up: `
  CREATE TABLE unreferenced (
    object TEXT PRIMARY KEY,
    collect_after_ms INTEGER NOT NULL,
    collecting INTEGER NOT NULL DEFAULT 0   -- taken by a collection run: no bind may claim it
  );
  CREATE INDEX unreferenced_due ON unreferenced (collect_after_ms);
  `,
    down: "DROP TABLE unreferenced;",
  },
  // 8: jobs archived to R2 past retention (docs/protocol.md §12). An archived job's rows
  // are gone; its id stays here, so it is never minted again, its reads go to
  // R2 and its writes are refused. archived_ms is null while it is archived.
  // Indexes over the jobs and the lease history are built once, here.
  {
    id: 8,
    description: "archived jobs, the indexes retention needs, and the pool's name (docs/protocol.md §12)",
    up: `
  CREATE TABLE archived_jobs (
    job_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,                  -- its submission number, never reused
    started_ms INTEGER NOT NULL,           -- when it became read-only (the archive's archived_at)
    archived_ms INTEGER
  );
  CREATE INDEX archived_jobs_seq ON archived_jobs (seq);
  CREATE INDEX archived_jobs_open ON archived_jobs (job_id) WHERE archived_ms IS NULL;
  CREATE INDEX jobs_finished ON jobs (finished_ms) WHERE terminal_state IS NOT NULL;
  -- A job's leases, found and deleted by task; also what the foreign key
  -- check of a task's delete seeks (without it, a scan of every lease).
  CREATE INDEX leases_task ON leases (task_seq);
  -- The pool's name, as the Worker routes it: the archive lives under it.
  CREATE TABLE pool_name (name TEXT NOT NULL);
  `,
    down: `DROP TABLE archived_jobs; DROP INDEX jobs_finished; DROP INDEX leases_task; DROP TABLE pool_name;`,
  },
];
