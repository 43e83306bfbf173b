// What only a pool over several shards has (docs/protocol.md §15,
// docs/sharding.md §4.1 and §9): ids that name the shard holding them, and
// lists walked over every shard, each item once. Runs in the worker-shards
// project (FLASHML_POOL_SHARDS "*=4"). Where a test needs a job in a given
// shard it places it there through the shard's own call, as the job route
// does once it has chosen the shard.

import { runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { mintShardHex, registryShard, shardOfHex } from "../../src/rules/shard-ids";
import { call, freshPool, register, submitJob, trialsJob } from "../worker/helpers";
import { shard, submitTo } from "./helpers";

const SHARDS = 4;

type Page = { items: Array<Record<string, unknown>>; next: string | null; status: number };

async function pagesOf(url: string): Promise<Page[]> {
  const pages: Page[] = [];
  for (let next: string | null = url; next !== null; ) {
    const r = await exports.default.fetch(new Request(next));
    const link = r.headers.get("link");
    next = link === null ? null : /^<([^>]+)>; rel="next"$/.exec(link)![1]!;
    pages.push({ status: r.status, items: r.status === 200 ? await r.json() : [], next });
    if (pages.length > 100) throw new Error("the Link chain does not end");
  }
  return pages;
}

const listUrl = (pool: string, list: string, query: string) =>
  `http://flashedge.test/pools/${pool}/v1alpha1/${list}${query}`;

describe("ids at 4 shards", () => {
  it("name the shard that holds them, in the 12-hex wire shape", async () => {
    expect(env.FLASHML_POOL_SHARDS).toBe(`*=${SHARDS}`);
    const pool = freshPool();
    const ids = await Promise.all(Array.from({ length: 8 }, async () => (await submitJob(pool, trialsJob(1))).job_id));
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{12}$/);
    // Each job is in the shard its id names, and nowhere else.
    const held = new Map<string, number>();
    for (let k = 0; k < SHARDS; k++) {
      const jobs = await runInDurableObject(shard(pool, k), (_o, state) =>
        state.storage.sql.exec<{ job_id: string }>("SELECT job_id FROM jobs").toArray(),
      );
      for (const { job_id } of jobs) held.set(job_id, k);
    }
    expect([...held.keys()].sort()).toEqual([...ids].sort());
    for (const id of ids) expect(held.get(id)).toBe(shardOfHex(pool, id));
  });

  it("an id whose tag names a shard that holds no such job is the 404 of any unknown id", async () => {
    const pool = freshPool();
    const named = mintShardHex(pool, 3, "0badcafe");
    const r = await call(pool, "GET", `/jobs/${named}`);
    expect(r.status).toBe(404);
    expect(await r.json()).toEqual({ detail: `no such job: ${named}` });
  });
});

describe("lists walked over 4 shards", () => {
  it("250 jobs in shards 0, 1 and 3 come with limit=100 in pages of 100, 100 and 50, each exactly once", async () => {
    const pool = freshPool();
    const byShard = new Map<number, string[]>([
      [0, []],
      [1, []],
      [3, []],
    ]);
    for (let i = 0; i < 120; i++)
      byShard.get(0)!.push(await submitTo(pool, 0, { ...trialsJob(1), metadata: { name: `zero-${i}` } }));
    for (let i = 0; i < 60; i++)
      byShard.get(1)!.push(await submitTo(pool, 1, { ...trialsJob(1), metadata: { name: `one-${i}` } }));
    for (let i = 0; i < 70; i++)
      byShard.get(3)!.push(await submitTo(pool, 3, { ...trialsJob(1), metadata: { name: `three-${i}` } }));

    const pages = await pagesOf(listUrl(pool, "jobs", "?limit=100"));
    expect(pages.every((p) => p.status === 200)).toBe(true);
    expect(pages.map((p) => p.items.length)).toEqual([100, 100, 50]);
    expect(pages.at(-1)!.next).toBeNull();
    const served = pages.flatMap((p) => p.items.map((j) => j.job_id as string));
    // Each shard's jobs in submission order, shard by shard; no order is promised across shards.
    expect(served).toEqual([...byShard.get(0)!, ...byShard.get(1)!, ...byShard.get(3)!]);
    // The first page's cursor is today's form; the second names shard 1.
    const cursor = (url: string) =>
      atob(new URL(url).searchParams.get("cursor")!.replace(/-/g, "+").replace(/_/g, "/"));
    expect(cursor(pages[0]!.next!)).toBe(`jobs:100`);
    expect(cursor(pages[1]!.next!)).toMatch(/^jobs@3:\d+$/);
  });

  it("a page that runs out of one shard goes on in the next, past an empty one", async () => {
    const pool = freshPool();
    const zero = await submitTo(pool, 0, { ...trialsJob(1), metadata: { name: "zero" } });
    const two = await submitTo(pool, 2, { ...trialsJob(1), metadata: { name: "two" } });
    const pages = await pagesOf(listUrl(pool, "jobs", "?limit=2"));
    expect(pages[0]!.items.map((j) => j.job_id)).toEqual([zero, two]);
    expect(pages.flatMap((p) => p.items.map((j) => j.job_id))).toEqual([zero, two]);
    expect(pages.at(-1)!.next).toBeNull();
  });

  it("nodes at their homes on three shards are each listed once, shard by shard, by node id within each", async () => {
    const pool = freshPool();
    // Homes by jump hash at 4 shards: a, e at 2; b at 3; c, d at 0.
    expect(["a", "b", "c", "d", "e"].map((id) => registryShard(id, 4))).toEqual([2, 3, 0, 0, 2]);
    for (const id of ["b", "d", "a", "e", "c"]) await register(pool, id);
    const pages = await pagesOf(listUrl(pool, "nodes", "?limit=2"));
    expect(pages.flatMap((p) => p.items.map((n) => n.node_id))).toEqual(["c", "d", "a", "e", "b"]);
    expect(pages.map((p) => p.items.length)).toEqual([2, 2, 1]);
  });

  it("refuses a cursor naming a shard the pool does not have", async () => {
    const pool = freshPool();
    const cursor = btoa(`jobs@${SHARDS}:1`).replace(/=+$/, "");
    const r = await call(pool, "GET", `/jobs?cursor=${cursor}`);
    expect(r.status).toBe(422);
    expect(JSON.stringify(await r.json())).toContain("it does not continue this list");
  });
});
