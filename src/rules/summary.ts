// The pool summary's merge (docs/sharding.md §6, §7.2), pure: what Σ keeps of
// each shard's digest, what it answers an exchange with, and the pool-wide
// tenant passes. PoolSummary (src/summary/object.ts) holds one SummaryState in
// memory and calls applyExchange per request. The state is soft: a cache of
// facts the shards own, so a fresh state must never pretend to know them (it
// asks for full digests instead). No I/O, no clock of its own (`now` is passed).

/** Σ's change log keeps this long; a shard whose `since` is older gets a full copy. */
export const SUMMARY_LOG_MS = 10_000;
/** Requests a second Σ admits in all (§6.2); the ticks take 2 per shard of it. */
export const SUMMARY_BUDGET = 800;

export type ClassLevel = { priority: number; fresh: number; replicating: number };
/** A requirement class with pending tasks at one shard; `key` is equal for equal requirements on every shard. */
export type DigestClass = { key: string; requirement: string; levels: ClassLevel[] };
/** `granted` is the shard's cumulative claims for the tenant at the priority since the shard's object started. */
export type TenantGrant = { priority: number; tenant: string; granted: number; pending: number };
export type ShardHeld = { claims: number; nodesByClass?: Record<string, number> };
export type ShardLoad = {
  requests: number;
  pending: number;
  leased: number;
  jobs: number;
  homeNodes: number;
  online: number;
};

/**
 * A shard's whole digest (§6.1), sent at its start and whenever Σ answers
 * `full: true`. Its `tenants` name every (priority, tenant) the shard counts
 * grants for, so a Σ that restarted takes each count as its baseline.
 */
export type ShardDigest = {
  shard: number;
  instance: string; // random per object start
  version: number; // grows with every change of the contents
  classes: DigestClass[];
  tenants: TenantGrant[];
  held: ShardHeld;
  load: ShardLoad;
};

/**
 * What changed since `base`, the digest version Σ last acknowledged: changed
 * classes and tenants in full, the keys that left. Changes carry values, not
 * increments, so a delta from an older base than Σ holds applies correctly.
 */
export type DigestDelta = Omit<ShardDigest, "classes" | "tenants"> & {
  base: number;
  classes: DigestClass[];
  tenants: TenantGrant[];
  removed: { classes: string[]; tenants: Array<{ priority: number; tenant: string }> };
};

/**
 * One fact of the summary as a home's copy keeps it. A class with no levels
 * and a tenant with no pending tasks say the entry left.
 */
export type SummaryEntry =
  | ({ kind: "class"; shard: number } & DigestClass)
  | { kind: "tenant"; shard: number; priority: number; tenant: string; pending: number }
  | { kind: "shard"; shard: number; version: number; held: ShardHeld; load: ShardLoad };

/** A tenant's pool-wide pass at a priority: claims granted anywhere, each 1/weight. */
export type GlobalPass = { priority: number; tenant: string; pass: number };

export type ExchangeReply = {
  version: number;
  instance: string;
  /** Changed since `since`, or every entry when `fullCopy`; the caller's own shard is left out (it counts exactly). */
  entries: SummaryEntry[];
  passes: GlobalPass[];
  /** The entries and passes are the whole summary: drop the copy before applying them. */
  fullCopy?: true;
  /** Σ could not apply what was sent (it restarted, or missed a delta): send a full digest next. */
  full?: true;
};

type ShardRecord = {
  instance: string;
  version: number;
  classes: Map<string, DigestClass>;
  tenants: Map<string, number>; // priority|tenant → pending (> 0 only)
  granted: Map<string, number>; // priority|tenant → last cumulative `granted` seen from this instance
  held: ShardHeld;
  load: ShardLoad;
};

type Change = { version: number; at: number; id: string } & (
  | { entry: SummaryEntry; pass?: undefined }
  | { pass: GlobalPass; entry?: undefined }
);

/** What Σ keeps. Plain data; applyExchange updates it in place (the merge is O(changes), never O(summary)). */
export type SummaryState = {
  instance: string;
  version: number;
  /** A `since` below this was trimmed from the log: such a caller gets a full copy. */
  horizon: number;
  shards: Map<number, ShardRecord>;
  passes: Map<string, GlobalPass>;
  /** Pool-wide pending tasks per priority|tenant: a tenant is active at a priority while this is > 0. */
  pending: Map<string, number>;
  log: Change[]; // ascending by version
};

const tenantId = (priority: number, tenant: string) => `${priority}|${tenant}`;

/**
 * Σ at its start: it knows no shard. `passes` is the last snapshot of the
 * global passes (`tenant_passes`), so a restart hands no tenant a fresh start.
 */
export function freshSummary(instance: string, passes: readonly GlobalPass[] = []): SummaryState {
  return {
    instance,
    version: 0,
    horizon: 0,
    shards: new Map(),
    passes: new Map(passes.map((p) => [tenantId(p.priority, p.tenant), { ...p }])),
    pending: new Map(),
    log: [],
  };
}

/** The passes worth keeping over a restart: those of tenants active somewhere. */
export function passesSnapshot(state: SummaryState): GlobalPass[] {
  return [...state.passes.entries()].filter(([id]) => (state.pending.get(id) ?? 0) > 0).map(([, p]) => ({ ...p }));
}

/**
 * One exchange from shard `from` (§6.2): merges its digest or delta, then
 * answers what changed since `since` (a version of this Σ's). A delta Σ cannot
 * place (unknown shard or instance, or a base newer than what Σ holds) is not
 * applied and is answered `full: true`. A shard seen for the first time in
 * this instance, a new instance of a shard, and a `since` trimmed from the log
 * or not handed out by this Σ all get a full copy.
 */
export function applyExchange(
  state: SummaryState,
  from: number,
  sent: DigestDelta | ShardDigest,
  since: number,
  now: number,
  weights: ReadonlyMap<string, number>,
): { state: SummaryState; reply: ExchangeReply } {
  trim(state, now);
  const sinceValid = since >= state.horizon && since <= state.version;
  const prior = state.shards.get(from);
  const firstContact = prior === undefined || prior.instance !== sent.instance;
  let full = false;
  const changes: Change[] = [];
  const record = (id: string, change: { entry: SummaryEntry } | { pass: GlobalPass }) =>
    changes.push({ version: state.version + 1, at: now, id, ...change });

  if (!("removed" in sent)) {
    mergeFull(state, from, sent, prior, weights, record);
  } else if (!firstContact && prior.version >= sent.base) {
    if (sent.version > prior.version) mergeDelta(state, from, sent, prior, weights, record);
  } else {
    full = true;
  }
  if (changes.length > 0) {
    state.version += 1;
    state.log.push(...changes);
  }

  const reply: ExchangeReply = { version: state.version, instance: state.instance, entries: [], passes: [] };
  if (firstContact || !sinceValid) {
    reply.fullCopy = true;
    for (const [shard, r] of state.shards) if (shard !== from) reply.entries.push(...entriesOf(shard, r));
    reply.passes = [...state.passes.values()].map((p) => ({ ...p }));
  } else {
    const latest = new Map<string, Change>();
    for (let i = firstAfter(state.log, since); i < state.log.length; i++) latest.set(state.log[i]!.id, state.log[i]!);
    for (const change of latest.values()) {
      if (change.entry && change.entry.shard !== from) reply.entries.push(change.entry);
      if (change.pass) reply.passes.push({ ...change.pass });
    }
  }
  if (full) reply.full = true;
  return { state, reply };
}

type Recorder = (id: string, change: { entry: SummaryEntry } | { pass: GlobalPass }) => void;

function mergeFull(
  state: SummaryState,
  from: number,
  digest: ShardDigest,
  prior: ShardRecord | undefined,
  weights: ReadonlyMap<string, number>,
  record: Recorder,
): void {
  const sameInstance = prior !== undefined && prior.instance === digest.instance;
  if (sameInstance && digest.version <= prior.version) return; // an old digest, overtaken
  // Σ never saw this shard (Σ restarted): its grants so far are in the passes' snapshot, so they set the
  // baseline and add nothing. A new instance of a known shard counts from 0, as its counters do.
  const baselineOnly = prior === undefined;
  const r: ShardRecord = {
    instance: digest.instance,
    version: prior?.version ?? 0,
    classes: prior?.classes ?? new Map(),
    tenants: prior?.tenants ?? new Map(),
    granted: sameInstance ? prior.granted : new Map(),
    held: prior?.held ?? { claims: 0 },
    load: prior?.load ?? digest.load,
  };
  state.shards.set(from, r);
  const classKeys = new Set(digest.classes.map((c) => c.key));
  const tenantKeys = new Set(digest.tenants.map((t) => tenantId(t.priority, t.tenant)));
  const removed = {
    classes: [...r.classes.keys()].filter((k) => !classKeys.has(k)),
    tenants: [...r.tenants.keys()]
      .filter((k) => !tenantKeys.has(k))
      .map((k) => {
        const at = k.indexOf("|");
        return { priority: Number(k.slice(0, at)), tenant: k.slice(at + 1) };
      }),
  };
  mergeDelta(state, from, { ...digest, base: r.version, removed }, r, weights, record, baselineOnly);
}

function mergeDelta(
  state: SummaryState,
  from: number,
  delta: DigestDelta,
  r: ShardRecord,
  weights: ReadonlyMap<string, number>,
  record: Recorder,
  baselineOnly = false,
): void {
  for (const c of delta.classes) {
    const levels = c.levels.filter((l) => l.fresh + l.replicating > 0);
    if (levels.length === 0) {
      removeClass(r, from, c.key, record);
      continue;
    }
    const next: DigestClass = { key: c.key, requirement: c.requirement, levels };
    const before = r.classes.get(c.key);
    if (before && JSON.stringify(before) === JSON.stringify(next)) continue;
    r.classes.set(c.key, next);
    record(`c|${from}|${c.key}`, { entry: { kind: "class", shard: from, ...next } });
  }
  for (const key of delta.removed.classes) removeClass(r, from, key, record);

  const gone = delta.removed.tenants.map((t) => ({ ...t, granted: Number.NaN, pending: 0 }));
  for (const t of [...delta.tenants, ...gone]) {
    const id = tenantId(t.priority, t.tenant);
    const before = r.tenants.get(id) ?? 0;
    const pending = Math.max(0, t.pending);
    if (pending !== before) {
      if (pending > 0) r.tenants.set(id, pending);
      else r.tenants.delete(id);
      record(`t|${from}|${id}`, {
        entry: { kind: "tenant", shard: from, priority: t.priority, tenant: t.tenant, pending },
      });
      setPoolPending(state, t.priority, t.tenant, (state.pending.get(id) ?? 0) + pending - before, record);
    }
    if (Number.isNaN(t.granted)) continue; // a removed key says nothing of grants
    const last = r.granted.get(id);
    r.granted.set(id, Math.max(last ?? 0, t.granted));
    const increase = t.granted - (last ?? 0);
    const pass = state.passes.get(id);
    if (!baselineOnly && increase > 0 && pass) {
      pass.pass += increase / (weights.get(t.tenant) ?? 1);
      record(`p|${id}`, { pass: { ...pass } });
    }
  }

  r.version = delta.version;
  r.held = delta.held;
  r.load = delta.load;
  // Logged on every applied delta: the version moved, so a home's `tried` mark at the old one lapses (§6.3).
  record(`s|${from}`, { entry: { kind: "shard", shard: from, version: r.version, held: r.held, load: r.load } });
}

function removeClass(r: ShardRecord, from: number, key: string, record: Recorder): void {
  const before = r.classes.get(key);
  if (!before) return;
  r.classes.delete(key);
  record(`c|${from}|${key}`, {
    entry: { kind: "class", shard: from, key, requirement: before.requirement, levels: [] },
  });
}

/**
 * A tenant's pending count pool-wide at a priority moved. Becoming active, it
 * starts at the lowest pass of the active tenants there (schema step 9's
 * rule, pool-wide), so an idle tenant banks no turns; becoming idle drops it.
 * A pass kept over Σ's restart is kept on its first activation.
 */
function setPoolPending(state: SummaryState, priority: number, tenant: string, pending: number, record: Recorder) {
  const id = tenantId(priority, tenant);
  const wasActive = (state.pending.get(id) ?? 0) > 0;
  if (pending > 0) state.pending.set(id, pending);
  else state.pending.delete(id);
  if (pending > 0 && !wasActive && !state.passes.has(id)) {
    let lowest = Number.POSITIVE_INFINITY;
    for (const [other, p] of state.passes) {
      if (p.priority === priority && other !== id && (state.pending.get(other) ?? 0) > 0) {
        lowest = Math.min(lowest, p.pass);
      }
    }
    const pass = { priority, tenant, pass: Number.isFinite(lowest) ? lowest : 0 };
    state.passes.set(id, pass);
    record(`p|${id}`, { pass: { ...pass } });
  } else if (pending <= 0 && wasActive) {
    state.passes.delete(id);
  }
}

function entriesOf(shard: number, r: ShardRecord): SummaryEntry[] {
  const out: SummaryEntry[] = [{ kind: "shard", shard, version: r.version, held: r.held, load: r.load }];
  for (const c of r.classes.values()) out.push({ kind: "class", shard, ...c });
  for (const [id, pending] of r.tenants) {
    const at = id.indexOf("|");
    out.push({ kind: "tenant", shard, priority: Number(id.slice(0, at)), tenant: id.slice(at + 1), pending });
  }
  return out;
}

/** Drops log records older than SUMMARY_LOG_MS; the horizon moves to the newest version dropped. */
function trim(state: SummaryState, now: number): void {
  let drop = 0;
  while (drop < state.log.length && state.log[drop]!.at < now - SUMMARY_LOG_MS) drop++;
  if (drop === 0) return;
  state.horizon = Math.max(state.horizon, state.log[drop - 1]!.version);
  state.log.splice(0, drop);
}

/** The index of the first record with a version above `since` (the log ascends by version). */
function firstAfter(log: readonly Change[], since: number): number {
  let lo = 0;
  let hi = log.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (log[mid]!.version <= since) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The on-demand exchanges a second each shard may spend (§6.2): what the
 * ticks (2 a second per shard) leave of Σ's 800, shared equally. At S = 1
 * there is no summary, so there is nothing to share out: 0.
 */
export function onDemandAllowance(shards: number): number {
  if (!Number.isInteger(shards) || shards < 1 || shards > 256) throw new RangeError(`shard count ${shards}`);
  if (shards === 1) return 0;
  return (SUMMARY_BUDGET - 2 * shards) / shards;
}

/** A class's pending tasks at one shard, over its priorities: fresh and replicating alike. */
export function pendingOf(levels: readonly ClassLevel[]): number {
  return levels.reduce((n, l) => n + l.fresh + l.replicating, 0);
}

/**
 * Of the classes pending at other shards (one entry per shard and class),
 * the `limit` with the most pending tasks pool-wide, each once, in key
 * order: the classes a home counts its held claims for (§6.1
 * `held.nodesByClass`), where a burst draws the most forwards.
 */
export function mostPending(
  classes: Iterable<Pick<DigestClass, "key" | "requirement" | "levels">>,
  limit: number,
): Array<{ key: string; requirement: string }> {
  const pending = new Map<string, { key: string; requirement: string; n: number }>();
  for (const c of classes) {
    const n = pendingOf(c.levels);
    const known = pending.get(c.key);
    if (known) known.n += n;
    else pending.set(c.key, { key: c.key, requirement: c.requirement, n });
  }
  const byKey = (a: { key: string }, b: { key: string }) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
  return [...pending.values()]
    .sort((a, b) => b.n - a.n || byKey(a, b))
    .slice(0, limit)
    .sort(byKey)
    .map(({ key, requirement }) => ({ key, requirement }));
}

/**
 * How many held claims for a class one home forwards to a shard that
 * advertised `n` newly pending tasks of it, per version of that shard
 * (§6.3): its share of the pool's held claims, plus one. The pool's count
 * lags between ticks, so a home never counts itself above the pool.
 */
export function allotment(n: number, myHeld: number, poolHeld: number): number {
  const pool = Math.max(poolHeld, myHeld);
  return (pool > 0 ? Math.ceil((Math.max(0, n) * myHeld) / pool) : 0) + 1;
}
