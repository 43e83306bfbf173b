// What a pool's work costs (docs/protocol.md §16), counted through the
// metrics an operator reads: the SQLite rows each request kind writes and the
// R2 operations it makes, summed over every shard. Counts, not timings: the
// same requests write the same rows, so each is held to a bound. Where §16's
// budget is met (a renewal, an idle agent's loop, an upload's R2 operations)
// the bound is the budget; a task's lifecycle (§16: ≤ 20) is held to today's
// count, a ratchet that each cut lowers.

import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { writeTally } from "../../../src/pool/ledger/tally";
import type { Lease } from "../../../src/protocol/tasks";
import { DEFAULT_JOB_RETENTION_SECONDS } from "../../../src/rules/retention";
import {
  call,
  callHolding,
  claim,
  delivered,
  freshPool,
  jobStub,
  json,
  nodeIdAt,
  register,
  sha256,
  shardOfJob,
  shardStubs,
  shardsOf,
  submitJob,
  trialsJob,
  upload,
} from "../helpers";

const RETENTION_MS = DEFAULT_JOB_RETENTION_SECONDS * 1000;

type Costs = { written: number; r2A: number; r2B: number };

/** The pool's counters now, summed over its shards (or the one `shard` names, as `shard="2"`). */
async function costs(pool: string, shard = ""): Promise<Costs> {
  const text = await (await call(pool, "GET", "/metrics")).text();
  const total = (name: string, labels = "") => {
    let sum = 0;
    for (const m of text.matchAll(new RegExp(`^${name}\\{pool="${pool}"[^}]*${labels}\\} (\\S+)$`, "gm")))
      sum += Number(m[1]);
    return sum;
  };
  return {
    written: total("flashedge_sql_rows_written_total", shard),
    r2A: total("flashedge_r2_operations_total", `${shard}[^}]*class="A"`),
    r2B: total("flashedge_r2_operations_total", `${shard}[^}]*class="B"`),
  };
}

/** What `request` cost, by the counters before and after it. */
async function costOf(pool: string, request: () => Promise<unknown>, shard = ""): Promise<Costs> {
  const before = await costs(pool, shard);
  await request();
  const after = await costs(pool, shard);
  return { written: after.written - before.written, r2A: after.r2A - before.r2A, r2B: after.r2B - before.r2B };
}

describe("what a task's requests cost", () => {
  it("each request kind writes at most its rows, and an output's upload is one R2 write", async () => {
    const pool = freshPool();
    const tasks = 20;
    let jobId = "";
    const submit = await costOf(pool, async () => {
      jobId = (await submitJob(pool, trialsJob(tasks))).job_id;
    });
    // At several shards, the dearer case: a node homed at another shard than the job's.
    const n1 = nodeIdAt(pool, "n1", (shardOfJob(pool, jobId) + 1) % shardsOf(pool));
    await register(pool, n1);
    // One task's requests, each counted.
    const cycle = async () => {
      let lease!: Lease;
      const claimed = await costOf(pool, async () => {
        const r = await claim(pool, n1);
        expect(r.status).toBe(200);
        lease = await json<Lease>(r);
      });
      const renewal = await costOf(pool, async () =>
        expect((await call(pool, "POST", `/attempts/${lease.lease_id}/heartbeat`)).status).toBe(200),
      );
      const heartbeat = await costOf(pool, async () =>
        expect((await call(pool, "POST", `/nodes/${n1}/heartbeat`, { node_id: n1, status: "online" })).status).toBe(
          200,
        ),
      );
      const output = JSON.stringify({ score: 0.5 });
      const key = `jobs/${lease.job_id}/${lease.task_id}/metrics.json`;
      const uploaded = await costOf(pool, async () => expect((await upload(pool, key, output)).status).toBe(200));
      const committed = await costOf(pool, async () => {
        const r = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, {
          output_sha256: await sha256(output),
        });
        expect(await json(r)).toMatchObject({ accepted: true });
      });
      const read = await costOf(pool, async () =>
        expect((await call(pool, "GET", `/artifacts/${key}`)).status).toBe(200),
      );
      return { claimed, renewal, heartbeat, uploaded, committed, read };
    };
    // The job's first task writes the rows a pool writes once (its first event of each type, its
    // first counter of each state, at 4 shards the node's passport): the second is what every next one costs.
    await cycle();
    const { claimed, renewal, heartbeat, uploaded, committed, read } = await cycle();
    const lifecycle = submit.written / tasks + claimed.written + uploaded.written + committed.written;
    console.log(
      `COSTS S=${shardsOf(pool)} ${JSON.stringify({ submitPerTask: submit.written / tasks, claim: claimed.written, renewal: renewal.written, heartbeat: heartbeat.written, upload: uploaded.written, commit: committed.written, lifecycle })}`,
    );

    // An upload is one PUT and no read; the commit checks the hash the upload recorded; a download is one GET.
    expect(uploaded).toMatchObject({ r2A: 1, r2B: 0 });
    expect(committed).toMatchObject({ r2A: 0, r2B: 0 });
    expect(read).toMatchObject({ written: 0, r2A: 0, r2B: 1 });
    // Liveness is soft (docs/protocol.md §16): a node heartbeat just after other requests writes nothing,
    // and a renewal only its lease's row, at 4 shards too, with the node homed elsewhere: its passport's last
    // request waits in memory, and its home heard of the deadline in the claim's answer.
    expect(heartbeat.written).toBe(0);
    expect(renewal.written).toBeLessThanOrEqual(1);
    // At 4 shards the commit also tells the node's home and the summary (docs/sharding.md §8.3).
    expect(lifecycle).toBeLessThanOrEqual(shardsOf(pool) === 1 ? 27.5 : 32.5);
  });
});

describe("what archiving a job costs", () => {
  it("deletes each finished task's rows, and counts the job out once, not per task", async () => {
    const pool = freshPool();
    const tasks = 10;
    const { job_id: jobId } = await submitJob(pool, trialsJob(tasks));
    await register(pool, "n1");
    for (let i = 0; i < tasks; i++) {
      const lease = await json<Lease>(await claim(pool, "n1"));
      const output = JSON.stringify({ score: i });
      expect((await upload(pool, `jobs/${jobId}/${lease.task_id}/metrics.json`, output)).status).toBe(200);
      const r = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, {
        output_sha256: await sha256(output),
      });
      expect(await json(r)).toMatchObject({ accepted: true });
    }
    // What the earlier requests left to write is theirs, not the archive's: the outbox rows that told the node's
    // home (at 4 shards), the event tally an alarm writes 30 s after its first count (src/pool/ledger/tally.ts).
    // And the archive is the job's shard's work: at 4 shards only its rows are counted, since another shard's tick
    // may write down what it knew of the node meanwhile (a loaded CI machine counted 74 here once).
    await delivered(pool);
    for (const shard of shardStubs(pool))
      await runInDurableObject(shard, (_o, state) =>
        state.storage.transactionSync(() => writeTally(state.storage.sql)),
      );
    // A week later, by the job's finish: the alarm archives it (at 4 shards a tick's alarm may run first).
    const archived = await costOf(
      pool,
      async () => {
        await runInDurableObject(jobStub(pool, jobId), (_o, state) => {
          state.storage.sql.exec("UPDATE jobs SET finished_ms = ? WHERE job_id = ?", Date.now() - RETENTION_MS, jobId);
        });
        await runDurableObjectAlarm(jobStub(pool, jobId));
      },
      shardsOf(pool) > 1 ? `shard="${shardOfJob(pool, jobId)}"` : "",
    );
    const counted = await runInDurableObject(jobStub(pool, jobId), (_o, state) => ({
      tasks: state.storage.sql.exec("SELECT COUNT(*) AS n FROM tasks").one().n,
      pool: state.storage.sql.exec("SELECT * FROM pool_task_counts").one(),
    }));
    console.log(`ARCHIVE S=${shardsOf(pool)} ${JSON.stringify({ tasks, written: archived.written })}`);
    // Per task: its lease, its two event rows (a claim's, a commit's), its row and its artifact. Per job: its
    // archive's record (4, marked done 1), its own events (3), its run of TASK_CREATED (1), its row (2), its
    // queue rows (2) and the pool's counts (1). The count trigger ran per task before schema step 38: 92 rows
    // for these 10 tasks; each task's TASK_CREATED was a row before step 41: 73.
    expect(counted).toEqual({ tasks: 0, pool: expect.objectContaining({ pending: 0, leased: 0, completed: 0 }) });
    expect(archived.written).toBeLessThanOrEqual(5 * tasks + 14);
  });
});

describe("what an idle agent costs", () => {
  // The agent's loop (test/support/agent.mjs, the wrangler.toml hold): a claim held up to 12.5 s and
  // answered 204, and a node heartbeat every 5 s beside it, for over a minute of real time: the node's row
  // is written five minutes ahead (src/pool/nodes/liveness.ts), so at most once in the window.
  const HOLD_S = 12.5;
  const HEARTBEAT_MS = 5_000;
  const WINDOW_MS = 65_000;

  it("writes at most half a row a loop on average", { timeout: WINDOW_MS + 60_000 }, async () => {
    const pool = freshPool();
    const node = nodeIdAt(pool, "idle", 0);
    await register(pool, node);
    const before = await costs(pool);
    const started = Date.now();
    let loops = 0;
    const beats = setInterval(() => {
      void call(pool, "POST", `/nodes/${node}/heartbeat`, { node_id: node, status: "online" });
    }, HEARTBEAT_MS);
    try {
      while (Date.now() - started < WINDOW_MS) {
        const r = await callHolding(pool, HOLD_S, "POST", "/leases/claim", { node_id: node });
        expect(r.status).toBe(204);
        loops++;
      }
    } finally {
      clearInterval(beats);
    }
    const after = await costs(pool);
    const perLoop = (after.written - before.written) / loops;
    console.log(
      `IDLE S=${shardsOf(pool)} ${JSON.stringify({ loops, written: after.written - before.written, perLoop })}`,
    );
    expect(loops).toBeGreaterThanOrEqual(5);
    expect(perLoop).toBeLessThanOrEqual(0.5);
    // Still online all along: its last request is under 15 s old.
    const listed = await json<Array<{ node_id: string; online: boolean; last_heartbeat_age_s: number }>>(
      await call(pool, "GET", "/nodes"),
    );
    expect(listed.find((n) => n.node_id === node)).toMatchObject({ online: true });
    expect(listed.find((n) => n.node_id === node)!.last_heartbeat_age_s).toBeLessThan(15);
  });
});
