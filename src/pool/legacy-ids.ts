// Ids minted while a pool had one shard (docs/sharding.md §4.1). They carry no
// shard, so they live in shard 0; a random one passes another shard's tag
// check 1 time in 256 and is routed there. A shard of a pool that once had
// one shard therefore asks shard 0 for an id it does not hold, and answers
// with shard 0's answer. Only such pools pay it, and only for ids the shard
// does not hold; at one shard, and in shard 0, nothing here runs.

import { callsOf } from "./calls";

/** Which argument of an object call addresses what (the calls that take an id the Worker routes by). */
type Addressed = { kind: "job" | "lease" | "key"; arg: number };

const JOB: Addressed = { kind: "job", arg: 0 };
const ADDRESSED: Readonly<Record<string, Addressed>> = {
  getJob: JOB,
  jobEvents: JOB,
  jobTasks: JOB,
  cancelJob: JOB,
  listJobArtifacts: JOB,
  registerCheckpointPart: JOB,
  commitCheckpoint: JOB,
  latestCheckpoint: JOB,
  checkpointLostWork: JOB,
  verifyCheckpoint: JOB,
  quarantineCheckpoint: JOB,
  explainPlacement: JOB,
  beginUpload: { kind: "key", arg: 0 },
  bindArtifact: { kind: "key", arg: 0 },
  resolveArtifact: { kind: "key", arg: 0 },
  renewLease: { kind: "lease", arg: 0 },
  failLease: { kind: "lease", arg: 0 },
  completeLease: { kind: "lease", arg: 0 },
};

/** Whether this shard holds what `id` names: the job (live or archived), the lease, or the key's job. */
function holds(sql: SqlStorage, kind: Addressed["kind"], id: string): boolean {
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
 * Wraps the id-addressed calls of `prototype` so that, where `legacyHome`
 * names shard 0's calls (a shard ≥ 1 of a pool that had one shard), an id
 * this shard does not hold is asked of shard 0 instead.
 */
export function forwardLegacyIds<T extends object>(
  prototype: T,
  legacyHome: (object: T) => { sql: SqlStorage; shard0: () => Record<string, (...args: unknown[]) => unknown> } | null,
): void {
  for (const [name, method] of callsOf(prototype, [])) {
    const addressed = ADDRESSED[name];
    if (addressed === undefined) continue;
    Object.defineProperty(prototype, name, {
      configurable: true,
      writable: true,
      value(this: T, ...args: unknown[]): unknown {
        const home = legacyHome(this);
        const id = args[addressed.arg];
        if (home === null || typeof id !== "string" || holds(home.sql, addressed.kind, id)) {
          return method.apply(this, args);
        }
        return home.shard0()[name]!(...args);
      },
    });
  }
}

/** The id-addressed call names, for the test that every one is covered. */
export const LEGACY_ADDRESSED_CALLS = Object.keys(ADDRESSED);
