// The numbers of the ledger's events and of the tasks (`events.seq`,
// `tasks.seq`, docs/protocol.md §16). Both tables are AUTOINCREMENT: SQLite
// keeps, in sqlite_sequence, a number at or above every seq the table ever
// held, so a seq is never handed out twice, even once an archive deletes the
// newest rows. But it rewrites that row, a row billed, on every insert
// statement that passes it: one an event. A number at or below it writes
// nothing there. So the object records a block of numbers ahead
// (RESERVE_BLOCK, one row) and hands them out from memory.
//
// sqlite_sequence stays at or above every seq inserted, so a start (or a
// rolled-back transaction: Pool.transaction) resumes past it: the numbers
// of a block not used are skipped, never reused. `?after=` pages by seq and
// needs no run without gaps, and the queue orders by seq. Every insert into
// either table goes through here (src/pool/ledger/events.ts,
// src/pool/jobs/tasks.ts; test/unit/trigger-rules.test.ts holds it): one
// that let SQLite choose would take the block's numbers.

import { perObject } from "../metered-sql";

/** Numbers reserved at a time: a row written per this many events, the most a start skips. */
export const RESERVE_BLOCK = 1_000;

export class ReservedSequence {
  /** The next number to hand out; 0 until sqlite_sequence is read. */
  #next = 0;
  /** The highest number recorded in sqlite_sequence (0: no row yet). */
  #recorded = 0;
  #hasRow = false;

  constructor(readonly table: string) {}

  /** The first of `n` numbers in a row, for the caller's inserts (it holds the transaction). */
  take(sql: SqlStorage, n = 1): number {
    if (this.#next === 0) {
      // Past the table's own last seq too, should its sequence row ever be behind it: never a seq taken.
      const { held, newest } = sql
        .exec<{ held: number | null; newest: number | null }>(
          `SELECT (SELECT seq FROM sqlite_sequence WHERE name = ?1) AS held, (SELECT MAX(seq) FROM ${this.table}) AS newest`,
          this.table,
        )
        .one();
      this.#hasRow = held !== null;
      this.#recorded = held ?? 0;
      this.#next = Math.max(this.#recorded, newest ?? 0) + 1;
    }
    const first = this.#next;
    const last = first + n - 1;
    if (last > this.#recorded) {
      const recorded = last + RESERVE_BLOCK;
      if (this.#hasRow) sql.exec("UPDATE sqlite_sequence SET seq = ? WHERE name = ?", recorded, this.table);
      else sql.exec("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", this.table, recorded);
      this.#hasRow = true;
      this.#recorded = recorded;
    }
    this.#next = last + 1;
    return first;
  }

  /** A transaction rolled back, its reservation maybe with it: read sqlite_sequence again before the next number. */
  forget(): void {
    this.#next = 0;
  }
}

/** The object's numbers for `events.seq`. */
export const eventSeqs = perObject(() => new ReservedSequence("events"));

/** The object's numbers for `tasks.seq`. */
export const taskSeqs = perObject(() => new ReservedSequence("tasks"));

/** A transaction rolled back: both read sqlite_sequence again before their next number. */
export function forgetReserved(sql: SqlStorage): void {
  eventSeqs(sql).forget();
  taskSeqs(sql).forget();
}
