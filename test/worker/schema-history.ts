// Takes a pool's schema back to an earlier version, so a test can check that
// a migration upgrades a pool that was created before it (its backfill).
// Every migration after the first two has its undo here; a test fails when
// one is missing, so a new migration comes with the means to test it.

import { MIGRATIONS } from "../../src/pool/schema";

const UNDO: Record<number, string> = {
  3: "DROP TABLE event_counts;",
  4: "DROP INDEX nodes_live_until; ALTER TABLE nodes DROP COLUMN live_until_ms;",
  5: `DROP TRIGGER tasks_count_insert; DROP TRIGGER tasks_count_state; DROP TRIGGER tasks_count_delete;
      DROP TRIGGER jobs_count_insert; DROP TRIGGER jobs_count_state; DROP TRIGGER jobs_count_delete;
      DROP INDEX classes_pending; DROP INDEX jobs_live_first;
      DROP TABLE job_task_counts; DROP TABLE task_counts; DROP TABLE job_counts;
      ALTER TABLE classes DROP COLUMN pending;`,
  6: "ALTER TABLE leases DROP COLUMN renewals; ALTER TABLE leases DROP COLUMN renewed_ms;",
  7: "DROP TABLE unreferenced;",
  8: `DROP TABLE archived_jobs; DROP INDEX jobs_finished; DROP INDEX leases_task; DROP TABLE pool_name;`,
  9: `DROP TRIGGER tasks_queue_insert; DROP TRIGGER tasks_queue_state; DROP TRIGGER tasks_queue_delete;
      DROP TRIGGER job_queues_activate_insert; DROP TRIGGER job_queues_activate; DROP TRIGGER job_queues_deactivate;
      DROP TRIGGER job_queues_delete;
      DROP TABLE job_queues; DROP INDEX queue_classes_pending; DROP TABLE queue_classes; DROP TABLE tenant_shares; DROP TABLE task_failures;
      ALTER TABLE tasks DROP COLUMN worker_losses; ALTER TABLE tasks DROP COLUMN max_worker_losses;
      ALTER TABLE nodes DROP COLUMN consecutive_failures; ALTER TABLE nodes DROP COLUMN held_until_ms;`,
  10: `DROP TRIGGER tasks_queue_insert; DROP INDEX queue_classes_level; ALTER TABLE queue_classes DROP COLUMN priority;
      CREATE INDEX queue_classes_pending ON queue_classes (class_id, job_id) WHERE pending > 0;
      CREATE TRIGGER tasks_queue_insert AFTER INSERT ON tasks WHEN NEW.state = 'PENDING' BEGIN
        INSERT INTO queue_classes (job_id, class_id, pending) VALUES (NEW.job_id, NEW.class_id, 1)
          ON CONFLICT (job_id, class_id) DO UPDATE SET pending = pending + 1;
        INSERT INTO job_queues (job_id, pending) VALUES (NEW.job_id, 1)
          ON CONFLICT (job_id) DO UPDATE SET pending = pending + 1;
      END;`,
  11: "DROP TABLE device_codes; DROP TABLE node_credentials;",
  12: "ALTER TABLE node_credentials DROP COLUMN revoked_by; ALTER TABLE node_credentials DROP COLUMN revoked_ms;",
  13: `DROP TABLE replica_results; ALTER TABLE leases DROP COLUMN replica;
      ALTER TABLE tasks DROP COLUMN replicas; ALTER TABLE tasks DROP COLUMN quorum;
      ALTER TABLE tasks DROP COLUMN tolerance; ALTER TABLE tasks DROP COLUMN wanted;
      ALTER TABLE nodes DROP COLUMN valid_results; ALTER TABLE nodes DROP COLUMN invalid_results;
      ALTER TABLE nodes DROP COLUMN consecutive_valid;`,
  14: `ALTER TABLE task_failures DROP COLUMN failed_ms; DROP TRIGGER leases_end_liveness;
      DROP INDEX device_codes_pending_source; ALTER TABLE device_codes DROP COLUMN source;`,
  15: `DROP INDEX replica_results_object; DROP INDEX tasks_accepted_object;
      ALTER TABLE tasks DROP COLUMN tolerance_abs;
      ALTER TABLE replica_results DROP COLUMN size_bytes; ALTER TABLE replica_results DROP COLUMN etag;
      ALTER TABLE nodes DROP COLUMN verdicts; ALTER TABLE nodes DROP COLUMN distrusted;
      ALTER TABLE events DROP COLUMN sealed_task;`,
  16: `DROP TRIGGER tasks_replicating_state; DROP TRIGGER tasks_replicating_delete;
      DROP TRIGGER leases_replica_owner; DROP TRIGGER queue_classes_owners_delete;
      DROP INDEX tasks_fresh_job; DROP INDEX tasks_replicating_job; DROP TABLE owner_replicas;
      ALTER TABLE tasks DROP COLUMN replicating; ALTER TABLE leases DROP COLUMN owner;
      ALTER TABLE device_codes DROP COLUMN owner; ALTER TABLE node_credentials DROP COLUMN owner;
      ALTER TABLE queue_classes DROP COLUMN replicating;`,
  17: "DROP TABLE node_pools; ALTER TABLE device_codes DROP COLUMN pools;",
};

/** The versions that have an undo: every migration after the second. */
export const UNDOABLE = Object.keys(UNDO).map(Number);

/** Undoes every applied migration after `version`, newest first, and records `version`. */
export function rewindSchema(sql: SqlStorage, version: number): void {
  for (let v = MIGRATIONS.length; v > version; v--) {
    const undo = UNDO[v];
    if (undo === undefined) throw new Error(`migration ${v} has no undo in test/worker/schema-history.ts`);
    sql.exec(undo);
  }
  sql.exec("UPDATE schema_version SET version = ?", version);
}
