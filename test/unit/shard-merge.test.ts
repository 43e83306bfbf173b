import { describe, expect, it } from "vitest";
import type { DashboardSummary } from "../../src/protocol/dashboard";
import type { Demand, DemandClass, GpuGroup, Page } from "../../src/protocol/responses";
import { countRefusals, NO_COUNTS, summarizeCounts, summarizePlacement } from "../../src/rules/placement-summary";
import type { Refusal } from "../../src/rules/refusals";
import {
  combineAnswers,
  mergeDashboards,
  mergeDemands,
  mergeFleets,
  mergeGpuGroups,
  mergePages,
} from "../../src/rules/shard-merge";

describe("the pool's node answers", () => {
  it("accepts a class if any shard's node does, and adds up able and unchecked nodes", () => {
    const none = { claimable: false, registered: false, able: 0, refusals: NO_COUNTS };
    const yes = (able: number) => ({ claimable: true, registered: true, able, refusals: NO_COUNTS });
    expect(
      combineAnswers([
        { answers: { a: yes(2), b: none }, nodesUnchecked: 3 },
        { answers: { a: { ...none, registered: true, able: 1 }, b: none, c: none }, nodesUnchecked: 0 },
        { answers: { b: { ...none, registered: true } }, nodesUnchecked: 1 },
      ]),
    ).toEqual({
      answers: {
        a: yes(3),
        b: { ...none, registered: true },
        c: none,
      },
      nodesUnchecked: 4,
    });
  });

  it("adds up the nodes refused for one reason on every shard, as the placement summary groups them", () => {
    const gpu = (have: string): Refusal => ({ gate: "gpu", form: "gpus_short", need: "2 GPUs", have });
    const data: Refusal = { gate: "local_data", form: "dataset_missing", need: "patients", have: "" };
    const none = { claimable: false, registered: false, able: 0 };
    const pool = combineAnswers([
      { answers: { a: { ...none, refusals: countRefusals([gpu("0"), gpu("1"), data]) } }, nodesUnchecked: 0 },
      { answers: { a: { ...none, refusals: countRefusals([gpu("0")]) } }, nodesUnchecked: 0 },
    ]);
    expect(summarizeCounts(pool.answers.a!.refusals, { scope: "online" }).summary).toBe(
      summarizePlacement([gpu("0"), gpu("1"), data, gpu("0")], { scope: "online" }).summary,
    );
  });
});

describe("merging pages", () => {
  const asc = (a: number, b: number) => a - b;
  it.each<[string, Page<number>[], number, Page<number>]>([
    ["one page is itself", [{ items: [1, 2], more: 3 }], 5, { items: [1, 2], more: 3 }],
    [
      "merged in order and cut to the limit",
      [
        { items: [1, 4], more: 0 },
        { items: [2, 3], more: 0 },
      ],
      3,
      { items: [1, 2, 3], more: 1 },
    ],
    [
      "the shards' own more counted",
      [
        { items: [5], more: 10 },
        { items: [1], more: 2 },
      ],
      2,
      { items: [1, 5], more: 12 },
    ],
    [
      "nothing anywhere",
      [
        { items: [], more: 0 },
        { items: [], more: 0 },
      ],
      4,
      { items: [], more: 0 },
    ],
  ])("%s", (_name, pages, limit, merged) => {
    expect(mergePages(pages, limit, asc)).toEqual(merged);
  });
});

const group = (model: string, gpus: number, memory: number | null = 81920): GpuGroup => ({
  model,
  memory_total_mb: memory,
  compute_capability: "8.0",
  gpus,
  nodes: gpus,
  online: gpus,
  busy: 0,
});

describe("merging GPU groups", () => {
  it.each<[string, Page<GpuGroup>[], number, Page<GpuGroup>]>([
    [
      "the same kind on two shards is one group, its counts summed",
      [
        { items: [group("A100", 2)], more: 0 },
        { items: [group("A100", 3), group("T4", 4)], more: 0 },
      ],
      10,
      { items: [group("A100", 5), group("T4", 4)], more: 0 },
    ],
    [
      "another memory size is another group, most GPUs first",
      [
        { items: [group("A100", 1, 40960)], more: 0 },
        { items: [group("A100", 2)], more: 0 },
      ],
      10,
      { items: [group("A100", 2), group("A100", 1, 40960)], more: 0 },
    ],
    [
      "cut to the limit, with what the shards cut counted",
      [
        { items: [group("A", 3)], more: 2 },
        { items: [group("B", 1), group("C", 2)], more: 0 },
      ],
      2,
      { items: [group("A", 3), group("C", 2)], more: 3 },
    ],
  ])("%s", (_name, pages, limit, merged) => {
    expect(mergeGpuGroups(pages, limit)).toEqual(merged);
  });
});

const demandClass = (over: Partial<DemandClass>): DemandClass => ({
  class_id: 1,
  pending: 1,
  needs: "any node",
  online_nodes_able: 0,
  servable: true,
  every_node_checked: true,
  summary: "",
  ...over,
});
const demandOf = (classes: DemandClass[], over: Partial<Demand> = {}): Demand => ({
  classes,
  classes_unchecked: 0,
  nodes_unchecked: 0,
  unservable_classes: classes.filter((c) => !c.servable).length,
  unservable_tasks: classes.filter((c) => !c.servable).reduce((n, c) => n + c.pending, 0),
  ...over,
});

describe("merging demand", () => {
  it("merges a class by what it needs: pending summed, its pool-wide answer kept, the sentence redone", () => {
    const merged = mergeDemands(
      [
        demandOf([demandClass({ class_id: 1, pending: 2, needs: "1 GPU", online_nodes_able: 1 })]),
        demandOf([demandClass({ class_id: 7, pending: 3, needs: "1 GPU", online_nodes_able: 1 })]),
      ],
      50,
    );
    expect(merged.classes).toEqual([
      demandClass({
        class_id: 1,
        pending: 5,
        needs: "1 GPU",
        online_nodes_able: 1,
        summary: "5 tasks need 1 GPU; 1 online node can take them",
      }),
    ]);
    expect(merged).toMatchObject({ unservable_classes: 0, unservable_tasks: 0, classes_unchecked: 0 });
  });

  it("counts the unservable classes and tasks over every class, most pending shown first", () => {
    const merged = mergeDemands(
      [
        demandOf([demandClass({ pending: 1, needs: "a", servable: false })], {
          classes_unchecked: 2,
          nodes_unchecked: 5,
        }),
        demandOf(
          [
            demandClass({ class_id: 2, pending: 4, needs: "b" }),
            demandClass({ pending: 2, needs: "c", servable: false }),
          ],
          {
            nodes_unchecked: 5,
          },
        ),
      ],
      2,
    );
    expect(merged.classes.map((c) => [c.needs, c.pending])).toEqual([
      ["b", 4],
      ["c", 2],
    ]);
    expect(merged).toMatchObject({
      unservable_classes: 2,
      unservable_tasks: 3,
      classes_unchecked: 3,
      nodes_unchecked: 5,
    });
  });

  it("merges the fleet's groups and demand", () => {
    const part = (gpus: number, pending: number) => ({
      pool: "p",
      generated_at: "2026-01-01T00:00:00.000Z",
      gpus: { items: [group("A100", gpus)], more: 0 },
      demand: demandOf([demandClass({ pending })]),
    });
    const merged = mergeFleets([part(1, 2), part(0, 3)], 10, 50);
    expect(merged.gpus.items).toEqual([group("A100", 1)]);
    expect(merged.demand.classes.map((c) => c.pending)).toEqual([5]);
    expect(merged.pool).toBe("p");
  });
});

function dashboardOf(over: {
  jobs?: DashboardSummary["jobs"]["items"];
  leases?: DashboardSummary["leases"]["items"];
  events?: DashboardSummary["events"]["items"];
  stuck?: DashboardSummary["stuck"]["items"];
  nodes?: DashboardSummary["nodes"]["items"];
  storage?: number;
  pending?: number;
}): DashboardSummary {
  const page = <T>(items: T[] = []) => ({ items, more: 0 });
  return {
    pool: "p",
    generated_at: "2026-01-01T00:00:00.000Z",
    limit: 2,
    online_window_s: 30,
    counts: {
      nodes: { total: over.nodes?.length ?? 0, online: 0, offline: 0, not_accepting: 0, held_back: 0 },
      tasks: { PENDING: over.pending ?? 0, LEASED: 0, COMPLETED: 0, FAILED: 0, CANCELLED: 0, total: over.pending ?? 0 },
      jobs: { PENDING: 0, RUNNING: over.jobs?.length ?? 0, SUCCEEDED: 0, FAILED: 0, CANCELLED: 0 },
      leases_live: over.leases?.length ?? 0,
      stuck_tasks: (over.stuck ?? []).reduce((n, s) => n + s.pending, 0),
      enrolment: { enrolled: 0, revoked: 0, pending_requests: 0 },
    },
    nodes: page(over.nodes),
    jobs: page(over.jobs),
    leases: page(over.leases),
    events: { items: over.events ?? [], last_seq: over.events?.length ?? 0 },
    stuck: { ...page(over.stuck), classes_unchecked: 0 },
    storage: { bytes: over.storage ?? 0, limit_bytes: 10_000_000_000, warning: false },
    gpus: page<GpuGroup>(),
    demand: demandOf([]),
    enrolment: { credentials: page(), requests: page() },
  } as DashboardSummary;
}

const job = (id: string, created: string, state: "RUNNING" | "SUCCEEDED" = "RUNNING") =>
  ({ job_id: id, created_at: created, state }) as DashboardSummary["jobs"]["items"][number];
const lease = (id: string, deadline: string) =>
  ({ lease_id: id, deadline }) as DashboardSummary["leases"]["items"][number];
const event = (seq: number, timestamp: string) =>
  ({ seq, job_id: "j", type: "T", timestamp, message: "" }) as DashboardSummary["events"]["items"][number];
const stuck = (id: string, pending: number) =>
  ({ job_id: id, job_name: null, task_id: "t", pending, summary: null }) as DashboardSummary["stuck"]["items"][number];
const node = (id: string, online: boolean) =>
  ({ node_id: id, online, status: "online" }) as DashboardSummary["nodes"]["items"][number];

describe("merging dashboards", () => {
  const a = dashboardOf({
    jobs: [job("a1", "2026-01-01T00:00:03.000Z"), job("a0", "2026-01-01T00:00:00.000Z", "SUCCEEDED")],
    leases: [lease("la", "2026-01-01T00:10:00.000Z")],
    events: [event(9, "2026-01-01T00:00:01.000Z")],
    stuck: [stuck("a1", 2)],
    nodes: [node("n2", true), node("n3", false)],
    storage: 500,
    pending: 2,
  });
  const b = dashboardOf({
    jobs: [job("b1", "2026-01-01T00:00:02.000Z")],
    leases: [lease("lb", "2026-01-01T00:05:00.000Z")],
    events: [event(1, "2026-01-01T00:00:05.000Z"), event(0, "2026-01-01T00:00:00.000Z")],
    stuck: [stuck("b1", 1)],
    nodes: [node("n1", true)],
    storage: 900,
    pending: 3,
  });
  // n2 lives at a's shard and holds a lease at each; n1 holds one at a's.
  const merged = mergeDashboards(
    [
      { ...a, leasesByNode: { n2: 1, n1: 1 } },
      { ...b, leasesByNode: { n2: 1 } },
    ],
    2,
    50,
  );

  it.each<[string, (d: DashboardSummary) => unknown, unknown]>([
    ["tasks are summed by state", (d) => [d.counts.tasks.PENDING, d.counts.tasks.total], [5, 5]],
    ["jobs are summed by state", (d) => d.counts.jobs.RUNNING, 3],
    ["stuck tasks are summed", (d) => d.counts.stuck_tasks, 3],
    ["live leases are summed", (d) => d.counts.leases_live, 2],
    ["nodes are summed", (d) => d.counts.nodes.total, 3],
    ["live jobs first, newest first, cut to the limit", (d) => d.jobs.items.map((j) => j.job_id), ["a1", "b1"]],
    ["the jobs cut are counted", (d) => d.jobs.more, 1],
    ["soonest lease first", (d) => d.leases.items.map((l) => l.lease_id), ["lb", "la"]],
    ["newest event first, cut to the limit", (d) => d.events.items.map((e) => e.seq), [1, 9]],
    ["last_seq grows with any shard's", (d) => d.events.last_seq, 3],
    ["stuck entries in the shards' order", (d) => d.stuck.items.map((s) => s.job_id), ["a1", "b1"]],
    ["online accepting nodes first, by id", (d) => d.nodes.items.map((n) => n.node_id), ["n1", "n2"]],
    ["the nodes cut are counted", (d) => d.nodes.more, 1],
    [
      "a node's live leases are counted at every shard",
      (d) => d.nodes.items.map((n) => [n.node_id, n.live_leases]),
      [
        ["n1", 1],
        ["n2", 2],
      ],
    ],
    ["storage is the fullest shard's", (d) => d.storage.bytes, 900],
    ["the limit is the request's", (d) => d.limit, 2],
  ])("%s", (_name, read, expected) => {
    expect(read(merged)).toEqual(expected);
  });
});
