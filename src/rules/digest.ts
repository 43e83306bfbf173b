// A shard's digest over time (docs/sharding.md §6.1), pure: its version, the
// delta against the digest Σ acknowledged last, and whether it shows work Σ
// has not been told of. src/pool/shards/digest.ts reads the contents from SQL;
// Σ's merge of what is sent is src/rules/summary.ts. No I/O, no clock.

import type { DigestClass, DigestDelta, ShardDigest, TenantGrant } from "./summary";

/** What a digest says, apart from whose it is and its version. */
export type DigestContents = Pick<ShardDigest, "classes" | "tenants" | "held" | "load">;

const tenantId = (t: { priority: number; tenant: string }) => `${t.priority}|${t.tenant}`;

/**
 * The contents in one canonical order (classes by key, levels by priority
 * down, tenants by priority and name), so equal contents compare equal.
 */
export function canonicalContents(contents: DigestContents): DigestContents {
  const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return {
    classes: contents.classes
      .map((c) => ({ ...c, levels: [...c.levels].sort((a, b) => b.priority - a.priority) }))
      .sort((a, b) => byText(a.key, b.key)),
    tenants: [...contents.tenants].sort((a, b) => a.priority - b.priority || byText(a.tenant, b.tenant)),
    held: contents.held,
    load: contents.load,
  };
}

/**
 * The shard's digest now: `contents` under the version of `prev` when they
 * say the same, else under the next version (versions count changes of the
 * contents, from 1). A new `instance` restarts the count.
 */
export function nextDigest(
  prev: ShardDigest | null,
  shard: number,
  instance: string,
  contents: DigestContents,
): ShardDigest {
  const next = canonicalContents(contents);
  const same = prev !== null && prev.instance === instance && sameContents(prev, next);
  const version = prev === null || prev.instance !== instance ? 1 : same ? prev.version : prev.version + 1;
  return { shard, instance, version, ...next };
}

/** Whether two digests say the same, whatever their versions. */
export function sameContents(a: DigestContents, b: DigestContents): boolean {
  return (
    JSON.stringify([a.classes, a.tenants, a.held, a.load]) === JSON.stringify([b.classes, b.tenants, b.held, b.load])
  );
}

/**
 * What `next` changes of `acked` (the digest Σ acknowledged): the classes and
 * tenants new or changed, in full, and the keys that left. `load` and `held`
 * ride whole. A delta of an unchanged digest carries nothing and `acked`'s
 * version, which Σ answers without a merge.
 */
export function digestDelta(acked: ShardDigest, next: ShardDigest): DigestDelta {
  const ackedClasses = new Map(acked.classes.map((c) => [c.key, c]));
  const ackedTenants = new Map(acked.tenants.map((t) => [tenantId(t), t]));
  const nextClasses = new Set(next.classes.map((c) => c.key));
  const nextTenants = new Set(next.tenants.map(tenantId));
  const changed = <T>(before: T | undefined, after: T) =>
    before === undefined || JSON.stringify(before) !== JSON.stringify(after);
  return {
    shard: next.shard,
    instance: next.instance,
    base: acked.version,
    version: next.version,
    classes: next.classes.filter((c) => changed(ackedClasses.get(c.key), c)),
    tenants: next.tenants.filter((t) => changed(ackedTenants.get(tenantId(t)), t)),
    held: next.held,
    load: next.load,
    removed: {
      classes: acked.classes.filter((c) => !nextClasses.has(c.key)).map((c) => c.key),
      tenants: acked.tenants
        .filter((t) => !nextTenants.has(tenantId(t)))
        .map((t) => ({ priority: t.priority, tenant: t.tenant })),
    },
  };
}

/**
 * Whether `next` shows a class pending that `known` (what Σ holds of this
 * shard; null: nothing) does not, or a class's top priority above what
 * `known` shows: what a submission tells Σ before it answers (§6.2).
 */
export function newlyPending(known: Pick<ShardDigest, "classes"> | null, next: Pick<ShardDigest, "classes">): boolean {
  const tops = new Map((known?.classes ?? []).map((c) => [c.key, topPriority(c)]));
  return next.classes.some((c) => {
    const top = tops.get(c.key);
    return top === undefined || topPriority(c) > top;
  });
}

/** The highest priority a class has pending tasks at (-∞ with none). */
export function topPriority(c: DigestClass): number {
  let top = Number.NEGATIVE_INFINITY;
  for (const l of c.levels) if (l.fresh + l.replicating > 0) top = Math.max(top, l.priority);
  return top;
}

/**
 * The tenants of a digest: every (priority, tenant) with pending tasks here,
 * and every one the shard has counted grants for since it started, so a Σ
 * that restarted takes each count as its baseline (src/rules/summary.ts).
 */
export function digestTenants(
  pending: ReadonlyArray<{ priority: number; tenant: string; pending: number }>,
  granted: Iterable<{ priority: number; tenant: string; granted: number }>,
): TenantGrant[] {
  const out = new Map<string, TenantGrant>();
  for (const g of granted)
    out.set(tenantId(g), { priority: g.priority, tenant: g.tenant, granted: g.granted, pending: 0 });
  for (const p of pending) {
    const id = tenantId(p);
    out.set(id, { priority: p.priority, tenant: p.tenant, granted: out.get(id)?.granted ?? 0, pending: p.pending });
  }
  return [...out.values()];
}
