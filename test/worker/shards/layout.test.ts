// The layout authority in the object (docs/sharding.md §11): what a shard
// records at start, and a pool lowered over work refusing every request.
// The project's env has no FLASHML_POOL_SHARDS (one shard per pool), so the
// tests drive other counts through the exported layoutAtStart with the
// object's own SQL, as the constructor calls it.

import { runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ShardPeers } from "../../../src/pool/address";
import { PoolObject } from "../../../src/pool/object";
import {
  enterPool,
  LAYOUT_RECHECK_MS,
  type LayoutPeers,
  layoutAtStart,
  layoutPeers,
} from "../../../src/pool/shards/layout";
import { trialsJob } from "../../fixtures/jobspec";
import { registration } from "../../fixtures/registration";
import { call, freshPool, json, register, stub, submitJob } from "../helpers";

const SHARD_TABLES = ["homes", "passports", "outbox", "inbox_seen"];

/** Peers a start must not ask: any call fails the test. */
const noPeers: LayoutPeers = {
  emptiness: (shard) => Promise.reject(new Error(`asked shard ${shard} for its emptiness`)),
  layout: () => Promise.reject(new Error("asked shard 0 for its layout")),
};

/** Every row of every table but pool_layout, sorted: what a layout change must leave alone. */
function digest(sql: SqlStorage): string {
  const tables = sql
    .exec<{ name: string }>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('pool_layout', '_cf_KV', '_cf_METADATA') AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )
    .toArray();
  return JSON.stringify(
    tables.map(({ name }) => [
      name,
      sql
        .exec(`SELECT * FROM "${name}"`)
        .toArray()
        .map((r) => JSON.stringify(r))
        .sort(),
    ]),
  );
}

/** Makes shard 0 of `pool` remember a layout of `shards` shards (epoch 0), as an earlier deploy would have. */
async function storedLayout(pool: string, shards: number): Promise<void> {
  await runInDurableObject(stub(pool), (_o, state) => {
    state.storage.sql.exec("UPDATE pool_layout SET shards = ? WHERE epoch = 0", shards);
  });
}

/** A job row in the object named `name`, as a submission there would leave it. */
async function jobIn(name: string): Promise<void> {
  await runInDurableObject(stub(name), (_o, state) => {
    state.storage.sql.exec(
      "INSERT INTO jobs (job_id, seq, spec, workload_type, created_ms) VALUES ('0123456789ab', 1, '{}', 'command', 0)",
    );
  });
}

/** The message a call rejects with (handled where it is made: an RPC rejection nobody handles is reported). */
function refusal(call: PromiseLike<unknown>): Promise<string> {
  return Promise.resolve(call).then(
    (value) => `answered ${JSON.stringify(value)}`,
    (err: unknown) => (err instanceof Error ? err.message : String(err)),
  );
}

const refusedDetail = (pool: string) =>
  `coordinator refuses to serve pool '${pool}': pool '${pool}' cannot run on 2 shards: FLASHML_POOL_SHARDS lowers it from 4, and shards 2–3 are not empty (shard 3: 1 job)`;

describe("the layout a shard records at start", () => {
  it("a fresh pool records epoch 0 with one shard, its shard_self row, and nothing else new", async () => {
    const pool = freshPool();
    const before = Date.now();
    expect((await call(pool, "GET", "/jobs")).status).toBe(200);
    const stored = await runInDurableObject(stub(pool), (_o, state) => {
      const sql = state.storage.sql;
      return {
        self: sql.exec("SELECT * FROM shard_self").toArray(),
        layout: sql.exec("SELECT * FROM pool_layout").toArray(),
        rows: SHARD_TABLES.map((t) => sql.exec(`SELECT COUNT(*) AS n FROM ${t}`).one().n),
      };
    });
    expect(stored.self).toEqual([{ pool, shard: 0 }]);
    expect(stored.layout).toEqual([{ epoch: 0, shards: 1, since_ms: expect.any(Number), lowered_from: null }]);
    expect(stored.layout[0]!.since_ms).toBeGreaterThanOrEqual(before);
    expect(stored.rows).toEqual(SHARD_TABLES.map(() => 0));
  });

  it("at one shard, a start after the first runs one SELECT of pool_layout and nothing else", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const statements = await runInDurableObject(stub(pool), async (o, state) => {
      const run: string[] = [];
      const sql = state.storage.sql;
      const watched = {
        exec: (query: string, ...bindings: unknown[]) => {
          run.push(query);
          return sql.exec(query, ...bindings);
        },
      };
      await layoutAtStart(watched as unknown as SqlStorage, PoolObject.poolOf(o).gate, pool, 0, 1, Date.now(), noPeers);
      return run;
    });
    expect(statements).toEqual(["SELECT * FROM pool_layout ORDER BY epoch"]);
  });

  it("a raise from 1 to 4 appends one epoch and changes no row of any other table", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitJob(pool, trialsJob(2));
    const { before, after, layout } = await runInDurableObject(stub(pool), async (o, state) => {
      const sql = state.storage.sql;
      const before = digest(sql);
      await layoutAtStart(sql, PoolObject.poolOf(o).gate, pool, 0, 4, 1_234, noPeers);
      return { before, after: digest(sql), layout: sql.exec("SELECT * FROM pool_layout ORDER BY epoch").toArray() };
    });
    expect(after).toBe(before);
    expect(layout).toEqual([
      { epoch: 0, shards: 1, since_ms: expect.any(Number), lowered_from: null },
      { epoch: 1, shards: 4, since_ms: 1_234, lowered_from: null },
    ]);
    expect((await call(pool, "GET", "/nodes")).status).toBe(200);
  });
});

describe("lowering a pool's shard count", () => {
  it("from 4 to 2 over empty shards 2-3 asks them and records the lower", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await storedLayout(pool, 4);
    const layout = await runInDurableObject(stub(pool), async (o, state) => {
      const sql = state.storage.sql;
      await layoutAtStart(
        sql,
        PoolObject.poolOf(o).gate,
        pool,
        0,
        2,
        5_678,
        layoutPeers(new ShardPeers(env, [], pool, 0, 2)),
      );
      return sql.exec("SELECT * FROM pool_layout ORDER BY epoch").toArray();
    });
    expect(layout).toEqual([
      { epoch: 0, shards: 4, since_ms: expect.any(Number), lowered_from: null },
      { epoch: 1, shards: 2, since_ms: 5_678, lowered_from: 4 },
    ]);
    expect((await call(pool, "GET", "/nodes")).status).toBe(200);
  });

  it("from 4 to 2 with a job in shard 3 refuses every request to the pool with a 503 naming it", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await storedLayout(pool, 4);
    await jobIn(`${pool}/3`);
    const before = await runInDurableObject(stub(pool), async (o, state) => {
      const sql = state.storage.sql;
      await layoutAtStart(
        sql,
        PoolObject.poolOf(o).gate,
        pool,
        0,
        2,
        Date.now(),
        layoutPeers(new ShardPeers(env, [], pool, 0, 2)),
      );
      return digest(sql);
    });
    for (const [method, path, body] of [
      ["GET", "/jobs", undefined],
      ["GET", "/nodes", undefined],
      ["POST", "/nodes/register", registration("n2")],
      ["POST", "/nodes/n1/release", {}],
    ] as const) {
      const r = await call(pool, method, path, body);
      expect(r.status, `${method} ${path}`).toBe(503);
      expect(await json(r)).toEqual({ detail: refusedDetail(pool) });
    }
    // Nothing was recorded, and the lowered count was not.
    const after = await runInDurableObject(stub(pool), (_o, state) => ({
      digest: digest(state.storage.sql),
      epochs: state.storage.sql.exec("SELECT shards FROM pool_layout").toArray(),
    }));
    expect(after.digest).toBe(before);
    expect(after.epochs).toEqual([{ shards: 4 }]);
    // Shard to shard, the authority still answers what it refuses; other pools are served.
    expect(await stub(pool).peer().layout()).toEqual({
      epochs: [{ epoch: 0, shards: 4, since_ms: expect.any(Number), lowered_from: null }],
      refusing: refusedDetail(pool).replace(`coordinator refuses to serve pool '${pool}': `, ""),
    });
    expect((await call(freshPool(), "GET", "/jobs")).status).toBe(200);
    expect((await exports.default.fetch(new Request("http://flashedge.test/healthz"))).status).toBe(200);
  });

  it("a shard that remains copies shard 0's history, and refuses while shard 0 refuses", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await storedLayout(pool, 4);
    const one = stub(`${pool}/1`);
    const copied = await runInDurableObject(one, async (o, state) => {
      const sql = state.storage.sql;
      await layoutAtStart(
        sql,
        PoolObject.poolOf(o).gate,
        pool,
        1,
        4,
        Date.now(),
        layoutPeers(new ShardPeers(env, [], pool, 0, 2)),
      );
      return {
        self: sql.exec("SELECT * FROM shard_self").toArray(),
        epochs: sql.exec("SELECT epoch, shards FROM pool_layout").toArray(),
      };
    });
    expect(copied).toEqual({ self: [{ pool, shard: 1 }], epochs: [{ epoch: 0, shards: 4 }] });
    expect(await refusal(one.listNodes(null, 10))).toMatch(/^answered /);

    await jobIn(`${pool}/3`);
    await runInDurableObject(stub(pool), (o, state) =>
      layoutAtStart(
        state.storage.sql,
        PoolObject.poolOf(o).gate,
        pool,
        0,
        2,
        Date.now(),
        layoutPeers(new ShardPeers(env, [], pool, 0, 2)),
      ),
    );
    await runInDurableObject(one, (o, state) =>
      layoutAtStart(
        state.storage.sql,
        PoolObject.poolOf(o).gate,
        pool,
        1,
        2,
        Date.now(),
        layoutPeers(new ShardPeers(env, [], pool, 0, 2)),
      ),
    );
    expect(await refusal(one.listNodes(null, 10))).toBe(`PoolLayoutRefused: ${refusedDetail(pool)}`);
  });

  it("a refusing pool checks its layout again only once a minute has passed", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await storedLayout(pool, 4);
    await jobIn(`${pool}/2`);
    const rechecks = await runInDurableObject(stub(pool), async (o, state) => {
      const sql = state.storage.sql;
      const now = Date.now();
      await layoutAtStart(
        sql,
        PoolObject.poolOf(o).gate,
        pool,
        0,
        2,
        now,
        layoutPeers(new ShardPeers(env, [], pool, 0, 2)),
      );
      let n = 0;
      const recheck = () => void n++;
      const counts: number[] = [];
      for (const at of [now + 1, now + LAYOUT_RECHECK_MS - 1, now + LAYOUT_RECHECK_MS, now + LAYOUT_RECHECK_MS + 1]) {
        expect(() => enterPool(PoolObject.poolOf(o).gate, recheck, at)).toThrow(
          /^PoolLayoutRefused: coordinator refuses to serve pool/,
        );
        counts.push(n);
      }
      return counts;
    });
    expect(rechecks).toEqual([0, 0, 1, 1]);
  });

  it("a removed shard answers only its emptiness, and refuses the pool's calls", async () => {
    const pool = freshPool();
    const removed = stub(`${pool}/3`);
    expect(await removed.peer().emptiness()).toEqual({
      shard: 3,
      empty: true,
      jobs: 0,
      archivedJobs: 0,
      nodes: 0,
      credentials: 0,
      liveLeases: 0,
      pointers: 0,
      artifacts: 0,
      unreferenced: 0,
    });
    expect(await refusal(removed.listNodes(null, 10))).toBe(
      `PoolLayoutRefused: coordinator refuses to serve pool '${pool}': FLASHML_POOL_SHARDS gives it 1 shard, and shard 3 answers only shard 0's emptiness check`,
    );
    expect(await refusal(removed.peer().layout())).toMatch(/^PoolLayoutRefused: /);
    const self = await runInDurableObject(removed, (_o, state) => ({
      self: state.storage.sql.exec("SELECT * FROM shard_self").toArray(),
      epochs: state.storage.sql.exec("SELECT COUNT(*) AS n FROM pool_layout").one().n,
    }));
    expect(self).toEqual({ self: [{ pool, shard: 3 }], epochs: 0 });
  });

  it.each<[string, string, string]>([
    [
      "an enrolled credential of a machine not yet registered",
      `INSERT INTO node_credentials (node_id, token_sha256, hostname, platform, approved_by, approved_ms, issued_ms)
       VALUES ('rig', '${"0".repeat(64)}', 'rig.local', 'linux-x86_64', 'ops', 0, 0)`,
      "credentials",
    ],
    [
      "an artifact under the key of a job that never existed",
      `INSERT INTO artifacts (key, object, sha256, size_bytes, etag, created_ms)
       VALUES ('jobs/0123456789ab/input.txt', 'pools/p/objects/x', '${"0".repeat(64)}', 1, 'e', 0)`,
      "artifacts",
    ],
    [
      "an uploaded object waiting to be collected",
      "INSERT INTO unreferenced (object, collect_after_ms) VALUES ('pools/p/objects/y', 0)",
      "unreferenced",
    ],
  ])("a removed shard holding only %s is not empty", async (_what, insert, counted) => {
    const pool = freshPool();
    const removed = stub(`${pool}/3`);
    await runInDurableObject(removed, (_o, state) => void state.storage.sql.exec(insert));
    expect(await removed.peer().emptiness()).toMatchObject({ shard: 3, empty: false, [counted]: 1 });

    await storedLayout(pool, 4);
    const epochs = await runInDurableObject(stub(pool), async (o, state) => {
      await layoutAtStart(
        state.storage.sql,
        PoolObject.poolOf(o).gate,
        pool,
        0,
        3,
        Date.now(),
        layoutPeers(new ShardPeers(env, [], pool, 0, 2)),
      );
      return state.storage.sql.exec("SELECT shards FROM pool_layout").toArray();
    });
    expect(epochs).toEqual([{ shards: 4 }]);
    expect((await call(pool, "GET", "/jobs")).status).toBe(503);
  });

  it("an enrolled node's session offers neither layout call", async () => {
    const session = (await stub(freshPool()).session({ nodeId: "n1", tokenSha256: "0".repeat(64) })) as unknown as {
      layout(): Promise<unknown>;
      emptiness(): Promise<unknown>;
    };
    expect(await refusal(session.layout())).toMatch(/does not implement/);
    expect(await refusal(session.emptiness())).toMatch(/does not implement/);
  });
});
