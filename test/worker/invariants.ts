// Reads a pool object's raw tables inside workerd and runs the invariant
// checker over them (test/invariants/check.ts).

import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { violations as check, type PoolSnapshot } from "../invariants/check";
import { stub } from "./helpers";

/**
 * The pool's raw tables. `released`: the test released a held-back node,
 * which the ledger cannot show (the checker then skips its hold replay).
 */
export async function snapshot(pool: string, options: { released?: boolean } = {}): Promise<PoolSnapshot> {
  const taken = await tables(pool, options);
  // Over several shards the summary's tick fires the alarm every 500 ms (docs/sharding.md §6.2), and from
  // its firing until its handler runs none is set: a null is read again for a while (a lost alarm stays null).
  const sharded = (env.FLASHML_POOL_SHARDS ?? "") !== "";
  for (let i = 0; sharded && taken.alarm === null && i < 20; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    taken.alarm = await runInDurableObject(stub(pool), (_o, state) => state.storage.getAlarm());
  }
  return taken;
}

function tables(pool: string, options: { released?: boolean }): Promise<PoolSnapshot> {
  return runInDurableObject(stub(pool), async (_o, state) => {
    const all = (table: string, order: string) =>
      state.storage.sql.exec(`SELECT * FROM ${table} ORDER BY ${order}`).toArray();
    // A test may look at a pool rewound to before a table existed.
    const has = (table: string) =>
      state.storage.sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", table).toArray().length >
      0;
    const maybe = (table: string, order: string) => (has(table) ? all(table, order) : undefined);
    return {
      nodes: all("nodes", "node_id"),
      jobs: all("jobs", "seq"),
      tasks: all("tasks", "seq"),
      leases: all("leases", "issued_ms, lease_id"),
      events: all("events", "seq"),
      alarm: await state.storage.getAlarm(),
      counters: {
        job_task_counts: all("job_task_counts", "job_id, state"),
        task_counts: all("task_counts", "state"),
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

/** Every invariant violation in the pool, as readable sentences. */
export async function violations(pool: string, options: { released?: boolean } = {}): Promise<string[]> {
  return check(await snapshot(pool, options));
}
