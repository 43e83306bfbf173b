import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { EventTally, eventTally, writeTally } from "../../../src/pool/ledger/tally";
import { MIGRATIONS, migrate } from "../../../src/pool/schema/schema";
import type { Lease } from "../../../src/protocol/tasks";
import { call, claim, freshPool, json, register, sha256, stub, submitJob, trialsJob, upload } from "../helpers";
import { rewindSchema } from "../schema/schema-history";

describe("GET /metrics", () => {
  it("counts tasks, leases, claims, commits and nodes in Prometheus text", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitJob(pool, trialsJob(3));
    const a = await json<Lease>(await claim(pool, "n1"));
    await upload(pool, `jobs/${a.job_id}/${a.task_id}/metrics.json`, "{}");
    await call(pool, "POST", `/attempts/${a.lease_id}/complete`, { output_sha256: await sha256("{}") });
    await call(pool, "POST", `/attempts/${a.lease_id}/complete`, { output_sha256: await sha256("{}") });
    await claim(pool, "n1");

    const r = await call(pool, "GET", "/metrics");
    expect(r.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const lines = (await r.text()).split("\n");
    for (const line of [
      `flashedge_tasks{pool="${pool}",state="PENDING"} 1`,
      `flashedge_tasks{pool="${pool}",state="LEASED"} 1`,
      `flashedge_tasks{pool="${pool}",state="COMPLETED"} 1`,
      `flashedge_leases_live{pool="${pool}"} 1`,
      `flashedge_claims_total{pool="${pool}"} 2`,
      `flashedge_commits_total{pool="${pool}",result="accepted"} 1`,
      `flashedge_commits_total{pool="${pool}",result="rejected"} 1`,
      `flashedge_nodes{pool="${pool}",online="true"} 1`,
    ]) {
      expect(lines).toContain(line);
    }
  });

  it("counts every call the pool object serves, and the time its handlers ran", async () => {
    const pool = freshPool();
    const load = async () => {
      const text = await (await call(pool, "GET", "/metrics")).text();
      const value = (name: string) => Number(new RegExp(`^${name}\\{pool="${pool}"\\} (\\S+)$`, "m").exec(text)?.[1]);
      return { requests: value("flashedge_requests_served_total"), busy: value("flashedge_object_busy_seconds_total") };
    };
    const first = await load();
    expect(first.busy).toBeGreaterThanOrEqual(0);
    // The read just made, then a registration, a heartbeat and a claim: one call each.
    await register(pool, "n1");
    await call(pool, "POST", "/nodes/n1/heartbeat", { node_id: "n1" });
    expect((await claim(pool, "n1")).status).toBe(204);
    const second = await load();
    expect(second.requests).toBe(first.requests + 4);
    // A 5,000-task submission runs for milliseconds in the object: busy time grows.
    await submitJob(pool, trialsJob(5000));
    const third = await load();
    expect(third.requests).toBe(second.requests + 2);
    expect(third.busy).toBeGreaterThan(second.busy);
  });

  it("counts the nodes held back after failing 5 attempts in a row", async () => {
    const pool = freshPool();
    await register(pool, "flaky");
    await register(pool, "steady");
    const heldBack = async () =>
      (await (await call(pool, "GET", "/metrics")).text())
        .split("\n")
        .filter((line) => line.startsWith("flashedge_nodes_held_back"));
    expect(await heldBack()).toEqual([`flashedge_nodes_held_back{pool="${pool}"} 0`]);

    await submitJob(pool, trialsJob(5));
    for (let i = 0; i < 5; i++) {
      const lease = await json<Lease>(await claim(pool, "flaky"));
      await call(pool, "POST", `/attempts/${lease.lease_id}/fail`, { reason: "boom" });
    }
    expect(await heldBack()).toEqual([`flashedge_nodes_held_back{pool="${pool}"} 1`]);
    await call(pool, "POST", "/nodes/flaky/release");
    expect(await heldBack()).toEqual([`flashedge_nodes_held_back{pool="${pool}"} 0`]);
  });

  it("a pool migrated from before the event tally gets it backfilled from the ledger", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitJob(pool, trialsJob(2));
    await claim(pool, "n1");
    const counts = await runInDurableObject(stub(pool), (_o, state) => {
      const sql = state.storage.sql;
      rewindSchema(sql, 2);
      state.storage.transactionSync(() => migrate(sql));
      return {
        version: sql.exec<{ version: number }>("SELECT version FROM schema_version").one().version,
        rows: sql.exec("SELECT type, n FROM event_counts ORDER BY type").toArray(),
      };
    });
    expect(counts.version).toBe(MIGRATIONS.length);
    expect(counts.rows).toEqual([
      { type: "BACKEND_SELECTED", n: 1 },
      { type: "JOB_ACCEPTED", n: 1 },
      { type: "LEASE_CLAIMED", n: 1 },
      { type: "TASK_CREATED", n: 2 },
    ]);
  });

  // docs/protocol.md §16: the tally is counted in memory and written by the alarm, not a row per event.
  it("counts events in memory at once and writes them once, within TALLY_WRITE_MS; a rolled-back change counts nothing", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitJob(pool, trialsJob(2));
    const lease = await json<Lease>(await claim(pool, "n1"));
    expect((await call(pool, "POST", `/attempts/${lease.lease_id}/heartbeat`)).status).toBe(200);
    const claims = async () =>
      Number(/^flashedge_claims_total\{[^}]*\} (\S+)$/m.exec(await (await call(pool, "GET", "/metrics")).text())?.[1]);
    const renewals = async () =>
      Number(
        /^flashedge_events_total\{[^}]*type="LEASE_RENEWED"\} (\S+)$/m.exec(
          await (await call(pool, "GET", "/metrics")).text(),
        )?.[1],
      );
    expect([await claims(), await renewals()]).toEqual([1, 1]);
    const before = await runInDurableObject(stub(pool), (_o, state) => ({
      rows: state.storage.sql.exec("SELECT type FROM event_counts").toArray().length,
      due: eventTally(state.storage.sql).due()! - Date.now(),
    }));
    // Nothing written yet, and the alarm will write it within the bound.
    expect(before.rows).toBe(0);
    expect(before.due).toBeLessThanOrEqual(30_000);
    const written = await runInDurableObject(stub(pool), (_o, state) => {
      state.storage.transactionSync(() => writeTally(state.storage.sql));
      return state.storage.sql.exec("SELECT type, n FROM event_counts ORDER BY type").toArray();
    });
    expect(written).toContainEqual({ type: "LEASE_CLAIMED", n: 1 });
    expect(written).toContainEqual({ type: "LEASE_RENEWED", n: 1 });
    // Written once: the metric does not count it twice.
    expect([await claims(), await renewals()]).toEqual([1, 1]);

    // A transaction that rolls back takes its counts back.
    const tally = new EventTally();
    tally.begin();
    tally.add("LEASE_CLAIMED", 1, Date.now());
    tally.end(false);
    tally.begin();
    tally.add("TASK_CREATED", 2, Date.now());
    tally.end(true);
    expect(tally.take()).toEqual([["TASK_CREATED", 2]]);
  });
});
