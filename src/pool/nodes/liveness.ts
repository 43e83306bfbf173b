// A node's last request, soft (docs/protocol.md §16 "Liveness may be soft").
// Each request proves its node alive for the online window (§5), but a row
// written per request is a row billed per request: an idle agent's loop
// would cost more than its work. So the node's row is written lazily and
// ahead — `live_until_ms` five minutes past what the request needs, at
// most about once in five minutes for liveness alone — and the exact last
// request is kept here, in the object's memory:
//
// - reads that show it (`last_heartbeat_age_s`) take the later of the two;
// - once a node's last request is older than the window and no lease keeps
//   it online, `settleLiveness` writes its row down to the exact time (the
//   sweep runs it; the alarm is armed for it), so a silent node goes
//   offline in SQL as before, and the queries that filter on
//   `live_until_ms` stay exact but for that delay. A lease that ends with
//   no request from its node (expiry, revocation, cancel) writes its node's
//   row down at once (`lostLease`); one its node ended (commit, fail) writes
//   nothing, the node having just been seen (schema step 30).
//
// After a restart this memory is empty: a node's written time stands, and it
// counts online until the `live_until_ms` last written (at most five minutes
// more than exact) or its next request. Leases, holds and everything else
// that decides a claim stay in SQL.

import { perObject } from "../metered-sql";
import { ONLINE_WINDOW_MS } from "./states";

/**
 * How far ahead of what a request needs `live_until_ms` is written: the most
 * a row lags its node's requests, and how long after a restart a silent node
 * may still count online. Five minutes: an idle agent's row is then a row
 * write about every five minutes, not every minute (docs/protocol.md §16's
 * idle agent-month, whose requests alone are most of its budget).
 */
export const LIVENESS_LEAD_MS = 300_000;

/** What is known here of a node whose row may say more than it: its last request, and the latest deadline of a lease another shard told its home of. */
export type Known = { at: number; elsewhere: number };

/** When a node's row is to be written down: its window after its last request, or a lease elsewhere's end heard. */
const dueOf = (known: Known): number => Math.max(known.at + ONLINE_WINDOW_MS, known.elsewhere);

export class LastRequests {
  /** Nodes whose row may say online past their last request + the window. */
  readonly #known = new Map<string, Known>();
  /** No entry is due to settle before this. */
  #due = Number.POSITIVE_INFINITY;

  /** `nodeId` made a request at `at`. */
  saw(nodeId: string, at: number): void {
    const known = { at, elsewhere: this.#known.get(nodeId)?.elsewhere ?? 0 };
    this.#known.set(nodeId, known);
    this.#due = Math.min(this.#due, dueOf(known));
  }

  /**
   * Another shard says the node holds a lease there until `until` (0: none
   * now, when `ended`): its row is not written down below that, and is
   * written down once that passes. Only the row of a node seen here since
   * the object started is written down.
   */
  heldElsewhere(nodeId: string, until: number, ended: boolean): void {
    const known = this.#known.get(nodeId);
    if (!known) return;
    known.elsewhere = ended ? until : Math.max(known.elsewhere, until);
    this.#due = Math.min(this.#due, dueOf(known));
  }

  /** What is known here of the node, if its row may say more. */
  get(nodeId: string): Readonly<Known> | undefined {
    return this.#known.get(nodeId);
  }

  /** When the earliest entry is due (`dueOf`; null: none): the alarm settles it then. */
  due(): number | null {
    return this.#known.size === 0 ? null : this.#due;
  }

  /** Takes the entries due by `now` (`dueOf`): their rows are written down to it. */
  takeDue(now: number): Array<[string, Known]> {
    if (now < this.#due) return [];
    const taken: Array<[string, Known]> = [];
    let due = Number.POSITIVE_INFINITY;
    for (const [nodeId, known] of this.#known) {
      if (dueOf(known) <= now) taken.push([nodeId, known]);
      else due = Math.min(due, dueOf(known));
    }
    for (const [nodeId] of taken) this.#known.delete(nodeId);
    this.#due = due;
    return taken;
  }
}

/** The object's last requests. */
export const lastRequests = perObject(() => new LastRequests());

/** When a row is read: its last request, the later of the row's and the one known here. */
export function lastRequestOf(sql: SqlStorage, nodeId: string, written: number): number {
  return Math.max(written, lastRequests(sql).get(nodeId)?.at ?? 0);
}

/**
 * How far a passport's `last_request_ms` (a node homed at another shard,
 * seen here) may lag its node's requests here: docs/protocol.md §16 lets
 * liveness alone write a node's row at most once a minute. The exact time
 * waits in memory (`passportsSeen`) and every read takes the later of the
 * two; before a lease of the node ends here without a commit, its row is
 * written exactly (`writeSeen`), since the end tells the home the row's
 * time (schema step 20's trigger).
 */
export const PASSPORT_LAG_MS = 60_000;

/**
 * What this shard saw of a passport's node past its row: `at`, its last
 * request here, not yet written; `told`, the latest lease deadline here its
 * home heard of in a claim's answer (src/pool/claims/forwarded-claims.ts).
 * `told` lost to a restart only makes the next renewal tell the home again.
 */
export type PassportSeen = { at: number; told: number };

/** The object's passports seen past their rows. */
export const passportsSeen = perObject(() => new Map<string, PassportSeen>());

/**
 * `nodeId`, whose passport is here, made a request at `now`: its row is
 * written when it lags more than PASSPORT_LAG_MS, else the time is kept in
 * memory. False when no passport of it is here.
 */
export function seenHere(sql: SqlStorage, now: number, nodeId: string): boolean {
  const row = sql
    .exec<{ last_request_ms: number }>("SELECT last_request_ms FROM passports WHERE node_id = ?", nodeId)
    .toArray()[0];
  if (row === undefined) return false;
  const known = passportSeen(sql, nodeId);
  known.at = Math.max(known.at, now);
  if (row.last_request_ms + PASSPORT_LAG_MS <= now) writeSeen(sql, [nodeId]);
  return true;
}

/** What is kept here of a passport's node, made empty when nothing is. */
function passportSeen(sql: SqlStorage, nodeId: string): PassportSeen {
  const seen = passportsSeen(sql);
  const known = seen.get(nodeId) ?? { at: 0, told: 0 };
  seen.set(nodeId, known);
  return known;
}

/** A passport's node's last request here: its row's time, or a later one in memory. */
export function lastRequestHere(sql: SqlStorage, nodeId: string, written: number): number {
  return Math.max(written, passportsSeen(sql).get(nodeId)?.at ?? 0);
}

/**
 * Writes the last requests kept in memory of `nodeIds` to their passports,
 * before a change whose trigger reads them (a lease's end tells the home
 * its node's last request here). A row as late as its memory writes nothing.
 */
export function writeSeen(sql: SqlStorage, nodeIds: Iterable<string>): void {
  const seen = passportsSeen(sql);
  for (const nodeId of nodeIds) {
    const at = seen.get(nodeId)?.at;
    if (at !== undefined)
      sql.exec("UPDATE passports SET last_request_ms = ?1 WHERE node_id = ?2 AND last_request_ms < ?1", at, nodeId);
  }
}

/**
 * How long past the deadline it heard of a lease at another shard a home
 * holds the node online (`heardUntil`). The shard holding the lease tells
 * the home again only once that covers under half the lease ahead
 * (src/pool/nodes/outcomes.ts renewedHere): a one-minute task's renewals
 * tell it nothing. The home decides nothing on it (docs/sharding.md §8.3),
 * and the lease's end tells it at once; the grace shows only if that word
 * never comes, and then a minute, as PASSPORT_LAG_MS lets liveness lag.
 */
export const HEARD_GRACE_MS = 60_000;

/** Until when a home holds online a node it heard holds a lease elsewhere until `deadline` (0: none). */
export const heardUntil = (deadline: number): number => (deadline > 0 ? deadline + HEARD_GRACE_MS : 0);

/**
 * A claim's answer tells `nodeId`'s home of its lease here until
 * `deadline`: a renewal tells it again only once that, with the home's
 * grace, covers under half the lease ahead (src/pool/nodes/outcomes.ts renewedHere).
 */
export function toldHome(sql: SqlStorage, nodeId: string, deadline: number): void {
  const known = passportSeen(sql, nodeId);
  known.told = Math.max(known.told, deadline);
}
