// Steps 30 on of the pool's schema: fewer rows written per task
// (docs/protocol.md §16). Each drops what a request paid for on every
// task and what a cheaper path now keeps. Bounded work on any history.

import type { Migration } from "./migration";

export const FEWER_ROWS: readonly Migration[] = [
  // 30: a lease's end no longer writes its node's row. A node that ended a
  // lease by a request (commit, fail) was just seen: soft liveness writes its
  // row down once it goes silent (src/pool/nodes/registry.ts settleLiveness),
  // as for any other request. A lease that ends with no request from its node
  // (an expiry, a revocation) writes it down then (registry.ts lostLease).
  {
    id: 30,
    description: "a lease's end writes its node's row only when the node made no request (expiry, revocation)",
    up: "DROP TRIGGER leases_end_liveness;",
    down: `CREATE TRIGGER leases_end_liveness AFTER UPDATE OF status ON leases
    WHEN OLD.status = 'live' AND NEW.status <> 'live' BEGIN
    UPDATE nodes SET live_until_ms = MAX(last_heartbeat_ms + 15000, COALESCE(
        (SELECT MAX(l.deadline_ms) FROM leases l WHERE l.node_id = NEW.node_id AND l.status = 'live'), 0))
      WHERE node_id = NEW.node_id;
  END;`,
  },
  // 31: a renewal is counted in memory when it is made (src/pool/ledger/tally.ts), as every
  // event is, so a lease's end no longer adds its renewals to event_counts: the live
  // leases' renewals so far are added now, once.
  {
    id: 31,
    description: "renewals are tallied when made, in memory with every event, not at the lease's end",
    up: `DROP TRIGGER leases_end_renewals;
  INSERT INTO event_counts (type, n)
    SELECT 'LEASE_RENEWED', SUM(renewals) FROM leases WHERE status = 'live' HAVING SUM(renewals) > 0
    ON CONFLICT (type) DO UPDATE SET n = n + excluded.n;`,
    down: `UPDATE event_counts SET n = n - (SELECT TOTAL(renewals) FROM leases WHERE status = 'live')
    WHERE type = 'LEASE_RENEWED';
  CREATE TRIGGER leases_end_renewals AFTER UPDATE OF status ON leases
    WHEN OLD.status = 'live' AND NEW.status <> 'live' AND NEW.renewals > 0 BEGIN
    INSERT INTO event_counts (type, n) VALUES ('LEASE_RENEWED', NEW.renewals)
      ON CONFLICT (type) DO UPDATE SET n = n + excluded.n;
  END;`,
  },
  // 32: drops tasks_claim, a pending task's index by class: a row when a task is queued and one
  // when it is claimed, for two reads (the stuck tasks, the demand's earliest classes) that now
  // seek each (job, class) of the class in the job indexes the claim uses (src/pool/reads/
  // placement-report.ts classHeadSql).
  {
    id: 32,
    description: "drops tasks_claim: a class's earliest pending task is sought per job in the claim's own indexes",
    up: "DROP INDEX tasks_claim;",
    down: "CREATE INDEX tasks_claim ON tasks (class_id, seq) WHERE state = 'PENDING';",
  },
];
