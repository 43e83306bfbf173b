import { describe, expect, it } from "vitest";
import { type MetricsSample, mergeMetrics, renderMetrics } from "../../src/rules/metrics";

describe("metrics text", () => {
  const text = renderMetrics("team-a", {
    load: { requests: 42, busyMs: 1250 },
    tasks: { PENDING: 3, COMPLETED: 2 },
    leasesLive: 1,
    claimsHeld: 6,
    storageBytes: 123456,
    nodesRegistered: 4,
    nodesOnline: 3,
    nodesHeldBack: 2,
    results: { valid: 7, invalid: 1 },
    runs: { RUNNING: 1, SUCCEEDED: 2 },
    roundsAggregated: 9,
    events: { LEASE_CLAIMED: 5, TASK_COMMIT_ACCEPTED: 2, TASK_COMMIT_REJECTED: 1, LEASE_EXPIRED: 2 },
    demand: {
      classes: [
        { class_id: 7, pending: 18, needs: "2 GPUs with ≥ 40960 MB" },
        { class_id: 1, pending: 3, needs: "team pool 'a\"b'" },
      ],
      unservable_classes: 1,
      unservable_tasks: 18,
    },
  });

  it.each([
    'flashedge_tasks{pool="team-a",state="PENDING"} 3',
    'flashedge_tasks{pool="team-a",state="LEASED"} 0',
    'flashedge_leases_live{pool="team-a"} 1',
    'flashedge_runs{pool="team-a",state="RUNNING"} 1',
    'flashedge_runs{pool="team-a",state="SUCCEEDED"} 2',
    'flashedge_runs{pool="team-a",state="FAILED"} 0',
    'flashedge_run_rounds_aggregated_total{pool="team-a"} 9',
    'flashedge_leases_expired_total{pool="team-a"} 2',
    'flashedge_claims_total{pool="team-a"} 5',
    'flashedge_claims_held{pool="team-a"} 6',
    'flashedge_commits_total{pool="team-a",result="accepted"} 2',
    'flashedge_commits_total{pool="team-a",result="rejected"} 1',
    'flashedge_nodes{pool="team-a",online="true"} 3',
    'flashedge_nodes{pool="team-a",online="false"} 1',
    'flashedge_nodes_held_back{pool="team-a"} 2',
    'flashedge_events_total{pool="team-a",type="LEASE_CLAIMED"} 5',
    'flashedge_results_total{pool="team-a",verdict="valid"} 7',
    'flashedge_results_total{pool="team-a",verdict="invalid"} 1',
    'flashedge_storage_bytes{pool="team-a"} 123456',
    'flashedge_storage_limit_bytes{pool="team-a"} 10000000000',
    'flashedge_pending_tasks_by_class{pool="team-a",class="7",needs="2 GPUs with ≥ 40960 MB"} 18',
    'flashedge_pending_tasks_by_class{pool="team-a",class="1",needs="team pool \'a\\"b\'"} 3',
    'flashedge_unservable_pending_tasks{pool="team-a"} 18',
    'flashedge_unservable_requirement_classes{pool="team-a"} 1',
    'flashedge_requests_served_total{pool="team-a"} 42',
    'flashedge_object_busy_seconds_total{pool="team-a"} 1.25',
  ])("has the sample %s", (line) => {
    expect(text.split("\n")).toContain(line);
  });

  it("shows the rows the object's statements read and wrote when the sample has them (an operator's read), else none", () => {
    const sample = mergeMetrics([]);
    const costed = renderMetrics("p", {
      ...sample,
      sql: { rowsRead: 120, rowsWritten: 73 },
      r2: { A: 4, B: 9 },
    }).split("\n");
    expect(costed).toContain('flashedge_sql_rows_read_total{pool="p"} 120');
    expect(costed).toContain('flashedge_sql_rows_written_total{pool="p"} 73');
    expect(costed).toContain('flashedge_r2_operations_total{pool="p",class="A"} 4');
    expect(costed).toContain('flashedge_r2_operations_total{pool="p",class="B"} 9');
    expect(renderMetrics("p", sample)).not.toMatch(/flashedge_sql_rows|flashedge_r2/);
    const a = { ...sample, sql: { rowsRead: 1, rowsWritten: 2 } };
    const b = { ...sample, sql: { rowsRead: 10, rowsWritten: 20 } };
    const sharded = renderMetrics("p", mergeMetrics([a, b]), [a, b]).split("\n");
    expect(sharded).toContain('flashedge_sql_rows_written_total{pool="p",shard="0"} 2');
    expect(sharded).toContain('flashedge_sql_rows_written_total{pool="p",shard="1"} 20');
    expect(mergeMetrics([a, b]).sql).toEqual({ rowsRead: 11, rowsWritten: 22 });
  });

  it("has no per-shard node gauge at one shard", () => {
    expect(text).not.toContain("flashedge_nodes_homed");
  });

  it("declares every metric's type once, before its samples", () => {
    const types = text.split("\n").filter((l) => l.startsWith("# TYPE "));
    expect(new Set(types).size).toBe(types.length);
    expect(text.indexOf("# TYPE flashedge_tasks gauge")).toBeLessThan(text.indexOf("flashedge_tasks{"));
    expect(text.endsWith("\n")).toBe(true);
  });

  it("escapes label values", () => {
    const odd = renderMetrics('a"b\\c', {
      load: { requests: 0, busyMs: 0 },
      tasks: {},
      leasesLive: 0,
      claimsHeld: 0,
      storageBytes: 0,
      nodesRegistered: 0,
      nodesOnline: 0,
      nodesHeldBack: 0,
      results: { valid: 0, invalid: 0 },
      runs: {},
      roundsAggregated: 0,
      events: {},
      demand: { classes: [], unservable_classes: 0, unservable_tasks: 0 },
    });
    expect(odd).toContain('pool="a\\"b\\\\c"');
  });
});

describe("metrics of a sharded pool", () => {
  const sample = (over: Partial<MetricsSample>): MetricsSample => ({
    load: { requests: 0, busyMs: 0 },
    tasks: {},
    leasesLive: 0,
    claimsHeld: 0,
    storageBytes: 0,
    nodesRegistered: 0,
    nodesOnline: 0,
    nodesHeldBack: 0,
    results: { valid: 0, invalid: 0 },
    runs: {},
    roundsAggregated: 0,
    events: {},
    demand: { classes: [], unservable_classes: 0, unservable_tasks: 0 },
    ...over,
  });
  const shards = [
    sample({
      tasks: { PENDING: 1, COMPLETED: 4 },
      leasesLive: 1,
      claimsHeld: 2,
      storageBytes: 100,
      load: { requests: 900, busyMs: 1500 },
      nodesRegistered: 3,
      nodesOnline: 2,
      nodesHeldBack: 1,
      results: { valid: 2, invalid: 1 },
      events: { LEASE_CLAIMED: 5 },
      demand: { classes: [{ class_id: 1, pending: 1, needs: "1 GPU" }], unservable_classes: 1, unservable_tasks: 1 },
      links: { summaryAgeMs: 250, forwardedClaims: 7, outboxRows: 2 },
    }),
    sample({
      storageBytes: 40,
      claimsHeld: 3,
      load: { requests: 30, busyMs: 20 },
      links: { summaryAgeMs: null, forwardedClaims: 0, outboxRows: 0 },
    }),
    sample({
      tasks: { PENDING: 2 },
      storageBytes: 70,
      events: { LEASE_CLAIMED: 1, LEASE_EXPIRED: 1 },
      demand: { classes: [{ class_id: 1, pending: 2, needs: "nothing" }], unservable_classes: 0, unservable_tasks: 0 },
    }),
  ];
  const merged = mergeMetrics(shards);
  const summary = { requests: { tick: 12, on_demand: 3, poke: 1, other: 2 }, busyMs: 5 };
  const lines = renderMetrics("p", merged, shards, summary).split("\n");

  it("sums every count over the shards", () => {
    expect(merged).toEqual({
      load: { requests: 930, busyMs: 1520 },
      tasks: { PENDING: 3, COMPLETED: 4 },
      leasesLive: 1,
      claimsHeld: 5,
      storageBytes: 210,
      nodesRegistered: 3,
      nodesOnline: 2,
      nodesHeldBack: 1,
      results: { valid: 2, invalid: 1 },
      runs: {},
      roundsAggregated: 0,
      events: { LEASE_CLAIMED: 6, LEASE_EXPIRED: 1 },
      demand: {
        classes: [
          { class_id: 1, pending: 1, needs: "1 GPU" },
          { class_id: 1, pending: 2, needs: "nothing" },
        ],
        unservable_classes: 1,
        unservable_tasks: 1,
      },
    });
  });

  it.each([
    'flashedge_tasks{pool="p",state="PENDING"} 3',
    'flashedge_events_total{pool="p",type="LEASE_CLAIMED"} 6',
    'flashedge_nodes{pool="p",online="false"} 1',
    'flashedge_unservable_pending_tasks{pool="p"} 1',
    'flashedge_nodes_homed{pool="p",shard="0"} 3',
    'flashedge_nodes_homed{pool="p",shard="1"} 0',
    'flashedge_storage_bytes{pool="p",shard="0"} 100',
    'flashedge_storage_bytes{pool="p",shard="1"} 40',
    'flashedge_storage_bytes{pool="p",shard="2"} 70',
    'flashedge_pending_tasks_by_class{pool="p",shard="0",class="1",needs="1 GPU"} 1',
    'flashedge_pending_tasks_by_class{pool="p",shard="2",class="1",needs="nothing"} 2',
    'flashedge_requests_served_total{pool="p",shard="0"} 900',
    'flashedge_requests_served_total{pool="p",shard="1"} 30',
    'flashedge_requests_served_total{pool="p",shard="2"} 0',
    'flashedge_object_busy_seconds_total{pool="p",shard="0"} 1.5',
    'flashedge_object_busy_seconds_total{pool="p",shard="1"} 0.02',
    'flashedge_summary_requests_total{pool="p",kind="tick"} 12',
    'flashedge_summary_requests_total{pool="p",kind="on_demand"} 3',
    'flashedge_summary_requests_total{pool="p",kind="poke"} 1',
    'flashedge_summary_requests_total{pool="p",kind="other"} 2',
    'flashedge_summary_busy_seconds_total{pool="p"} 0.005',
    'flashedge_summary_age_seconds{pool="p",shard="0"} 0.25',
    'flashedge_forwarded_claims_total{pool="p",shard="0"} 7',
    'flashedge_forwarded_claims_total{pool="p",shard="1"} 0',
    'flashedge_outbox_rows{pool="p",shard="0"} 2',
  ])("has the sample %s", (line) => {
    expect(lines).toContain(line);
  });

  it("labels no pool-wide series by shard, and omits the label without shards", () => {
    expect(lines.filter((l) => l.includes("shard=")).map((l) => l.split("{")[0])).toEqual([
      ...Array(3).fill("flashedge_nodes_homed"),
      "flashedge_pending_tasks_by_class",
      "flashedge_pending_tasks_by_class",
      "flashedge_storage_bytes",
      "flashedge_storage_bytes",
      "flashedge_storage_bytes",
      ...Array(3).fill("flashedge_requests_served_total"),
      ...Array(3).fill("flashedge_object_busy_seconds_total"),
      // A shard with no summary reply yet has no age.
      "flashedge_summary_age_seconds",
      ...Array(3).fill("flashedge_forwarded_claims_total"),
      ...Array(3).fill("flashedge_outbox_rows"),
    ]);
    expect(renderMetrics("p", shards[0]!)).not.toContain("shard=");
    expect(renderMetrics("p", shards[0]!)).toContain('flashedge_requests_served_total{pool="p"} 900');
    expect(renderMetrics("p", shards[0]!)).not.toContain("flashedge_summary_");
    expect(renderMetrics("p", shards[0]!)).toBe(renderMetrics("p", mergeMetrics([shards[0]!])));
  });

  it("shows a node's read no series of calls between objects, and a one-shard pool's load to every reader", () => {
    const names = (text: string) => new Set(text.split("\n").filter((l) => l.startsWith("# TYPE ")));
    const node = renderMetrics("p", merged, shards, undefined, false);
    const operator = renderMetrics("p", merged, shards, summary);
    expect([...names(operator)].filter((t) => !names(node).has(t)).map((t) => t.split(" ")[2])).toEqual([
      "flashedge_requests_served_total",
      "flashedge_object_busy_seconds_total",
      "flashedge_summary_age_seconds",
      "flashedge_forwarded_claims_total",
      "flashedge_outbox_rows",
      "flashedge_summary_requests_total",
      "flashedge_summary_busy_seconds_total",
    ]);
    expect(names(node).size).toBe(names(operator).size - 7);
    expect(renderMetrics("p", shards[0]!, undefined, undefined, false)).toBe(renderMetrics("p", shards[0]!));
  });
});

// The whole text, byte for byte, as it was before renderMetrics became a
// table of metric definitions (issue 41): one shard and three, with and
// without the operator-only SQL costs and the links between shards.
describe("the whole metrics text", () => {
  const sample = (over: Partial<MetricsSample>): MetricsSample => ({
    load: { requests: 0, busyMs: 0 },
    tasks: {},
    leasesLive: 0,
    claimsHeld: 0,
    storageBytes: 0,
    nodesRegistered: 0,
    nodesOnline: 0,
    nodesHeldBack: 0,
    results: { valid: 0, invalid: 0 },
    runs: {},
    roundsAggregated: 0,
    events: {},
    demand: { classes: [], unservable_classes: 0, unservable_tasks: 0 },
    ...over,
  });
  const one = sample({
    load: { requests: 42, busyMs: 1250 },
    tasks: { PENDING: 3, COMPLETED: 2 },
    leasesLive: 1,
    claimsHeld: 6,
    storageBytes: 123456,
    nodesRegistered: 4,
    nodesOnline: 3,
    nodesHeldBack: 2,
    results: { valid: 7, invalid: 1 },
    events: { TASK_COMMIT_REJECTED: 1, LEASE_CLAIMED: 5, TASK_ATTEMPT_FAILED: 4, 'odd"type': 1 },
    demand: {
      classes: [{ class_id: 7, pending: 18, needs: "team pool 'a\"b'\\x\nline" }],
      unservable_classes: 1,
      unservable_tasks: 18,
    },
  });
  const shards = [
    sample({
      tasks: { PENDING: 1, LEASED: 2 },
      storageBytes: 100,
      load: { requests: 900, busyMs: 1500 },
      nodesRegistered: 3,
      nodesOnline: 2,
      events: { LEASE_CLAIMED: 5 },
      demand: { classes: [{ class_id: 1, pending: 1, needs: "1 GPU" }], unservable_classes: 1, unservable_tasks: 1 },
      links: { summaryAgeMs: 250, forwardedClaims: 7, outboxRows: 2 },
      sql: { rowsRead: 1000, rowsWritten: 30 },
      r2: { A: 2, B: 5 },
    }),
    sample({
      storageBytes: 40,
      load: { requests: 30, busyMs: 20 },
      links: { summaryAgeMs: null, forwardedClaims: 0, outboxRows: 0 },
    }),
    sample({
      storageBytes: 70,
      events: { LEASE_EXPIRED: 1 },
      demand: { classes: [{ class_id: 1, pending: 2, needs: "nothing" }], unservable_classes: 0, unservable_tasks: 0 },
      sql: { rowsRead: 7, rowsWritten: 3 },
      r2: { A: 0, B: 1 },
    }),
  ];
  const bare = shards.map(({ links: _links, sql: _sql, r2: _r2, ...rest }) => rest);
  const summary = { requests: { tick: 12, on_demand: 3, poke: 1, other: 2 }, busyMs: 5 };

  it("of one shard without SQL costs", () => {
    expect(renderMetrics('team "a"', one)).toMatchInlineSnapshot(`
      "# HELP flashedge_tasks Tasks in the pool by state.
      # TYPE flashedge_tasks gauge
      flashedge_tasks{pool="team \\"a\\"",state="PENDING"} 3
      flashedge_tasks{pool="team \\"a\\"",state="LEASED"} 0
      flashedge_tasks{pool="team \\"a\\"",state="COMPLETED"} 2
      flashedge_tasks{pool="team \\"a\\"",state="FAILED"} 0
      flashedge_tasks{pool="team \\"a\\"",state="CANCELLED"} 0
      # HELP flashedge_runs Hosted runs by state (docs/protocol.md §17).
      # TYPE flashedge_runs gauge
      flashedge_runs{pool="team \\"a\\"",state="RUNNING"} 0
      flashedge_runs{pool="team \\"a\\"",state="SUCCEEDED"} 0
      flashedge_runs{pool="team \\"a\\"",state="FAILED"} 0
      flashedge_runs{pool="team \\"a\\"",state="CANCELLED"} 0
      # HELP flashedge_run_rounds_aggregated_total Rounds that hosted runs have aggregated.
      # TYPE flashedge_run_rounds_aggregated_total counter
      flashedge_run_rounds_aggregated_total{pool="team \\"a\\""} 0
      # HELP flashedge_leases_live Leases currently live.
      # TYPE flashedge_leases_live gauge
      flashedge_leases_live{pool="team \\"a\\""} 1
      # HELP flashedge_leases_expired_total Leases that expired because their node stopped heartbeating.
      # TYPE flashedge_leases_expired_total counter
      flashedge_leases_expired_total{pool="team \\"a\\""} 0
      # HELP flashedge_claims_total Claims that leased a task.
      # TYPE flashedge_claims_total counter
      flashedge_claims_total{pool="team \\"a\\""} 5
      # HELP flashedge_claims_held Claims held open waiting for work their node may take (long-poll): idle machines; in memory, so 0 after the object restarts.
      # TYPE flashedge_claims_held gauge
      flashedge_claims_held{pool="team \\"a\\""} 6
      # HELP flashedge_commits_total Commits judged, by outcome.
      # TYPE flashedge_commits_total counter
      flashedge_commits_total{pool="team \\"a\\"",result="accepted"} 0
      flashedge_commits_total{pool="team \\"a\\"",result="rejected"} 1
      # HELP flashedge_attempts_failed_total Attempts failed by their worker or by output validation.
      # TYPE flashedge_attempts_failed_total counter
      flashedge_attempts_failed_total{pool="team \\"a\\""} 4
      # HELP flashedge_nodes Registered nodes, and those online: seen within the online window or holding a live lease.
      # TYPE flashedge_nodes gauge
      flashedge_nodes{pool="team \\"a\\"",online="true"} 3
      flashedge_nodes{pool="team \\"a\\"",online="false"} 1
      # HELP flashedge_nodes_held_back Registered nodes held back from claiming because their last attempts all failed.
      # TYPE flashedge_nodes_held_back gauge
      flashedge_nodes_held_back{pool="team \\"a\\""} 2
      # HELP flashedge_results_total Results judged, by verdict: replicas in or outvoted by a quorum, and evidence that lied (invalid).
      # TYPE flashedge_results_total counter
      flashedge_results_total{pool="team \\"a\\"",verdict="valid"} 7
      flashedge_results_total{pool="team \\"a\\"",verdict="invalid"} 1
      # HELP flashedge_pending_tasks_by_class Pending tasks per requirement class, the classes with the most first (bounded), with what they need.
      # TYPE flashedge_pending_tasks_by_class gauge
      flashedge_pending_tasks_by_class{pool="team \\"a\\"",class="7",needs="team pool 'a\\"b'\\\\x\\nline"} 18
      # HELP flashedge_unservable_pending_tasks Pending tasks of requirement classes no registered node can serve.
      # TYPE flashedge_unservable_pending_tasks gauge
      flashedge_unservable_pending_tasks{pool="team \\"a\\""} 18
      # HELP flashedge_unservable_requirement_classes Pending requirement classes no registered node can serve.
      # TYPE flashedge_unservable_requirement_classes gauge
      flashedge_unservable_requirement_classes{pool="team \\"a\\""} 1
      # HELP flashedge_storage_bytes Size of the pool object's SQLite storage.
      # TYPE flashedge_storage_bytes gauge
      flashedge_storage_bytes{pool="team \\"a\\""} 123456
      # HELP flashedge_requests_served_total Calls the pool object served (requests, alarms, calls from other objects); in memory, so it restarts at 0 when the object restarts.
      # TYPE flashedge_requests_served_total counter
      flashedge_requests_served_total{pool="team \\"a\\""} 42
      # HELP flashedge_object_busy_seconds_total Summed run time of the pool object's call handlers on the 1 ms clock, what they await not included; in memory, so it restarts at 0 when the object restarts.
      # TYPE flashedge_object_busy_seconds_total counter
      flashedge_object_busy_seconds_total{pool="team \\"a\\""} 1.25
      # HELP flashedge_storage_limit_bytes The storage limit of one Durable Object.
      # TYPE flashedge_storage_limit_bytes gauge
      flashedge_storage_limit_bytes{pool="team \\"a\\""} 10000000000
      # HELP flashedge_events_total Ledger events by type.
      # TYPE flashedge_events_total counter
      flashedge_events_total{pool="team \\"a\\"",type="LEASE_CLAIMED"} 5
      flashedge_events_total{pool="team \\"a\\"",type="TASK_ATTEMPT_FAILED"} 4
      flashedge_events_total{pool="team \\"a\\"",type="TASK_COMMIT_REJECTED"} 1
      flashedge_events_total{pool="team \\"a\\"",type="odd\\"type"} 1
      "
    `);
  });

  it("of one shard with SQL costs (its links, if any, are not shown)", () => {
    const costed = { ...one, sql: { rowsRead: 120, rowsWritten: 73 }, r2: { A: 2, B: 5 }, links: shards[0]!.links };
    expect(renderMetrics("p", costed)).toMatchInlineSnapshot(`
      "# HELP flashedge_tasks Tasks in the pool by state.
      # TYPE flashedge_tasks gauge
      flashedge_tasks{pool="p",state="PENDING"} 3
      flashedge_tasks{pool="p",state="LEASED"} 0
      flashedge_tasks{pool="p",state="COMPLETED"} 2
      flashedge_tasks{pool="p",state="FAILED"} 0
      flashedge_tasks{pool="p",state="CANCELLED"} 0
      # HELP flashedge_runs Hosted runs by state (docs/protocol.md §17).
      # TYPE flashedge_runs gauge
      flashedge_runs{pool="p",state="RUNNING"} 0
      flashedge_runs{pool="p",state="SUCCEEDED"} 0
      flashedge_runs{pool="p",state="FAILED"} 0
      flashedge_runs{pool="p",state="CANCELLED"} 0
      # HELP flashedge_run_rounds_aggregated_total Rounds that hosted runs have aggregated.
      # TYPE flashedge_run_rounds_aggregated_total counter
      flashedge_run_rounds_aggregated_total{pool="p"} 0
      # HELP flashedge_leases_live Leases currently live.
      # TYPE flashedge_leases_live gauge
      flashedge_leases_live{pool="p"} 1
      # HELP flashedge_leases_expired_total Leases that expired because their node stopped heartbeating.
      # TYPE flashedge_leases_expired_total counter
      flashedge_leases_expired_total{pool="p"} 0
      # HELP flashedge_claims_total Claims that leased a task.
      # TYPE flashedge_claims_total counter
      flashedge_claims_total{pool="p"} 5
      # HELP flashedge_claims_held Claims held open waiting for work their node may take (long-poll): idle machines; in memory, so 0 after the object restarts.
      # TYPE flashedge_claims_held gauge
      flashedge_claims_held{pool="p"} 6
      # HELP flashedge_commits_total Commits judged, by outcome.
      # TYPE flashedge_commits_total counter
      flashedge_commits_total{pool="p",result="accepted"} 0
      flashedge_commits_total{pool="p",result="rejected"} 1
      # HELP flashedge_attempts_failed_total Attempts failed by their worker or by output validation.
      # TYPE flashedge_attempts_failed_total counter
      flashedge_attempts_failed_total{pool="p"} 4
      # HELP flashedge_nodes Registered nodes, and those online: seen within the online window or holding a live lease.
      # TYPE flashedge_nodes gauge
      flashedge_nodes{pool="p",online="true"} 3
      flashedge_nodes{pool="p",online="false"} 1
      # HELP flashedge_nodes_held_back Registered nodes held back from claiming because their last attempts all failed.
      # TYPE flashedge_nodes_held_back gauge
      flashedge_nodes_held_back{pool="p"} 2
      # HELP flashedge_results_total Results judged, by verdict: replicas in or outvoted by a quorum, and evidence that lied (invalid).
      # TYPE flashedge_results_total counter
      flashedge_results_total{pool="p",verdict="valid"} 7
      flashedge_results_total{pool="p",verdict="invalid"} 1
      # HELP flashedge_pending_tasks_by_class Pending tasks per requirement class, the classes with the most first (bounded), with what they need.
      # TYPE flashedge_pending_tasks_by_class gauge
      flashedge_pending_tasks_by_class{pool="p",class="7",needs="team pool 'a\\"b'\\\\x\\nline"} 18
      # HELP flashedge_unservable_pending_tasks Pending tasks of requirement classes no registered node can serve.
      # TYPE flashedge_unservable_pending_tasks gauge
      flashedge_unservable_pending_tasks{pool="p"} 18
      # HELP flashedge_unservable_requirement_classes Pending requirement classes no registered node can serve.
      # TYPE flashedge_unservable_requirement_classes gauge
      flashedge_unservable_requirement_classes{pool="p"} 1
      # HELP flashedge_storage_bytes Size of the pool object's SQLite storage.
      # TYPE flashedge_storage_bytes gauge
      flashedge_storage_bytes{pool="p"} 123456
      # HELP flashedge_requests_served_total Calls the pool object served (requests, alarms, calls from other objects); in memory, so it restarts at 0 when the object restarts.
      # TYPE flashedge_requests_served_total counter
      flashedge_requests_served_total{pool="p"} 42
      # HELP flashedge_object_busy_seconds_total Summed run time of the pool object's call handlers on the 1 ms clock, what they await not included; in memory, so it restarts at 0 when the object restarts.
      # TYPE flashedge_object_busy_seconds_total counter
      flashedge_object_busy_seconds_total{pool="p"} 1.25
      # HELP flashedge_sql_rows_read_total SQLite rows the pool object's statements read, triggers included (what Cloudflare bills, docs/protocol.md §16); in memory, so it restarts at 0 when the object restarts.
      # TYPE flashedge_sql_rows_read_total counter
      flashedge_sql_rows_read_total{pool="p"} 120
      # HELP flashedge_sql_rows_written_total SQLite rows the pool object's statements wrote, each index entry and trigger write counted (what Cloudflare bills, docs/protocol.md §16); in memory, so it restarts at 0 when the object restarts.
      # TYPE flashedge_sql_rows_written_total counter
      flashedge_sql_rows_written_total{pool="p"} 73
      # HELP flashedge_r2_operations_total R2 operations the pool object's work made or admitted, by billing class: A (PUT, LIST), B (GET, HEAD); deletes are free (docs/protocol.md §16). In memory, so it restarts at 0 when the object restarts.
      # TYPE flashedge_r2_operations_total counter
      flashedge_r2_operations_total{pool="p",class="A"} 2
      flashedge_r2_operations_total{pool="p",class="B"} 5
      # HELP flashedge_storage_limit_bytes The storage limit of one Durable Object.
      # TYPE flashedge_storage_limit_bytes gauge
      flashedge_storage_limit_bytes{pool="p"} 10000000000
      # HELP flashedge_events_total Ledger events by type.
      # TYPE flashedge_events_total counter
      flashedge_events_total{pool="p",type="LEASE_CLAIMED"} 5
      flashedge_events_total{pool="p",type="TASK_ATTEMPT_FAILED"} 4
      flashedge_events_total{pool="p",type="TASK_COMMIT_REJECTED"} 1
      flashedge_events_total{pool="p",type="odd\\"type"} 1
      "
    `);
  });

  it("of three shards with SQL costs (a shard without its own shows none) and links, read by an operator", () => {
    const costed = { ...mergeMetrics(shards), sql: { rowsRead: 1007, rowsWritten: 33 }, r2: { A: 2, B: 6 } };
    expect(renderMetrics("p", costed, shards, summary)).toMatchInlineSnapshot(`
      "# HELP flashedge_tasks Tasks in the pool by state.
      # TYPE flashedge_tasks gauge
      flashedge_tasks{pool="p",state="PENDING"} 1
      flashedge_tasks{pool="p",state="LEASED"} 2
      flashedge_tasks{pool="p",state="COMPLETED"} 0
      flashedge_tasks{pool="p",state="FAILED"} 0
      flashedge_tasks{pool="p",state="CANCELLED"} 0
      # HELP flashedge_runs Hosted runs by state (docs/protocol.md §17).
      # TYPE flashedge_runs gauge
      flashedge_runs{pool="p",state="RUNNING"} 0
      flashedge_runs{pool="p",state="SUCCEEDED"} 0
      flashedge_runs{pool="p",state="FAILED"} 0
      flashedge_runs{pool="p",state="CANCELLED"} 0
      # HELP flashedge_run_rounds_aggregated_total Rounds that hosted runs have aggregated.
      # TYPE flashedge_run_rounds_aggregated_total counter
      flashedge_run_rounds_aggregated_total{pool="p"} 0
      # HELP flashedge_leases_live Leases currently live.
      # TYPE flashedge_leases_live gauge
      flashedge_leases_live{pool="p"} 0
      # HELP flashedge_leases_expired_total Leases that expired because their node stopped heartbeating.
      # TYPE flashedge_leases_expired_total counter
      flashedge_leases_expired_total{pool="p"} 1
      # HELP flashedge_claims_total Claims that leased a task.
      # TYPE flashedge_claims_total counter
      flashedge_claims_total{pool="p"} 5
      # HELP flashedge_claims_held Claims held open waiting for work their node may take (long-poll): idle machines; in memory, so 0 after the object restarts.
      # TYPE flashedge_claims_held gauge
      flashedge_claims_held{pool="p"} 0
      # HELP flashedge_commits_total Commits judged, by outcome.
      # TYPE flashedge_commits_total counter
      flashedge_commits_total{pool="p",result="accepted"} 0
      flashedge_commits_total{pool="p",result="rejected"} 0
      # HELP flashedge_attempts_failed_total Attempts failed by their worker or by output validation.
      # TYPE flashedge_attempts_failed_total counter
      flashedge_attempts_failed_total{pool="p"} 0
      # HELP flashedge_nodes Registered nodes, and those online: seen within the online window or holding a live lease.
      # TYPE flashedge_nodes gauge
      flashedge_nodes{pool="p",online="true"} 2
      flashedge_nodes{pool="p",online="false"} 1
      # HELP flashedge_nodes_homed Registered nodes whose home is the shard (a pool of shards only).
      # TYPE flashedge_nodes_homed gauge
      flashedge_nodes_homed{pool="p",shard="0"} 3
      flashedge_nodes_homed{pool="p",shard="1"} 0
      flashedge_nodes_homed{pool="p",shard="2"} 0
      # HELP flashedge_nodes_held_back Registered nodes held back from claiming because their last attempts all failed.
      # TYPE flashedge_nodes_held_back gauge
      flashedge_nodes_held_back{pool="p"} 0
      # HELP flashedge_results_total Results judged, by verdict: replicas in or outvoted by a quorum, and evidence that lied (invalid).
      # TYPE flashedge_results_total counter
      flashedge_results_total{pool="p",verdict="valid"} 0
      flashedge_results_total{pool="p",verdict="invalid"} 0
      # HELP flashedge_pending_tasks_by_class Pending tasks per requirement class, the classes with the most first (bounded), with what they need.
      # TYPE flashedge_pending_tasks_by_class gauge
      flashedge_pending_tasks_by_class{pool="p",shard="0",class="1",needs="1 GPU"} 1
      flashedge_pending_tasks_by_class{pool="p",shard="2",class="1",needs="nothing"} 2
      # HELP flashedge_unservable_pending_tasks Pending tasks of requirement classes no registered node can serve.
      # TYPE flashedge_unservable_pending_tasks gauge
      flashedge_unservable_pending_tasks{pool="p"} 1
      # HELP flashedge_unservable_requirement_classes Pending requirement classes no registered node can serve.
      # TYPE flashedge_unservable_requirement_classes gauge
      flashedge_unservable_requirement_classes{pool="p"} 1
      # HELP flashedge_storage_bytes Size of the pool object's SQLite storage.
      # TYPE flashedge_storage_bytes gauge
      flashedge_storage_bytes{pool="p",shard="0"} 100
      flashedge_storage_bytes{pool="p",shard="1"} 40
      flashedge_storage_bytes{pool="p",shard="2"} 70
      # HELP flashedge_requests_served_total Calls the pool object served (requests, alarms, calls from other objects); in memory, so it restarts at 0 when the object restarts.
      # TYPE flashedge_requests_served_total counter
      flashedge_requests_served_total{pool="p",shard="0"} 900
      flashedge_requests_served_total{pool="p",shard="1"} 30
      flashedge_requests_served_total{pool="p",shard="2"} 0
      # HELP flashedge_object_busy_seconds_total Summed run time of the pool object's call handlers on the 1 ms clock, what they await not included; in memory, so it restarts at 0 when the object restarts.
      # TYPE flashedge_object_busy_seconds_total counter
      flashedge_object_busy_seconds_total{pool="p",shard="0"} 1.5
      flashedge_object_busy_seconds_total{pool="p",shard="1"} 0.02
      flashedge_object_busy_seconds_total{pool="p",shard="2"} 0
      # HELP flashedge_summary_age_seconds Age of the shard's copy of the pool summary (the oldest other shard's entry); absent before its first reply.
      # TYPE flashedge_summary_age_seconds gauge
      flashedge_summary_age_seconds{pool="p",shard="0"} 0.25
      # HELP flashedge_forwarded_claims_total Claims the shard sent to another shard for its work; in memory, so it restarts at 0 when the object restarts.
      # TYPE flashedge_forwarded_claims_total counter
      flashedge_forwarded_claims_total{pool="p",shard="0"} 7
      flashedge_forwarded_claims_total{pool="p",shard="1"} 0
      flashedge_forwarded_claims_total{pool="p",shard="2"} 0
      # HELP flashedge_outbox_rows Outcomes the shard has yet to deliver to other shards' nodes' homes.
      # TYPE flashedge_outbox_rows gauge
      flashedge_outbox_rows{pool="p",shard="0"} 2
      flashedge_outbox_rows{pool="p",shard="1"} 0
      flashedge_outbox_rows{pool="p",shard="2"} 0
      # HELP flashedge_summary_requests_total Calls the pool summary served, by kind: shards' exchanges by reason (tick, on_demand, poke), and other calls; in memory, so it restarts at 0 when the summary restarts.
      # TYPE flashedge_summary_requests_total counter
      flashedge_summary_requests_total{pool="p",kind="tick"} 12
      flashedge_summary_requests_total{pool="p",kind="on_demand"} 3
      flashedge_summary_requests_total{pool="p",kind="poke"} 1
      flashedge_summary_requests_total{pool="p",kind="other"} 2
      # HELP flashedge_summary_busy_seconds_total Summed run time of the pool summary's call handlers on the 1 ms clock; in memory, so it restarts at 0 when the summary restarts.
      # TYPE flashedge_summary_busy_seconds_total counter
      flashedge_summary_busy_seconds_total{pool="p"} 0.005
      # HELP flashedge_sql_rows_read_total SQLite rows the pool object's statements read, triggers included (what Cloudflare bills, docs/protocol.md §16); in memory, so it restarts at 0 when the object restarts.
      # TYPE flashedge_sql_rows_read_total counter
      flashedge_sql_rows_read_total{pool="p",shard="0"} 1000
      flashedge_sql_rows_read_total{pool="p",shard="2"} 7
      # HELP flashedge_sql_rows_written_total SQLite rows the pool object's statements wrote, each index entry and trigger write counted (what Cloudflare bills, docs/protocol.md §16); in memory, so it restarts at 0 when the object restarts.
      # TYPE flashedge_sql_rows_written_total counter
      flashedge_sql_rows_written_total{pool="p",shard="0"} 30
      flashedge_sql_rows_written_total{pool="p",shard="2"} 3
      # HELP flashedge_r2_operations_total R2 operations the pool object's work made or admitted, by billing class: A (PUT, LIST), B (GET, HEAD); deletes are free (docs/protocol.md §16). In memory, so it restarts at 0 when the object restarts.
      # TYPE flashedge_r2_operations_total counter
      flashedge_r2_operations_total{pool="p",shard="0",class="A"} 2
      flashedge_r2_operations_total{pool="p",shard="0",class="B"} 5
      flashedge_r2_operations_total{pool="p",shard="2",class="A"} 0
      flashedge_r2_operations_total{pool="p",shard="2",class="B"} 1
      # HELP flashedge_storage_limit_bytes The storage limit of one Durable Object.
      # TYPE flashedge_storage_limit_bytes gauge
      flashedge_storage_limit_bytes{pool="p"} 10000000000
      # HELP flashedge_events_total Ledger events by type.
      # TYPE flashedge_events_total counter
      flashedge_events_total{pool="p",type="LEASE_CLAIMED"} 5
      flashedge_events_total{pool="p",type="LEASE_EXPIRED"} 1
      "
    `);
  });

  it("of three shards without SQL costs or links, read by an operator", () => {
    expect(renderMetrics("p", mergeMetrics(bare), bare, summary)).toMatchInlineSnapshot(`
      "# HELP flashedge_tasks Tasks in the pool by state.
      # TYPE flashedge_tasks gauge
      flashedge_tasks{pool="p",state="PENDING"} 1
      flashedge_tasks{pool="p",state="LEASED"} 2
      flashedge_tasks{pool="p",state="COMPLETED"} 0
      flashedge_tasks{pool="p",state="FAILED"} 0
      flashedge_tasks{pool="p",state="CANCELLED"} 0
      # HELP flashedge_runs Hosted runs by state (docs/protocol.md §17).
      # TYPE flashedge_runs gauge
      flashedge_runs{pool="p",state="RUNNING"} 0
      flashedge_runs{pool="p",state="SUCCEEDED"} 0
      flashedge_runs{pool="p",state="FAILED"} 0
      flashedge_runs{pool="p",state="CANCELLED"} 0
      # HELP flashedge_run_rounds_aggregated_total Rounds that hosted runs have aggregated.
      # TYPE flashedge_run_rounds_aggregated_total counter
      flashedge_run_rounds_aggregated_total{pool="p"} 0
      # HELP flashedge_leases_live Leases currently live.
      # TYPE flashedge_leases_live gauge
      flashedge_leases_live{pool="p"} 0
      # HELP flashedge_leases_expired_total Leases that expired because their node stopped heartbeating.
      # TYPE flashedge_leases_expired_total counter
      flashedge_leases_expired_total{pool="p"} 1
      # HELP flashedge_claims_total Claims that leased a task.
      # TYPE flashedge_claims_total counter
      flashedge_claims_total{pool="p"} 5
      # HELP flashedge_claims_held Claims held open waiting for work their node may take (long-poll): idle machines; in memory, so 0 after the object restarts.
      # TYPE flashedge_claims_held gauge
      flashedge_claims_held{pool="p"} 0
      # HELP flashedge_commits_total Commits judged, by outcome.
      # TYPE flashedge_commits_total counter
      flashedge_commits_total{pool="p",result="accepted"} 0
      flashedge_commits_total{pool="p",result="rejected"} 0
      # HELP flashedge_attempts_failed_total Attempts failed by their worker or by output validation.
      # TYPE flashedge_attempts_failed_total counter
      flashedge_attempts_failed_total{pool="p"} 0
      # HELP flashedge_nodes Registered nodes, and those online: seen within the online window or holding a live lease.
      # TYPE flashedge_nodes gauge
      flashedge_nodes{pool="p",online="true"} 2
      flashedge_nodes{pool="p",online="false"} 1
      # HELP flashedge_nodes_homed Registered nodes whose home is the shard (a pool of shards only).
      # TYPE flashedge_nodes_homed gauge
      flashedge_nodes_homed{pool="p",shard="0"} 3
      flashedge_nodes_homed{pool="p",shard="1"} 0
      flashedge_nodes_homed{pool="p",shard="2"} 0
      # HELP flashedge_nodes_held_back Registered nodes held back from claiming because their last attempts all failed.
      # TYPE flashedge_nodes_held_back gauge
      flashedge_nodes_held_back{pool="p"} 0
      # HELP flashedge_results_total Results judged, by verdict: replicas in or outvoted by a quorum, and evidence that lied (invalid).
      # TYPE flashedge_results_total counter
      flashedge_results_total{pool="p",verdict="valid"} 0
      flashedge_results_total{pool="p",verdict="invalid"} 0
      # HELP flashedge_pending_tasks_by_class Pending tasks per requirement class, the classes with the most first (bounded), with what they need.
      # TYPE flashedge_pending_tasks_by_class gauge
      flashedge_pending_tasks_by_class{pool="p",shard="0",class="1",needs="1 GPU"} 1
      flashedge_pending_tasks_by_class{pool="p",shard="2",class="1",needs="nothing"} 2
      # HELP flashedge_unservable_pending_tasks Pending tasks of requirement classes no registered node can serve.
      # TYPE flashedge_unservable_pending_tasks gauge
      flashedge_unservable_pending_tasks{pool="p"} 1
      # HELP flashedge_unservable_requirement_classes Pending requirement classes no registered node can serve.
      # TYPE flashedge_unservable_requirement_classes gauge
      flashedge_unservable_requirement_classes{pool="p"} 1
      # HELP flashedge_storage_bytes Size of the pool object's SQLite storage.
      # TYPE flashedge_storage_bytes gauge
      flashedge_storage_bytes{pool="p",shard="0"} 100
      flashedge_storage_bytes{pool="p",shard="1"} 40
      flashedge_storage_bytes{pool="p",shard="2"} 70
      # HELP flashedge_requests_served_total Calls the pool object served (requests, alarms, calls from other objects); in memory, so it restarts at 0 when the object restarts.
      # TYPE flashedge_requests_served_total counter
      flashedge_requests_served_total{pool="p",shard="0"} 900
      flashedge_requests_served_total{pool="p",shard="1"} 30
      flashedge_requests_served_total{pool="p",shard="2"} 0
      # HELP flashedge_object_busy_seconds_total Summed run time of the pool object's call handlers on the 1 ms clock, what they await not included; in memory, so it restarts at 0 when the object restarts.
      # TYPE flashedge_object_busy_seconds_total counter
      flashedge_object_busy_seconds_total{pool="p",shard="0"} 1.5
      flashedge_object_busy_seconds_total{pool="p",shard="1"} 0.02
      flashedge_object_busy_seconds_total{pool="p",shard="2"} 0
      # HELP flashedge_summary_age_seconds Age of the shard's copy of the pool summary (the oldest other shard's entry); absent before its first reply.
      # TYPE flashedge_summary_age_seconds gauge
      # HELP flashedge_forwarded_claims_total Claims the shard sent to another shard for its work; in memory, so it restarts at 0 when the object restarts.
      # TYPE flashedge_forwarded_claims_total counter
      flashedge_forwarded_claims_total{pool="p",shard="0"} 0
      flashedge_forwarded_claims_total{pool="p",shard="1"} 0
      flashedge_forwarded_claims_total{pool="p",shard="2"} 0
      # HELP flashedge_outbox_rows Outcomes the shard has yet to deliver to other shards' nodes' homes.
      # TYPE flashedge_outbox_rows gauge
      flashedge_outbox_rows{pool="p",shard="0"} 0
      flashedge_outbox_rows{pool="p",shard="1"} 0
      flashedge_outbox_rows{pool="p",shard="2"} 0
      # HELP flashedge_summary_requests_total Calls the pool summary served, by kind: shards' exchanges by reason (tick, on_demand, poke), and other calls; in memory, so it restarts at 0 when the summary restarts.
      # TYPE flashedge_summary_requests_total counter
      flashedge_summary_requests_total{pool="p",kind="tick"} 12
      flashedge_summary_requests_total{pool="p",kind="on_demand"} 3
      flashedge_summary_requests_total{pool="p",kind="poke"} 1
      flashedge_summary_requests_total{pool="p",kind="other"} 2
      # HELP flashedge_summary_busy_seconds_total Summed run time of the pool summary's call handlers on the 1 ms clock; in memory, so it restarts at 0 when the summary restarts.
      # TYPE flashedge_summary_busy_seconds_total counter
      flashedge_summary_busy_seconds_total{pool="p"} 0.005
      # HELP flashedge_storage_limit_bytes The storage limit of one Durable Object.
      # TYPE flashedge_storage_limit_bytes gauge
      flashedge_storage_limit_bytes{pool="p"} 10000000000
      # HELP flashedge_events_total Ledger events by type.
      # TYPE flashedge_events_total counter
      flashedge_events_total{pool="p",type="LEASE_CLAIMED"} 5
      flashedge_events_total{pool="p",type="LEASE_EXPIRED"} 1
      "
    `);
  });

  it("of three shards read by a node", () => {
    expect(renderMetrics("p", mergeMetrics(bare), bare, undefined, false)).toMatchInlineSnapshot(`
      "# HELP flashedge_tasks Tasks in the pool by state.
      # TYPE flashedge_tasks gauge
      flashedge_tasks{pool="p",state="PENDING"} 1
      flashedge_tasks{pool="p",state="LEASED"} 2
      flashedge_tasks{pool="p",state="COMPLETED"} 0
      flashedge_tasks{pool="p",state="FAILED"} 0
      flashedge_tasks{pool="p",state="CANCELLED"} 0
      # HELP flashedge_runs Hosted runs by state (docs/protocol.md §17).
      # TYPE flashedge_runs gauge
      flashedge_runs{pool="p",state="RUNNING"} 0
      flashedge_runs{pool="p",state="SUCCEEDED"} 0
      flashedge_runs{pool="p",state="FAILED"} 0
      flashedge_runs{pool="p",state="CANCELLED"} 0
      # HELP flashedge_run_rounds_aggregated_total Rounds that hosted runs have aggregated.
      # TYPE flashedge_run_rounds_aggregated_total counter
      flashedge_run_rounds_aggregated_total{pool="p"} 0
      # HELP flashedge_leases_live Leases currently live.
      # TYPE flashedge_leases_live gauge
      flashedge_leases_live{pool="p"} 0
      # HELP flashedge_leases_expired_total Leases that expired because their node stopped heartbeating.
      # TYPE flashedge_leases_expired_total counter
      flashedge_leases_expired_total{pool="p"} 1
      # HELP flashedge_claims_total Claims that leased a task.
      # TYPE flashedge_claims_total counter
      flashedge_claims_total{pool="p"} 5
      # HELP flashedge_claims_held Claims held open waiting for work their node may take (long-poll): idle machines; in memory, so 0 after the object restarts.
      # TYPE flashedge_claims_held gauge
      flashedge_claims_held{pool="p"} 0
      # HELP flashedge_commits_total Commits judged, by outcome.
      # TYPE flashedge_commits_total counter
      flashedge_commits_total{pool="p",result="accepted"} 0
      flashedge_commits_total{pool="p",result="rejected"} 0
      # HELP flashedge_attempts_failed_total Attempts failed by their worker or by output validation.
      # TYPE flashedge_attempts_failed_total counter
      flashedge_attempts_failed_total{pool="p"} 0
      # HELP flashedge_nodes Registered nodes, and those online: seen within the online window or holding a live lease.
      # TYPE flashedge_nodes gauge
      flashedge_nodes{pool="p",online="true"} 2
      flashedge_nodes{pool="p",online="false"} 1
      # HELP flashedge_nodes_homed Registered nodes whose home is the shard (a pool of shards only).
      # TYPE flashedge_nodes_homed gauge
      flashedge_nodes_homed{pool="p",shard="0"} 3
      flashedge_nodes_homed{pool="p",shard="1"} 0
      flashedge_nodes_homed{pool="p",shard="2"} 0
      # HELP flashedge_nodes_held_back Registered nodes held back from claiming because their last attempts all failed.
      # TYPE flashedge_nodes_held_back gauge
      flashedge_nodes_held_back{pool="p"} 0
      # HELP flashedge_results_total Results judged, by verdict: replicas in or outvoted by a quorum, and evidence that lied (invalid).
      # TYPE flashedge_results_total counter
      flashedge_results_total{pool="p",verdict="valid"} 0
      flashedge_results_total{pool="p",verdict="invalid"} 0
      # HELP flashedge_pending_tasks_by_class Pending tasks per requirement class, the classes with the most first (bounded), with what they need.
      # TYPE flashedge_pending_tasks_by_class gauge
      flashedge_pending_tasks_by_class{pool="p",shard="0",class="1",needs="1 GPU"} 1
      flashedge_pending_tasks_by_class{pool="p",shard="2",class="1",needs="nothing"} 2
      # HELP flashedge_unservable_pending_tasks Pending tasks of requirement classes no registered node can serve.
      # TYPE flashedge_unservable_pending_tasks gauge
      flashedge_unservable_pending_tasks{pool="p"} 1
      # HELP flashedge_unservable_requirement_classes Pending requirement classes no registered node can serve.
      # TYPE flashedge_unservable_requirement_classes gauge
      flashedge_unservable_requirement_classes{pool="p"} 1
      # HELP flashedge_storage_bytes Size of the pool object's SQLite storage.
      # TYPE flashedge_storage_bytes gauge
      flashedge_storage_bytes{pool="p",shard="0"} 100
      flashedge_storage_bytes{pool="p",shard="1"} 40
      flashedge_storage_bytes{pool="p",shard="2"} 70
      # HELP flashedge_storage_limit_bytes The storage limit of one Durable Object.
      # TYPE flashedge_storage_limit_bytes gauge
      flashedge_storage_limit_bytes{pool="p"} 10000000000
      # HELP flashedge_events_total Ledger events by type.
      # TYPE flashedge_events_total counter
      flashedge_events_total{pool="p",type="LEASE_CLAIMED"} 5
      flashedge_events_total{pool="p",type="LEASE_EXPIRED"} 1
      "
    `);
  });
});
