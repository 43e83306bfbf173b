// Reads a pool object's raw tables inside workerd and runs the invariant
// checker over them (test/invariants/check.ts).

import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { createdAfter } from "../../src/pool/ledger/created";
import { COUNTER_ROWS_SQL, violations as check, type PoolSnapshot } from "../invariants/check";
import { shardStubs } from "./helpers";

type Shard = ReturnType<typeof shardStubs>[number];

/** The ledger's event rows and its runs' TASK_CREATED events (made by the pool's own reader), in seq order. */
function ledgerRows(sql: SqlStorage) {
  const jobs = sql.exec<{ job_id: string }>("SELECT DISTINCT job_id FROM tasks_created").toArray();
  const created = jobs.flatMap(({ job_id }) =>
    createdAfter(sql, job_id, 0, Number.MAX_SAFE_INTEGER).map((e) => ({ ...e, sealed_task: null })),
  );
  return [...sql.exec("SELECT * FROM events").toArray(), ...created].sort((a, b) => Number(a.seq) - Number(b.seq));
}

/**
 * The pool's raw tables. `released`: the test released a held-back node,
 * which the ledger cannot show (the checker then skips its hold replay).
 */
export async function snapshot(shard: Shard, options: { released?: boolean } = {}): Promise<PoolSnapshot> {
  const taken = await tables(shard, options);
  // Over several shards the summary's tick fires the alarm every 500 ms (docs/sharding.md §6.2), and from
  // its firing until its handler runs none is set: a null is read again for a while (a lost alarm stays null).
  const sharded = (env.FLASHML_POOL_SHARDS ?? "") !== "";
  for (let i = 0; sharded && taken.alarm === null && i < 20; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    taken.alarm = await runInDurableObject(shard, (_o, state) => state.storage.getAlarm());
  }
  return taken;
}

function tables(shard: Shard, options: { released?: boolean }): Promise<PoolSnapshot> {
  return runInDurableObject(shard, async (_o, state) => {
    const all = (table: string, order: string) =>
      state.storage.sql.exec(`SELECT * FROM ${table} ORDER BY ${order}`).toArray();
    // A test may look at a pool rewound to before a table existed.
    const has = (table: string) =>
      state.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", table).toArray().length >
      0;
    const passports = () => state.storage.sql.exec("SELECT node_id, registration FROM passports").toArray();
    const maybe = (table: string, order: string) => (has(table) ? all(table, order) : undefined);
    return {
      // A shard judges a lease by the node's registration it held: its own row, or the passport a forward brought.
      nodes: [...all("nodes", "node_id"), ...(has("passports") ? passports() : [])],
      jobs: all("jobs", "seq"),
      tasks: all("tasks", "seq"),
      leases: all("leases", "issued_ms, lease_id"),
      // A submission's TASK_CREATED events are runs of tasks since schema step 41 (src/pool/ledger/created.ts).
      events: has("tasks_created") ? ledgerRows(state.storage.sql) : all("events", "seq"),
      alarm: await state.storage.getAlarm(),
      counters: {
        // Columns since schema step 28; a pool rewound to before it still has the rows.
        job_task_counts: has("job_task_counts")
          ? all("job_task_counts", "job_id, state")
          : state.storage.sql.exec(COUNTER_ROWS_SQL.job_task_counts).toArray(),
        task_counts: has("task_counts")
          ? all("task_counts", "state")
          : state.storage.sql.exec(COUNTER_ROWS_SQL.task_counts).toArray(),
        job_counts: all("job_counts", "state"),
        classes: all("classes", "class_id"),
        job_queues: maybe("job_queues", "job_id"),
        queue_classes: maybe("queue_classes", "job_id, class_id"),
        tenant_shares: maybe("tenant_shares", "priority, tenant"),
        owner_replicas: maybe("owner_replicas", "job_id, class_id, owner"),
      },
      released: options.released ?? false,
      archived: has("archived_jobs")
        ? state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM archived_jobs").one().n
        : 0,
    };
  });
}

/**
 * Every invariant violation in the pool, as readable sentences: each shard's,
 * for a job lives wholly in one. Over several shards the hold replay is
 * skipped: a node's failures are spread over the shards' ledgers, and the
 * pool lets a hold reach the others up to a second late (docs/protocol.md §15).
 */
export async function violations(pool: string, options: { released?: boolean } = {}): Promise<string[]> {
  const shards = shardStubs(pool);
  const released = (options.released ?? false) || shards.length > 1;
  const found: string[] = [];
  for (const [k, shard] of shards.entries()) {
    const seen = check(await snapshot(shard, { released }));
    found.push(...(shards.length > 1 ? seen.map((v) => `shard ${k}: ${v}`) : seen));
  }
  return found;
}
