// The pool's invariants, checked from the outside: given a snapshot of a pool
// object's raw tables, lists every violation (an empty list means the pool is
// sound). Test-side only; it trusts nothing the object computed and
// re-derives it. Pure, so the workerd tests and the crash/soak drivers (which
// read the persisted SQLite file) share it.

import { deriveJobState, type TaskCounts } from "../../src/rules/job-state";
import { eligible, nodeView } from "../../src/rules/placement";
import { holdBackMs } from "../../src/rules/scheduling";

type Row = Record<string, string | number | null | ArrayBuffer>;

const STATE_COLUMNS = [
  ["PENDING", "pending"],
  ["LEASED", "leased"],
  ["COMPLETED", "completed"],
  ["FAILED", "failed"],
  ["CANCELLED", "cancelled"],
] as const;

/**
 * The task counters as the (state, n) rows the snapshot's `counters` holds:
 * since schema step 28 they are columns, a job's in its job_queues row and
 * the pool's in pool_task_counts' one row, which since step 40 holds the
 * finished jobs' tasks only: the pool's counts add the running jobs' rows.
 */
export const COUNTER_ROWS_SQL = {
  job_task_counts: STATE_COLUMNS.map(
    ([state, c]) => `SELECT job_id, '${state}' AS state, ${c} AS n FROM job_queues`,
  ).join(" UNION ALL "),
  task_counts: STATE_COLUMNS.map(
    ([state, c]) =>
      `SELECT '${state}' AS state, ${c} + (SELECT COALESCE(SUM(q.${c}), 0) FROM job_queues q
         JOIN jobs j ON j.job_id = q.job_id WHERE j.terminal_state IS NULL) AS n FROM pool_task_counts`,
  ).join(" UNION ALL "),
};

export interface PoolSnapshot {
  nodes: Row[];
  jobs: Row[];
  tasks: Row[];
  leases: Row[];
  events: Row[];
  /** The armed alarm, or undefined when the snapshot cannot see it. */
  alarm?: number | null;
  /**
   * The counter tables (docs/protocol.md §12, §13), or undefined for a pool from before
   * them; the scheduling ones are absent for a pool from before docs/protocol.md §13.
   */
  counters?: {
    job_task_counts: Row[];
    task_counts: Row[];
    job_counts: Row[];
    classes: Row[];
    job_queues?: Row[];
    queue_classes?: Row[];
    tenant_shares?: Row[];
    owner_replicas?: Row[];
  };
  /**
   * An operator released a held-back node (POST /nodes/{id}/release). That
   * resets the node without an event, so the ledger no longer says when a
   * node was held and the hold replay is skipped.
   */
  released?: boolean;
  /** Jobs archived to R2: their events are gone, so the hold replay is skipped too. */
  archived?: number;
}

/** Every invariant violation in the pool, as readable sentences. */
export function violations(s: PoolSnapshot): string[] {
  const out: string[] = [];
  const STATES = ["PENDING", "LEASED", "COMPLETED", "FAILED", "CANCELLED"];
  const leasesOf = new Map<number, Row[]>();
  for (const l of s.leases) leasesOf.set(l.task_seq as number, [...(leasesOf.get(l.task_seq as number) ?? []), l]);
  const nodes = new Map(s.nodes.map((n) => [n.node_id as string, n]));
  const eventsOf = new Map<string, Row[]>();
  for (const e of s.events) {
    const taskId = (JSON.parse(e.data as string) as { task_id?: string }).task_id;
    if (taskId === undefined) continue;
    const key = `${e.job_id}/${taskId}`;
    eventsOf.set(key, [...(eventsOf.get(key) ?? []), e]);
  }
  const cancelledJobs = new Set(s.jobs.filter((j) => j.terminal_state === "CANCELLED").map((j) => j.job_id as string));

  for (const t of s.tasks) {
    const id = `${t.job_id}/${t.task_id}`;
    const leases = leasesOf.get(t.seq as number) ?? [];
    const live = leases.filter((l) => l.status === "live");
    if (!STATES.includes(t.state as string)) out.push(`${id}: unknown state ${t.state}`);
    // docs/protocol.md §14: a replicated task's replicas are concurrent leases, each on
    // a node that holds or ran no other replica of it.
    const replicated = ((t.replicas as number | undefined) ?? 1) > 1;
    const open = t.state === "PENDING" || t.state === "LEASED";
    if (replicated) {
      if (!open && live.length > 0) out.push(`${id}: ${t.state} but holds ${live.length} live replicas`);
      if (leases.some((l) => !((l.replica as number) > 0))) out.push(`${id}: replicated, with a lease of no replica`);
      const nodesRan = leases.map((l) => l.node_id);
      if (new Set(nodesRan).size !== nodesRan.length)
        out.push(`${id}: two replicas on one node (${nodesRan.join(", ")})`);
      const numbers = leases.map((l) => l.replica as number).sort((a, b) => a - b);
      if (numbers.some((n, i) => n !== i + 1)) out.push(`${id}: replicas numbered ${numbers.join(", ")}`);
    } else if (t.state === "LEASED") {
      if (live.length !== 1) out.push(`${id}: LEASED with ${live.length} live leases`);
      else if (live[0]!.lease_id !== t.lease_id) out.push(`${id}: its live lease is not its current lease`);
    } else if (live.length > 0) out.push(`${id}: ${t.state} but holds ${live.length} live leases`);
    const accepted = leases.filter((l) => l.status === "completed");
    if (t.state === "COMPLETED" && t.accepted_object === null) out.push(`${id}: COMPLETED with no accepted object`);
    // A replicated task completes on a quorum of committed replicas; any other on exactly one commit.
    if (t.state === "COMPLETED" && (replicated ? accepted.length < 1 : accepted.length !== 1)) {
      out.push(`${id}: COMPLETED with ${accepted.length} accepted commits`);
    }
    if (!replicated && t.state !== "COMPLETED" && accepted.length > 0)
      out.push(`${id}: ${t.state} but has an accepted commit`);
    // docs/protocol.md §13: a lost worker does not use an attempt. Columns absent (a pool
    // from before §13) read as 0: every expiry then used an attempt.
    const losses = (t.worker_losses as number | undefined) ?? 0;
    const maxLosses = (t.max_worker_losses as number | undefined) ?? 0;
    const failures = (t.attempts_used as number) - losses;
    if (failures > (t.max_attempts as number))
      out.push(
        `${id}: ${failures} attempts (${t.attempts_used} leases, ${losses} worker losses) > max ${t.max_attempts}`,
      );
    const expired = leases.filter((l) => l.status === "expired").length;
    const expectedLosses = maxLosses > 0 ? expired : 0;
    if (losses !== expectedLosses)
      out.push(`${id}: ${losses} worker losses but ${expectedLosses} expired leases count as losses`);
    if (maxLosses > 0 && losses > maxLosses) out.push(`${id}: ${losses} worker losses > max ${maxLosses}`);
    // docs/protocol.md §14: replicas use no attempts; a replicated task counts its ended
    // (failed or expired) replicas, plus the one under way since the last.
    const ended = leases.filter((l) => l.status === "failed" || l.status === "expired").length;
    if ((t.replicas as number | undefined) !== undefined && (t.replicas as number) > 1) {
      const used = t.attempts_used as number;
      if (used < ended || used > ended + 1 || used > leases.length)
        out.push(`${id}: attempts_used ${used} but ${ended} of its ${leases.length} replicas ended`);
    } else if (t.attempts_used !== leases.length)
      out.push(`${id}: attempts_used ${t.attempts_used} but ${leases.length} leases issued`);
    for (const l of leases) {
      const node = nodes.get(l.node_id as string);
      if (!node) out.push(`${id}: leased to unregistered node ${l.node_id}`);
      else if (!eligible(JSON.parse(t.payload as string), nodeView(JSON.parse(node.registration as string)))) {
        out.push(`${id}: leased to ${l.node_id}, which the gate refuses`);
      }
    }
    // The ledger replays to the task's state.
    const replayed = replay(eventsOf.get(id) ?? [], cancelledJobs.has(t.job_id as string));
    // A replica's claim may leave its task PENDING: the ledger says only that it is open.
    const opened = (state: string) => (replicated && (state === "PENDING" || state === "LEASED") ? "open" : state);
    if (opened(replayed) !== opened(t.state as string))
      out.push(`${id}: state ${t.state} but its events replay to ${replayed}`);
    const commits = (eventsOf.get(id) ?? []).filter((e) => e.type === "TASK_COMMIT_ACCEPTED").length;
    if (commits !== (t.state === "COMPLETED" ? 1 : 0)) out.push(`${id}: ${commits} TASK_COMMIT_ACCEPTED events`);
  }

  for (const j of s.jobs) {
    const counts: TaskCounts = { PENDING: 0, LEASED: 0, COMPLETED: 0, FAILED: 0, CANCELLED: 0 };
    for (const t of s.tasks) if (t.job_id === j.job_id) counts[t.state as keyof TaskCounts]++;
    const derived = deriveJobState(counts);
    const terminal = ["SUCCEEDED", "FAILED", "CANCELLED"];
    if (j.terminal_state === null && terminal.includes(derived))
      out.push(`job ${j.job_id}: derives ${derived} but no terminal transition was recorded`);
    if (j.terminal_state !== null && j.terminal_state !== "CANCELLED" && derived !== j.terminal_state) {
      out.push(`job ${j.job_id}: recorded ${j.terminal_state} but derives ${derived}`);
    }
    if (j.terminal_state === "CANCELLED" && counts.PENDING + counts.LEASED > 0)
      out.push(`job ${j.job_id}: CANCELLED with live tasks`);
    const ends = s.events.filter(
      (e) => e.job_id === j.job_id && (e.type === "JOB_SUCCEEDED" || e.type === "JOB_FAILED"),
    ).length;
    if (ends !== (j.terminal_state === "SUCCEEDED" || j.terminal_state === "FAILED" ? 1 : 0))
      out.push(`job ${j.job_id}: ${ends} terminal events`);
  }

  if (s.counters) out.push(...counterViolations(s, s.counters));

  for (const n of s.nodes) {
    const held = (n.held_until_ms as number | undefined) ?? 0;
    const run = (n.consecutive_failures as number | undefined) ?? 0;
    if (held > 0 && holdBackMs(run) === 0)
      out.push(`node ${n.node_id}: held until ${held} after only ${run} consecutive failures`);
  }
  if (!s.released && !s.archived) out.push(...replayHolds(s.events).violations);

  // A live lease is looked at (check_ms, schema step 25) no later than its deadline, and the alarm by then.
  const live = s.leases.filter((l) => l.status === "live");
  for (const l of live)
    if ((l.check_ms as number) > (l.deadline_ms as number))
      out.push(`lease ${l.lease_id}: its deadline ${l.deadline_ms} is before the alarm looks at it (${l.check_ms})`);
  const liveDeadlines = live.map((l) => l.check_ms as number);
  if (s.alarm !== undefined && liveDeadlines.length > 0 && (s.alarm === null || s.alarm > Math.min(...liveDeadlines))) {
    out.push(`alarm ${s.alarm} is not armed by the earliest live deadline ${Math.min(...liveDeadlines)}`);
  }
  return out;
}

/** The counters the object keeps must equal a recount of the tables (zero rows may be absent). */
function counterViolations(s: PoolSnapshot, c: NonNullable<PoolSnapshot["counters"]>): string[] {
  const out: string[] = [];
  const compare = (what: string, kept: Row[], key: (r: Row) => string, recount: Map<string, number>) => {
    const keptMap = new Map(kept.map((r) => [key(r), r.n as number]));
    for (const k of new Set([...keptMap.keys(), ...recount.keys()])) {
      if ((keptMap.get(k) ?? 0) !== (recount.get(k) ?? 0)) {
        out.push(`${what} ${k}: counter ${keptMap.get(k) ?? 0} but ${recount.get(k) ?? 0} counted`);
      }
    }
  };
  const tally = (rows: Row[], key: (r: Row) => string, include: (r: Row) => boolean = () => true) => {
    const m = new Map<string, number>();
    for (const r of rows) if (include(r)) m.set(key(r), (m.get(key(r)) ?? 0) + 1);
    return m;
  };
  compare(
    "tasks of job and state",
    c.job_task_counts,
    (r) => `${r.job_id}/${r.state}`,
    tally(s.tasks, (t) => `${t.job_id}/${t.state}`),
  );
  compare(
    "tasks in state",
    c.task_counts,
    (r) => `${r.state}`,
    tally(s.tasks, (t) => `${t.state}`),
  );
  compare(
    "jobs in state",
    c.job_counts,
    (r) => `${r.state}`,
    tally(s.jobs, (j) => `${j.terminal_state ?? "RUNNING"}`),
  );
  if (c.job_queues) {
    const pending = tally(
      s.tasks,
      (t) => `${t.job_id}`,
      (t) => t.state === "PENDING",
    );
    compare(
      "pending tasks of job",
      c.job_queues.map((r) => ({ ...r, n: r.pending ?? 0 })),
      (r) => `${r.job_id}`,
      pending,
    );
    const losses = new Map<string, number>();
    for (const t of s.tasks) {
      const key = `${t.job_id}`;
      losses.set(key, (losses.get(key) ?? 0) + ((t.worker_losses as number | undefined) ?? 0));
    }
    compare(
      "worker losses of job",
      c.job_queues.map((r) => ({ ...r, n: r.worker_losses ?? 0 })),
      (r) => `${r.job_id}`,
      losses,
    );
    // A tenant's share at a priority is active while any of its jobs there has pending tasks.
    if (c.tenant_shares) {
      compare(
        "active jobs of tenant at priority",
        c.tenant_shares.map((r) => ({ ...r, n: r.active ?? 0 })),
        (r) => `${r.priority}/${r.tenant}`,
        tally(
          c.job_queues,
          (q) => `${q.priority}/${q.tenant}`,
          (q) => (pending.get(`${q.job_id}`) ?? 0) > 0,
        ),
      );
      for (const r of c.tenant_shares) {
        if ((r.active as number) <= 0)
          out.push(`tenant share ${r.priority}/${r.tenant}: a row with active ${r.active}`);
      }
    }
  }
  if (c.queue_classes) {
    // A job's classes carry its priority (step 10), so a level's seek finds exactly its jobs.
    const priorities = new Map((c.job_queues ?? []).map((q) => [`${q.job_id}`, q.priority]));
    for (const r of c.queue_classes) {
      if ("priority" in r && priorities.has(`${r.job_id}`) && r.priority !== priorities.get(`${r.job_id}`))
        out.push(
          `queue class ${r.job_id}/${r.class_id}: priority ${r.priority}, its job's is ${priorities.get(`${r.job_id}`)}`,
        );
    }
    compare(
      "pending tasks of job and class",
      c.queue_classes.map((r) => ({ ...r, n: r.pending ?? 0 })),
      (r) => `${r.job_id}/${r.class_id}`,
      tally(
        s.tasks,
        (t) => `${t.job_id}/${t.class_id}`,
        (t) => t.state === "PENDING",
      ),
    );
  }
  if (c.owner_replicas) {
    const replicasOf = new Map<number, Row[]>();
    for (const l of s.leases)
      if ((l.replica as number) > 0)
        replicasOf.set(l.task_seq as number, [...(replicasOf.get(l.task_seq as number) ?? []), l]);
    // A task with a replica issued is replicating (step 14): out of the fresh head's index.
    for (const t of s.tasks) {
      const replicas = replicasOf.get(t.seq as number) ?? [];
      if (replicas.length > 0 && t.replicating !== 1)
        out.push(`task ${t.job_id}/${t.task_id}: ${replicas.length} replicas issued but not replicating`);
    }
    const replicating = (t: Row) => t.state === "PENDING" && t.replicating === 1;
    compare(
      "replicating pending tasks of job and class",
      (c.queue_classes ?? []).map((r) => ({ ...r, n: r.replicating ?? 0 })),
      (r) => `${r.job_id}/${r.class_id}`,
      tally(s.tasks, (t) => `${t.job_id}/${t.class_id}`, replicating),
    );
    const ranBy = new Map<string, number>();
    for (const t of s.tasks.filter(replicating)) {
      const owners = new Set((replicasOf.get(t.seq as number) ?? []).map((l) => l.owner));
      for (const owner of owners) {
        const k = `${t.job_id}/${t.class_id}/${owner}`;
        ranBy.set(k, (ranBy.get(k) ?? 0) + 1);
      }
    }
    compare(
      "replicating pending tasks an owner ran, of job and class",
      c.owner_replicas.map((r) => ({ ...r, n: r.pending ?? 0 })),
      (r) => `${r.job_id}/${r.class_id}/${r.owner}`,
      ranBy,
    );
  }
  if (c.classes.some((r) => "queued_jobs" in r)) {
    // Schema step 35: a class counts its (job, class) queues with pending tasks, one pending task of each.
    const queued = new Map(s.tasks.filter((t) => t.state === "PENDING").map((t) => [`${t.job_id}/${t.class_id}`, t]));
    compare(
      "queued jobs of class",
      c.classes.map((r) => ({ ...r, n: r.queued_jobs ?? 0 })),
      (r) => `${r.class_id}`,
      tally([...queued.values()], (t) => `${t.class_id}`),
    );
  } else
    compare(
      "pending tasks of class",
      c.classes.map((r) => ({ ...r, n: r.pending ?? 0 })),
      (r) => `${r.class_id}`,
      tally(
        s.tasks,
        (t) => `${t.class_id}`,
        (t) => t.state === "PENDING",
      ),
    );
  // Schema step 33: a queue row is queued (in its table's index) exactly while its pending count is above 0.
  for (const [table, rows] of [
    ["job", c.job_queues],
    ["job and class", c.queue_classes],
    ["class", c.classes],
  ] as const) {
    for (const r of rows ?? []) {
      const count = (r.queued_jobs ?? r.pending) as number;
      if ("queued" in r && r.queued !== (count > 0 ? 1 : 0))
        out.push(`queue of ${table} ${JSON.stringify(r)}: queued ${r.queued} with ${count} pending`);
    }
  }
  return out;
}

/** A task's state as its events alone say it is. */
function replay(events: Row[], jobCancelled: boolean): string {
  let state = "none";
  for (const e of events) {
    switch (e.type) {
      case "TASK_CREATED":
      case "TASK_REQUEUED":
        state = "PENDING";
        break;
      case "LEASE_CLAIMED":
        state = "LEASED";
        break;
      case "TASK_COMMIT_ACCEPTED":
        state = "COMPLETED";
        break;
      case "TASK_EXHAUSTED":
        state = "FAILED";
        break;
    }
  }
  // A cancelled job's unfinished tasks are cancelled; v1alpha1 has no event for it.
  if (jobCancelled && (state === "PENDING" || state === "LEASED")) state = "CANCELLED";
  return state;
}

/** What the ledger says about held-back nodes (docs/protocol.md §13). */
export interface HoldReplay {
  /** Each node the ledger shows held back at least once, with how many failures started or extended a hold. */
  held: Map<string, number>;
  violations: string[];
}

/**
 * Replays the nodes' runs of failures from the ledger, as the pool keeps
 * them: each TASK_ATTEMPT_FAILED or LEASE_EXPIRED of a node adds one, a
 * TASK_COMMIT_ACCEPTED from it ends the run, and a run long enough holds the
 * node from that event's time for `holdBackMs`. A LEASE_CLAIMED by a node
 * inside its hold is a violation. Valid only over a whole ledger with no
 * release, and only for history written under docs/protocol.md §13.
 */
export function replayHolds(events: readonly Row[]): HoldReplay {
  const run = new Map<string, number>();
  const heldUntil = new Map<string, number>();
  const held = new Map<string, number>();
  const violations: string[] = [];
  const ordered = [...events].sort((a, b) => (a.seq as number) - (b.seq as number));
  for (const e of ordered) {
    const data = JSON.parse(e.data as string) as {
      node_id?: string;
      verdict?: string;
      replicas?: Array<{ node_id: string; verdict: string }>;
    };
    const nodeId = data.node_id;
    if (nodeId === undefined) continue;
    const ts = e.ts_ms as number;
    switch (e.type) {
      case "TASK_COMMIT_REJECTED":
      case "TASK_ATTEMPT_FAILED":
      case "LEASE_EXPIRED": {
        // Only a replica outvoted by its quorum fails (docs/protocol.md §14); a late commit does not.
        if (e.type === "TASK_COMMIT_REJECTED" && data.verdict !== "invalid") break;
        const n = (run.get(nodeId) ?? 0) + 1;
        run.set(nodeId, n);
        const hold = holdBackMs(n);
        if (hold > 0) {
          heldUntil.set(nodeId, ts + hold);
          held.set(nodeId, (held.get(nodeId) ?? 0) + 1);
        }
        break;
      }
      case "TASK_COMMIT_ACCEPTED":
        // Every replica in the quorum's agreement ends its node's run.
        for (const winner of data.replicas?.filter((r) => r.verdict === "valid").map((r) => r.node_id) ?? [nodeId]) {
          run.set(winner, 0);
          heldUntil.set(winner, 0);
        }
        break;
      case "LEASE_CLAIMED": {
        const until = heldUntil.get(nodeId) ?? 0;
        if (ts < until) {
          violations.push(`event ${e.seq}: ${e.job_id} leased to a held-back node ${nodeId} (held until ${until})`);
        }
        break;
      }
    }
  }
  return { held, violations };
}
