// Steps 11-17 of the pool's schema: enrolled machines (11, 12, 14, 17),
// verified results and the adversaries they face (13, 15, 16), and retry
// elsewhere (14). The schema as a whole: src/pool/schema.sql.

import type { Migration } from "./migration";

/** The note of a trigger keeping the per-owner replica counts: what it does. */
const distinctOwners = (does: string) =>
  `docs/protocol.md §14, replicas on distinct owners: ${does} TypeScript half: src/pool/scheduling.ts (RAN_BY_OWNER, replicatingOf) passes over a class whose replicating tasks the claiming owner all holds or ran, in one seek; src/pool/leases.ts marks a task replicating at its first replica and records each replica lease's owner (src/rules/owners.ts ownerOf).`;

export const TRUST: readonly Migration[] = [
  // 11: device-code enrolment (docs/protocol.md §9 "Enrolled machines"). Codes waiting
  // for an operator, kept a day after they expire for the record, and the
  // credentials of enrolled nodes. Hashes only: a device code and a token
  // are never stored as given.
  {
    id: 11,
    description:
      "device-code enrolment: codes waiting for an operator, enrolled nodes' credentials (docs/protocol.md §9)",
    up: `
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
    down: "DROP TABLE device_codes; DROP TABLE node_credentials;",
  },
  // 12: a revoked credential stays as a record of who revoked it and when
  // (docs/protocol.md §9: the dashboard shows every revocation); its hash is forgotten.
  {
    id: 12,
    description: "a revoked credential keeps who revoked it and when (docs/protocol.md §9)",
    up: `
  ALTER TABLE node_credentials ADD COLUMN revoked_by TEXT;
  ALTER TABLE node_credentials ADD COLUMN revoked_ms INTEGER;
  `,
    down: "ALTER TABLE node_credentials DROP COLUMN revoked_by; ALTER TABLE node_credentials DROP COLUMN revoked_ms;",
  },
  // 13: verified results (docs/protocol.md §14). A replicated task keeps its job's
  // replicas, quorum and tolerance, and how many replicas it wants out or
  // done now (`wanted`); each replica is a lease numbered from 1, and each
  // committed replica's metrics object waits in replica_results for the
  // verdict. Nodes keep their record of valid and invalid results.
  {
    id: 13,
    description:
      "verified results: replicated tasks, replica leases and results, nodes' records (docs/protocol.md §14)",
    up: `
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
    down: `DROP TABLE replica_results; ALTER TABLE leases DROP COLUMN replica;
      ALTER TABLE tasks DROP COLUMN replicas; ALTER TABLE tasks DROP COLUMN quorum;
      ALTER TABLE tasks DROP COLUMN tolerance; ALTER TABLE tasks DROP COLUMN wanted;
      ALTER TABLE nodes DROP COLUMN valid_results; ALTER TABLE nodes DROP COLUMN invalid_results;
      ALTER TABLE nodes DROP COLUMN consecutive_valid;`,
  },
  // 14: liveness and retry elsewhere (docs/protocol.md §13 rule 4). A failure records
  // when it happened: a retry waits for another idle node only for a window
  // after it (failures recorded before this count as long past). When a lease stops being live, whatever code
  // path ends it, its node is online until its last request plus the online
  // window (15 s, ONLINE_WINDOW_MS) or the deadline of another live lease it
  // holds, no longer until the ended lease's deadline. A pending device
  // code keeps the source it came from (docs/protocol.md §9: codes are limited per
  // source; rules/enrolment.ts codeSource), counted through a partial index.
  {
    id: 14,
    description:
      "retry elsewhere's window, liveness when a lease ends, pending codes per source (docs/protocol.md §13 rule 4, §9)",
    up: `
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
    down: `ALTER TABLE task_failures DROP COLUMN failed_ms; DROP TRIGGER leases_end_liveness;
      DROP INDEX device_codes_pending_source; ALTER TABLE device_codes DROP COLUMN source;`,
    triggers: {
      leases_end_liveness:
        "docs/protocol.md §13 rule 4 and §5 (liveness): when a lease stops being live, by whatever code path (commit, fail, expiry, cancel), its node is online until its last request plus the online window, or another live lease's deadline, no longer until the ended lease's. TypeScript half: src/pool/nodes.ts ONLINE_WINDOW_MS (15 s: the literal 15000 here must match) and the requests that extend live_until_ms; src/pool/scheduling.ts POLICY_SQL.others reads it for the idle nodes rule 4 waits for.",
    },
  },
  // 15: verification against adversaries (docs/protocol.md §14). A task's absolute
  // tolerance; a committed replica keeps its object's size and etag, so the verdict binds the
  // judged object whatever its replica key points at later, and judged or
  // accepted objects are found when collection asks. A node keeps its
  // latest verdicts and, past the lie threshold, why it is distrusted. An
  // event about a replicated task is sealed from nodes until the task ends.
  {
    id: 15,
    description:
      "verification against adversaries: absolute tolerance, judged objects, verdicts, sealed events (docs/protocol.md §14)",
    up: `
  ALTER TABLE tasks ADD COLUMN tolerance_abs REAL NOT NULL DEFAULT 1e-12;
  ALTER TABLE replica_results ADD COLUMN size_bytes INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE replica_results ADD COLUMN etag TEXT NOT NULL DEFAULT '';
  CREATE INDEX replica_results_object ON replica_results (object);
  CREATE INDEX tasks_accepted_object ON tasks (accepted_object) WHERE accepted_object IS NOT NULL;
  ALTER TABLE nodes ADD COLUMN verdicts TEXT NOT NULL DEFAULT '';
  ALTER TABLE nodes ADD COLUMN distrusted TEXT;
  ALTER TABLE events ADD COLUMN sealed_task INTEGER;
  `,
    down: `DROP INDEX replica_results_object; DROP INDEX tasks_accepted_object;
      ALTER TABLE tasks DROP COLUMN tolerance_abs;
      ALTER TABLE replica_results DROP COLUMN size_bytes; ALTER TABLE replica_results DROP COLUMN etag;
      ALTER TABLE nodes DROP COLUMN verdicts; ALTER TABLE nodes DROP COLUMN distrusted;
      ALTER TABLE events DROP COLUMN sealed_task;`,
  },
  // 16: replicas of one task run on nodes of distinct owners (docs/protocol.md §14). A
  // lease records its node's owner when issued; an enrolled credential keeps
  // the owner its approval named. A task is `replicating` from its first
  // replica on: such tasks leave the index the claim's fresh head reads, and
  // each (job, class) counts its pending ones, and for each owner those of
  // them it holds or ran a replica of, so a claim by an owner that ran them
  // all passes over them in one seek however many there are. Triggers keep
  // the counts in the same transaction as every change. The backfill reads
  // the tasks once, as step 5 does.
  {
    id: 16,
    description:
      "replicas on nodes of distinct owners: lease owners, replicating tasks, per-owner counts (docs/protocol.md §14)",
    up: `
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
    down: `DROP TRIGGER tasks_replicating_state; DROP TRIGGER tasks_replicating_delete;
      DROP TRIGGER leases_replica_owner; DROP TRIGGER queue_classes_owners_delete;
      DROP INDEX tasks_fresh_job; DROP INDEX tasks_replicating_job; DROP TABLE owner_replicas;
      ALTER TABLE tasks DROP COLUMN replicating; ALTER TABLE leases DROP COLUMN owner;
      ALTER TABLE device_codes DROP COLUMN owner; ALTER TABLE node_credentials DROP COLUMN owner;
      ALTER TABLE queue_classes DROP COLUMN replicating;`,
    triggers: {
      tasks_replicating_state: distinctOwners(
        "keeps queue_classes.replicating (the replicating pending tasks per (job, class)) and owner_replicas.pending (those of them each owner holds or ran a replica of) in the same transaction as a task's change of state or of replicating.",
      ),
      tasks_replicating_delete: distinctOwners("a replicating pending task's delete lowers the same two counts."),
      leases_replica_owner: distinctOwners(
        "an owner's first replica lease of a task counts the task in owner_replicas while it is a replicating pending one.",
      ),
      queue_classes_owners_delete: distinctOwners(
        "a (job, class)'s queue row deleted (archiving its job) takes its owners' counts with it.",
      ),
    },
  },
  // 17: team-pool membership an operator assigned (docs/protocol.md §9), kept apart from
  // what the node reports in its registration, and surviving it: a node may
  // be assigned pools at the approval of its enrolment, before it ever
  // registers. An approval names the pools with the code it decides.
  {
    id: 17,
    description: "team-pool membership an operator assigned, apart from the node's registration (docs/protocol.md §9)",
    up: `
  ALTER TABLE device_codes ADD COLUMN pools TEXT;    -- JSON list named at approval (NULL: none named)
  CREATE TABLE node_pools (
    node_id TEXT PRIMARY KEY,
    pools TEXT NOT NULL,                 -- JSON list of team pool names
    assigned_by TEXT NOT NULL,           -- the operator's name
    assigned_ms INTEGER NOT NULL
  );
  `,
    down: "DROP TABLE node_pools; ALTER TABLE device_codes DROP COLUMN pools;",
  },
];
