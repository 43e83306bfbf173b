// Migration benchmark (issue 12, "migrations do bounded work under
// blockConcurrencyWhile"): how long the schema's steps take for a pool
// created before all of them, with a large history. Every step runs inside
// the pool object's constructor, under blockConcurrencyWhile, whose work
// must finish within its 30 s limit or the object resets. A pool's history
// is bounded by the object's 10 GB; so is the steps' work over it.
//
// The history is made by SQL directly (the pool's own code makes it ~100×
// slower; bench/longevity.mjs does that): N finished tasks in jobs of
// 10,000, each with its lease, its artifact and its three events, at the
// current schema, with payloads the size of a hyperparameter trial's. The
// schema is then taken back to step 2 (the migrations' down steps) and
// every later step is run, one transaction, each step timed: an object this
// large runs them one per event (src/pool/object.ts), a small one all at its
// start. Never run by `npm test`; the driver is bench/migrations.mjs.

import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { it } from "vitest";
import { poolTaskCounts } from "../src/pool/jobs/jobs";
import { MIGRATIONS, UPGRADE } from "../src/pool/schema/schema";
import { rewindSchema } from "../test/worker/schema/schema-history";

const settings = env as unknown as Record<string, string | undefined>;
const SIZES = (settings.BENCH_SIZES || "100000,1000000").split(",").map(Number);
const JOB_SIZE = 10_000;
/** The step the history is taken back to: every step with work over existing rows comes after it. */
const FROM = 2;

/** Inserts `n` finished tasks of history by SQL: tasks, leases, artifacts, events and their jobs. */
function makeHistory(sql: SqlStorage, n: number): void {
  const jobs = Math.ceil(n / JOB_SIZE);
  const now = Date.now() - 86_400_000;
  sql.exec(`INSERT INTO classes (class_key, requirement) VALUES ('{}', '{}')`);
  sql.exec(
    `WITH RECURSIVE j(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM j WHERE i + 1 < ?)
     INSERT INTO jobs (job_id, seq, spec, workload_type, created_ms, terminal_state, finished_ms)
     SELECT printf('%012x', i), i + 1, '{"apiVersion":"flashml.dev/v1alpha1","kind":"Job","metadata":{"name":"history"}}',
            'hyperparameter_search', ?, 'SUCCEEDED', ?
     FROM j`,
    jobs,
    now,
    now,
  );
  // A trial's payload as a recipe stamps it: module, params, prefix, image, isolation (~300 bytes).
  sql.exec(
    `WITH RECURSIVE t(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM t WHERE i + 1 < ?)
     INSERT INTO tasks (job_id, task_id, class_id, payload, commit_key, max_attempts, lease_seconds, output_json,
                        state, attempts_used, lease_id, accepted_object)
     SELECT printf('%012x', i / ${JOB_SIZE}), printf('trial-%06d', i % ${JOB_SIZE}), 1,
            json_object('module', 'flashml_workloads.sklearn_trial',
                        'params', json_object('C', (i % 97) / 10.0, 'kernel', 'rbf', 'seed', i),
                        'inputs', json_object(),
                        'output_prefix', printf('jobs/%012x/trial-%06d/', i / ${JOB_SIZE}, i % ${JOB_SIZE}),
                        'task_id', printf('trial-%06d', i % ${JOB_SIZE}),
                        'image', 'ghcr.io/flashml/runner:0.4.1',
                        'isolation', json_object('tier', 'standard', 'allowFallback', json('false'))),
            printf('jobs/%012x/trial-%06d/metrics.json', i / ${JOB_SIZE}, i % ${JOB_SIZE}), 3, 60, 0,
            'COMPLETED', 1, printf('ls-%012x', i), printf('obj-%012x', i)
     FROM t`,
    n,
  );
  sql.exec(
    `INSERT INTO leases (lease_id, task_seq, node_id, attempt_number, issued_ms, deadline_ms, status)
     SELECT lease_id, seq, 'node-' || (seq % 100), 1, ?, ?, 'completed' FROM tasks`,
    now,
    now + 60_000,
  );
  sql.exec(
    `INSERT INTO artifacts (key, object, sha256, size_bytes, etag, created_ms)
     SELECT commit_key, accepted_object, printf('%064x', seq), 20, printf('%032x', seq), ? FROM tasks`,
    now,
  );
  for (const [type, message] of [
    ["TASK_CREATED", "'task ' || task_id || ' created'"],
    ["LEASE_CLAIMED", "'task ' || task_id || ' leased to node-' || (seq % 100) || ' (attempt 1)'"],
    ["TASK_COMMIT_ACCEPTED", "'commit of ' || task_id || ' accepted from node-' || (seq % 100)"],
  ] as const) {
    sql.exec(
      `INSERT INTO events (job_id, type, ts_ms, message, data)
       SELECT job_id, ?, ?, ${message}, json_object('task_id', task_id, 'node_id', 'node-' || (seq % 100)) FROM tasks`,
      type,
      now,
    );
  }
}

it("every migration step on a pool with a large history, as the constructor runs them", {
  timeout: 3_600_000,
}, async () => {
  for (const size of SIZES) {
    const pool = `migrate-${size}-${crypto.randomUUID().slice(0, 8)}`;
    const stub = env.POOL.get(env.POOL.idFromName(pool));
    const result = await runInDurableObject(stub, (_o, state) => {
      const sql = state.storage.sql;
      const made = Date.now();
      state.storage.transactionSync(() => makeHistory(sql, size));
      const makeMs = Date.now() - made;
      const bytesAtCurrentSchema = sql.databaseSize;
      const rewound = Date.now();
      state.storage.transactionSync(() => rewindSchema(sql, FROM));
      const rewindMs = Date.now() - rewound;
      const steps: Array<{ step: number; ms: number }> = [];
      const started = performance.now();
      // As migrate() does, in one transaction, each step timed.
      state.storage.transactionSync(() => {
        for (const m of MIGRATIONS.filter((m) => m.id > FROM)) {
          const t0 = performance.now();
          sql.exec(m.up);
          steps.push({ step: m.id, ms: Math.round(performance.now() - t0) });
        }
        sql.exec("UPDATE schema_version SET version = ?", MIGRATIONS.length);
      });
      const migrateMs = Math.round(performance.now() - started);
      const counted = poolTaskCounts(sql).COMPLETED;
      if (counted !== size) throw new Error(`after migrating, ${counted} COMPLETED tasks counted, not ${size}`);
      return {
        finished_tasks: size,
        events: size * 3,
        bytes: sql.databaseSize,
        bytes_at_current_schema: bytesAtCurrentSchema,
        make_ms: makeMs,
        rewind_ms: rewindMs,
        migrate_ms: migrateMs,
        steps,
        whole_below_bytes: UPGRADE.wholeBelowBytes,
      };
    });
    console.log(`BENCH ${JSON.stringify(result)}`);
  }
});
