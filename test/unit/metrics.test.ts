import { describe, expect, it } from "vitest";
import { renderMetrics } from "../../src/rules/metrics";

describe("metrics text", () => {
  const text = renderMetrics("team-a", {
    tasks: { PENDING: 3, COMPLETED: 2 },
    leasesLive: 1,
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
  ])("has the sample %s", (line) => {
    expect(text.split("\n")).toContain(line);
  });

  it("declares every metric's type once, before its samples", () => {
    const types = text.split("\n").filter((l) => l.startsWith("# TYPE "));
    expect(new Set(types).size).toBe(types.length);
    expect(text.indexOf("# TYPE flashedge_tasks gauge")).toBeLessThan(text.indexOf("flashedge_tasks{"));
    expect(text.endsWith("\n")).toBe(true);
  });

  it("escapes label values", () => {
    const odd = renderMetrics('a"b\\c', {
      tasks: {},
      leasesLive: 0,
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
