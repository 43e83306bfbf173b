// Reads a pool object's raw tables inside workerd and runs the invariant
// checker over them (test/invariants/check.ts).

import { runInDurableObject } from "cloudflare:test";
import { violations as check, type PoolSnapshot } from "../invariants/check";
import { stub } from "./helpers";

export async function snapshot(pool: string): Promise<PoolSnapshot> {
  return runInDurableObject(stub(pool), async (_o, state) => {
    const all = (table: string, order: string) =>
      state.storage.sql.exec(`SELECT * FROM ${table} ORDER BY ${order}`).toArray();
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
      },
    };
  });
}

/** Every invariant violation in the pool, as readable sentences. */
export async function violations(pool: string): Promise<string[]> {
  return check(await snapshot(pool));
}
