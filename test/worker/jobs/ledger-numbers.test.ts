// The ledger's numbers (src/pool/ledger/sequence.ts, docs/protocol.md §16):
// an event's seq, and a task's, comes from a block the object reserved
// ahead, so appending one writes its row and its job index and not the
// table's sequence. A seq is still never handed out twice: not once an
// archive deletes the newest rows, not after the object restarts, not after
// a transaction rolls back.

import { abortAllDurableObjects, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { RESERVE_BLOCK, ReservedSequence } from "../../../src/pool/ledger/sequence";
import { MeteredSql } from "../../../src/pool/metered-sql";
import { DEFAULT_JOB_RETENTION_SECONDS } from "../../../src/rules/retention";
import { call, freshPool, jobStub, json, register, shardOfJob, stub, submitJob, trialsJob } from "../helpers";

const seqsOf = async (pool: string, jobId: string) =>
  (await json<Array<{ seq: number }>>(await call(pool, "GET", `/jobs/${jobId}/events?limit=1000`))).map((e) => e.seq);

describe("the ledger's numbers", () => {
  it("are never handed out twice: not after the newest job is archived and its object restarts", async () => {
    const pool = freshPool();
    const first = await submitJob(pool, trialsJob(3));
    expect((await call(pool, "POST", `/jobs/${first.job_id}/cancel`)).status).toBe(200);
    const before = await seqsOf(pool, first.job_id);
    expect(before.length).toBeGreaterThan(3);
    const shard = shardOfJob(pool, first.job_id);
    // The tasks' seqs come from a reserved block the same way (src/pool/ledger/sequence.ts).
    const taskSeqs = (jobId: string) =>
      runInDurableObject(jobStub(pool, jobId), (_o, state) =>
        state.storage.sql
          .exec<{ seq: number }>("SELECT seq FROM tasks WHERE job_id = ? ORDER BY seq", jobId)
          .toArray()
          .map((t) => t.seq),
      );
    const tasksBefore = await taskSeqs(first.job_id);

    // A week on, the alarm archives the job: its events, the newest of its object, leave the table.
    await runInDurableObject(jobStub(pool, first.job_id), (_o, state) => {
      state.storage.sql.exec(
        "UPDATE jobs SET finished_ms = ? WHERE job_id = ?",
        Date.now() - DEFAULT_JOB_RETENTION_SECONDS * 1000,
        first.job_id,
      );
    });
    await runDurableObjectAlarm(jobStub(pool, first.job_id));
    const left = await runInDurableObject(
      jobStub(pool, first.job_id),
      (_o, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM events").one().n,
    );
    expect(left).toBe(0);

    // The object restarts, and a job on the same object appends again: past every number the first job had.
    await abortAllDurableObjects();
    let next = await submitJob(pool, trialsJob(2));
    while (shardOfJob(pool, next.job_id) !== shard) next = await submitJob(pool, trialsJob(2));
    await register(pool, "n1");
    const after = await seqsOf(pool, next.job_id);
    expect(Math.min(...after)).toBeGreaterThan(Math.max(...before));
    expect(Math.min(...(await taskSeqs(next.job_id)))).toBeGreaterThan(Math.max(...tasksBefore));
    // In the order appended, and the archived job's pages still read as they did.
    expect(after).toEqual([...after].sort((a, b) => a - b));
    expect(await seqsOf(pool, first.job_id)).toEqual(before);
  });

  it("cost a row per block reserved; after a rollback, a restart or a lost sequence row they start past every row", async () => {
    const pool = freshPool();
    await register(pool, "n1"); // an object with its schema
    const seen = await runInDurableObject(stub(pool), (_o, state) => {
      const sql = state.storage.sql;
      sql.exec(`CREATE TABLE ledger_probe (seq INTEGER PRIMARY KEY AUTOINCREMENT, job TEXT NOT NULL);
        CREATE INDEX ledger_probe_job ON ledger_probe (job, seq);`);
      const recorded = () =>
        sql.exec<{ seq: number }>("SELECT seq FROM sqlite_sequence WHERE name = 'ledger_probe'").toArray()[0]?.seq;
      let seqs = new ReservedSequence("ledger_probe");
      /** Appends `n` rows in one statement, as a submission's chunk does: the rows written, the block's included. */
      const append = (n: number) => {
        const metered = new MeteredSql(sql);
        const at = seqs.take(metered, n);
        metered.exec(
          "INSERT INTO ledger_probe (seq, job) SELECT ?1 + key, 'j' FROM json_each(?2)",
          at,
          JSON.stringify(Array(n).fill(0)),
        );
        return { at, written: metered.totals().rowsWritten };
      };
      const firstAppend = append(1);
      const tenMore = Array.from({ length: 10 }, () => append(1));
      const blockAfterTen = recorded();
      const crossing = append(RESERVE_BLOCK); // passes the block: one row reserves the next
      const blockAfterCrossing = recorded();

      // An archive deletes every row; a restart forgets the block: the next number is past both.
      sql.exec("DELETE FROM ledger_probe");
      seqs = new ReservedSequence("ledger_probe");
      const afterRestart = append(1);

      // A transaction that reserves and rolls back takes its reservation with it; read again, the
      // next number is still past every row committed.
      let rolledBack = 0;
      try {
        state.storage.transactionSync(() => {
          rolledBack = append(RESERVE_BLOCK + 5).at;
          throw new Error("roll back");
        });
      } catch {
        seqs.forget();
      }
      const afterRollback = append(1);
      const max = sql.exec<{ m: number }>("SELECT MAX(seq) AS m FROM ledger_probe").one().m;
      const recordedAtEnd = recorded();

      // A sequence row lost or behind its table: the next start still begins past the table's last seq.
      sql.exec("DELETE FROM sqlite_sequence WHERE name = 'ledger_probe'");
      seqs = new ReservedSequence("ledger_probe");
      const withoutRow = append(1);
      return {
        firstAppend,
        tenMore: tenMore.map((a) => a.written),
        tenAt: tenMore.map((a) => a.at),
        blockAfterTen,
        crossing,
        blockAfterCrossing,
        afterRestart,
        rolledBack,
        afterRollback,
        recordedAtEnd,
        max,
        withoutRow,
      };
    });
    // The first number reserves a block: one row for it, two for the event (its row and its job index).
    expect(seen.firstAppend).toEqual({ at: 1, written: 3 });
    expect(seen.tenMore).toEqual(Array(10).fill(2));
    expect(seen.tenAt).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(seen.blockAfterTen).toBe(1 + RESERVE_BLOCK);
    expect(seen.crossing).toEqual({ at: 12, written: 2 * RESERVE_BLOCK + 1 });
    expect(seen.blockAfterCrossing).toBe(11 + 2 * RESERVE_BLOCK);
    expect(seen.afterRestart.at).toBe(12 + 2 * RESERVE_BLOCK);
    expect(seen.rolledBack).toBe(seen.afterRestart.at + 1);
    expect(seen.afterRollback.at).toBeGreaterThan(seen.afterRestart.at);
    expect(seen.max).toBe(seen.afterRollback.at);
    expect(seen.recordedAtEnd).toBeGreaterThanOrEqual(seen.max);
    expect(seen.withoutRow.at).toBe(seen.max + 1);
  });
});
