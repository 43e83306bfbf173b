// The pool object's SQLite schema, as an ordered list of migrations. Each
// step runs once, in order, inside the constructor's blockConcurrencyWhile;
// the applied version is recorded so a deployed object upgrades in place.
// Never edit a shipped step: append a new one.

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
