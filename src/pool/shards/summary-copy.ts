// A shard's copy of the rest of the pool (docs/sharding.md §2.1, §6.2,
// §13.3): what Σ's exchange replies said of the other shards' work and of
// the pool-wide tenant passes. In memory only, and soft: an empty copy
// (a restart) is rebuilt by the next exchange, and one Σ stopped answering
// for more than ENTRY_MAX_AGE_MS counts as empty, so claims fall back to
// local work. It never holds this shard's own entries: the shard counts
// those exactly.

import type { RemoteClass as ChoiceClass, RemoteTenant } from "../../rules/shard-choice";
import type { ClassLevel, DigestClass, ExchangeReply, GlobalPass, ShardHeld, ShardLoad } from "../../rules/summary";

/** Remote entries older than this are treated as absent (§13.3). */
export const ENTRY_MAX_AGE_MS = 5_000;

/** A remote class as a home chooses a shard by it, with its class key. */
export type RemoteClass = ChoiceClass & { key: string; levels: ClassLevel[] };

type ShardCopy = {
  version: number;
  held: ShardHeld;
  load: ShardLoad | null;
  classes: Map<string, DigestClass>;
  tenants: Map<string, number>; // priority|tenant → pending
  /** When a reply last confirmed this shard's entries. */
  confirmedMs: number;
};

/** Tasks pending per class key and priority, to tell whether a reply brought more work. */
type Pending = Map<string, number>;

export class SummaryCopy {
  private shards = new Map<number, ShardCopy>();
  private passes = new Map<string, GlobalPass>();
  private readonly servedAt = new Map<string, number>(); // shard|priority|tenant → claims granted for this shard
  private readonly listeners = new Set<() => void>();

  /**
   * Applies one exchange reply received at `now`. Σ sends only what changed,
   * so a reply confirms every shard the copy holds, changed or not: an
   * entry's age is the age of the last reply. Answers whether the reply
   * brought new remote work (a class newly pending at some shard, or more
   * pending there at some priority), and tells the listeners so, and when
   * a shard's digest moved to a new version: work that came back there (a
   * task requeued) may leave its counts as they were, and a held claim
   * that shard had nothing for may ask again.
   */
  apply(reply: ExchangeReply, now: number): { newWork: boolean } {
    const before = this.pendingAt(now);
    const versions = new Map([...this.shards].map(([k, copy]) => [k, copy.version]));
    let moved = false;
    if (reply.fullCopy) {
      this.shards = new Map();
      this.passes = new Map();
    }
    for (const entry of reply.entries) {
      const shard = this.shardOf(entry.shard);
      if (entry.kind === "shard") {
        moved ||= (versions.get(entry.shard) ?? 0) !== entry.version;
        shard.version = entry.version;
        shard.held = entry.held;
        shard.load = entry.load;
      } else if (entry.kind === "class") {
        if (entry.levels.length === 0) shard.classes.delete(entry.key);
        else shard.classes.set(entry.key, { key: entry.key, requirement: entry.requirement, levels: entry.levels });
      } else {
        const id = `${entry.priority}|${entry.tenant}`;
        if (entry.pending > 0) shard.tenants.set(id, entry.pending);
        else shard.tenants.delete(id);
      }
    }
    // Σ counts a grant once its shard has told it; this shard's own, counted at once (`granted`), may be ahead,
    // and a tenant new to the copy starts no lower than the lowest pass the copy holds there, as Σ starts it.
    const known = reply.fullCopy ? new Map<string, GlobalPass>() : new Map(this.passes);
    for (const pass of reply.passes) {
      const id = `${pass.priority}|${pass.tenant}`;
      const own = known.get(id)?.pass ?? (known.size === 0 ? pass.pass : lowestAt(known, pass.priority, pass.pass));
      this.passes.set(id, { ...pass, pass: Math.max(pass.pass, own) });
    }
    for (const shard of this.shards.values()) shard.confirmedMs = now;

    let newWork = false;
    for (const [id, n] of this.pendingAt(now)) if (n > (before.get(id) ?? 0)) newWork = true;
    if (newWork || moved) for (const listener of this.listeners) listener();
    return { newWork };
  }

  /** Every remote class with pending tasks, by shard; entries older than ENTRY_MAX_AGE_MS are left out. */
  classes(now: number): RemoteClass[] {
    const out: RemoteClass[] = [];
    for (const [shard, copy] of this.shards) {
      if (!fresh(copy, now)) continue;
      for (const c of copy.classes.values())
        out.push({ shard, key: c.key, requirement: c.requirement, levels: c.levels });
    }
    return out;
  }

  /** Every remote tenant with pending tasks, by shard and priority; entries older than ENTRY_MAX_AGE_MS are left out. */
  tenants(now: number): RemoteTenant[] {
    const out: RemoteTenant[] = [];
    for (const [shard, copy] of this.shards) {
      if (!fresh(copy, now)) continue;
      for (const [id, pending] of copy.tenants) {
        const bar = id.indexOf("|");
        out.push({ shard, priority: Number(id.slice(0, bar)), tenant: id.slice(bar + 1), pending });
      }
    }
    return out;
  }

  /**
   * A tenant's pool-wide pass at a priority. A tenant Σ has not named yet
   * (its work is new) starts where Σ will start it: at the lowest pass
   * known at that priority, or 0.
   */
  pass(priority: number, tenant: string): number {
    const known = this.passes.get(`${priority}|${tenant}`);
    if (known) return known.pass;
    let lowest = Number.POSITIVE_INFINITY;
    for (const p of this.passes.values()) if (p.priority === priority) lowest = Math.min(lowest, p.pass);
    return Number.isFinite(lowest) ? lowest : 0;
  }

  /**
   * A claim this shard granted, or a home's forward got, at `priority` for
   * `tenant`: its pool-wide pass moves by 1/weight at once, so the next
   * claim here weighs it before Σ's next reply confirms it (which replaces
   * the pass with Σ's own count).
   */
  granted(priority: number, tenant: string, weight: number, shard: number): void {
    const id = `${priority}|${tenant}`;
    const pass = this.passes.get(id) ?? { priority, tenant, pass: this.pass(priority, tenant) };
    pass.pass += 1 / weight;
    this.passes.set(id, pass);
    const at = `${shard}|${id}`;
    this.servedAt.set(at, (this.servedAt.get(at) ?? 0) + 1);
  }

  /** The claims this shard got at `shard` for `tenant` at `priority` since it started (`granted`). */
  served(shard: number, priority: number, tenant: string): number {
    return this.servedAt.get(`${shard}|${priority}|${tenant}`) ?? 0;
  }

  /**
   * The other shards' online home nodes less the live leases they issued,
   * by their fresh entries' loads: about how many of the pool's nodes
   * outside this shard are idle (a node with two leases counts twice).
   */
  idleElsewhere(now: number): number {
    let idle = 0;
    for (const copy of this.shards.values())
      if (fresh(copy, now) && copy.load) idle += copy.load.online - copy.load.leased;
    return idle;
  }

  /** The age of the oldest remote entry in ms (flashedge_summary_age_seconds), null while the copy holds none. */
  age(now: number): number | null {
    let oldest: number | null = null;
    for (const copy of this.shards.values()) oldest = Math.max(oldest ?? 0, now - copy.confirmedMs);
    return oldest;
  }

  /** The digest version of `shard` the copy holds; 0 when it holds none (a home's `tried` marks name it, §6.3). */
  version(shard: number): number {
    return this.shards.get(shard)?.version ?? 0;
  }

  /** What shard `shard` told Σ of its held claims and load, if the copy holds it fresh. */
  shard(shard: number, now: number): { held: ShardHeld; load: ShardLoad | null } | null {
    const copy = this.shards.get(shard);
    return copy && fresh(copy, now) ? { held: copy.held, load: copy.load } : null;
  }

  /**
   * Calls `listener` after every reply that brought new remote work (as
   * `apply` answers) or moved a shard's digest version: held claims retry
   * on it. Returns the unsubscribe.
   */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private shardOf(shard: number): ShardCopy {
    let copy = this.shards.get(shard);
    if (copy === undefined) {
      copy = { version: 0, held: { claims: 0 }, load: null, classes: new Map(), tenants: new Map(), confirmedMs: 0 };
      this.shards.set(shard, copy);
    }
    return copy;
  }

  /** Pending tasks per shard, class and priority among the fresh entries. */
  private pendingAt(now: number): Pending {
    const out: Pending = new Map();
    for (const c of this.classes(now))
      for (const l of c.levels) out.set(`${c.shard}|${c.key}|${l.priority}`, l.fresh + l.replicating);
    return out;
  }
}

/** The lowest pass `passes` holds at `priority`, or `otherwise` when it holds none there. */
function lowestAt(passes: ReadonlyMap<string, GlobalPass>, priority: number, otherwise: number): number {
  let lowest = Number.POSITIVE_INFINITY;
  for (const p of passes.values()) if (p.priority === priority) lowest = Math.min(lowest, p.pass);
  return Number.isFinite(lowest) ? lowest : otherwise;
}

function fresh(copy: ShardCopy, now: number): boolean {
  return now - copy.confirmedMs <= ENTRY_MAX_AGE_MS;
}
