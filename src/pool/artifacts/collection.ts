// R2 objects no key refers to, and their collection (docs/protocol.md §12 "Nothing
// leaks"). An upload is recorded before its bytes stream (a row in `uploads`,
// one row written and one deleted, docs/protocol.md §16), so every object the
// Worker writes is known here until a bind makes a key refer to it. The
// Worker deletes what it knows to be unreferenced at once (a refused or
// failed upload, bytes a bind replaced); the alarm collects whatever that
// delete missed and every upload never bound. Every function here runs
// inside a transaction of the pool object.

/** How long an upload may stream before its object counts as abandoned. */
export const UPLOAD_GRACE_MS = 60 * 60 * 1000;
/** How long after the Worker's own delete collection checks again, and waits after a refused delete. */
export const RETRY_MS = 60 * 1000;
/** Objects deleted per alarm run: collection never holds claims up for long. */
export const COLLECT_BATCH = 100;

/**
 * Records an upload about to stream into `object`: collected unless a bind
 * claims it in time. A row of `uploads`, keyed by the object alone (schema
 * step 34): no index to write, where `unreferenced` has two.
 */
export function uploadStarted(sql: SqlStorage, now: number, object: string): void {
  sql.exec("INSERT INTO uploads (object, started_ms) VALUES (?, ?) ON CONFLICT (object) DO NOTHING", object, now);
}

/** A key now refers to `object`: it is no longer collected. */
export function referenced(sql: SqlStorage, object: string): void {
  // An upload recorded before step 34, or one its grace passed, waits in `unreferenced`.
  if (sql.exec("DELETE FROM uploads WHERE object = ?", object).rowsWritten === 0)
    sql.exec("DELETE FROM unreferenced WHERE object = ?", object);
}

/**
 * No key refers to `object` any more (replaced, refused, abandoned). The
 * Worker deletes it now; collection follows a little later, for the case
 * where that delete failed.
 */
export function unreferenced(sql: SqlStorage, now: number, object: string): void {
  if (kept(sql, object)) return;
  sql.exec(
    `INSERT INTO unreferenced (object, collect_after_ms) VALUES (?, ?)
     ON CONFLICT (object) DO UPDATE SET collect_after_ms = excluded.collect_after_ms`,
    object,
    now + RETRY_MS,
  );
}

/**
 * Whether `object` is one a verdict judged or a commit accepted (docs/protocol.md §14:
 * the judged bytes are the served bytes): never collected, even once no
 * key refers to it any more.
 */
export function kept(sql: SqlStorage, object: string): boolean {
  return (
    sql
      .exec(
        `SELECT 1 WHERE EXISTS (SELECT 1 FROM replica_results WHERE object = ?1)
            OR EXISTS (SELECT 1 FROM tasks WHERE accepted_object = ?1)`,
        object,
      )
      .toArray().length > 0
  );
}

/**
 * Whether a bind may make a key refer to `object`: only an upload recorded
 * and not being collected (an upload slower than the grace loses its object).
 */
export function bindable(sql: SqlStorage, object: string): boolean {
  return (
    sql
      .exec(
        `SELECT 1 WHERE EXISTS (SELECT 1 FROM uploads WHERE object = ?1)
           OR EXISTS (SELECT 1 FROM unreferenced WHERE object = ?1 AND collecting = 0)`,
        object,
      )
      .toArray().length > 0
  );
}

/**
 * Takes the objects due now, oldest first, at most a batch, and marks them
 * as being collected, so no bind can claim one while R2 deletes it. A run
 * that died midway left its objects marked and due: the next run takes them
 * again (deleting twice is harmless).
 */
export function takeForCollection(sql: SqlStorage, now: number): string[] {
  // Uploads past their grace join the objects to collect (a batch at a time), due at once.
  const abandoned = sql
    .exec<{ object: string }>(
      "SELECT object FROM uploads WHERE started_ms <= ? ORDER BY started_ms LIMIT ?",
      now - UPLOAD_GRACE_MS,
      COLLECT_BATCH,
    )
    .toArray();
  for (const { object } of abandoned) {
    sql.exec("DELETE FROM uploads WHERE object = ?", object);
    sql.exec(
      "INSERT INTO unreferenced (object, collect_after_ms) VALUES (?, ?) ON CONFLICT (object) DO NOTHING",
      object,
      now,
    );
  }
  const due = sql
    .exec<{ object: string }>(
      "SELECT object FROM unreferenced WHERE collect_after_ms <= ? ORDER BY collect_after_ms LIMIT ?",
      now,
      COLLECT_BATCH,
    )
    .toArray()
    .map((r) => r.object);
  for (const object of due) sql.exec("UPDATE unreferenced SET collecting = 1 WHERE object = ?", object);
  return due;
}

/** Forgets the objects R2 deleted; those it refused are tried again later. */
export function collected(sql: SqlStorage, now: number, deleted: readonly string[], refused: readonly string[]): void {
  for (const object of deleted) sql.exec("DELETE FROM unreferenced WHERE object = ?", object);
  for (const object of refused) {
    sql.exec("UPDATE unreferenced SET collecting = 0, collect_after_ms = ? WHERE object = ?", now + RETRY_MS, object);
  }
}

/** When the next collection is due, or null when nothing waits. */
export function nextCollection(sql: SqlStorage): number | null {
  // `uploads` holds the uploads streaming now (and any abandoned within the grace): a short scan.
  return sql
    .exec<{ t: number | null }>(
      `SELECT MIN(t) AS t FROM (SELECT MIN(collect_after_ms) AS t FROM unreferenced
         UNION ALL SELECT MIN(started_ms) + ${UPLOAD_GRACE_MS} FROM uploads)`,
    )
    .one().t;
}
