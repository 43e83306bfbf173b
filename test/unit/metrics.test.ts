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
    const costed = renderMetrics("p", { ...sample, sql: { rowsRead: 120, rowsWritten: 73 } }).split("\n");
    expect(costed).toContain('flashedge_sql_rows_read_total{pool="p"} 120');
    expect(costed).toContain('flashedge_sql_rows_written_total{pool="p"} 73');
    expect(renderMetrics("p", sample)).not.toMatch(/flashedge_sql_rows/);
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
