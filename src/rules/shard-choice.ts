// Which shard serves a claim, and which takes a submission (docs/sharding.md
// §7.1, §7.4), pure. The summary chooses a shard, never a task: the chosen
// shard's own scheduler picks the task at its exact state (late binding), so
// a stale offer costs a retry, never a wrong assignment. Randomness is passed
// in (`random`: uniform in [0, 1)) so every choice replays in tests.

import type { ClassLevel } from "./summary";

/**
 * What one shard has for this node, by the home's copy of the summary: the
 * highest priority with eligible pending work, the global pass of its best
 * tenant there, that tenant's weight (one claim moves its pass by 1/weight),
 * and the eligible pending count at that priority. `served`: the claims this
 * home got there for that tenant at that priority (0 when not counted), so
 * a tenant's work in several shards takes turns rather than the home
 * keeping to one.
 */
export type Offer = {
  shard: number;
  priority: number;
  /** The tenant furthest behind there (none when the copy names no tenant): the claim sent there serves it first. */
  tenant?: string;
  tenantPass: number;
  weight: number;
  eligible: number;
  served?: number;
};

/** A requirement class pending at another shard, as the home's copy of the summary has it. */
export type RemoteClass = { shard: number; requirement: string; levels: readonly ClassLevel[] };
/** A tenant with pending tasks at a priority on another shard. */
export type RemoteTenant = { shard: number; priority: number; tenant: string; pending: number };

/**
 * §7.1 step 1: each other shard's best offer for one node. `accepts` is the
 * gate on a class's requirement for this node, asked once per distinct
 * requirement. A shard's offer is its highest priority with accepted
 * pending work, the count there, and of the tenants pending there the one
 * furthest behind by its global pass (`passOf`; a tenant the copy has no
 * pass for is behind nobody: 0). A shard with nothing accepted offers
 * nothing.
 */
export function shardOffers(
  classes: Iterable<RemoteClass>,
  accepts: (requirement: string) => boolean,
  tenants: Iterable<RemoteTenant>,
  passOf: (priority: number, tenant: string) => number | undefined,
  weightOf: (tenant: string) => number,
  servedOf: (shard: number, priority: number, tenant: string) => number = () => 0,
): Offer[] {
  const asked = new Map<string, boolean>();
  const best = new Map<number, { priority: number; eligible: number }>();
  for (const c of classes) {
    if (!asked.has(c.requirement)) asked.set(c.requirement, accepts(c.requirement));
    if (!asked.get(c.requirement)) continue;
    for (const level of c.levels) {
      const n = level.fresh + level.replicating;
      if (n <= 0) continue;
      const b = best.get(c.shard);
      if (b === undefined || level.priority > b.priority) best.set(c.shard, { priority: level.priority, eligible: n });
      else if (level.priority === b.priority) b.eligible += n;
    }
  }
  const behind = new Map<number, { tenant: string; pass: number; weight: number; served: number }>();
  for (const t of tenants) {
    if (t.pending <= 0 || best.get(t.shard)?.priority !== t.priority) continue;
    const pass = passOf(t.priority, t.tenant) ?? 0;
    const b = behind.get(t.shard);
    if (b === undefined || pass < b.pass)
      behind.set(t.shard, {
        tenant: t.tenant,
        pass,
        weight: weightOf(t.tenant),
        served: servedOf(t.shard, t.priority, t.tenant),
      });
  }
  return [...best].map(([shard, b]) => {
    const t = behind.get(shard);
    return {
      shard,
      priority: b.priority,
      eligible: b.eligible,
      ...(t ? { tenant: t.tenant } : {}),
      tenantPass: t?.pass ?? 0,
      weight: t?.weight ?? 1,
      served: t?.served ?? 0,
    };
  });
}

/** Passes this close are equal: they are sums of 1/weight, and 3 × 1/3 need not be 1 in floating point. */
const PASS_EPSILON = 1e-9;

export type ShardChoice = { kind: "local" } | { kind: "forward"; shard: number } | { kind: "none" };

/**
 * §7.1 steps 2-4. Shards in `tried` (a forward there found nothing at their
 * current version) are left out. p* is the highest priority any candidate
 * offers; the home's own exact offer replaces the summary's entry for it. The
 * home serves the claim itself when it has work at p* whose tenant is at most
 * one claim's worth ahead of the lowest other pass there, unless a shard at
 * p* offers a tenant no further ahead that this home has served less there
 * than here (so one tenant's jobs in several shards take turns). Otherwise
 * it forwards to a shard whose tenant is furthest behind at p* (fair share
 * first, as stride scheduling does at one shard: a sample that missed that
 * tenant would let the others run ahead of it without bound); when several
 * offer tenants that far behind, it samples two of them, weighted by
 * eligible count, to spread the claims, and takes the one this home served
 * less, then the larger count, then the lower shard.
 */
export function chooseShard(
  offers: readonly Offer[],
  self: number,
  localExact: Offer | null,
  tried: ReadonlySet<number>,
  random: () => number,
): ShardChoice {
  const local = localExact !== null && localExact.eligible > 0 ? localExact : null;
  const others = offers
    .filter((o) => o.shard !== self && o.eligible > 0 && !tried.has(o.shard))
    .sort((a, b) => a.shard - b.shard);
  let top = local?.priority ?? Number.NEGATIVE_INFINITY;
  for (const o of others) top = Math.max(top, o.priority);
  if (top === Number.NEGATIVE_INFINITY) return { kind: "none" };
  const atTop = others.filter((o) => o.priority === top);
  const lowest = Math.min(...atTop.map((o) => o.tenantPass));
  if (local !== null && local.priority === top) {
    const owed = atTop.some((o) => o.tenantPass <= local.tenantPass && (o.served ?? 0) < (local.served ?? 0));
    if (atTop.length === 0 || (local.tenantPass <= lowest + 1 / local.weight && !owed)) return { kind: "local" };
  }
  const behind = atTop.filter((o) => o.tenantPass <= lowest + PASS_EPSILON);
  if (behind.length === 1) return { kind: "forward", shard: behind[0]!.shard };
  const [a, b] = weightedPair(behind, random);
  return { kind: "forward", shard: better(a!, b!).shard };
}

/** Of two offers whose tenants are equally far behind, the one served less; then the larger count; then the lower shard. */
function better(a: Offer, b: Offer): Offer {
  if ((a.served ?? 0) !== (b.served ?? 0)) return (a.served ?? 0) < (b.served ?? 0) ? a : b;
  if (a.eligible !== b.eligible) return a.eligible > b.eligible ? a : b;
  return a.shard < b.shard ? a : b;
}

/** Two distinct offers of at least two, drawn in proportion to their eligible counts. */
function weightedPair(candidates: readonly Offer[], random: () => number): Offer[] {
  const pool = [...candidates];
  const drawn: Offer[] = [];
  while (drawn.length < 2) {
    const total = pool.reduce((sum, o) => sum + o.eligible, 0);
    let r = random() * total;
    let i = 0;
    while (i < pool.length - 1 && r >= pool[i]!.eligible) r -= pool[i++]!.eligible;
    drawn.push(pool.splice(i, 1)[0]!);
  }
  return drawn;
}

/**
 * Two distinct shards, uniformly, for a submission's two choices (§7.4).
 * There is no choice to make in a one-shard pool, which never places (§12).
 */
export function twoDistinct(shards: number, random: () => number): [number, number] {
  if (!Number.isInteger(shards) || shards < 2) throw new RangeError(`two distinct shards of ${shards}`);
  const a = Math.floor(random() * shards);
  const b = Math.floor(random() * (shards - 1));
  return [a, b >= a ? b + 1 : b];
}

/**
 * Where a submission goes (§7.4): the candidate with the lower load (pending
 * + reserved). A tie is a coin toss: sending every tie to the lower shard
 * would favour shard 0, which already carries the most (device codes, and
 * every enrolled node).
 */
export function placeSubmission(
  a: { shard: number; load: number },
  b: { shard: number; load: number },
  random: () => number,
): number {
  if (a.load !== b.load) return a.load < b.load ? a.shard : b.shard;
  return random() < 0.5 ? a.shard : b.shard;
}
