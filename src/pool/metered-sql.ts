// The one way the pool object runs SQL (`Pool.sql`): every statement goes
// through `exec` here, so the rows it reads and writes (what Cloudflare
// bills, docs/protocol.md §16) are counted in one place, triggers included,
// by the cursor's own figures. A cursor's counts are final once it is
// consumed, which every caller does before its transaction ends: they are
// summed when a transaction ends (`settle`, from Pool.transaction) and when
// the totals are read. In memory, like the object's other counters: a
// restart starts them at 0, as Prometheus counters may.

/** Past this many cursors kept outside a transaction (reads), all but the newest few are summed. */
const KEPT_AT_MOST = 4_096;
const NEWEST_KEPT = 64;

export class MeteredSql implements SqlStorage {
  #read = 0;
  #written = 0;
  // biome-ignore lint/suspicious/noExplicitAny: a cursor of any row shape
  readonly #open: SqlStorageCursor<any>[] = [];

  constructor(readonly inner: SqlStorage) {}

  exec<T extends Record<string, SqlStorageValue>>(query: string, ...bindings: unknown[]): SqlStorageCursor<T> {
    if (this.#open.length >= KEPT_AT_MOST) this.#fold(this.#open.length - NEWEST_KEPT);
    const cursor = this.inner.exec<T>(query, ...bindings);
    this.#open.push(cursor);
    return cursor;
  }

  /** The rows read and written by every statement run through here since the object started. */
  totals(): { rowsRead: number; rowsWritten: number } {
    this.settle();
    return { rowsRead: this.#read, rowsWritten: this.#written };
  }

  /** Sums the cursors run so far: at a transaction's end, when they are all consumed. */
  settle(): void {
    this.#fold(this.#open.length);
  }

  /** Adds the counts of the `n` oldest cursors kept. */
  #fold(n: number): void {
    for (const cursor of this.#open.splice(0, n)) {
      this.#read += cursor.rowsRead;
      this.#written += cursor.rowsWritten;
    }
  }

  get databaseSize(): number {
    return this.inner.databaseSize;
  }

  get Cursor(): typeof SqlStorageCursor {
    return this.inner.Cursor;
  }

  get Statement(): typeof SqlStorageStatement {
    return this.inner.Statement;
  }
}

/**
 * Memory an object keeps beside its SQL (soft liveness, the event tally),
 * one per object, found by its SQL handle: the raw one behind MeteredSql, so
 * a test holding the object's state.storage.sql reaches the same memory.
 */
export function perObject<T>(make: () => T): (sql: SqlStorage) => T {
  const byHandle = new WeakMap<object, T>();
  return (sql) => {
    const handle = sql instanceof MeteredSql ? sql.inner : sql;
    let found = byHandle.get(handle);
    if (found === undefined) {
      found = make();
      byHandle.set(handle, found);
    }
    return found;
  };
}
