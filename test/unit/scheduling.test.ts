// The scheduling policy's pure rules (docs/protocol.md §13): labels, settings, the
// back-off, the retry rule, and the "waits for" line.

import { describe, expect, it } from "vitest";
import { JobSpecSchema } from "../../src/protocol/jobs";
import { stampTasks } from "../../src/recipes/stamp";
import { type QueuePosition, waitingSummary } from "../../src/rules/placement-summary";
import {
  DEFAULT_MAX_WORKER_LOSSES,
  holdBackMs,
  jobPriority,
  jobTenant,
  maxWorkerLosses,
  mayRetry,
  retryElsewhereMs,
  tenantWeights,
} from "../../src/rules/scheduling";
import { trialsJob } from "../fixtures/jobspec";

describe("labels", () => {
  it.each([
    [undefined, 0],
    ["0", 0],
    ["-0", 0],
    ["+7", 7],
    ["1000", 1000],
    ["-1000", -1000],
    ["0042", 42],
  ])("priority %j reads as %d", (raw, value) => {
    const labels: Record<string, string> = raw === undefined ? {} : { "flashml.dev/priority": raw };
    const read = jobPriority(labels);
    expect(read).toEqual({ ok: true, value });
    expect(read.ok && Object.is(read.value, -0)).toBe(false);
  });

  it.each(["1001", "-1001", "1e2", "0x10", "1.0", "", " 1", "one", "10000"])("priority %j is refused", (raw) => {
    const read = jobPriority({ "flashml.dev/priority": raw });
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.problem).toContain(JSON.stringify(raw));
  });

  it("the tenant is the operator when enforcing, else the label, else default", () => {
    expect(jobTenant({ "flashml.dev/tenant": "team-a" }, "ops")).toEqual({ ok: true, value: "ops" });
    expect(jobTenant({ "flashml.dev/tenant": "team-a" }, null)).toEqual({ ok: true, value: "team-a" });
    expect(jobTenant({}, null)).toEqual({ ok: true, value: "default" });
    for (const bad of ["", "a b", "-a", "a-", "x".repeat(64), "ünï"]) {
      expect(jobTenant({ "flashml.dev/tenant": bad }, null).ok, bad).toBe(false);
    }
    expect(jobTenant({ "flashml.dev/tenant": "x".repeat(63) }, null).ok).toBe(true);
  });
});

describe("settings", () => {
  it("reads tenant weights; unset or empty weighs everyone 1", () => {
    expect(tenantWeights(undefined)).toEqual(new Map());
    expect(tenantWeights(" ")).toEqual(new Map());
    expect(tenantWeights("team-a:3, team-b:0.5")).toEqual(
      new Map([
        ["team-a", 3],
        ["team-b", 0.5],
      ]),
    );
    for (const bad of ["team-a", "team-a:0", "team-a:-1", "team-a:1001", "a:1,a:2", ":1", "a b:1", "a:1,"]) {
      expect(typeof tenantWeights(bad), bad).toBe("string");
    }
  });

  it("reads the worker-loss limit", () => {
    expect(maxWorkerLosses(undefined)).toBe(DEFAULT_MAX_WORKER_LOSSES);
    expect(maxWorkerLosses("3")).toBe(3);
    for (const bad of ["0", "1001", "2.5", "-1", "ten"]) expect(typeof maxWorkerLosses(bad), bad).toBe("string");
  });

  it("reads the retry-elsewhere window: 60 s unless set, 0 to a day", () => {
    expect(retryElsewhereMs(undefined)).toBe(60_000);
    expect(retryElsewhereMs(" ")).toBe(60_000);
    expect(retryElsewhereMs("0")).toBe(0);
    expect(retryElsewhereMs("2.5")).toBe(2500);
    expect(retryElsewhereMs("86400")).toBe(86_400_000);
    for (const bad of ["-1", "86401", "1e3", "ten", "0x10", "Infinity"]) {
      expect(retryElsewhereMs(bad), bad).toContain("FLASHML_RETRY_ELSEWHERE_SECONDS must be");
    }
  });

  it("stamps the limit only on jobs that retry worker loss", () => {
    const stamp = (retryWorkerLoss: boolean) => {
      const spec = JobSpecSchema.parse(trialsJob(1, {}, { retryPolicy: { retryWorkerLoss } }));
      const stamped = stampTasks(spec, "0123456789ab", [{ taskId: "t", payload: {}, extras: {} }], 60, 7);
      return stamped.ok ? stamped.tasks[0]!.max_worker_losses : null;
    };
    expect(stamp(true)).toBe(7);
    expect(stamp(false)).toBe(0);
  });
});

describe("holding back and retrying", () => {
  it("holds back from the 5th failure in a row, 30 s doubling, at most an hour", () => {
    expect([0, 1, 4].map(holdBackMs)).toEqual([0, 0, 0]);
    expect([5, 6, 7, 11].map(holdBackMs)).toEqual([30_000, 60_000, 120_000, 1_920_000]);
    expect(holdBackMs(12)).toBe(3_600_000);
    expect(holdBackMs(1_000_000)).toBe(3_600_000);
  });

  it("retries while failures stay under max_attempts and losses under their limit", () => {
    const task = { attempts_used: 1, max_attempts: 1, worker_losses: 0, max_worker_losses: 10 };
    expect(mayRetry(task)).toBe(false); // one failure of one attempt
    expect(mayRetry({ ...task, worker_losses: 1 })).toBe(true); // that lease was lost, not failed
    expect(mayRetry({ ...task, attempts_used: 10, worker_losses: 10 })).toBe(false); // lost to 10 workers
    expect(mayRetry({ ...task, attempts_used: 10, worker_losses: 9, max_attempts: 2 })).toBe(true);
    expect(mayRetry({ ...task, max_worker_losses: 0, max_attempts: 2 })).toBe(true);
  });
});

describe("what a pending task waits for", () => {
  const next: QueuePosition = {
    priority: 0,
    tenant: "default",
    higher_priority: 0,
    earlier_in_job: 0,
    other_tenants: 0,
    other_jobs: 0,
    failed_on: [],
    eligible_held_back: 0,
  };

  it("names each thing ahead of it, in claim order", () => {
    expect(waitingSummary(next)).toBe("next in line");
    expect(
      waitingSummary({
        ...next,
        tenant: "team-a",
        higher_priority: 1,
        earlier_in_job: 3,
        other_tenants: 2,
        other_jobs: 1,
        failed_on: ["n1", "n2"],
        eligible_held_back: 2,
      }),
    ).toBe(
      "waits for 1 pending task of higher priority than 0; tenant team-a's turn (3 tenants take turns at priority 0); " +
        "its job's turn (2 jobs of team-a take turns); 3 earlier tasks of its own job; a node other than n1, n2 (failed it)" +
        "; 2 eligible nodes are held back after failing",
    );
    expect(waitingSummary({ ...next, eligible_held_back: 1 })).toBe(
      "next in line; 1 eligible node is held back after failing",
    );
  });

  it.each<[string, QueuePosition, string[], string]>([
    ["no replica out yet", next, [], "next in line"],
    [
      "one node holds a replica",
      next,
      ["n1"],
      "waits for a node that has not run a replica of it (n1 holds or ran one)",
    ],
    [
      "two nodes ran one",
      next,
      ["n1", "n2"],
      "waits for a node that has not run a replica of it (n1, n2 hold or ran one)",
    ],
    [
      "a node failed its replica: named once, as one that ran it",
      { ...next, failed_on: ["n1"] },
      ["n1"],
      "waits for a node that has not run a replica of it (n1 holds or ran one)",
    ],
    [
      "another node failed it outright",
      { ...next, failed_on: ["n0", "n1"], earlier_in_job: 1 },
      ["n1"],
      "waits for 1 earlier task of its own job; a node other than n0 (failed it); " +
        "a node that has not run a replica of it (n1 holds or ran one)",
    ],
  ])("a pending replicated task with %s", (_what, queue, replicaNodes, text) => {
    expect(waitingSummary(queue, replicaNodes)).toBe(text);
  });
});
