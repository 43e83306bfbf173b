// Takes a pool's schema back to an earlier version with the migrations'
// `down` steps, so a test can check that a migration upgrades a pool that
// was created before it (its backfill).

import { MIGRATIONS } from "../../../src/pool/schema/schema";

/** Undoes every applied migration after `version`, newest first, and records `version`. */
export function rewindSchema(sql: SqlStorage, version: number): void {
  for (const m of [...MIGRATIONS].reverse()) if (m.id > version) sql.exec(m.down);
  sql.exec("UPDATE schema_version SET version = ?", version);
}
