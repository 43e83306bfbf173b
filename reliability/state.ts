// Reads a pool's raw tables from the SQLite file `wrangler dev` persisted, so
// the invariant checker can judge the pool after the process is gone. Uses
// the sqlite3 command-line shell (Debian's sqlite3 package).

import { execFileSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { shardOfId } from "../src/rules/shard-ids";
import { COUNTER_ROWS_SQL, type PoolSnapshot } from "../test/invariants/check";

function query(file: string, sql: string): Array<Record<string, string | number | null>> {
  const out = execFileSync("sqlite3", ["-readonly", "-json", file, sql], { encoding: "utf8", maxBuffer: 1 << 30 });
  return out.trim() === "" ? [] : (JSON.parse(out) as Array<Record<string, string | number | null>>);
}

/**
 * The snapshots of the pool's objects that hold any of `jobIds` (one at one
 * shard; each shard its jobs landed in, over several), and the node rows of
 * every object (a node's record lives at its home). A shard judges a lease by
 * the node's registration it held: its own row, or the passport a forward
 * brought, so passports count as nodes there (as test/worker/invariants.ts).
 * Over several shards the hold replay is skipped: a node's failures are
 * spread over the shards' ledgers.
 */
export function snapshotsFromDisk(
  persistTo: string,
  jobIds: string[],
): { snapshots: PoolSnapshot[]; homeNodes: Array<Record<string, string | number | null>> } {
  const dir = join(persistTo, "v3", "do", "flashedge-PoolObject");
  const ids = jobIds.map((id) => `'${id.replace(/[^0-9a-f]/g, "")}'`).join(",");
  const snapshots: PoolSnapshot[] = [];
  const homeNodes: Array<Record<string, string | number | null>> = [];
  const files = readdirSync(dir).filter((name) => name.endsWith(".sqlite") && name !== "metadata.sqlite");
  for (const name of files) {
    const file = join(dir, name);
    if (query(file, `SELECT name FROM sqlite_master WHERE name = 'jobs'`).length === 0) continue;
    const nodes = query(file, "SELECT * FROM nodes ORDER BY node_id");
    homeNodes.push(...nodes);
    if (query(file, `SELECT 1 FROM jobs WHERE job_id IN (${ids})`).length === 0) continue;
    const passports =
      query(file, `SELECT name FROM sqlite_master WHERE name = 'passports'`).length > 0
        ? query(file, "SELECT node_id, registration FROM passports")
        : [];
    snapshots.push({
      nodes: [...nodes, ...passports],
      jobs: query(file, "SELECT * FROM jobs ORDER BY seq"),
      tasks: query(file, "SELECT * FROM tasks ORDER BY seq"),
      leases: query(file, "SELECT * FROM leases ORDER BY issued_ms, lease_id"),
      events: query(file, "SELECT * FROM events ORDER BY seq"),
      counters: {
        job_task_counts: query(file, COUNTER_ROWS_SQL.job_task_counts),
        task_counts: query(file, COUNTER_ROWS_SQL.task_counts),
        job_counts: query(file, "SELECT * FROM job_counts"),
        classes: query(file, "SELECT * FROM classes"),
        job_queues: query(file, "SELECT * FROM job_queues"),
        queue_classes: query(file, "SELECT * FROM queue_classes"),
        tenant_shares: query(file, "SELECT * FROM tenant_shares"),
      },
      // The drivers never release a node; an archived job's events are gone (retention is a week here).
      released: false,
      archived: Number(query(file, "SELECT COUNT(*) AS n FROM archived_jobs")[0]?.n ?? 0),
    });
  }
  if (snapshots.length === 0) throw new Error(`no pool object under ${dir} holds any of the run's jobs`);
  if (snapshots.length > 1) for (const snapshot of snapshots) snapshot.released = true;
  return { snapshots, homeNodes };
}

/**
 * What must hold across a pool's shards (docs/sharding.md §15.2), read from
 * every object file `wrangler dev` persisted: each job lives in the shard
 * its id names (shard 0 for legacy ids, which a pool that once had one shard
 * holds there whatever they happen to name), each submitted job is in
 * exactly one shard, no lease id is in two shards, and shard 0's layout
 * history records the shard counts the run ran with (`layout`, in order).
 */
export function shardViolations(persistTo: string, shards: number, jobIds: string[], layout: number[]): string[] {
  const dir = join(persistTo, "v3", "do", "flashedge-PoolObject");
  const found: string[] = [];
  const leaseShard = new Map<string, string>();
  const jobShards = new Map<string, number[]>();
  let read = 0;
  for (const name of readdirSync(dir)) {
    if (!name.endsWith(".sqlite") || name === "metadata.sqlite") continue;
    const file = join(dir, name);
    if (query(file, `SELECT name FROM sqlite_master WHERE name = 'shard_self'`).length === 0) continue;
    const self = query(file, "SELECT pool, shard FROM shard_self")[0];
    if (!self) continue;
    const where = `${self.pool}/${self.shard}`;
    read++;
    const epochs = query(file, "SELECT shards FROM pool_layout ORDER BY epoch").map((e) => Number(e.shards));
    if (self.shard === 0 && JSON.stringify(epochs) !== JSON.stringify(layout))
      found.push(`shard 0's layout history is ${JSON.stringify(epochs)}, the run ran with ${JSON.stringify(layout)}`);
    const legacyHere = self.shard === 0 && epochs.includes(1);
    for (const { job_id } of query(file, "SELECT job_id FROM jobs")) {
      jobShards.set(String(job_id), [...(jobShards.get(String(job_id)) ?? []), Number(self.shard)]);
      const home = shardOfId(String(self.pool), String(job_id), "", shards).shard;
      if (home !== self.shard && !legacyHere)
        found.push(`job ${job_id} lives in shard ${self.shard}, its id names shard ${home}`);
    }
    for (const { lease_id } of query(file, "SELECT lease_id FROM leases")) {
      const other = leaseShard.get(String(lease_id));
      if (other !== undefined) found.push(`lease ${lease_id} is in ${other} and ${where}`);
      leaseShard.set(String(lease_id), where);
    }
  }
  for (const jobId of jobIds) {
    const held = jobShards.get(jobId) ?? [];
    if (held.length !== 1) found.push(`job ${jobId} is in ${held.length} shards (${held.join(", ")})`);
  }
  // A check over nothing would pass anything: every run registers nodes, so shard 0 at least exists.
  if (read === 0) found.push(`no shard's file found under ${dir}`);
  return found;
}
