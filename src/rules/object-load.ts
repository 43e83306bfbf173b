// What one Durable Object has served since it started (issue 27, docs/sharding.md
// §15.4), pure: the calls that entered it and the time their handlers ran,
// which is what a shard's share of the 1,000 requests/s per-object limit is
// read from. The object keeps these in memory (no write per call, so a claim
// costs what it did): they restart at 0 when the object restarts, as a
// Prometheus counter may.

/** Calls served, and their handlers' summed busy time in ms. */
export type ObjectLoad = { requests: number; busyMs: number };

/** Why a shard exchanged with the summary (docs/sharding.md §6.2): its tick, the on-demand allowance, or Σ's poke. */
export const EXCHANGE_REASONS = ["tick", "on_demand", "poke"] as const;
export type ExchangeReason = (typeof EXCHANGE_REASONS)[number];

/** What the summary serves, by kind: the exchanges by reason, and everything else (its alarm, reads of this). */
export type SummaryLoad = { requests: Record<ExchangeReason | "other", number>; busyMs: number };

export function noLoad(): ObjectLoad {
  return { requests: 0, busyMs: 0 };
}

export function noSummaryLoad(): SummaryLoad {
  return { requests: { tick: 0, on_demand: 0, poke: 0, other: 0 }, busyMs: 0 };
}

/**
 * Counts one call whose handler ran from `startedMs` to `endedMs` (the
 * runtime's 1 ms clock; a clock that stepped back counts 0).
 */
export function served(load: ObjectLoad, startedMs: number, endedMs: number): void {
  load.requests += 1;
  load.busyMs += Math.max(0, endedMs - startedMs);
}

/** The loads of several objects as one (a pool's shards, summed). */
export function addLoads(loads: readonly ObjectLoad[]): ObjectLoad {
  return {
    requests: loads.reduce((n, l) => n + l.requests, 0),
    busyMs: loads.reduce((n, l) => n + l.busyMs, 0),
  };
}

/** Counts one call of the summary, of `kind`, as `served` does. */
export function summaryServed(
  load: SummaryLoad,
  kind: ExchangeReason | "other",
  startedMs: number,
  endedMs: number,
): void {
  load.requests[kind] += 1;
  load.busyMs += Math.max(0, endedMs - startedMs);
}
