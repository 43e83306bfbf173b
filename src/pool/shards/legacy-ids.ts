// Ids minted while a pool had one shard (docs/sharding.md §4.1). They carry no
// shard, so they live in shard 0; a random one passes another shard's tag
// check 1 time in 256 and is routed there. A shard of a pool that once had
// one shard therefore asks shard 0 for an id it does not hold, and answers
// with shard 0's answer. Only such pools pay it, and only for ids the shard
// does not hold; at one shard, and in shard 0, nothing here runs.

/** What an id the Worker routes by names: a job, a lease, or an artifact key (by its job). */
export type IdKind = "job" | "lease" | "key";

/** Where a shard's ids of the one-shard days live: shard 0 (null: nowhere, this shard holds all its ids). */
export type LegacyHome<S> = { sql: SqlStorage; shard0: () => S };

/** Whether this shard holds what `id` names: the job (live or archived), the lease, or the key's job. */
function holds(sql: SqlStorage, kind: IdKind, id: string): boolean {
  const job = kind === "key" ? /^jobs\/([^/]+)\//.exec(id)?.[1] : id;
  if (kind === "lease") return sql.exec("SELECT 1 FROM leases WHERE lease_id = ?", id).toArray().length > 0;
  // A key outside jobs/ is bound in shard 0 (src/routes/shards.ts).
  if (job === undefined) return true;
  return (
    sql
      .exec("SELECT 1 FROM jobs WHERE job_id = ? UNION ALL SELECT 1 FROM archived_jobs WHERE job_id = ?", job, job)
      .toArray().length > 0
  );
}

/** Whether the pool ever ran on one shard, so that legacy ids exist (its layout history says). */
export function hadOneShard(sql: SqlStorage): boolean {
  return sql.exec("SELECT 1 FROM pool_layout WHERE shards = 1 LIMIT 1").toArray().length > 0;
}

/**
 * `run` here when this shard holds what `id` names, or when the pool never
 * had one shard (`legacy` null); else shard 0's answer to the same call
 * (`atShard0`), where an id minted in the pool's one-shard days lives.
 */
export function heldHereOr<S, R>(
  legacy: LegacyHome<S> | null,
  kind: IdKind,
  id: unknown,
  run: () => R,
  atShard0: (shard0: S) => unknown,
): R {
  if (legacy === null || typeof id !== "string" || holds(legacy.sql, kind, id)) return run();
  // Shard 0 runs the same call of the same object class: its answer is this call's.
  return atShard0(legacy.shard0()) as R;
}
