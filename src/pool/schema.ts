// The pool object's SQLite schema, as an ordered list of migrations. Each
// step runs once, in order, inside the constructor's blockConcurrencyWhile;
// the applied version is recorded so a deployed object upgrades in place.
// Never edit a shipped step: append a new one. A step's work over existing
// rows is paid once, while the object serves nothing, by a pool created
// before it (SPEC §12 asks for bounded work here): steps 3 and 5 count the
// ledger and the tasks, step 8 indexes the lease history — 1 s for a
// million finished tasks, about 7.5 s for a full 10 GB object against
// blockConcurrencyWhile's 30 s (`npm run bench:migrations`). A new step that
// must fill rows from history leaves that to batches run after it.

export const MIGRATIONS: readonly string[] = [
  // 1: nodes, jobs, tasks, requirement classes, leases, events, artifacts.
  `
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
  // 2: the checkpoint catalog (SPEC §8): registered parts, committed manifests.
  `
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
  // 3: a running count of events by type, kept in the same transaction as
  // each event, so metrics never scan the ledger. Backfilled from it.
  `
  CREATE TABLE event_counts (type TEXT PRIMARY KEY, n INTEGER NOT NULL);
  INSERT INTO event_counts (type, n) SELECT type, COUNT(*) FROM events GROUP BY type;
  `,
  // 4: liveness from every request of a node (SPEC §5). last_heartbeat_ms is
  // now the last request of any kind; live_until_ms is when the node stops
  // counting as online: that plus the online window, or the deadline of a
  // lease it holds, whichever is later. One column answers "online?".
  `
  ALTER TABLE nodes ADD COLUMN live_until_ms INTEGER NOT NULL DEFAULT 0;
  UPDATE nodes SET live_until_ms = MAX(last_heartbeat_ms + 15000,
    COALESCE((SELECT MAX(l.deadline_ms) FROM leases l WHERE l.node_id = nodes.node_id AND l.status = 'live'), 0));
  CREATE INDEX nodes_live_until ON nodes (live_until_ms);
  `,
  // 5: counters, not scans (SPEC §12). Tasks per job and state, tasks per
  // state, pending tasks per requirement class and jobs per state are kept by
  // triggers in the transaction of every change to a task or a job, whatever
  // code path makes it; the dashboard, metrics and the claim read them
  // instead of counting history. Backfilled once from the tables.
  `
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
  // 6: a renewal updates its lease instead of appending a ledger event, so a
  // lease costs O(1) storage however long it lives (SPEC §12). Leases renewed
  // before this keep their LEASE_RENEWED events and start counting at 0.
  `
  ALTER TABLE leases ADD COLUMN renewals INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE leases ADD COLUMN renewed_ms INTEGER;
  `,
  // 7: R2 objects no key refers to (SPEC §12 "Nothing leaks"): uploads in
  // flight, and objects replaced, refused or abandoned, until the alarm has
  // deleted them from R2.
  `
  CREATE TABLE unreferenced (
    object TEXT PRIMARY KEY,
    collect_after_ms INTEGER NOT NULL,
    collecting INTEGER NOT NULL DEFAULT 0   -- taken by a collection run: no bind may claim it
  );
  CREATE INDEX unreferenced_due ON unreferenced (collect_after_ms);
  `,
  // 8: jobs archived to R2 past retention (SPEC §12). An archived job's rows
  // are gone; its id stays here, so it is never minted again, its reads go to
  // R2 and its writes are refused. archived_ms is null while it is archived.
  // Indexes over the jobs and the lease history are built once, here.
  `
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
  // 9: the scheduling policy (SPEC §13). Each job's queue carries its
  // priority, tenant and pass (claims granted to it, the stride scheduler's
  // clock); a tenant's share at a priority carries the tenant's pass. Pending
  // counts per job and per (job, class) are kept by triggers like step 5's;
  // a job whose count leaves 0 catches its pass up to its tenant's other
  // active jobs, and its tenant's share (a row only while it has active
  // jobs) starts at the lowest pass at its priority, so nothing idle banks
  // turns. Jobs queued before this step keep priority 0 and tenant
  // 'default'. Backfilled from the pending tasks (the partial index) and the
  // live leases only, never from history; a task's insert creates its rows.
  `
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

  CREATE TRIGGER tasks_queue_insert AFTER INSERT ON tasks WHEN NEW.state = 'PENDING' BEGIN
    INSERT INTO queue_classes (job_id, class_id, pending) VALUES (NEW.job_id, NEW.class_id, 1)
      ON CONFLICT (job_id, class_id) DO UPDATE SET pending = pending + 1;
    INSERT INTO job_queues (job_id, pending) VALUES (NEW.job_id, 1)
      ON CONFLICT (job_id) DO UPDATE SET pending = pending + 1;
  END;
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
  // 10: a job's requirement classes carry its priority, so the highest
  // priority holding work a node may take is one index seek per class the
  // node accepts (SPEC §13), never a walk over the jobs of the levels above.
  // A job's priority never changes; its classes copy it when inserted.
  `
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
  // 11: device-code enrolment (SPEC §9 "Enrolled machines"). Codes waiting
  // for an operator, kept a day after they expire for the record, and the
  // credentials of enrolled nodes. Hashes only: a device code and a token
  // are never stored as given.
  `
  CREATE TABLE device_codes (
    device_code_sha256 TEXT PRIMARY KEY,
    user_code TEXT NOT NULL UNIQUE,
    node_id TEXT NOT NULL,
    hostname TEXT NOT NULL,
    platform TEXT NOT NULL,
    requested_ms INTEGER NOT NULL,
    requested_from TEXT,
    expires_ms INTEGER NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending',  -- pending, approved, denied, redeemed
    decided_by TEXT,
    decided_ms INTEGER
  );
  CREATE INDEX device_codes_expiry ON device_codes (expires_ms);
  CREATE TABLE node_credentials (
    node_id TEXT PRIMARY KEY,
    token_sha256 TEXT NOT NULL,
    hostname TEXT NOT NULL,
    platform TEXT NOT NULL,
    approved_by TEXT NOT NULL,
    approved_ms INTEGER NOT NULL,
    issued_ms INTEGER NOT NULL
  );
  `,
  // 12: a revoked credential stays as a record of who revoked it and when
  // (SPEC §9: the dashboard shows every revocation); its hash is forgotten.
  `
  ALTER TABLE node_credentials ADD COLUMN revoked_by TEXT;
  ALTER TABLE node_credentials ADD COLUMN revoked_ms INTEGER;
  `,
  // 13: verified results (SPEC §14). A replicated task keeps its job's
  // replicas, quorum and tolerance, and how many replicas it wants out or
  // done now (`wanted`); each replica is a lease numbered from 1, and each
  // committed replica's metrics object waits in replica_results for the
  // verdict. Nodes keep their record of valid and invalid results.
  `
  ALTER TABLE tasks ADD COLUMN replicas INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE tasks ADD COLUMN quorum INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE tasks ADD COLUMN tolerance REAL NOT NULL DEFAULT 0;
  ALTER TABLE tasks ADD COLUMN wanted INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE leases ADD COLUMN replica INTEGER NOT NULL DEFAULT 0;
  CREATE TABLE replica_results (
    lease_id TEXT PRIMARY KEY,
    task_seq INTEGER NOT NULL,
    node_id TEXT NOT NULL,
    replica INTEGER NOT NULL,
    object TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    value TEXT NOT NULL,                    -- the metrics object, as JSON
    verdict TEXT NOT NULL DEFAULT 'pending' -- pending, valid, invalid, lie, undecided
  );
  CREATE INDEX replica_results_task ON replica_results (task_seq);
  ALTER TABLE nodes ADD COLUMN valid_results INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE nodes ADD COLUMN invalid_results INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE nodes ADD COLUMN consecutive_valid INTEGER NOT NULL DEFAULT 0;
  `,
  // 14: liveness and retry elsewhere (SPEC §13 rule 4). A failure records
  // when it happened: a retry waits for another idle node only for a window
  // after it (failures recorded before this count as long past). When a lease stops being live, whatever code
  // path ends it, its node is online until its last request plus the online
  // window (15 s, ONLINE_WINDOW_MS) or the deadline of another live lease it
  // holds, no longer until the ended lease's deadline. A pending device
  // code keeps the source it came from (SPEC §9: codes are limited per
  // source; rules/enrolment.ts codeSource), counted through a partial index.
  `
  ALTER TABLE task_failures ADD COLUMN failed_ms INTEGER NOT NULL DEFAULT 0;
  CREATE TRIGGER leases_end_liveness AFTER UPDATE OF status ON leases
    WHEN OLD.status = 'live' AND NEW.status <> 'live' BEGIN
    UPDATE nodes SET live_until_ms = MAX(last_heartbeat_ms + 15000, COALESCE(
        (SELECT MAX(l.deadline_ms) FROM leases l WHERE l.node_id = NEW.node_id AND l.status = 'live'), 0))
      WHERE node_id = NEW.node_id;
  END;
  ALTER TABLE device_codes ADD COLUMN source TEXT;
  CREATE INDEX device_codes_pending_source ON device_codes (source) WHERE state = 'pending';
  `,
  // 15: verification against adversaries (SPEC §14). A task's absolute
  // tolerance; a committed replica keeps its object's size and etag, so the verdict binds the
  // judged object whatever its replica key points at later, and judged or
  // accepted objects are found when collection asks. A node keeps its
  // latest verdicts and, past the lie threshold, why it is distrusted. An
  // event about a replicated task is sealed from nodes until the task ends.
  `
  ALTER TABLE tasks ADD COLUMN tolerance_abs REAL NOT NULL DEFAULT 1e-12;
  ALTER TABLE replica_results ADD COLUMN size_bytes INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE replica_results ADD COLUMN etag TEXT NOT NULL DEFAULT '';
  CREATE INDEX replica_results_object ON replica_results (object);
  CREATE INDEX tasks_accepted_object ON tasks (accepted_object) WHERE accepted_object IS NOT NULL;
  ALTER TABLE nodes ADD COLUMN verdicts TEXT NOT NULL DEFAULT '';
  ALTER TABLE nodes ADD COLUMN distrusted TEXT;
  ALTER TABLE events ADD COLUMN sealed_task INTEGER;
  `,
  // 16: replicas of one task run on nodes of distinct owners (SPEC §14). A
  // lease records its node's owner when issued; an enrolled credential keeps
  // the owner its approval named. A task is `replicating` from its first
  // replica on: such tasks leave the index the claim's fresh head reads, and
  // each (job, class) counts its pending ones, and for each owner those of
  // them it holds or ran a replica of, so a claim by an owner that ran them
  // all passes over them in one seek however many there are. Triggers keep
  // the counts in the same transaction as every change. The backfill reads
  // the tasks once, as step 5 does.
  `
  ALTER TABLE tasks ADD COLUMN replicating INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE leases ADD COLUMN owner TEXT;          -- for a replica: its node's owner at claim (NULL: before this step)
  ALTER TABLE device_codes ADD COLUMN owner TEXT;    -- named at approval (NULL: the node id)
  ALTER TABLE node_credentials ADD COLUMN owner TEXT;
  ALTER TABLE queue_classes ADD COLUMN replicating INTEGER NOT NULL DEFAULT 0;
  CREATE TABLE owner_replicas (
    job_id TEXT NOT NULL, class_id INTEGER NOT NULL, owner TEXT NOT NULL,
    pending INTEGER NOT NULL DEFAULT 0,               -- replicating pending tasks of which the owner holds or ran a replica
    PRIMARY KEY (job_id, class_id, owner)
  ) WITHOUT ROWID;
  CREATE INDEX tasks_fresh_job ON tasks (job_id, class_id, seq) WHERE state = 'PENDING' AND replicating = 0;
  CREATE INDEX tasks_replicating_job ON tasks (job_id, class_id, seq) WHERE state = 'PENDING' AND replicating = 1;

  UPDATE tasks SET replicating = 1 WHERE replicas > 1 AND state IN ('PENDING', 'LEASED')
    AND EXISTS (SELECT 1 FROM leases l WHERE l.task_seq = tasks.seq AND l.replica > 0);
  UPDATE leases SET owner = node_id
    WHERE replica > 0 AND task_seq IN (SELECT seq FROM tasks WHERE replicating = 1);
  UPDATE queue_classes SET replicating = (SELECT COUNT(*) FROM tasks t INDEXED BY tasks_replicating_job
    WHERE t.state = 'PENDING' AND t.replicating = 1 AND t.job_id = queue_classes.job_id AND t.class_id = queue_classes.class_id);
  INSERT INTO owner_replicas (job_id, class_id, owner, pending)
    SELECT DISTINCT t.job_id, t.class_id, l.owner, 0 FROM tasks t JOIN leases l ON l.task_seq = t.seq
    WHERE t.replicating = 1 AND l.replica > 0;
  UPDATE owner_replicas SET pending = (SELECT COUNT(*) FROM tasks t WHERE t.job_id = owner_replicas.job_id
    AND t.class_id = owner_replicas.class_id AND t.state = 'PENDING' AND t.replicating = 1
    AND EXISTS (SELECT 1 FROM leases l WHERE l.task_seq = t.seq AND l.replica > 0 AND l.owner = owner_replicas.owner));

  CREATE TRIGGER tasks_replicating_state AFTER UPDATE OF state, replicating ON tasks
    WHEN (OLD.state = 'PENDING' AND OLD.replicating = 1) <> (NEW.state = 'PENDING' AND NEW.replicating = 1) BEGIN
    UPDATE queue_classes SET replicating = replicating + IIF(NEW.state = 'PENDING' AND NEW.replicating = 1, 1, -1)
      WHERE job_id = NEW.job_id AND class_id = NEW.class_id;
    UPDATE owner_replicas SET pending = pending + IIF(NEW.state = 'PENDING' AND NEW.replicating = 1, 1, -1)
      WHERE job_id = NEW.job_id AND class_id = NEW.class_id
        AND owner IN (SELECT owner FROM leases WHERE task_seq = NEW.seq AND replica > 0);
  END;
  CREATE TRIGGER tasks_replicating_delete AFTER DELETE ON tasks WHEN OLD.state = 'PENDING' AND OLD.replicating = 1 BEGIN
    UPDATE queue_classes SET replicating = replicating - 1 WHERE job_id = OLD.job_id AND class_id = OLD.class_id;
    UPDATE owner_replicas SET pending = pending - 1 WHERE job_id = OLD.job_id AND class_id = OLD.class_id
      AND owner IN (SELECT owner FROM leases WHERE task_seq = OLD.seq AND replica > 0);
  END;
  -- An owner's first replica of a task counts it while the task is a replicating pending one.
  CREATE TRIGGER leases_replica_owner AFTER INSERT ON leases WHEN NEW.replica > 0 BEGIN
    INSERT INTO owner_replicas (job_id, class_id, owner, pending)
      SELECT t.job_id, t.class_id, NEW.owner, t.state = 'PENDING' AND t.replicating = 1
        AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.task_seq = NEW.task_seq AND l.replica > 0
          AND l.owner = NEW.owner AND l.lease_id <> NEW.lease_id)
      FROM tasks t WHERE t.seq = NEW.task_seq AND true
      ON CONFLICT (job_id, class_id, owner) DO UPDATE SET pending = pending + excluded.pending;
  END;
  CREATE TRIGGER queue_classes_owners_delete AFTER DELETE ON queue_classes BEGIN
    DELETE FROM owner_replicas WHERE job_id = OLD.job_id AND class_id = OLD.class_id;
  END;
  `,
  // 17: team-pool membership an operator assigned (SPEC §9), kept apart from
  // what the node reports in its registration, and surviving it: a node may
  // be assigned pools at the approval of its enrolment, before it ever
  // registers. An approval names the pools with the code it decides.
  `
  ALTER TABLE device_codes ADD COLUMN pools TEXT;    -- JSON list named at approval (NULL: none named)
  CREATE TABLE node_pools (
    node_id TEXT PRIMARY KEY,
    pools TEXT NOT NULL,                 -- JSON list of team pool names
    assigned_by TEXT NOT NULL,           -- the operator's name
    assigned_ms INTEGER NOT NULL
  );
  `,
];

/** Applies every migration newer than the recorded version, in order. */
export function migrate(sql: SqlStorage): void {
  sql.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
  const row = sql.exec<{ version: number }>("SELECT version FROM schema_version").toArray()[0];
  const applied = row?.version ?? 0;
  for (let v = applied; v < MIGRATIONS.length; v++) {
    sql.exec(MIGRATIONS[v]!);
  }
  if (!row) sql.exec("INSERT INTO schema_version (version) VALUES (?)", MIGRATIONS.length);
  else if (applied < MIGRATIONS.length) sql.exec("UPDATE schema_version SET version = ?", MIGRATIONS.length);
}
