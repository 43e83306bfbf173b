// The event tally behind flashedge_events_total (docs/protocol.md §16:
// counters may be soft). A counter row written per event is a row billed per
// claim and per commit, so the object counts events in memory and writes the
// counts to event_counts at most once in TALLY_WRITE_MS (its alarm does,
// src/pool/alarm/housekeeping.ts). The ledger itself, every event row, stays
// in the change's transaction as before.
//
// A transaction that rolls back takes its counts back (Pool.transaction). An
// object that stops before its alarm writes them loses at most
// TALLY_WRITE_MS of counts: the counter falls, which Prometheus reads as a
// reset, as it does the object's other in-memory counters
// (src/pool/metered-sql.ts).

import { perObject } from "../metered-sql";

/**
 * The longest counts wait in memory before the alarm writes them: under the
 * time an idle object is kept before eviction (over a minute), so an object
 * evicted for idleness has written them.
 */
export const TALLY_WRITE_MS = 30_000;

export class EventTally {
  /** Counted and not yet written, by type. */
  readonly #kept = new Map<string, number>();
  /** When the oldest count kept was made: the alarm writes by then + TALLY_WRITE_MS. */
  #since: number | null = null;
  /** What the transactions open now counted, to take back if they roll back. */
  #journal: Array<[string, number]> = [];
  #open = 0;

  /** `n` events of `type` were appended at `now`. */
  add(type: string, n: number, now: number): void {
    this.#kept.set(type, (this.#kept.get(type) ?? 0) + n);
    this.#since ??= now;
    if (this.#open > 0) this.#journal.push([type, n]);
  }

  /** A transaction begins (Pool.transaction). */
  begin(): void {
    this.#open++;
  }

  /** The transaction begun last ended: what it counted stands if it committed, else is taken back. */
  end(committed: boolean): void {
    if (--this.#open > 0) return;
    if (!committed) for (const [type, n] of this.#journal) this.#kept.set(type, (this.#kept.get(type) ?? 0) - n);
    this.#journal = [];
  }

  /** Counts kept and not yet written, by type. */
  unwritten(): ReadonlyMap<string, number> {
    return this.#kept;
  }

  /** When the alarm is due to write them (null: nothing to write). */
  due(): number | null {
    return this.#since === null ? null : this.#since + TALLY_WRITE_MS;
  }

  /** Takes the kept counts, for a transaction to write. */
  take(): Array<[string, number]> {
    const taken = [...this.#kept].filter(([, n]) => n !== 0);
    this.#kept.clear();
    this.#since = null;
    return taken;
  }
}

/** The object's event tally. */
export const eventTally = perObject(() => new EventTally());

/** Writes the kept counts to event_counts, a row per type (the caller holds the transaction). */
export function writeTally(sql: SqlStorage): void {
  for (const [type, n] of eventTally(sql).take())
    sql.exec("INSERT INTO event_counts (type, n) VALUES (?1, ?2) ON CONFLICT (type) DO UPDATE SET n = n + ?2", type, n);
}

/** The tally by type: written and kept. */
export function eventCounts(sql: SqlStorage): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of sql.exec<{ type: string; n: number }>("SELECT type, n FROM event_counts")) counts[r.type] = r.n;
  for (const [type, n] of eventTally(sql).unwritten()) counts[type] = (counts[type] ?? 0) + n;
  return counts;
}
