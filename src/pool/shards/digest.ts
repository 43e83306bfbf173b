// This shard's digest for the pool summary (docs/sharding.md §6.1), read from
// the counters the schema keeps: the classes with pending tasks
// (classes_queued) and their levels per priority (queue_classes_level), the
// pending tasks per tenant (job_queues_next, summed for the load), and the node
// and job counts. Its cost grows with live classes, jobs, tenants and
// priorities, never with history. Only a pool of more than one shard reads
// it: at S = 1 nothing here runs, and `Grants` counts nothing.

import { type DigestContents, digestTenants } from "../../rules/digest";
import type { ClassLevel, DigestClass, ShardHeld } from "../../rules/summary";
import { onlineSql } from "../nodes/states";

/**
 * The claims this shard granted per (priority, tenant) since its object
 * started (the digest's cumulative `granted`). In memory: it restarts from 0
 * with the object, and Σ counts a new instance from 0 too, so a restart
 * loses at most the grants of one exchange from the global passes.
 */
export class Grants {
  private readonly counts = new Map<string, { priority: number; tenant: string; granted: number }>();

  /** One claim used a turn of `tenant` at `priority`. */
  add(priority: number, tenant: string): void {
    const id = `${priority}|${tenant}`;
    const count = this.counts.get(id);
    if (count) count.granted += 1;
    else this.counts.set(id, { priority, tenant, granted: 1 });
  }

  values(): Iterable<{ priority: number; tenant: string; granted: number }> {
    return this.counts.values();
  }
}

type LevelRow = { key: string; requirement: string; priority: number; fresh: number; replicating: number };

/** The classes with pending tasks, each with its fresh and replicating tasks per priority over the active jobs. */
const CLASSES_SQL = `SELECT c.class_key AS key, c.requirement,
    q.priority, SUM(q.pending - q.replicating) AS fresh, SUM(q.replicating) AS replicating
  FROM classes c JOIN queue_classes q ON q.class_id = c.class_id AND q.queued = 1
  WHERE c.queued = 1
  GROUP BY c.class_id, q.priority`;

/** Pending tasks per (priority, tenant), over the jobs holding some. */
const TENANTS_SQL = `SELECT priority, tenant, SUM(pending) AS pending FROM job_queues
  WHERE queued = 1 GROUP BY priority, tenant`;

/** The load's counts: live leases, running jobs (by jobs_live_first), home nodes and those online. */
export const LOAD_SQL = `SELECT (SELECT COUNT(*) FROM leases WHERE status = 'live') AS leased,
    (SELECT COUNT(*) FROM jobs WHERE (terminal_state IS NULL) = 1) AS jobs,
    (SELECT COUNT(*) FROM nodes) AS homeNodes,
    (SELECT COUNT(*) FROM nodes WHERE ${onlineSql("", "?1")}) AS online`;

/** What a digest reads from this shard's SQL: the work pending here and the shard's load. */
export type StoredDigest = Pick<DigestContents, "classes" | "load"> & {
  tenants: Array<{ priority: number; tenant: string; pending: number }>;
};

/**
 * Reads what the digest says of this shard's SQL: its classes and tenants
 * (pendingHere), and its load, whose counts read every node homed here and
 * every live lease; `requests` is not counted yet and stays 0.
 */
export function storedDigest(sql: SqlStorage, now: number): StoredDigest {
  const { classes, tenants } = pendingHere(sql);
  const load = sql.exec<{ leased: number; jobs: number; homeNodes: number; online: number }>(LOAD_SQL, now).one();
  // The tenants' pending tasks are the shard's: every job with some is in one.
  const pending = tenants.reduce((n, t) => n + t.pending, 0);
  return { classes, tenants, load: { requests: 0, pending, ...load } };
}

/**
 * What this shard's digest says now: `stored` as read from SQL (its nodes
 * are the ones homed here), `held` the claims held open here, and the
 * claims granted here per tenant.
 */
export function digestContents(stored: StoredDigest, held: ShardHeld, grants: Grants): DigestContents {
  return { classes: stored.classes, tenants: digestTenants(stored.tenants, grants.values()), held, load: stored.load };
}

/**
 * The work pending here: the classes with their levels per priority, and
 * the pending tasks per (priority, tenant). What the digest says of it, and
 * what a home weighs its own work by against other shards' offers.
 */
export function pendingHere(sql: SqlStorage): {
  classes: DigestClass[];
  tenants: Array<{ priority: number; tenant: string; pending: number }>;
} {
  const classes = new Map<string, DigestClass>();
  for (const row of sql.exec<LevelRow>(CLASSES_SQL)) {
    let c = classes.get(row.key);
    if (c === undefined) {
      c = { key: row.key, requirement: row.requirement, levels: [] };
      classes.set(row.key, c);
    }
    const level: ClassLevel = { priority: row.priority, fresh: row.fresh, replicating: row.replicating };
    if (level.fresh + level.replicating > 0) c.levels.push(level);
  }
  return {
    classes: [...classes.values()].filter((c) => c.levels.length > 0),
    tenants: sql.exec<{ priority: number; tenant: string; pending: number }>(TENANTS_SQL).toArray(),
  };
}
