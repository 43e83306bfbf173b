// The pool object's SQLite schema: an ordered list of migrations, as data
// (src/pool/schema/migrations/), and the schema they make, committed as
// src/pool/schema/schema.sql (test/worker/schema/schema.test.ts holds them equal; `npm
// run schema:snapshot` rewrites it). Every step newer than the recorded
// version runs once, in order, inside blockConcurrencyWhile, so a deployed
// object upgrades in place: at its start, in one transaction, or for an
// object of more than UPGRADE.wholeBelowBytes one step per event, each its
// own transaction, the object refusing calls until the last (src/pool/object.ts).
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

/**
 * An object larger than this upgrades one step per event (`upgrade`): below
 * it every step runs at once. Measured (BENCHMARKS.md §10), the whole chain
 * takes about 3.6 ms a MB of history on our test machine, so 256 MiB about
 * a second, and the heaviest single step on a full 10 GB object about
 * 14.5 s: either way an event stays within half of its 30 s. A field, so a
 * test can make a small pool upgrade as a large one does.
 */
export const UPGRADE = { wholeBelowBytes: 256 * 2 ** 20 };

/**
 * Applies the migrations newer than the recorded version and records the
 * last one applied (the caller holds the transaction): all of them, or only
 * the next when `whole` is false. Answers the version then recorded: the
 * schema is current when it is MIGRATIONS.length.
 */
export function upgrade(sql: SqlStorage, whole = true): number {
  sql.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
  const applied = sql.exec<{ version: number }>("SELECT version FROM schema_version").toArray()[0]?.version ?? 0;
  const due = MIGRATIONS.filter((m) => m.id > applied);
  const run = whole ? due : due.slice(0, 1);
  for (const m of run) sql.exec(m.up);
  const last = run[run.length - 1];
  if (last === undefined) return applied;
  if (applied === 0) sql.exec("INSERT INTO schema_version (version) VALUES (?)", last.id);
  else sql.exec("UPDATE schema_version SET version = ?", last.id);
  return last.id;
}

/** Applies every migration newer than the recorded version, in order (the caller holds the transaction). */
export function migrate(sql: SqlStorage): void {
  upgrade(sql);
}
