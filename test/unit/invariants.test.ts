// The invariant checker (test/invariants/check.ts) on the scheduling states
// of docs/protocol.md §13: a sound pool with a held-back node and a worker loss passes,
// and each drift of those states is named. The workerd tests run it over
// real pools (races.test.ts corrupts one); this builds the rows by hand so
// every §13 counter and the ledger's hold replay can be bent one at a time.

import { describe, expect, it } from "vitest";
import { FIRST_HOLD_MS } from "../../src/rules/scheduling";
import { registration } from "../fixtures/registration";
import { type PoolSnapshot, replayHolds, violations } from "../invariants/check";

type Row = Record<string, string | number | null>;

/**
 * A pool as the object leaves it: job j1 (priority 0, tenant default)
 * finished, job j2 (priority 5, team-a) with one task pending. Node `bad`
 * failed five attempts in a row (held back from its fifth failure at
 * t=14); node n2 vanished mid-lease once (a worker loss of j1/a); n1
 * committed everything else.
 */
function soundPool(): PoolSnapshot & { counters: NonNullable<PoolSnapshot["counters"]> } {
  const events: Row[] = [];
  const tasks: Row[] = [];
  const leases: Row[] = [];
  const emit = (ts: number, jobId: string, type: string, data: Record<string, unknown>) =>
    events.push({ seq: events.length + 1, job_id: jobId, type, ts_ms: ts, message: "", data: JSON.stringify(data) });
  const task = (jobId: string, taskId: string) => {
    const row: Row = {
      seq: tasks.length + 1,
      job_id: jobId,
      task_id: taskId,
      class_id: 1,
      payload: "{}",
      state: "PENDING",
      attempts_used: 0,
      max_attempts: 3,
      lease_id: null,
      accepted_object: null,
      worker_losses: 0,
      max_worker_losses: 10,
    };
    tasks.push(row);
    emit(0, jobId, "TASK_CREATED", { task_id: taskId });
    return row;
  };
  const lease = (ts: number, t: Row, nodeId: string) => {
    const leaseId = `ls-${leases.length + 1}`;
    t.attempts_used = (t.attempts_used as number) + 1;
    Object.assign(t, { state: "LEASED", lease_id: leaseId });
    leases.push({ lease_id: leaseId, task_seq: t.seq!, node_id: nodeId, status: "live", deadline_ms: ts + 5000 });
    emit(ts, t.job_id as string, "LEASE_CLAIMED", { task_id: t.task_id, node_id: nodeId, lease_id: leaseId });
    return leases[leases.length - 1]!;
  };
  const end = (ts: number, t: Row, l: Row, how: "failed" | "expired") => {
    l.status = how;
    const data = { task_id: t.task_id, node_id: l.node_id, lease_id: l.lease_id };
    emit(ts, t.job_id as string, how === "failed" ? "TASK_ATTEMPT_FAILED" : "LEASE_EXPIRED", data);
    if (how === "expired") t.worker_losses = (t.worker_losses as number) + 1;
    t.state = "PENDING";
    emit(ts, t.job_id as string, "TASK_REQUEUED", data);
  };
  const commit = (ts: number, t: Row, l: Row) => {
    l.status = "completed";
    Object.assign(t, { state: "COMPLETED", accepted_object: `sha-${t.task_id}` });
    emit(ts, t.job_id as string, "TASK_COMMIT_ACCEPTED", { task_id: t.task_id, node_id: l.node_id });
  };

  const j1 = ["a", "b", "c", "d", "e"].map((id) => task("j1", id));
  const j2 = [task("j2", "x"), task("j2", "y")];
  for (const [i, t] of j1.entries()) end(10 + i, t, lease(10 + i, t, "bad"), "failed");
  const a = j1[0]!;
  end(5020, a, lease(20, a, "n2"), "expired");
  for (const [i, t] of j1.entries()) commit(5100 + i, t, lease(5030 + i, t, "n1"));
  commit(5200, j2[0]!, lease(5150, j2[0]!, "n1"));
  emit(5105, "j1", "JOB_SUCCEEDED", {});
  events
    .sort((x, y) => (x.ts_ms as number) - (y.ts_ms as number))
    .forEach((e, i) => {
      e.seq = i + 1;
    });

  const node = (id: string, run = 0, heldUntil = 0) => ({
    node_id: id,
    registration: JSON.stringify(registration(id)),
    consecutive_failures: run,
    held_until_ms: heldUntil,
  });
  return {
    nodes: [node("bad", 5, 14 + FIRST_HOLD_MS), node("n1"), node("n2")],
    jobs: [
      { seq: 1, job_id: "j1", terminal_state: "SUCCEEDED" },
      { seq: 2, job_id: "j2", terminal_state: null },
    ],
    tasks,
    leases,
    events,
    counters: {
      job_task_counts: [
        { job_id: "j1", state: "COMPLETED", n: 5 },
        { job_id: "j2", state: "COMPLETED", n: 1 },
        { job_id: "j2", state: "PENDING", n: 1 },
      ],
      task_counts: [
        { state: "COMPLETED", n: 6 },
        { state: "PENDING", n: 1 },
      ],
      job_counts: [
        { state: "SUCCEEDED", n: 1 },
        { state: "RUNNING", n: 1 },
      ],
      classes: [{ class_id: 1, pending: 1 }],
      job_queues: [
        { job_id: "j1", priority: 0, tenant: "default", pending: 0, worker_losses: 1 },
        { job_id: "j2", priority: 5, tenant: "team-a", pending: 1, worker_losses: 0 },
      ],
      queue_classes: [
        { job_id: "j1", class_id: 1, priority: 0, pending: 0 },
        { job_id: "j2", class_id: 1, priority: 5, pending: 1 },
      ],
      tenant_shares: [{ priority: 5, tenant: "team-a", active: 1 }],
    },
  };
}

type Pool = ReturnType<typeof soundPool>;
const taskA = (s: Pool) => s.tasks.find((t) => t.task_id === "a")!;
const claimBy = (nodeId: string, ts: number) => ({
  seq: 10_000,
  job_id: "j9",
  type: "LEASE_CLAIMED",
  ts_ms: ts,
  message: "",
  data: JSON.stringify({ task_id: "z", node_id: nodeId }),
});

describe("the invariant checker on the scheduling states", () => {
  it("a sound pool with a held-back node and a worker loss has no violation", () => {
    const s = soundPool();
    expect(taskA(s)).toMatchObject({ attempts_used: 3, worker_losses: 1, max_attempts: 3 });
    expect(violations(s)).toEqual([]);
  });

  it("the ledger's replay finds the held-back node and only it", () => {
    expect([...replayHolds(soundPool().events).held.keys()]).toEqual(["bad"]);
  });

  const drifts: Array<[string, (s: Pool) => void, RegExp]> = [
    [
      "attempts beyond the limit, losses aside",
      (s) => {
        taskA(s).max_attempts = 1;
      },
      /j1\/a: 2 attempts .* > max 1/,
    ],
    [
      "a worker loss not counted",
      (s) => {
        taskA(s).worker_losses = 0;
      },
      /j1\/a: 0 worker losses but 1 expired/,
    ],
    [
      "an expiry counted as a loss in a job that does not retry worker loss",
      (s) => {
        taskA(s).max_worker_losses = 0;
      },
      /j1\/a: 1 worker losses but 0 expired leases/,
    ],
    [
      "more losses than the task allows",
      (s) => {
        const a = taskA(s);
        s.leases.push({ lease_id: "ls-x", task_seq: a.seq!, node_id: "n2", status: "expired", deadline_ms: 1 });
        Object.assign(a, { attempts_used: 4, worker_losses: 2, max_worker_losses: 1 });
        s.counters.job_queues![0]!.worker_losses = 2;
      },
      /j1\/a: 2 worker losses > max 1/,
    ],
    [
      "a job's pending count that drifted",
      (s) => {
        s.counters.job_queues![1]!.pending = 2;
      },
      /pending tasks of job j2:/,
    ],
    [
      "a job with pending tasks and no queue",
      (s) => void s.counters.job_queues!.pop(),
      /pending tasks of job j2: counter 0 but 1 counted/,
    ],
    [
      "a job and class's pending count that drifted",
      (s) => {
        s.counters.queue_classes![0]!.pending = 1;
      },
      /pending tasks of job and class j1\/1: counter 1 but 0/,
    ],
    [
      "a job's class that lost its job's priority",
      (s) => {
        s.counters.queue_classes![1]!.priority = 0;
      },
      /queue class j2\/1: priority 0, its job's is 5/,
    ],
    [
      "a job's worker-loss count that drifted",
      (s) => {
        s.counters.job_queues![0]!.worker_losses = 0;
      },
      /worker losses of job j1: counter 0 but 1/,
    ],
    [
      "an active tenant without its share",
      (s) => void s.counters.tenant_shares!.pop(),
      /active jobs of tenant at priority 5\/team-a: counter 0 but 1/,
    ],
    [
      "a tenant share left behind with nothing active",
      (s) => void s.counters.tenant_shares!.push({ priority: 0, tenant: "default", active: 0 }),
      /tenant share 0\/default: a row with active 0/,
    ],
    [
      "a node held back before five failures",
      (s) => {
        s.nodes[0]!.consecutive_failures = 4;
      },
      /node bad: held until \d+ after only 4 consecutive failures/,
    ],
    [
      "a lease to a node inside its hold",
      (s) => void s.events.push(claimBy("bad", 14 + FIRST_HOLD_MS - 1)),
      /leased to a held-back node bad/,
    ],
  ];
  it.each(drifts)("notices %s", (_name, drift, expected) => {
    const s = soundPool();
    drift(s);
    expect(violations(s).join("\n")).toMatch(expected);
  });

  it("a lease to the node once its hold has ended is sound", () => {
    const s = soundPool();
    s.events.push(claimBy("bad", 14 + FIRST_HOLD_MS));
    expect(violations(s)).toEqual([]);
  });

  it("an accepted commit ends the run: the next four failures hold nothing", () => {
    const events = [
      ...[1, 2, 3, 4].map((i) => ({ seq: i, job_id: "j", type: "LEASE_EXPIRED", ts_ms: i, data: '{"node_id":"n"}' })),
      { seq: 5, job_id: "j", type: "TASK_COMMIT_ACCEPTED", ts_ms: 5, data: '{"node_id":"n"}' },
      ...[6, 7, 8, 9].map((i) => ({
        seq: i,
        job_id: "j",
        type: "TASK_ATTEMPT_FAILED",
        ts_ms: i,
        data: '{"node_id":"n"}',
      })),
      { seq: 10, job_id: "j", type: "LEASE_CLAIMED", ts_ms: 10, data: '{"node_id":"n"}' },
    ];
    expect(replayHolds(events)).toEqual({ held: new Map(), violations: [] });
    events.splice(4, 1); // without the commit, the fifth failure holds it and each further one extends the hold
    const replay = replayHolds(events);
    expect(replay.held).toEqual(new Map([["n", 4]]));
    expect(replay.violations).toEqual([
      `event 10: j leased to a held-back node n (held until ${9 + 8 * FIRST_HOLD_MS})`,
    ]);
  });

  it.each([
    ["a release", { released: true }],
    ["an archived job (its events are gone)", { archived: 1 }],
  ])("after %s the ledger cannot say when a node was held: no replay", (_name, fact) => {
    const s = { ...soundPool(), ...fact };
    s.events.push(claimBy("bad", 100));
    expect(violations(s)).toEqual([]);
  });

  it("a pool from before docs/protocol.md §13 (no loss columns, no queues) is judged as then: every expiry used an attempt", () => {
    const s = soundPool();
    for (const t of s.tasks) {
      delete t.worker_losses;
      delete t.max_worker_losses;
    }
    for (const n of s.nodes) {
      delete n.consecutive_failures;
      delete n.held_until_ms;
    }
    const { job_queues: _q, queue_classes: _c, tenant_shares: _t, ...counters } = s.counters;
    const old = { ...s, counters };
    expect(violations(old)).toEqual([]);
    taskA(s).max_attempts = 2;
    expect(violations(old)).toEqual(["j1/a: 3 attempts (3 leases, 0 worker losses) > max 2"]);
  });
});
