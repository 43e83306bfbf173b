// The layout authority's rule (docs/sharding.md §11), pure: given the
// history of a pool's shard counts and the count configured now, whether
// the pool runs as before, records a new epoch, must first ask the shards
// a lower would remove whether they are empty, or is refused. A lower is
// refused while any removed shard holds what it must not lose (`Emptiness`
// states the rule): after it nothing routes there, so that would be
// unreachable, and must never be.

/** One change of FLASHML_POOL_SHARDS seen at shard 0's start (a pool_layout row). */
export type LayoutEpoch = { epoch: number; shards: number; since_ms: number; lowered_from: number | null };

/**
 * The rule of a lower (docs/sharding.md §11): it is refused unless every
 * shard it removes is empty of everything a client can still use there,
 * and of every object only that shard would collect, since after it
 * nothing routes to a removed shard. This is what a shard's emptiness()
 * counts (src/pool/shards/layout.ts); it is empty when every count is 0. All
 * else a shard keeps lives beside one of these or is a copy: tasks,
 * events, checkpoints and verdicts belong to a job (live or archived); a
 * team-pool assignment and outbox rows to a job, a
 * registration or a credential, none of which leaves its shard; a
 * passport is another home's node, sent again by vouch; device codes and
 * keys outside `jobs/` live in shard 0, which is never removed.
 */
export type Emptiness = {
  shard: number;
  empty: boolean;
  /** Jobs, live or finished, with their tasks, events, checkpoints and verdicts. */
  jobs: number;
  /** Archived jobs: their ids stay readable. */
  archivedJobs: number;
  /** Registered nodes homed here. */
  nodes: number;
  /**
   * Enrolled credentials: a machine that logged in and has not registered
   * is homed here by its credential alone (src/pool/nodes/homes.ts), and its
   * token is checked only here. A revoked one counts too: it still names
   * the node's home, and the operator's enrolment list shows it.
   */
  credentials: number;
  liveLeases: number;
  /** Pointers to nodes homed on other shards by location (src/pool/nodes/homes.ts): found only here. */
  pointers: number;
  /** Artifacts bound here, also under `jobs/{id}/` for a job that never existed. */
  artifacts: number;
  /** Stored objects no key refers to, waiting for this shard's collection (docs/protocol.md §12). */
  unreferenced: number;
};

export type LayoutDecision =
  | { kind: "same" }
  | { kind: "append"; epoch: LayoutEpoch }
  | { kind: "check"; shards: number[] }
  | { kind: "refuse"; detail: string };

/** The marker that starts a refused call's message: only an Error's message crosses RPC. */
export const LAYOUT_REFUSED = "PoolLayoutRefused: ";

/** Whether a refused pool's detail is a schema upgrade's (upgradingMessage): over in seconds. */
export function upgrading(detail: string): boolean {
  return detail.includes(": its schema is being upgraded (step ");
}

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
 * The message every call of an object throws while its schema is upgraded a
 * step per event (src/pool/object.ts): a 503 like a refused layout's, until
 * the last step. `name` is the object's ("P" or "P/k"), unknown to one an alarm started.
 */
export function upgradingMessage(name: string | undefined, step: number, steps: number): string {
  // The Worker answers it with a Retry-After (upgrading): keep the words upgrading() looks for.
  const pool = name === undefined ? "this pool" : `pool '${name}'`;
  return `${LAYOUT_REFUSED}coordinator refuses to serve ${pool}: its schema is being upgraded (step ${step} of ${steps}); retry in a few seconds`;
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
    [e.credentials, "enrolled credential"],
    [e.liveLeases, "live lease"],
    [e.pointers, "node pointer"],
    [e.artifacts, "artifact"],
    [e.unreferenced, "uncollected object"],
  ];
  const held = counts.filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}${n === 1 ? "" : "s"}`);
  return `shard ${e.shard}: ${held.length > 0 ? held.join(", ") : "not empty"}`;
}
