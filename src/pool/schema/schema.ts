// The pool object's SQLite schema: an ordered list of migrations, as data
// (src/pool/schema/migrations/), and the schema they make, committed as
// src/pool/schema/schema.sql (test/worker/schema/schema.test.ts holds them equal; `npm
// run schema:snapshot` rewrites it). Every step newer than the recorded
// version runs once, in order, in one transaction inside the constructor's
// blockConcurrencyWhile, so a deployed object upgrades in place.
//
// Never edit a shipped step: append a new one, with its `down`. A step's
// work over existing rows is paid once, while the object serves nothing, by
// every pool created before it (docs/protocol.md §12 asks for bounded work here; what
// today's steps cost on a large history is BENCHMARKS.md §10, `npm run
// bench:migrations`). A new step that must fill rows from history leaves
// that to batches run after it.

import type { Migration } from "./migrations/migration";
import { CORE } from "./migrations/v01-core";
import { SCHEDULING } from "./migrations/v09-scheduling";
import { TRUST } from "./migrations/v11-trust";
import { SHARDS } from "./migrations/v18-shards";
import { PASSPORTS } from "./migrations/v19-passports";
import { REPLICAS_ELSEWHERE } from "./migrations/v22-replicas-elsewhere";
import { UNUSED } from "./migrations/v23-unused";
import { COSTS } from "./migrations/v24-costs";
import { RUNS } from "./migrations/v29-runs";
import { FEWER_ROWS } from "./migrations/v30-fewer-rows";

export type { Migration } from "./migrations/migration";

/** Every step, in order: ids 1, 2, … with no gap (a test holds them so), the versions schema_version records. */
export const MIGRATIONS: readonly Migration[] = [
  ...CORE,
  ...SCHEDULING,
  ...TRUST,
  ...SHARDS,
  ...PASSPORTS,
  ...REPLICAS_ELSEWHERE,
  ...UNUSED,
  ...COSTS,
  ...RUNS,
  ...FEWER_ROWS,
];

/** Applies every migration newer than the recorded version, in order (the caller holds the transaction). */
export function migrate(sql: SqlStorage): void {
  sql.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
  const row = sql.exec<{ version: number }>("SELECT version FROM schema_version").toArray()[0];
  const applied = row?.version ?? 0;
  for (const m of MIGRATIONS) if (m.id > applied) sql.exec(m.up);
  if (!row) sql.exec("INSERT INTO schema_version (version) VALUES (?)", MIGRATIONS.length);
  else if (applied < MIGRATIONS.length) sql.exec("UPDATE schema_version SET version = ?", MIGRATIONS.length);
}
