// The layout authority's rule (docs/sharding.md §11), pure: given the
// history of a pool's shard counts and the count configured now, whether
// the pool runs as before, records a new epoch, must first ask the shards
// a lower would remove whether they are empty, or is refused. A lower is
// refused while any removed shard holds anything: a removed shard's jobs,
// nodes and leases would be unreachable, and must never be.

/** One change of FLASHML_POOL_SHARDS seen at shard 0's start (a pool_layout row). */
export type LayoutEpoch = { epoch: number; shards: number; since_ms: number; lowered_from: number | null };

/** What a shard holds, as its emptiness() answers (src/pool/layout.ts). */
export type Emptiness = {
  shard: number;
  empty: boolean;
  jobs: number;
  archivedJobs: number;
  nodes: number;
  liveLeases: number;
  /** Pointers to nodes homed on other shards by location (src/pool/homes.ts): found only here. */
  pointers: number;
};

export type LayoutDecision =
  | { kind: "same" }
  | { kind: "append"; epoch: LayoutEpoch }
  | { kind: "check"; shards: number[] }
  | { kind: "refuse"; detail: string };

/** The marker that starts a refused call's message: only an Error's message crosses RPC. */
export const LAYOUT_REFUSED = "PoolLayoutRefused: ";

/** The 503 detail for a refused pool, from the refused call's message; null for any other error. */
export function layoutRefusal(err: unknown): string | null {
  if (!(err instanceof Error) || !err.message.startsWith(LAYOUT_REFUSED)) return null;
  return err.message.slice(LAYOUT_REFUSED.length);
}

/** The message a refused call throws: names the pool and why (`detail`). */
export function layoutRefusedMessage(pool: string, detail: string): string {
  return `${LAYOUT_REFUSED}coordinator refuses to serve pool '${pool}': ${detail}`;
}

/**
 * What shard 0 does at start with `configured` shards over `history`: the
 * same count runs as before; a raise, or the first start, appends an epoch;
 * a lower asks the removed shards [configured, S) first (`check`), then
 * appends an epoch that records what it lowered from when all of them are
 * empty, and refuses naming the ones that are not otherwise.
 */
export function layoutDecision(
  pool: string,
  history: readonly LayoutEpoch[],
  configured: number,
  now: number,
  emptiness: readonly Emptiness[] = [],
): LayoutDecision {
  const last = history.reduce<LayoutEpoch | undefined>(
    (a, e) => (a === undefined || e.epoch > a.epoch ? e : a),
    undefined,
  );
  if (last === undefined)
    return { kind: "append", epoch: { epoch: 0, shards: configured, since_ms: now, lowered_from: null } };
  if (configured === last.shards) return { kind: "same" };
  const next = { epoch: last.epoch + 1, shards: configured, since_ms: now };
  if (configured > last.shards) return { kind: "append", epoch: { ...next, lowered_from: null } };
  const removed = Array.from({ length: last.shards - configured }, (_v, i) => configured + i);
  const known = new Map(emptiness.map((e) => [e.shard, e]));
  const unknown = removed.filter((k) => !known.has(k));
  if (unknown.length > 0) return { kind: "check", shards: unknown };
  const busy = removed.map((k) => known.get(k)!).filter((e) => !e.empty);
  if (busy.length === 0) return { kind: "append", epoch: { ...next, lowered_from: last.shards } };
  const range = removed.length === 1 ? `shard ${configured} is` : `shards ${configured}–${last.shards - 1} are`;
  return {
    kind: "refuse",
    detail: `pool '${pool}' cannot run on ${configured} shard${configured === 1 ? "" : "s"}: FLASHML_POOL_SHARDS lowers it from ${last.shards}, and ${range} not empty (${busy.map(holding).join("; ")})`,
  };
}

/** `shard 7: 3 jobs, 12 nodes`: what one non-empty shard holds, zero counts left out. */
function holding(e: Emptiness): string {
  const counts: [number, string][] = [
    [e.jobs, "job"],
    [e.archivedJobs, "archived job"],
    [e.nodes, "node"],
    [e.liveLeases, "live lease"],
    [e.pointers, "node pointer"],
  ];
  const held = counts.filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}${n === 1 ? "" : "s"}`);
  return `shard ${e.shard}: ${held.length > 0 ? held.join(", ") : "not empty"}`;
}
