// Races as races: many concurrent agents against one pool object, then the
// invariant checker over the whole state.

import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Lease } from "../../src/protocol/tasks";
import {
  addTasks,
  call,
  claim,
  freshPool,
  jobSpec,
  json,
  register,
  sha256,
  sleep,
  stub,
  task,
  upload,
} from "./helpers";
import { violations } from "./invariants";

/** A tiny seeded PRNG, so a failing interleaving can be replayed. */
function prng(seed: number) {
  return () => {
    seed = (seed * 1664525 + 1013904223) >>> 0;
    return seed / 2 ** 32;
  };
}

async function commit(pool: string, lease: Lease) {
  const bytes = JSON.stringify({ by: lease.node_id, attempt: lease.attempt_number });
  await upload(pool, `jobs/${lease.job_id}/${lease.task_id}/metrics.json`, bytes);
  return call(pool, "POST", `/attempts/${lease.lease_id}/complete`, { output_sha256: await sha256(bytes) });
}

describe("races", () => {
  it("a fleet of agents claiming, heartbeating, failing and committing concurrently keeps every invariant", async () => {
    const pool = freshPool();
    const random = prng(7);
    const nodes = Array.from({ length: 12 }, (_, i) => `n${i}`);
    await Promise.all(nodes.map((n, i) => register(pool, n, { local_datasets: i % 3 === 0 ? ["ds-a"] : [] }, i % 4)));
    const payloads = [{}, { gpus: 1 }, { gpus: 2 }, { local_inputs: ["ds-a"] }, { module: "m" }];
    await addTasks(
      pool,
      Array.from({ length: 40 }, (_, i) =>
        task(i % 2 ? "ja" : "jb", `t${i}`, payloads[i % payloads.length], { max_attempts: 3 }),
      ),
    );

    const agent = async (node: string) => {
      for (let step = 0; step < 12; step++) {
        const r = await claim(pool, node);
        if (r.status !== 200) continue;
        const lease = await json<Lease>(r);
        const roll = random();
        if (roll < 0.3) {
          await call(pool, "POST", `/attempts/${lease.lease_id}/fail`, { reason: "chaos" });
        } else {
          await call(pool, "POST", `/attempts/${lease.lease_id}/heartbeat`);
          // Duplicate completes, racing each other.
          await Promise.all([commit(pool, lease), commit(pool, lease)]);
        }
      }
    };
    await Promise.all(nodes.map(agent));
    expect(await violations(pool)).toEqual([]);
  }, 30_000);

  it("completes racing the alarm's expiry accept at most one commit per task", async () => {
    const pool = freshPool();
    await Promise.all(["a", "b"].map((n) => register(pool, n)));
    await addTasks(
      pool,
      Array.from({ length: 10 }, (_, i) => task("j", `t${i}`, {}, { lease_seconds: 0.05 })),
    );
    const leases = await Promise.all(Array.from({ length: 10 }, () => claim(pool, "a").then((r) => json<Lease>(r))));
    await sleep(40);
    const [commits] = await Promise.all([
      Promise.all(leases.map((l) => commit(pool, l).then((r) => json<{ accepted: boolean }>(r)))),
      runDurableObjectAlarm(stub(pool)),
      Promise.all(Array.from({ length: 10 }, () => claim(pool, "b"))),
    ]);
    // Each task is committed at most once, whoever won its race.
    const accepted = await runInDurableObject(
      stub(pool),
      (_o, s) =>
        s.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM leases WHERE status = 'completed'").one().n,
    );
    expect(accepted).toBe(commits.filter((c) => c.accepted).length);
    expect(await violations(pool)).toEqual([]);
  });

  it("cancel racing claims leaves no task leased in a cancelled job", async () => {
    const pool = freshPool();
    const nodes = Array.from({ length: 10 }, (_, i) => `n${i}`);
    await Promise.all(nodes.map((n) => register(pool, n)));
    const r = await call(
      pool,
      "POST",
      "/jobs",
      jobSpec({ type: "hyperparameter_search", parameters: { trials: Array.from({ length: 30 }, () => ({})) } }),
    );
    const job = await json<{ job_id: string }>(r);
    await Promise.all([
      ...nodes.map((n) => claim(pool, n)),
      call(pool, "POST", `/jobs/${job.job_id}/cancel`),
      ...nodes.map((n) => claim(pool, n)),
    ]);
    expect(await violations(pool)).toEqual([]);
    const tasks = await json<Array<{ state: string }>>(await call(pool, "GET", `/jobs/${job.job_id}/tasks`));
    expect(tasks.every((t) => t.state === "CANCELLED")).toBe(true);
  });

  it("re-registration racing claims never places work the registration refuses", async () => {
    const pool = freshPool();
    await register(pool, "cpu");
    await addTasks(
      pool,
      Array.from({ length: 20 }, (_, i) => task("j", `t${i}`, i % 2 ? { gpus: 1 } : {})),
    );
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        i % 3 ? claim(pool, "cpu") : register(pool, "cpu", { hostname: `h${i}`, labels: { round: String(i) } }),
      ),
    );
    const leased = await runInDurableObject(stub(pool), (_o, s) =>
      s.storage.sql.exec<{ payload: string }>("SELECT payload FROM tasks WHERE state = 'LEASED'").toArray(),
    );
    expect(leased.length).toBe(10);
    expect(leased.every((t) => !("gpus" in JSON.parse(t.payload)))).toBe(true);
    expect(await violations(pool)).toEqual([]);
  });
});

describe("the invariant checker", () => {
  const corruptions: Array<[string, string, RegExp]> = [
    [
      "a second live lease",
      "INSERT INTO leases SELECT 'ls-ffffffffffff', task_seq, node_id, attempt_number, issued_ms, deadline_ms, 'live' FROM leases LIMIT 1",
      /2 live leases/,
    ],
    ["a completion without a commit", "UPDATE tasks SET state = 'COMPLETED'", /accepted commits|replay/],
    ["attempts beyond the limit", "UPDATE tasks SET attempts_used = 9", /attempts/],
    ["a lease to a node the gate refuses", "UPDATE tasks SET payload = '{\"gpus\": 4}'", /gate refuses/],
    ["an unarmed alarm", "UPDATE leases SET deadline_ms = 1", /alarm/],
  ];
  it.each(corruptions)("notices %s", async (_name, corrupt, expected) => {
    const pool = freshPool();
    await register(pool, "n");
    await addTasks(pool, [task("j", "t")]);
    await claim(pool, "n");
    expect(await violations(pool)).toEqual([]);
    await runInDurableObject(stub(pool), (_o, s) => void s.storage.sql.exec(corrupt));
    expect((await violations(pool)).join("\n")).toMatch(expected);
  });
});

describe("alarm faults", () => {
  it("a late alarm, after a claim already swept, changes nothing", async () => {
    const pool = freshPool();
    await Promise.all(["a", "b"].map((n) => register(pool, n)));
    await addTasks(pool, [task("j", "t", {}, { lease_seconds: 0.05 })]);
    await claim(pool, "a");
    await sleep(60);
    expect((await json<Lease>(await claim(pool, "b"))).attempt_number).toBe(2);
    const before = await runInDurableObject(stub(pool), (_o, s) =>
      s.storage.sql.exec("SELECT * FROM events").toArray(),
    );
    await runInDurableObject(stub(pool), (o) => o.alarm());
    const after = await runInDurableObject(stub(pool), (_o, s) => s.storage.sql.exec("SELECT * FROM events").toArray());
    expect(after).toEqual(before);
    expect(await violations(pool)).toEqual([]);
  });

  it("an alarm lost entirely is recovered by the next claim's sweep", async () => {
    const pool = freshPool();
    await Promise.all(["a", "b"].map((n) => register(pool, n)));
    await addTasks(pool, [task("j", "t", {}, { lease_seconds: 0.05 })]);
    await claim(pool, "a");
    await runInDurableObject(stub(pool), (_o, s) => s.storage.deleteAlarm());
    await sleep(80);
    const state = await runInDurableObject(
      stub(pool),
      (_o, s) => s.storage.sql.exec<{ state: string }>("SELECT state FROM tasks").one().state,
    );
    expect(state).toBe("LEASED"); // nobody swept: the alarm is gone
    expect((await json<Lease>(await claim(pool, "b"))).node_id).toBe("b");
    expect(await violations(pool)).toEqual([]);
  });

  it("an alarm that runs twice concurrently expires each lease once", async () => {
    const pool = freshPool();
    await register(pool, "a");
    await addTasks(
      pool,
      Array.from({ length: 5 }, (_, i) => task("j", `t${i}`, {}, { lease_seconds: 0.05, max_attempts: 5 })),
    );
    await Promise.all(Array.from({ length: 5 }, () => claim(pool, "a")));
    await runInDurableObject(stub(pool), (_o, s) => s.storage.deleteAlarm());
    await sleep(60);
    await runInDurableObject(stub(pool), (o) => Promise.all([o.alarm(), o.alarm()]));
    const expired = await runInDurableObject(
      stub(pool),
      (_o, s) =>
        s.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM events WHERE type = 'LEASE_EXPIRED'").one().n,
    );
    expect(expired).toBe(5);
    expect(await violations(pool)).toEqual([]);
  });
});
