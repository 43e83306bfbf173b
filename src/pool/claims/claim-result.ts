// What a claim answers (docs/protocol.md §4): a lease, or why not. Shared by
// the claim at home, the held claims and the forwards between shards.

import type { WireLease } from "../leases/rows";

/**
 * Why a claim got nothing: an unknown node; a draining or terminating node;
 * a claim restricted to a job with no open task (nothing will come); a node
 * held back after failing (docs/protocol.md §13); or nothing this node may take yet.
 * Only the last two are worth waiting on.
 */
export type ClaimResult =
  | {
      ok: true;
      lease: WireLease;
      /**
       * The lease's job's tenant and priority: the turn the claim used, which
       * a pool of shards counts for its digest (docs/sharding.md §6.1) and a
       * forwarded claim's home counts as its own. Never sent to the node.
       */
      tenant?: string;
      priority?: number;
    }
  | { ok: false; reason: "unregistered" | "not_accepting" | "job_closed" | "held_back" | "nothing" };

/** The answer to a claim that got nothing this time. */
export const NOTHING: ClaimResult = { ok: false, reason: "nothing" };

/** Claims that may yet get a lease by waiting: nothing to take yet, or a node held back for now. */
export function worthWaiting(result: ClaimResult & { ok: false }): boolean {
  return result.reason === "nothing" || result.reason === "held_back";
}
