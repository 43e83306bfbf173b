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

export class LastRequests {
  /** Nodes whose row may say online past their last request + the window. */
  readonly #known = new Map<string, Known>();
  /** No entry is due to settle before this. */
  #due = Number.POSITIVE_INFINITY;

  /** `nodeId` made a request at `at`. */
  saw(nodeId: string, at: number): void {
    this.#known.set(nodeId, { at, elsewhere: this.#known.get(nodeId)?.elsewhere ?? 0 });
    this.#due = Math.min(this.#due, at + ONLINE_WINDOW_MS);
  }

  /**
   * Another shard says the node holds a lease there until `until` (0: none
   * now, when `ended`): its row is not written down below that. Only the
   * row of a node seen here since the object started is written down.
   */
  heldElsewhere(nodeId: string, until: number, ended: boolean): void {
    const known = this.#known.get(nodeId);
    if (known) known.elsewhere = ended ? until : Math.max(known.elsewhere, until);
  }

  /** What is known here of the node, if its row may say more. */
  get(nodeId: string): Readonly<Known> | undefined {
    return this.#known.get(nodeId);
  }

  /** When the earliest entry's window ends (null: none): the alarm settles it then. */
  due(): number | null {
    return this.#known.size === 0 ? null : this.#due;
  }

  /** Takes the entries whose window ended by `now`: their rows are written down to it. */
  takeDue(now: number): Array<[string, Known]> {
    if (now < this.#due) return [];
    const taken: Array<[string, Known]> = [];
    let due = Number.POSITIVE_INFINITY;
    for (const [nodeId, known] of this.#known) {
      if (known.at + ONLINE_WINDOW_MS <= now) taken.push([nodeId, known]);
      else due = Math.min(due, known.at + ONLINE_WINDOW_MS);
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
