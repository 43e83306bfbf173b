// The counts behind GET /metrics, read in one go: the counters the schema's
// triggers keep and the running event tally kept by emit() (src/pool/ledger/tally.ts), never a scan of
// the tasks or the ledger. The object's calls served and busy time
// (src/rules/object-load.ts) and the claims it holds open are the object's
// own, in memory, passed in.

import type { MetricsSample } from "../../rules/metrics";
import type { ObjectLoad } from "../../rules/object-load";
import type { Membership } from "../../rules/placement";
import type { NodeAnswers } from "../../rules/shard-merge";
import { poolTaskCounts } from "../jobs/jobs";
import { asSeenByNodes, sealedPending, type Viewer } from "../ledger/sealing";
import { eventCounts } from "../ledger/tally";
import { heldBackSql, onlineSql } from "../nodes/states";
import { demand } from "./fleet";

const sum = (values: Iterable<number>) => [...values].reduce((a, b) => a + b, 0);

/** `viewer` as for every read: a node sees pending tasks with a replica out as leased (docs/protocol.md §14). */
export function metricsSample(
  sql: SqlStorage,
  now: number,
  load: ObjectLoad,
  claimsHeld: number,
  viewer: Viewer = null,
  membership: Membership = "assigned",
  answers?: NodeAnswers,
): MetricsSample {
  const tasks = poolTaskCounts(sql);
  Object.assign(tasks, asSeenByNodes(tasks, sum(sealedPending(sql, viewer, "job_id").values())));
  const events = eventCounts(sql);
  const pending = demand(sql, now, membership, viewer, false, answers);
  const count = (query: string, ...args: number[]) => sql.exec<{ n: number }>(query, ...args).one().n;
  return {
    load,
    claimsHeld,
    tasks,
    events,
    storageBytes: sql.databaseSize,
    // A node counts leased tasks: two replicas out on one task would tell it was spot-checked.
    leasesLive: count(
      `SELECT COUNT(${viewer === null ? "*" : "DISTINCT task_seq"}) AS n FROM leases WHERE status = 'live'`,
    ),
    nodesRegistered: count("SELECT COUNT(*) AS n FROM nodes"),
    nodesOnline: count(`SELECT COUNT(*) AS n FROM nodes WHERE ${onlineSql("", "?")}`, now),
    nodesHeldBack: count(`SELECT COUNT(*) AS n FROM nodes WHERE ${heldBackSql("", "?")}`, now),
    demand: {
      classes: pending.classes.map((c) => ({ class_id: c.class_id, pending: c.pending, needs: c.needs })),
      unservable_classes: pending.unservable_classes,
      unservable_tasks: pending.unservable_tasks,
    },
    runs: Object.fromEntries(
      sql
        .exec<{ state: string; n: number }>("SELECT state, COUNT(*) AS n FROM runs GROUP BY state")
        .toArray()
        .map((r) => [r.state, r.n]),
    ),
    roundsAggregated: count("SELECT COUNT(*) AS n FROM run_rounds WHERE result IS NOT NULL"),
    results: sql
      .exec<{ valid: number; invalid: number }>(
        "SELECT TOTAL(valid_results) AS valid, TOTAL(invalid_results) AS invalid FROM nodes",
      )
      .one(),
  };
}
