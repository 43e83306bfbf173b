-- The pool object's SQLite schema after every migration in src/pool/schema/schema.ts
-- (1-41): what a new pool starts with and what every older pool is migrated to.
-- Generated from a freshly migrated pool's sqlite_master, never edited by hand:
-- test/worker/schema/schema.test.ts fails when they differ; after changing a migration,
-- `npm run schema:snapshot` rewrites this file. Run on an empty database it makes
-- the same schema. Columns a later migration added are the ALTER TABLEs it ran.

-- archived_jobs: migration 8
CREATE TABLE archived_jobs (
    job_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,                  -- its submission number, never reused
    started_ms INTEGER NOT NULL,           -- when it became read-only (the archive's archived_at)
    archived_ms INTEGER
  );
CREATE INDEX archived_jobs_open ON archived_jobs (job_id) WHERE archived_ms IS NULL; -- migration 8
CREATE INDEX archived_jobs_seq ON archived_jobs (seq); -- migration 8

-- artifacts: migration 1
CREATE TABLE artifacts (
    key TEXT PRIMARY KEY,
    object TEXT NOT NULL UNIQUE,
    sha256 TEXT NOT NULL,
    size_bytes INTEGER NOT NULL,
    etag TEXT NOT NULL,
    created_ms INTEGER NOT NULL
  );

-- checkpoint_manifests: migration 2
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
CREATE INDEX checkpoint_manifests_attempt ON checkpoint_manifests (job_id, task_id, attempt_id, step); -- migration 2
CREATE INDEX checkpoint_manifests_latest
    ON checkpoint_manifests (job_id, task_id, step DESC, validation DESC, seq DESC) WHERE validation <> 'invalid'; -- migration 2
CREATE INDEX checkpoint_manifests_latest_ws
    ON checkpoint_manifests (job_id, task_id, world_size, step DESC, validation DESC, seq DESC) WHERE validation <> 'invalid'; -- migration 2

-- checkpoint_parts: migration 2
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

-- classes: migration 1
CREATE TABLE classes (
    class_id INTEGER PRIMARY KEY,
    class_key TEXT NOT NULL UNIQUE,
    requirement TEXT NOT NULL             -- the reduced payload the gate reads
  );
ALTER TABLE classes ADD COLUMN queued_jobs INTEGER NOT NULL DEFAULT 0; -- migration 5, renamed by 35
ALTER TABLE classes ADD COLUMN queued INTEGER NOT NULL DEFAULT 0; -- migration 33
CREATE INDEX classes_queued ON classes (class_id) WHERE queued = 1; -- migration 35

-- device_codes: migration 11
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
ALTER TABLE device_codes ADD COLUMN source TEXT; -- migration 14
ALTER TABLE device_codes ADD COLUMN owner TEXT; -- migration 16
ALTER TABLE device_codes ADD COLUMN pools TEXT; -- migration 17
CREATE INDEX device_codes_expiry ON device_codes (expires_ms); -- migration 11
CREATE INDEX device_codes_pending_source ON device_codes (source) WHERE state = 'pending'; -- migration 14

-- event_counts: migration 3
CREATE TABLE event_counts (type TEXT PRIMARY KEY, n INTEGER NOT NULL);

-- events: migration 1
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL,
    type TEXT NOT NULL,
    ts_ms INTEGER NOT NULL,
    message TEXT NOT NULL,
    data TEXT NOT NULL
  );
ALTER TABLE events ADD COLUMN sealed_task INTEGER; -- migration 15
CREATE INDEX events_job ON events (job_id, seq); -- migration 1

-- homes: migration 18
CREATE TABLE homes (
    kind TEXT NOT NULL,                   -- 'node' | 'key'
    name TEXT NOT NULL,                   -- node_id, or artifact key
    home INTEGER NOT NULL,
    recorded_ms INTEGER NOT NULL,
    PRIMARY KEY (kind, name)
  ) WITHOUT ROWID;

-- inbox_seen: migration 18
CREATE TABLE inbox_seen (from_shard INTEGER PRIMARY KEY, last_seq INTEGER NOT NULL);

-- job_counts: migration 5
CREATE TABLE job_counts (state TEXT PRIMARY KEY, n INTEGER NOT NULL);

-- job_queues: migration 9
CREATE TABLE job_queues (
    job_id TEXT PRIMARY KEY,
    priority INTEGER NOT NULL DEFAULT 0,
    tenant TEXT NOT NULL DEFAULT 'default',
    pass REAL NOT NULL DEFAULT 0,         -- claims granted to the job (its turns within its tenant)
    turn INTEGER NOT NULL DEFAULT 0,      -- when it last got one: at equal pass, the longest waiting goes first
    pending INTEGER NOT NULL DEFAULT 0,
    worker_losses INTEGER NOT NULL DEFAULT 0
  );
ALTER TABLE job_queues ADD COLUMN leased INTEGER NOT NULL DEFAULT 0; -- migration 28
ALTER TABLE job_queues ADD COLUMN completed INTEGER NOT NULL DEFAULT 0; -- migration 28
ALTER TABLE job_queues ADD COLUMN failed INTEGER NOT NULL DEFAULT 0; -- migration 28
ALTER TABLE job_queues ADD COLUMN cancelled INTEGER NOT NULL DEFAULT 0; -- migration 28
ALTER TABLE job_queues ADD COLUMN queued INTEGER NOT NULL DEFAULT 0; -- migration 33
CREATE INDEX job_queues_next ON job_queues (priority, tenant, pass, turn) WHERE queued = 1; -- migration 33

-- jobs: migration 1
CREATE TABLE jobs (
    job_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL UNIQUE,          -- submission order
    spec TEXT NOT NULL,                   -- JobSpec JSON
    workload_type TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    terminal_state TEXT,                  -- recorded once, with its event
    finished_ms INTEGER
  );
CREATE INDEX jobs_finished ON jobs (finished_ms) WHERE terminal_state IS NOT NULL; -- migration 8
CREATE INDEX jobs_live_first ON jobs ((terminal_state IS NULL), seq); -- migration 5

-- leases: migration 1
CREATE TABLE leases (
    lease_id TEXT PRIMARY KEY,
    task_seq INTEGER NOT NULL REFERENCES tasks(seq),
    node_id TEXT NOT NULL,
    attempt_number INTEGER NOT NULL,
    issued_ms INTEGER NOT NULL,
    deadline_ms INTEGER NOT NULL,
    status TEXT NOT NULL                   -- live|expired|failed|completed|cancelled
  );
ALTER TABLE leases ADD COLUMN renewals INTEGER NOT NULL DEFAULT 0; -- migration 6
ALTER TABLE leases ADD COLUMN renewed_ms INTEGER; -- migration 6
ALTER TABLE leases ADD COLUMN replica INTEGER NOT NULL DEFAULT 0; -- migration 13
ALTER TABLE leases ADD COLUMN owner TEXT; -- migration 16
ALTER TABLE leases ADD COLUMN claim_id TEXT; -- migration 18
ALTER TABLE leases ADD COLUMN check_ms INTEGER; -- migration 25
CREATE UNIQUE INDEX leases_claim ON leases (claim_id) WHERE claim_id IS NOT NULL; -- migration 18
CREATE INDEX leases_live_check ON leases (check_ms) WHERE status = 'live'; -- migration 25
CREATE INDEX leases_live_node ON leases (node_id, task_seq) WHERE status = 'live'; -- migration 1
CREATE INDEX leases_replica_node ON leases (node_id, task_seq) WHERE replica > 0; -- migration 21
CREATE INDEX leases_task ON leases (task_seq); -- migration 8

-- node_credentials: migration 11
CREATE TABLE node_credentials (
    node_id TEXT PRIMARY KEY,
    token_sha256 TEXT NOT NULL,
    hostname TEXT NOT NULL,
    platform TEXT NOT NULL,
    approved_by TEXT NOT NULL,
    approved_ms INTEGER NOT NULL,
    issued_ms INTEGER NOT NULL
  );
ALTER TABLE node_credentials ADD COLUMN revoked_by TEXT; -- migration 12
ALTER TABLE node_credentials ADD COLUMN revoked_ms INTEGER; -- migration 12
ALTER TABLE node_credentials ADD COLUMN owner TEXT; -- migration 16

-- node_pools: migration 17
CREATE TABLE node_pools (
    node_id TEXT PRIMARY KEY,
    pools TEXT NOT NULL,                 -- JSON list of team pool names
    assigned_by TEXT NOT NULL,           -- the operator's name
    assigned_ms INTEGER NOT NULL
  );

-- nodes: migration 1
CREATE TABLE nodes (
    node_id TEXT PRIMARY KEY,
    registration TEXT NOT NULL,          -- NodeRegistration JSON, defaults applied
    status TEXT NOT NULL DEFAULT 'online',
    last_heartbeat_ms INTEGER NOT NULL,
    accepted_tasks INTEGER NOT NULL DEFAULT 0
  );
ALTER TABLE nodes ADD COLUMN live_until_ms INTEGER NOT NULL DEFAULT 0; -- migration 4
ALTER TABLE nodes ADD COLUMN consecutive_failures INTEGER NOT NULL DEFAULT 0; -- migration 9
ALTER TABLE nodes ADD COLUMN held_until_ms INTEGER NOT NULL DEFAULT 0; -- migration 9
ALTER TABLE nodes ADD COLUMN valid_results INTEGER NOT NULL DEFAULT 0; -- migration 13
ALTER TABLE nodes ADD COLUMN invalid_results INTEGER NOT NULL DEFAULT 0; -- migration 13
ALTER TABLE nodes ADD COLUMN consecutive_valid INTEGER NOT NULL DEFAULT 0; -- migration 13
ALTER TABLE nodes ADD COLUMN verdicts TEXT NOT NULL DEFAULT ''; -- migration 15
ALTER TABLE nodes ADD COLUMN distrusted TEXT; -- migration 15
ALTER TABLE nodes ADD COLUMN passport_version INTEGER NOT NULL DEFAULT 0; -- migration 18
CREATE INDEX nodes_live_until ON nodes (live_until_ms); -- migration 4

-- outbox: migration 18
CREATE TABLE outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    to_shard INTEGER NOT NULL,
    kind TEXT NOT NULL,                   -- 'outcome' | 'passport'
    body TEXT NOT NULL,                   -- outcome: small JSON; passport: {"node_id"}, read at delivery
    created_ms INTEGER NOT NULL
  );

-- owner_replicas: migration 16
CREATE TABLE owner_replicas (
    job_id TEXT NOT NULL, class_id INTEGER NOT NULL, owner TEXT NOT NULL,
    pending INTEGER NOT NULL DEFAULT 0,               -- replicating pending tasks of which the owner holds or ran a replica
    PRIMARY KEY (job_id, class_id, owner)
  ) WITHOUT ROWID;

-- passports: migration 18
CREATE TABLE passports (
    node_id TEXT PRIMARY KEY,
    home INTEGER NOT NULL,
    version INTEGER NOT NULL,             -- the home's nodes.passport_version when issued
    registration TEXT NOT NULL,           -- NodeRegistration JSON as stored at home
    status TEXT NOT NULL,                 -- online | draining | terminating
    held_until_ms INTEGER NOT NULL,
    trusted INTEGER NOT NULL,             -- rules/verification.ts trusted() at home
    distrusted TEXT,
    owner TEXT NOT NULL,                  -- rules/owners.ts ownerOf() at home
    assigned_pools TEXT,                  -- node_pools.pools JSON, NULL when none assigned
    credential_sha256 TEXT,               -- enrolled credential hash, NULL for configured tokens / open mode
    revoked INTEGER NOT NULL DEFAULT 0,
    received_ms INTEGER NOT NULL,
    last_request_ms INTEGER NOT NULL      -- liveness as seen here
  );
ALTER TABLE passports ADD COLUMN told_until_ms INTEGER NOT NULL DEFAULT 0; -- migration 20

-- pool_layout: migration 18
CREATE TABLE pool_layout (
    epoch INTEGER PRIMARY KEY,            -- 0, 1, 2, … one per change of FLASHML_POOL_SHARDS seen at start
    shards INTEGER NOT NULL,              -- S in that epoch
    since_ms INTEGER NOT NULL,
    lowered_from INTEGER                  -- set when the epoch lowered S (after the emptiness check)
  );

-- pool_name: migration 8
CREATE TABLE pool_name (name TEXT NOT NULL);

-- pool_task_counts: migration 28
CREATE TABLE pool_task_counts (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    pending INTEGER NOT NULL, leased INTEGER NOT NULL, completed INTEGER NOT NULL,
    failed INTEGER NOT NULL, cancelled INTEGER NOT NULL
  );

-- queue_classes: migration 9
CREATE TABLE queue_classes (
    job_id TEXT NOT NULL, class_id INTEGER NOT NULL, pending INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job_id, class_id)
  ) WITHOUT ROWID;
ALTER TABLE queue_classes ADD COLUMN priority INTEGER NOT NULL DEFAULT 0; -- migration 10
ALTER TABLE queue_classes ADD COLUMN replicating INTEGER NOT NULL DEFAULT 0; -- migration 16
ALTER TABLE queue_classes ADD COLUMN queued INTEGER NOT NULL DEFAULT 0; -- migration 33
CREATE INDEX queue_classes_level ON queue_classes (class_id, priority) WHERE queued = 1; -- migration 33

-- replica_results: migration 13
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
ALTER TABLE replica_results ADD COLUMN size_bytes INTEGER NOT NULL DEFAULT 0; -- migration 15
ALTER TABLE replica_results ADD COLUMN etag TEXT NOT NULL DEFAULT ''; -- migration 15
CREATE INDEX replica_results_object ON replica_results (object); -- migration 15
CREATE INDEX replica_results_task ON replica_results (task_seq); -- migration 13

-- replicas_elsewhere: migration 22
CREATE TABLE replicas_elsewhere (
    node_id TEXT NOT NULL,
    shard INTEGER NOT NULL,                -- the job's shard
    task_seq INTEGER NOT NULL,             -- tasks.seq there
    owner TEXT NOT NULL,                   -- the node's owner here when recorded: its other nodes are refused too
    class_key TEXT NOT NULL,
    priority INTEGER NOT NULL,
    counted INTEGER NOT NULL,              -- 1: among the shard's replicating pending tasks in digests after after_version
    counted_before INTEGER NOT NULL,       -- the same, up to after_version
    after_version INTEGER NOT NULL,        -- the shard's digest version last built before the change
    PRIMARY KEY (node_id, shard, task_seq)
  ) WITHOUT ROWID;
CREATE INDEX replicas_elsewhere_owner ON replicas_elsewhere (owner); -- migration 22

-- run_rounds: migration 29
CREATE TABLE run_rounds (
    job_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    round INTEGER NOT NULL,
    quorum INTEGER NOT NULL,
    frozen TEXT,
    ended TEXT,
    told INTEGER NOT NULL DEFAULT 1,
    result TEXT,
    UNIQUE (run_id, round)
  );
CREATE INDEX run_rounds_untold ON run_rounds (job_id) WHERE told = 0; -- migration 29

-- runs: migration 29
CREATE TABLE runs (
    seq INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    request TEXT NOT NULL,
    operator TEXT,
    state TEXT NOT NULL DEFAULT 'RUNNING',
    reason TEXT,
    result_uri TEXT,
    created_ms INTEGER NOT NULL,
    finished_ms INTEGER
  );

-- schema_version: migration 1
CREATE TABLE schema_version (version INTEGER NOT NULL);

-- shard_self: migration 18
CREATE TABLE shard_self (pool TEXT NOT NULL, shard INTEGER NOT NULL);

-- task_failures: migration 9
CREATE TABLE task_failures (
    task_seq INTEGER NOT NULL, node_id TEXT NOT NULL, PRIMARY KEY (task_seq, node_id)
  ) WITHOUT ROWID;
ALTER TABLE task_failures ADD COLUMN failed_ms INTEGER NOT NULL DEFAULT 0; -- migration 14

-- tasks: migration 1
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
ALTER TABLE tasks ADD COLUMN worker_losses INTEGER NOT NULL DEFAULT 0; -- migration 9
ALTER TABLE tasks ADD COLUMN max_worker_losses INTEGER NOT NULL DEFAULT 0; -- migration 9
ALTER TABLE tasks ADD COLUMN replicas INTEGER NOT NULL DEFAULT 1; -- migration 13
ALTER TABLE tasks ADD COLUMN quorum INTEGER NOT NULL DEFAULT 1; -- migration 13
ALTER TABLE tasks ADD COLUMN tolerance REAL NOT NULL DEFAULT 0; -- migration 13
ALTER TABLE tasks ADD COLUMN wanted INTEGER NOT NULL DEFAULT 1; -- migration 13
ALTER TABLE tasks ADD COLUMN tolerance_abs REAL NOT NULL DEFAULT 1e-12; -- migration 15
ALTER TABLE tasks ADD COLUMN replicating INTEGER NOT NULL DEFAULT 0; -- migration 16
CREATE INDEX tasks_accepted_object ON tasks (accepted_object) WHERE accepted_object IS NOT NULL; -- migration 15
CREATE INDEX tasks_fresh_job ON tasks (job_id, class_id, seq) WHERE state = 'PENDING' AND replicating = 0; -- migration 16
CREATE INDEX tasks_replicating_job ON tasks (job_id, class_id, seq) WHERE state = 'PENDING' AND replicating = 1; -- migration 16

-- tasks_created: migration 41
CREATE TABLE tasks_created (
    first_seq INTEGER PRIMARY KEY,        -- the run's first event seq; its events are first_seq … first_seq + count - 1
    job_id TEXT NOT NULL,
    first_task INTEGER NOT NULL,          -- the tasks.seq of the run's first task; the others follow, in order
    count INTEGER NOT NULL,
    ts_ms INTEGER NOT NULL
  );
CREATE INDEX tasks_created_job ON tasks_created (job_id, first_seq); -- migration 41

-- tenant_shares: migration 9
CREATE TABLE tenant_shares (
    priority INTEGER NOT NULL,
    tenant TEXT NOT NULL,
    pass REAL NOT NULL DEFAULT 0,         -- claims granted, each 1/weight
    turn INTEGER NOT NULL DEFAULT 0,
    active INTEGER NOT NULL DEFAULT 0,    -- its jobs at this priority with pending tasks
    PRIMARY KEY (priority, tenant)
  );
CREATE INDEX tenant_shares_next ON tenant_shares (priority, pass, turn, tenant); -- migration 9

-- unreferenced: migration 7
CREATE TABLE unreferenced (
    object TEXT PRIMARY KEY,
    collect_after_ms INTEGER NOT NULL,
    collecting INTEGER NOT NULL DEFAULT 0   -- taken by a collection run: no bind may claim it
  );
CREATE INDEX unreferenced_due ON unreferenced (collect_after_ms); -- migration 7

-- uploads: migration 34
CREATE TABLE uploads (
    object TEXT PRIMARY KEY,
    started_ms INTEGER NOT NULL
  ) WITHOUT ROWID;

-- Triggers: kept in the transaction of every change, whatever code path makes it.
-- Each says which rule it keeps and where that rule's TypeScript half lives.

-- job_queues_activate (migration 33):
-- docs/protocol.md §13 rule 2 (fair share, no banked turns): a job whose pending count leaves 0
-- is queued (job_queues_next), catches its pass up to the lowest of its tenant's other queued
-- jobs, and makes its tenant active at its priority (a tenant new there starts at the lowest
-- pass at that priority), so nothing idle banks turns. TypeScript half:
-- src/pool/scheduling/scheduling.ts useTurn advances the passes a granted claim uses (1 for the
-- job, 1/weight for its tenant, weights from src/rules/scheduling.ts tenantWeights) and
-- pickTask orders by them; src/pool/reads/placement-report.ts reads the shares for the
-- placement report.
CREATE TRIGGER job_queues_activate AFTER UPDATE OF pending ON job_queues
    WHEN OLD.pending <= 0 AND NEW.pending > 0 BEGIN
    UPDATE job_queues SET queued = 1, pass = MAX(pass, COALESCE((SELECT MIN(q.pass) FROM job_queues q
        WHERE q.priority = NEW.priority AND q.tenant = NEW.tenant AND q.queued = 1 AND q.job_id <> NEW.job_id), 0))
      WHERE job_id = NEW.job_id;
    INSERT INTO tenant_shares (priority, tenant, pass, active)
      VALUES (NEW.priority, NEW.tenant,
              COALESCE((SELECT MIN(s.pass) FROM tenant_shares s WHERE s.priority = NEW.priority), 0), 1)
      ON CONFLICT (priority, tenant) DO UPDATE SET active = active + 1;
  END;

-- job_queues_activate_insert (migration 33):
-- docs/protocol.md §13 rule 2 (fair share, no banked turns): a job queue created with pending
-- work is queued (job_queues_next) and makes its tenant active at its priority; a tenant new
-- there starts at the lowest pass at that priority. TypeScript half:
-- src/pool/scheduling/scheduling.ts useTurn advances the passes a granted claim uses (1 for the
-- job, 1/weight for its tenant, weights from src/rules/scheduling.ts tenantWeights) and
-- pickTask orders by them; src/pool/reads/placement-report.ts reads the shares for the
-- placement report.
CREATE TRIGGER job_queues_activate_insert AFTER INSERT ON job_queues WHEN NEW.pending > 0 BEGIN
    UPDATE job_queues SET queued = 1 WHERE job_id = NEW.job_id;
    INSERT INTO tenant_shares (priority, tenant, pass, active)
      VALUES (NEW.priority, NEW.tenant,
              COALESCE((SELECT MIN(s.pass) FROM tenant_shares s WHERE s.priority = NEW.priority), 0), 1)
      ON CONFLICT (priority, tenant) DO UPDATE SET active = active + 1;
  END;

-- job_queues_deactivate (migration 33):
-- docs/protocol.md §13 rule 2 (fair share, no banked turns): a job whose pending count reaches
-- 0 is no longer queued (job_queues_next) and leaves its tenant's share; a share with no active
-- job is deleted, so an idle tenant banks no turns. TypeScript half:
-- src/pool/scheduling/scheduling.ts useTurn advances the passes a granted claim uses (1 for the
-- job, 1/weight for its tenant, weights from src/rules/scheduling.ts tenantWeights) and
-- pickTask orders by them; src/pool/reads/placement-report.ts reads the shares for the
-- placement report.
CREATE TRIGGER job_queues_deactivate AFTER UPDATE OF pending ON job_queues
    WHEN OLD.pending > 0 AND NEW.pending <= 0 BEGIN
    UPDATE job_queues SET queued = 0 WHERE job_id = NEW.job_id;
    UPDATE tenant_shares SET active = active - 1 WHERE priority = NEW.priority AND tenant = NEW.tenant;
    DELETE FROM tenant_shares WHERE priority = NEW.priority AND tenant = NEW.tenant AND active <= 0;
  END;

-- job_queues_delete (migration 9):
-- docs/protocol.md §13 rule 2 (fair share, no banked turns): a job queue deleted while it
-- counts pending work (src/pool/archive.ts deletes an archived job's queue) leaves its tenant's
-- share; a share with no active job is deleted. TypeScript half: src/pool/scheduling.ts useTurn
-- advances the passes a granted claim uses (1 for the job, 1/weight for its tenant, weights
-- from src/rules/scheduling.ts tenantWeights) and pickTask orders by them;
-- src/pool/placement-report.ts reads the shares for the placement report.
CREATE TRIGGER job_queues_delete AFTER DELETE ON job_queues WHEN OLD.pending > 0 BEGIN
    UPDATE tenant_shares SET active = active - 1 WHERE priority = OLD.priority AND tenant = OLD.tenant;
    DELETE FROM tenant_shares WHERE priority = OLD.priority AND tenant = OLD.tenant AND active <= 0;
  END;

-- jobs_count_delete (migration 5):
-- docs/protocol.md §12, counters not scans: keeps job_counts (jobs per state, RUNNING while
-- terminal_state is null) in the same transaction as a job's delete (archiving it). TypeScript
-- half: src/pool/dashboard.ts reads it for the dashboard's job totals; src/pool/jobs.ts records
-- terminal_state.
CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs BEGIN
    UPDATE job_counts SET n = n - 1 WHERE state = COALESCE(OLD.terminal_state, 'RUNNING');
  END;

-- jobs_count_insert (migration 5):
-- docs/protocol.md §12, counters not scans: keeps job_counts (jobs per state, RUNNING while
-- terminal_state is null) in the same transaction as a job's insert. TypeScript half:
-- src/pool/dashboard.ts reads it for the dashboard's job totals; src/pool/jobs.ts records
-- terminal_state.
CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs BEGIN
    INSERT INTO job_counts (state, n) VALUES (COALESCE(NEW.terminal_state, 'RUNNING'), 1)
      ON CONFLICT (state) DO UPDATE SET n = n + 1;
  END;

-- jobs_count_state (migration 5):
-- docs/protocol.md §12, counters not scans: keeps job_counts (jobs per state, RUNNING while
-- terminal_state is null) in the same transaction as a job's terminal transition. TypeScript
-- half: src/pool/dashboard.ts reads it for the dashboard's job totals; src/pool/jobs.ts records
-- terminal_state.
CREATE TRIGGER jobs_count_state AFTER UPDATE OF terminal_state ON jobs
    WHEN COALESCE(OLD.terminal_state, 'RUNNING') <> COALESCE(NEW.terminal_state, 'RUNNING') BEGIN
    UPDATE job_counts SET n = n - 1 WHERE state = COALESCE(OLD.terminal_state, 'RUNNING');
    INSERT INTO job_counts (state, n) VALUES (COALESCE(NEW.terminal_state, 'RUNNING'), 1)
      ON CONFLICT (state) DO UPDATE SET n = n + 1;
  END;

-- jobs_pool_counts (migration 40):
-- docs/protocol.md §16, a row per counter per change: the pool's task counts (pool_task_counts)
-- hold the finished jobs' tasks, so a running job's changes write only its queue row; when a
-- job finishes, in the same transaction, its queue row's counts are added to the pool's.
-- TypeScript half: src/pool/jobs/jobs.ts poolTaskCounts adds the running jobs' queue rows;
-- src/pool/alarm/archive.ts finishArchive takes an archived (finished) job's counts out.
CREATE TRIGGER jobs_pool_counts AFTER UPDATE OF terminal_state ON jobs
    WHEN (OLD.terminal_state IS NULL) <> (NEW.terminal_state IS NULL) BEGIN
    UPDATE pool_task_counts SET pending = pending + IIF(NEW.terminal_state IS NULL, -1, 1) * COALESCE((SELECT pending FROM job_queues WHERE job_id = NEW.job_id), 0),
        leased = leased + IIF(NEW.terminal_state IS NULL, -1, 1) * COALESCE((SELECT leased FROM job_queues WHERE job_id = NEW.job_id), 0),
        completed = completed + IIF(NEW.terminal_state IS NULL, -1, 1) * COALESCE((SELECT completed FROM job_queues WHERE job_id = NEW.job_id), 0),
        failed = failed + IIF(NEW.terminal_state IS NULL, -1, 1) * COALESCE((SELECT failed FROM job_queues WHERE job_id = NEW.job_id), 0),
        cancelled = cancelled + IIF(NEW.terminal_state IS NULL, -1, 1) * COALESCE((SELECT cancelled FROM job_queues WHERE job_id = NEW.job_id), 0);
  END;

-- leases_end_tell_home (migration 36):
-- docs/sharding.md §8.3, liveness: when a lease of a node whose home is another shard stops
-- being live without a commit (a fail, an expiry, a cancel), an outcome row tells the home the
-- node's last request here and its latest live deadline here, so the home lowers live_until_ms
-- as a lease's end here does for its own. A commit tells the home the same with its outcome, in
-- one row. TypeScript half: src/pool/nodes/outcomes.ts applies the 'seen' outcome
-- (ONLINE_WINDOW_MS, 15 s) and writes a commit's (committedHere); src/pool/nodes/registry.ts
-- seen() marks the request first.
CREATE TRIGGER leases_end_tell_home AFTER UPDATE OF status ON leases
    WHEN OLD.status = 'live' AND NEW.status NOT IN ('live', 'completed') BEGIN
    INSERT INTO outbox (to_shard, kind, body, created_ms)
      SELECT p.home, 'outcome', json_object('node_id', p.node_id, 'outcome', 'seen', 'at', p.last_request_ms,
          'until', COALESCE((SELECT MAX(l.deadline_ms) FROM leases l WHERE l.node_id = p.node_id AND l.status = 'live'), 0),
          'ended', 1), p.last_request_ms
        FROM passports p WHERE p.node_id = NEW.node_id;
  END;

-- leases_replica_owner (migration 16):
-- docs/protocol.md §14, replicas on distinct owners: an owner's first replica lease of a task
-- counts the task in owner_replicas while it is a replicating pending one. TypeScript half:
-- src/pool/scheduling.ts (RAN_BY_OWNER, replicatingOf) passes over a class whose replicating
-- tasks the claiming owner all holds or ran, in one seek; src/pool/leases.ts marks a task
-- replicating at its first replica and records each replica lease's owner (src/rules/owners.ts
-- ownerOf).
CREATE TRIGGER leases_replica_owner AFTER INSERT ON leases WHEN NEW.replica > 0 BEGIN
    INSERT INTO owner_replicas (job_id, class_id, owner, pending)
      SELECT t.job_id, t.class_id, NEW.owner, t.state = 'PENDING' AND t.replicating = 1
        AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.task_seq = NEW.task_seq AND l.replica > 0
          AND l.owner = NEW.owner AND l.lease_id <> NEW.lease_id)
      FROM tasks t WHERE t.seq = NEW.task_seq AND true
      ON CONFLICT (job_id, class_id, owner) DO UPDATE SET pending = pending + excluded.pending;
  END;

-- node_credentials_passport_delete (migration 19):
-- docs/sharding.md §8.1, passports: a credential removed bumps the node's passport_version in
-- the same transaction, so a shard holding an older passport (passports.version) is sent the
-- newer one and never keeps it over a newer. TypeScript half: src/pool/passports.ts passportOf
-- reads exactly these columns into the passport, upsertPassport keeps the higher version.
CREATE TRIGGER node_credentials_passport_delete AFTER DELETE ON node_credentials BEGIN
    UPDATE nodes SET passport_version = passport_version + 1 WHERE node_id = OLD.node_id;
  END;

-- node_credentials_passport_insert (migration 19):
-- docs/sharding.md §8.1, passports: a first enrolled credential (its hash and owner, the
-- passport's credential_sha256 and owner) bumps the node's passport_version in the same
-- transaction, so a shard holding an older passport (passports.version) is sent the newer one
-- and never keeps it over a newer. TypeScript half: src/pool/passports.ts passportOf reads
-- exactly these columns into the passport, upsertPassport keeps the higher version.
CREATE TRIGGER node_credentials_passport_insert AFTER INSERT ON node_credentials BEGIN
    UPDATE nodes SET passport_version = passport_version + 1 WHERE node_id = NEW.node_id;
  END;

-- node_credentials_passport_update (migration 19):
-- docs/sharding.md §8.1, passports: a credential replaced, re-owned or revoked (revoked_ms)
-- bumps the node's passport_version in the same transaction, so a shard holding an older
-- passport (passports.version) is sent the newer one and never keeps it over a newer.
-- TypeScript half: src/pool/passports.ts passportOf reads exactly these columns into the
-- passport, upsertPassport keeps the higher version.
CREATE TRIGGER node_credentials_passport_update AFTER UPDATE OF token_sha256, owner, revoked_ms ON node_credentials
    WHEN OLD.token_sha256 IS NOT NEW.token_sha256 OR OLD.owner IS NOT NEW.owner
      OR OLD.revoked_ms IS NOT NEW.revoked_ms BEGIN
    UPDATE nodes SET passport_version = passport_version + 1 WHERE node_id = NEW.node_id;
  END;

-- node_pools_passport_delete (migration 19):
-- docs/sharding.md §8.1, passports: a team-pool assignment removed bumps the node's
-- passport_version in the same transaction, so a shard holding an older passport
-- (passports.version) is sent the newer one and never keeps it over a newer. TypeScript half:
-- src/pool/passports.ts passportOf reads exactly these columns into the passport,
-- upsertPassport keeps the higher version.
CREATE TRIGGER node_pools_passport_delete AFTER DELETE ON node_pools BEGIN
    UPDATE nodes SET passport_version = passport_version + 1 WHERE node_id = OLD.node_id;
  END;

-- node_pools_passport_insert (migration 19):
-- docs/sharding.md §8.1, passports: a first team-pool assignment (node_pools, the passport's
-- assigned_pools) bumps the node's passport_version in the same transaction, so a shard holding
-- an older passport (passports.version) is sent the newer one and never keeps it over a newer.
-- TypeScript half: src/pool/passports.ts passportOf reads exactly these columns into the
-- passport, upsertPassport keeps the higher version.
CREATE TRIGGER node_pools_passport_insert AFTER INSERT ON node_pools BEGIN
    UPDATE nodes SET passport_version = passport_version + 1 WHERE node_id = NEW.node_id;
  END;

-- node_pools_passport_update (migration 19):
-- docs/sharding.md §8.1, passports: a changed team-pool assignment bumps the node's
-- passport_version in the same transaction, so a shard holding an older passport
-- (passports.version) is sent the newer one and never keeps it over a newer. TypeScript half:
-- src/pool/passports.ts passportOf reads exactly these columns into the passport,
-- upsertPassport keeps the higher version.
CREATE TRIGGER node_pools_passport_update AFTER UPDATE OF pools ON node_pools WHEN OLD.pools IS NOT NEW.pools BEGIN
    UPDATE nodes SET passport_version = passport_version + 1 WHERE node_id = NEW.node_id;
  END;

-- nodes_passport (migration 19):
-- docs/sharding.md §8.1, passports: a change to the node's registration, status, hold
-- (held_until_ms), distrust, or trusted() flag (consecutive_valid crossing TRUST_AFTER_VALID,
-- src/rules/verification.ts: the literal 10 here must match) bumps the node's passport_version
-- in the same transaction, so a shard holding an older passport (passports.version) is sent the
-- newer one and never keeps it over a newer. TypeScript half: src/pool/passports.ts passportOf
-- reads exactly these columns into the passport, upsertPassport keeps the higher version.
CREATE TRIGGER nodes_passport AFTER UPDATE OF registration, status, held_until_ms, distrusted, consecutive_valid ON nodes
    WHEN OLD.registration IS NOT NEW.registration OR OLD.status IS NOT NEW.status
      OR OLD.held_until_ms IS NOT NEW.held_until_ms OR OLD.distrusted IS NOT NEW.distrusted
      OR (OLD.consecutive_valid >= 10) <> (NEW.consecutive_valid >= 10) BEGIN
    UPDATE nodes SET passport_version = passport_version + 1 WHERE node_id = NEW.node_id;
  END;

-- queue_classes_owners_delete (migration 16):
-- docs/protocol.md §14, replicas on distinct owners: a (job, class)'s queue row deleted
-- (archiving its job) takes its owners' counts with it. TypeScript half: src/pool/scheduling.ts
-- (RAN_BY_OWNER, replicatingOf) passes over a class whose replicating tasks the claiming owner
-- all holds or ran, in one seek; src/pool/leases.ts marks a task replicating at its first
-- replica and records each replica lease's owner (src/rules/owners.ts ownerOf).
CREATE TRIGGER queue_classes_owners_delete AFTER DELETE ON queue_classes BEGIN
    DELETE FROM owner_replicas WHERE job_id = OLD.job_id AND class_id = OLD.class_id;
  END;

-- queue_classes_queued (migration 35):
-- docs/protocol.md §16, rows written: queue_classes.queued is 1 exactly while its pending count
-- is above 0, written only when the count crosses 0, and its class counts it among its queued
-- jobs (classes.queued_jobs, classes.queued while above 0), so neither queue_classes_level nor
-- classes_queued (which read the flags) is rewritten by every change of a count. TypeScript
-- half: the claim (src/pool/scheduling/scheduling.ts) and the reads (src/pool/reads/) select
-- queued rows by the flags; src/pool/reads/fleet.ts sums a class's pending tasks over its
-- queued jobs; test/invariants/check.ts holds the flags and counts to the tasks.
CREATE TRIGGER queue_classes_queued AFTER UPDATE OF pending ON queue_classes
    WHEN (OLD.pending > 0) <> (NEW.pending > 0) BEGIN
    UPDATE queue_classes SET queued = NEW.pending > 0 WHERE job_id = NEW.job_id AND class_id = NEW.class_id;
    UPDATE classes SET queued_jobs = queued_jobs + IIF(NEW.pending > 0, 1, -1),
        queued = queued_jobs + IIF(NEW.pending > 0, 1, -1) > 0
      WHERE class_id = NEW.class_id;
  END;

-- queue_classes_queued_delete (migration 35):
-- docs/protocol.md §16, rows written: a queued (job, class) queue deleted leaves its class's
-- count, so neither queue_classes_level nor classes_queued (which read the flags) is rewritten
-- by every change of a count. TypeScript half: the claim (src/pool/scheduling/scheduling.ts)
-- and the reads (src/pool/reads/) select queued rows by the flags; src/pool/reads/fleet.ts sums
-- a class's pending tasks over its queued jobs; test/invariants/check.ts holds the flags and
-- counts to the tasks.
CREATE TRIGGER queue_classes_queued_delete AFTER DELETE ON queue_classes WHEN OLD.queued = 1 BEGIN
    UPDATE classes SET queued_jobs = queued_jobs - 1, queued = queued_jobs > 1 WHERE class_id = OLD.class_id;
  END;

-- queue_classes_queued_insert (migration 35):
-- docs/protocol.md §16, rows written: a (job, class) queue created with pending work is queued
-- and counted among its class's queued jobs, so neither queue_classes_level nor classes_queued
-- (which read the flags) is rewritten by every change of a count. TypeScript half: the claim
-- (src/pool/scheduling/scheduling.ts) and the reads (src/pool/reads/) select queued rows by the
-- flags; src/pool/reads/fleet.ts sums a class's pending tasks over its queued jobs;
-- test/invariants/check.ts holds the flags and counts to the tasks.
CREATE TRIGGER queue_classes_queued_insert AFTER INSERT ON queue_classes WHEN NEW.pending > 0 BEGIN
    UPDATE queue_classes SET queued = 1 WHERE job_id = NEW.job_id AND class_id = NEW.class_id;
    UPDATE classes SET queued_jobs = queued_jobs + 1, queued = 1 WHERE class_id = NEW.class_id;
  END;

-- tasks_count_delete (migration 40):
-- docs/protocol.md §12, counters not scans: a task's delete while its job stays (its queue row
-- there) takes it out of the same counts as tasks_count_state, in the same transaction.
-- Archiving a whole job takes the job's counts out of the pool's at once and deletes its queue
-- row before its tasks (§16: two rows a task fewer). TypeScript half: src/pool/alarm/archive.ts
-- finishArchive.
CREATE TRIGGER tasks_count_delete AFTER DELETE ON tasks WHEN EXISTS (SELECT 1 FROM job_queues WHERE job_id = OLD.job_id) BEGIN
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
        cancelled = cancelled - (OLD.state = 'CANCELLED')
      WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE job_id = OLD.job_id AND terminal_state IS NULL);
    UPDATE queue_classes SET pending = pending - 1
      WHERE job_id = OLD.job_id AND class_id = OLD.class_id AND OLD.state = 'PENDING';
  END;

-- tasks_count_state (migration 40):
-- docs/protocol.md §12, counters not scans, and §16, a row per counter per change: in the same
-- transaction as a task's change of state, its job's counts by state (job_queues: pending and
-- the others, one row) and its (job, class)'s pending count (queue_classes); the pool's
-- (pool_task_counts) only for a finished job's task. A claim's PENDING → LEASED is the one
-- change whose job counts it leaves to the claim, which writes them with the job's turn.
-- TypeScript half: src/pool/scheduling/scheduling.ts useTurn moves a claimed task's job counts;
-- src/pool/jobs/jobs.ts taskCounts reads a job's counts and poolTaskCounts the pool's (the
-- finished jobs' row plus the running jobs' queue rows), src/pool/jobs/tasks.ts countAdded
-- counts a submission's tasks, src/pool/scheduling/scheduling.ts walks job_queues,
-- queue_classes and classes for the claim (docs/protocol.md §13 rules 1 and 2),
-- src/pool/reads/fleet.ts sums a class's pending tasks over its queued jobs.
CREATE TRIGGER tasks_count_state AFTER UPDATE OF state ON tasks WHEN OLD.state <> NEW.state BEGIN
    UPDATE job_queues SET pending = pending + (NEW.state = 'PENDING') - (OLD.state = 'PENDING'),
        leased = leased + (NEW.state = 'LEASED') - (OLD.state = 'LEASED'),
        completed = completed + (NEW.state = 'COMPLETED') - (OLD.state = 'COMPLETED'),
        failed = failed + (NEW.state = 'FAILED') - (OLD.state = 'FAILED'),
        cancelled = cancelled + (NEW.state = 'CANCELLED') - (OLD.state = 'CANCELLED')
      WHERE job_id = NEW.job_id AND (OLD.state = 'PENDING') <> (NEW.state = 'PENDING')
        AND NOT (OLD.state = 'PENDING' AND NEW.state = 'LEASED');
    UPDATE job_queues SET leased = leased + (NEW.state = 'LEASED') - (OLD.state = 'LEASED'),
        completed = completed + (NEW.state = 'COMPLETED') - (OLD.state = 'COMPLETED'),
        failed = failed + (NEW.state = 'FAILED') - (OLD.state = 'FAILED'),
        cancelled = cancelled + (NEW.state = 'CANCELLED') - (OLD.state = 'CANCELLED')
      WHERE job_id = NEW.job_id AND (OLD.state = 'PENDING') = (NEW.state = 'PENDING');
    UPDATE pool_task_counts SET pending = pending + (NEW.state = 'PENDING') - (OLD.state = 'PENDING'),
        leased = leased + (NEW.state = 'LEASED') - (OLD.state = 'LEASED'),
        completed = completed + (NEW.state = 'COMPLETED') - (OLD.state = 'COMPLETED'),
        failed = failed + (NEW.state = 'FAILED') - (OLD.state = 'FAILED'),
        cancelled = cancelled + (NEW.state = 'CANCELLED') - (OLD.state = 'CANCELLED')
      WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE job_id = NEW.job_id AND terminal_state IS NULL);
    UPDATE queue_classes SET pending = pending + IIF(NEW.state = 'PENDING', 1, -1)
      WHERE job_id = NEW.job_id AND class_id = NEW.class_id AND (OLD.state = 'PENDING') <> (NEW.state = 'PENDING');
  END;

-- tasks_replicating_delete (migration 16):
-- docs/protocol.md §14, replicas on distinct owners: a replicating pending task's delete lowers
-- the same two counts. TypeScript half: src/pool/scheduling.ts (RAN_BY_OWNER, replicatingOf)
-- passes over a class whose replicating tasks the claiming owner all holds or ran, in one seek;
-- src/pool/leases.ts marks a task replicating at its first replica and records each replica
-- lease's owner (src/rules/owners.ts ownerOf).
CREATE TRIGGER tasks_replicating_delete AFTER DELETE ON tasks WHEN OLD.state = 'PENDING' AND OLD.replicating = 1 BEGIN
    UPDATE queue_classes SET replicating = replicating - 1 WHERE job_id = OLD.job_id AND class_id = OLD.class_id;
    UPDATE owner_replicas SET pending = pending - 1 WHERE job_id = OLD.job_id AND class_id = OLD.class_id
      AND owner IN (SELECT owner FROM leases WHERE task_seq = OLD.seq AND replica > 0);
  END;

-- tasks_replicating_state (migration 16):
-- docs/protocol.md §14, replicas on distinct owners: keeps queue_classes.replicating (the
-- replicating pending tasks per (job, class)) and owner_replicas.pending (those of them each
-- owner holds or ran a replica of) in the same transaction as a task's change of state or of
-- replicating. TypeScript half: src/pool/scheduling.ts (RAN_BY_OWNER, replicatingOf) passes
-- over a class whose replicating tasks the claiming owner all holds or ran, in one seek;
-- src/pool/leases.ts marks a task replicating at its first replica and records each replica
-- lease's owner (src/rules/owners.ts ownerOf).
CREATE TRIGGER tasks_replicating_state AFTER UPDATE OF state, replicating ON tasks
    WHEN (OLD.state = 'PENDING' AND OLD.replicating = 1) <> (NEW.state = 'PENDING' AND NEW.replicating = 1) BEGIN
    UPDATE queue_classes SET replicating = replicating + IIF(NEW.state = 'PENDING' AND NEW.replicating = 1, 1, -1)
      WHERE job_id = NEW.job_id AND class_id = NEW.class_id;
    UPDATE owner_replicas SET pending = pending + IIF(NEW.state = 'PENDING' AND NEW.replicating = 1, 1, -1)
      WHERE job_id = NEW.job_id AND class_id = NEW.class_id
        AND owner IN (SELECT owner FROM leases WHERE task_seq = NEW.seq AND replica > 0);
  END;

-- tasks_replicating_tell_homes (migration 22):
-- docs/sharding.md §8.6, spot checks across shards: when a replicated task starts or stops
-- being a replicating pending one (a replica issued, the last one wanted issued, one ended, a
-- verdict, a cancel), each node of another shard that holds or ran a replica of it has its home
-- told, so the home counts the task out of that node's offers here exactly while the summary
-- counts it in. TypeScript half: src/pool/replicas-elsewhere.ts (the answer to a forwarded
-- claim says the same at the lease; the home keeps replicas_elsewhere and
-- src/pool/forwarding.ts offersFor subtracts it), src/pool/outcomes.ts delivers the 'replica'
-- outcome.
CREATE TRIGGER tasks_replicating_tell_homes AFTER UPDATE OF state, replicating ON tasks
    WHEN (OLD.state = 'PENDING' AND OLD.replicating = 1) <> (NEW.state = 'PENDING' AND NEW.replicating = 1) BEGIN
    INSERT INTO outbox (to_shard, kind, body, created_ms)
      SELECT p.home, 'outcome', json_object('node_id', p.node_id, 'outcome', 'replica', 'task', NEW.seq,
          'class_key', (SELECT class_key FROM classes WHERE class_id = NEW.class_id),
          'priority', (SELECT priority FROM job_queues WHERE job_id = NEW.job_id),
          'counted', NEW.state = 'PENDING' AND NEW.replicating = 1), 0
        FROM passports p
        WHERE p.node_id IN (SELECT node_id FROM leases WHERE task_seq = NEW.seq AND replica > 0);
  END;
