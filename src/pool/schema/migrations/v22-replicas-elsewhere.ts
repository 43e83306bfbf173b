// Step 22 of the pool's schema: a home knows which replicating tasks on
// other shards its nodes may not take (docs/sharding.md §8.6,
// docs/protocol.md §14 "Spot checks are invisible"), so it forwards a node's
// claim by the work that node may take there, whether its own task is being
// checked or runs alone. Bounded work on any history: a new table and a
// trigger, no rows touched.

import type { Migration } from "./migration";

export const REPLICAS_ELSEWHERE: readonly Migration[] = [
  // 22: at the home, one row per (node, shard, task) it ran a replica of
  // there while that task may count among the shard's replicating pending
  // tasks; at the job's shard, a trigger telling those nodes' homes each
  // time the task starts or stops counting so (its digest's `replicating`).
  // created_ms 0: a trigger cannot mark its change as one that wrote rows,
  // so the row is due at once and the alarm the change arms sends it.
  {
    id: 22,
    description:
      "replicas elsewhere: the replicating tasks of other shards a home's nodes ran a replica of (docs/sharding.md §8.6)",
    up: `
  CREATE TABLE replicas_elsewhere (
    node_id TEXT NOT NULL,
    shard INTEGER NOT NULL,                -- the job's shard
    task_seq INTEGER NOT NULL,             -- tasks.seq there
    owner TEXT NOT NULL,                   -- the node's owner here when recorded: its other nodes are refused too
    class_key TEXT NOT NULL,
    priority INTEGER NOT NULL,
    counted INTEGER NOT NULL,              -- 1: among the shard's replicating pending tasks in digests after after_version
    counted_before INTEGER NOT NULL,       -- the same, up to after_version
    after_version INTEGER NOT NULL,        -- the shard's digest version last built before the change
    PRIMARY KEY (node_id, shard, task_seq)
  ) WITHOUT ROWID;
  CREATE INDEX replicas_elsewhere_owner ON replicas_elsewhere (owner);
  CREATE TRIGGER tasks_replicating_tell_homes AFTER UPDATE OF state, replicating ON tasks
    WHEN (OLD.state = 'PENDING' AND OLD.replicating = 1) <> (NEW.state = 'PENDING' AND NEW.replicating = 1) BEGIN
    INSERT INTO outbox (to_shard, kind, body, created_ms)
      SELECT p.home, 'outcome', json_object('node_id', p.node_id, 'outcome', 'replica', 'task', NEW.seq,
          'class_key', (SELECT class_key FROM classes WHERE class_id = NEW.class_id),
          'priority', (SELECT priority FROM job_queues WHERE job_id = NEW.job_id),
          'counted', NEW.state = 'PENDING' AND NEW.replicating = 1), 0
        FROM passports p
        WHERE p.node_id IN (SELECT node_id FROM leases WHERE task_seq = NEW.seq AND replica > 0);
  END;
  `,
    down: "DROP TRIGGER tasks_replicating_tell_homes; DROP TABLE replicas_elsewhere;",
    triggers: {
      tasks_replicating_tell_homes:
        "docs/sharding.md §8.6, spot checks across shards: when a replicated task starts or stops being a replicating pending one (a replica issued, the last one wanted issued, one ended, a verdict, a cancel), each node of another shard that holds or ran a replica of it has its home told, so the home counts the task out of that node's offers here exactly while the summary counts it in. TypeScript half: src/pool/replicas-elsewhere.ts (the answer to a forwarded claim says the same at the lease; the home keeps replicas_elsewhere and src/pool/forwarding.ts offersFor subtracts it), src/pool/outcomes.ts delivers the 'replica' outcome.",
    },
  },
];
