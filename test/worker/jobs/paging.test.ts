// Bounded answers (docs/protocol.md §12): GET /jobs and GET /nodes answer a page and a
// Link to the next, every row exactly once in order; a page ends early past
// 4 MiB; a job's events with no query are its whole ledger, streamed (docs/protocol.md
// §6); and a job id the pool already has is retried, never a 500.

import { runInDurableObject } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DEFAULT_PLACE, insertJob } from "../../../src/pool/jobs/jobs";
import { JobSpecSchema } from "../../../src/protocol/jobs";
import { EVENTS_STREAM_PAGE, LIST_PAGE_MAX_BYTES, MAX_JSON_BODY_BYTES } from "../../../src/protocol/limits";
import { jobShardCursor, nodeShardCursor } from "../../../src/protocol/paging";
import type { Lease } from "../../../src/protocol/tasks";
import { mintShardHex } from "../../../src/rules/shard-ids";
import {
  call,
  claim,
  freshPool,
  inListOrder,
  insertTasks,
  jobStub,
  json,
  ledger,
  register,
  registration,
  sha256,
  shardStubs,
  shardsOf,
  submitJob,
  task,
  trialsJob,
  upload,
} from "../helpers";
import { violations } from "../invariants";

type Page<T> = { status: number; items: T[]; next: string | null; bytes: number; url: string };
type Job = { job_id: string; spec: { metadata: { name: string } }; task_counts: Record<string, number> };
type Node = { node_id: string; labels: Record<string, string>; online: boolean };
type Event = { seq: number; type: string; job_id: string; data: Record<string, unknown> };

const BASE = "http://flashedge.test";
const encoder = new TextEncoder();

/** One GET of a list URL: its rows, the URL of its `Link: rel="next"` (null without one) and its body size. */
async function getPage<T>(url: string): Promise<Page<T>> {
  const response = await exports.default.fetch(new Request(url));
  const text = await response.text();
  const link = response.headers.get("link");
  const next = link === null ? null : /^<([^>]+)>; rel="next"$/.exec(link)?.[1];
  if (next === undefined) throw new Error(`not an RFC 8288 next link: ${link}`);
  const items = response.status === 200 ? (JSON.parse(text) as T[]) : [];
  return { status: response.status, items, next, bytes: encoder.encode(text).byteLength, url };
}

/** Every page from `url` on, following each Link until a page has none. */
async function pageThrough<T>(url: string): Promise<Page<T>[]> {
  const pages: Page<T>[] = [];
  for (let next: string | null = url; next !== null; next = pages.at(-1)!.next) {
    const page: Page<T> = await getPage<T>(next);
    expect(page.status, next).toBe(200);
    pages.push(page);
    if (pages.length > 1000) throw new Error("the Link chain does not end");
  }
  return pages;
}

// Shard 0's cursors: a one-shard pool's, and a sharded pool's first shard's.
const encodeJobCursor = (seq: number) => jobShardCursor(1).encode({ shard: 0, key: seq });
const encodeNodeCursor = (nodeId: string) => nodeShardCursor(1).encode({ shard: 0, key: nodeId });

const listUrl = (pool: string, list: "jobs" | "nodes", query = "") => `${BASE}/pools/${pool}/v1alpha1/${list}${query}`;

/**
 * The job ids of a pool in list order, as the objects store them: submission
 * order, and over several shards submission order within each, shard by shard.
 */
async function jobIdsBySeq(pool: string): Promise<string[]> {
  const ids: string[] = [];
  for (const shard of shardStubs(pool)) {
    ids.push(
      ...(await runInDurableObject(shard, (_o, state) =>
        state.storage.sql
          .exec<{ job_id: string }>("SELECT job_id FROM jobs ORDER BY seq")
          .toArray()
          .map((r) => r.job_id),
      )),
    );
  }
  return ids;
}

/** Runs `work` over `items`, `width` at a time. */
async function inBatches<T>(items: readonly T[], width: number, work: (item: T) => Promise<unknown>) {
  for (let i = 0; i < items.length; i += width) await Promise.all(items.slice(i, i + width).map(work));
}

describe("GET /jobs pages", () => {
  it("250 jobs with limit=100 come in pages of 100, 100 and 50, each exactly once in submission order", async () => {
    const pool = freshPool();
    await inBatches(
      Array.from({ length: 250 }, (_, i) => i),
      10,
      (i) => submitJob(pool, { ...trialsJob(1), metadata: { name: `job-${i}` } }),
    );
    const submitted = await jobIdsBySeq(pool);
    expect(submitted).toHaveLength(250);

    const pages = await pageThrough<Job>(listUrl(pool, "jobs", "?limit=100"));
    expect(pages.map((p) => p.items.length)).toEqual([100, 100, 50]);
    expect(pages.flatMap((p) => p.items.map((j) => j.job_id))).toEqual(submitted);
    expect(pages.at(-1)!.next).toBeNull();
    // The Link keeps the request's pool and path, and carries cursor and limit.
    for (const page of pages.slice(0, -1)) {
      const next = new URL(page.next!);
      expect(`${next.origin}${next.pathname}`).toBe(listUrl(pool, "jobs"));
      expect(next.searchParams.get("limit")).toBe("100");
      expect(next.searchParams.get("cursor")).toMatch(/^[A-Za-z0-9_-]+$/);
    }
    // The row shape is today's JobRecord, unchanged by paging.
    expect(pages[0]!.items[0]).toMatchObject({ schema_version: "v1alpha1", state: "RUNNING", backend: "leases" });
    expect(pages[0]!.items[0]!.task_counts).toEqual(expect.objectContaining({ PENDING: 1 }));

    // No limit: pages of 100, the Link asking for 100 again.
    const first = await getPage<Job>(listUrl(pool, "jobs"));
    expect(first.items.map((j) => j.job_id)).toEqual(submitted.slice(0, 100));
    expect(new URL(first.next!).searchParams.get("limit")).toBe("100");
    // A Link with another limit continues from the same place.
    const small = await getPage<Job>(first.next!.replace("limit=100", "limit=7"));
    expect(small.items.map((j) => j.job_id)).toEqual(submitted.slice(100, 107));
    expect(await violations(pool)).toEqual([]);
  }, 120_000);

  it("a list that fits one page has no Link, and an empty pool is an empty list", async () => {
    const pool = freshPool();
    const empty = await getPage<Job>(listUrl(pool, "jobs"));
    expect([empty.items, empty.next]).toEqual([[], null]);
    const job = await submitJob(pool, trialsJob(1));
    const one = await getPage<Job>(listUrl(pool, "jobs", "?limit=1"));
    expect([one.items.map((j) => j.job_id), one.next]).toEqual([[job.job_id], null]);
  });

  it("jobs submitted while a client pages are served once, after the ones before them", async () => {
    const pool = freshPool();
    for (let i = 0; i < 5; i++) await submitJob(pool, trialsJob(1));
    const first = await getPage<Job>(listUrl(pool, "jobs", "?limit=3"));
    for (let i = 0; i < 2; i++) await submitJob(pool, trialsJob(1));
    const rest = await pageThrough<Job>(first.next!);
    const seen = [...first.items, ...rest.flatMap((p) => p.items)].map((j) => j.job_id);
    if (shardsOf(pool) === 1) {
      expect(seen).toEqual(await jobIdsBySeq(pool));
      expect(seen).toHaveLength(7);
    } else {
      // Over shards there is no order across them (docs/protocol.md §15): a job that lands in a shard the walk
      // has passed is not in it, and nothing is served twice or lost from before.
      const all = await jobIdsBySeq(pool);
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen.filter((id) => !all.includes(id))).toEqual([]);
      expect(seen.length).toBeGreaterThanOrEqual(5);
      expect(all).toHaveLength(7);
    }
  });

  it("42 jobs with 1 MB specs list without a 5xx, each page ending once its body passes 4 MiB", async () => {
    const pool = freshPool();
    const filler = "x".repeat(1_040_000);
    const spec = trialsJob(1, { notes: filler });
    expect(encoder.encode(JSON.stringify(spec)).byteLength).toBeLessThan(MAX_JSON_BODY_BYTES);
    for (let i = 0; i < 42; i++) await submitJob(pool, spec);
    const submitted = await jobIdsBySeq(pool);

    const pages = await pageThrough<Job>(listUrl(pool, "jobs"));
    expect(pages.flatMap((p) => p.items.map((j) => j.job_id))).toEqual(submitted);
    for (const page of pages.slice(0, -1)) {
      // Under the default limit of 100, so it ended by size: past 4 MiB, and
      // not past it one row earlier.
      expect(page.items.length).toBeLessThan(100);
      expect(page.bytes).toBeGreaterThan(LIST_PAGE_MAX_BYTES);
      const withoutLast = encoder.encode(JSON.stringify(page.items.slice(0, -1))).byteLength;
      expect(withoutLast).toBeLessThanOrEqual(LIST_PAGE_MAX_BYTES);
    }
    expect(pages.length).toBeGreaterThanOrEqual(9);
    expect(pages.at(-1)!.bytes).toBeLessThanOrEqual(LIST_PAGE_MAX_BYTES + 1_100_000);
    expect(pages[0]!.items[0]!.spec).toMatchObject({ spec: { workload: { parameters: { notes: filler } } } });
  }, 180_000);
});

describe("GET /nodes pages", () => {
  it("250 nodes with limit=100 come in pages of 100, 100 and 50, each exactly once in list order", async () => {
    const pool = freshPool();
    // Registered out of order, upper case among lower case: sorted by the bytes of node_id (within each home).
    const ids = Array.from(
      { length: 250 },
      (_, i) => `${i % 3 === 0 ? "N" : "n"}-${String((i * 97) % 250).padStart(3, "0")}`,
    );
    await inBatches(ids, 10, (id) => register(pool, id));
    const sorted = inListOrder(pool, ids);
    // Registering 250 nodes can outlast the online window on a loaded machine:
    // the first node proves itself alive again, so the row shape below does
    // not depend on how fast the registrations ran.
    await register(pool, sorted[0]!);

    const pages = await pageThrough<Node>(listUrl(pool, "nodes", "?limit=100"));
    expect(pages.map((p) => p.items.length)).toEqual([100, 100, 50]);
    expect(pages.flatMap((p) => p.items.map((n) => n.node_id))).toEqual(sorted);
    expect(pages.at(-1)!.next).toBeNull();
    for (const page of pages.slice(0, -1)) {
      expect(page.next!.startsWith(`${listUrl(pool, "nodes")}?`)).toBe(true);
    }
    expect(pages[0]!.items[0]).toMatchObject({ node_id: sorted[0], online: true, accepted_tasks: 0 });
    const first = await getPage<Node>(listUrl(pool, "nodes"));
    expect(first.items.map((n) => n.node_id)).toEqual(sorted.slice(0, 100));
    expect(first.next).not.toBeNull();
  }, 120_000);

  it("a node registered behind the cursor is not served; one ahead of it is", async () => {
    const pool = freshPool();
    for (const id of ["b", "d", "f"]) await register(pool, id);
    const first = await getPage<Node>(listUrl(pool, "nodes", "?limit=2"));
    const served = inListOrder(pool, ["b", "d", "f"]).slice(0, 2);
    expect(first.items.map((n) => n.node_id)).toEqual(served);
    await register(pool, "a");
    await register(pool, "e");
    const rest = await pageThrough<Node>(first.next!);
    // At one shard: e and f, and a (behind the cursor) not. In a pool of shards the same by list order.
    const all = inListOrder(pool, ["a", "b", "d", "e", "f"]);
    const ahead = all.slice(all.indexOf(served[1]!) + 1);
    if (shardsOf(pool) === 1) expect(ahead).toEqual(["e", "f"]);
    expect(rest.flatMap((p) => p.items.map((n) => n.node_id))).toEqual(ahead);
  });

  it("a node with an empty node_id is listed first, and paging continues past it", async () => {
    const pool = freshPool();
    await register(pool, "");
    await register(pool, "a");
    const pages = await pageThrough<Node>(listUrl(pool, "nodes", "?limit=1"));
    expect(pages.map((p) => p.items.map((n) => n.node_id))).toEqual([[""], ["a"]]);
  });

  it("100 nodes with 60 KB labels list without a 5xx, the first page ending once its body passes 4 MiB", async () => {
    const pool = freshPool();
    const ids = Array.from({ length: 100 }, (_, i) => `big-${String(i).padStart(3, "0")}`);
    const labels = (id: string) => ({ owner: id, notes: "y".repeat(60_000) });
    // Within the registration bound (64 KiB).
    expect(
      encoder.encode(JSON.stringify(registration("big-000", { labels: labels("big-000") }))).byteLength,
    ).toBeLessThan(64 * 1024);
    await inBatches(ids, 10, (id) => register(pool, id, { labels: labels(id) }));

    const pages = await pageThrough<Node>(listUrl(pool, "nodes"));
    expect(pages.flatMap((p) => p.items.map((n) => n.node_id))).toEqual(inListOrder(pool, ids));
    expect(pages.length).toBeGreaterThan(1);
    const first = pages[0]!;
    expect(first.items.length).toBeLessThan(100);
    expect(first.bytes).toBeGreaterThan(LIST_PAGE_MAX_BYTES);
    expect(encoder.encode(JSON.stringify(first.items.slice(0, -1))).byteLength).toBeLessThanOrEqual(
      LIST_PAGE_MAX_BYTES,
    );
    expect(first.items[0]!.labels).toEqual(labels(inListOrder(pool, ids)[0]!));
  }, 120_000);
});

describe("list query refusals", () => {
  const bad: [string, string, string, string][] = [
    ["cursor not in base64url", "jobs", "?cursor=not-a-cursor!", "cursor"],
    ["empty cursor", "jobs", "?cursor=", "cursor"],
    ["nodes cursor", "jobs", `?cursor=${encodeNodeCursor("n1")}`, "cursor"],
    ["padded cursor", "jobs", `?cursor=${encodeJobCursor(1)}%3D`, "cursor"],
    ["cursor of bytes not UTF-8", "jobs", "?cursor=%FF%FE", "cursor"],
    ["jobs cursor", "nodes", `?cursor=${encodeJobCursor(3)}`, "cursor"],
    ["cursor of zero bytes", "nodes", "?cursor=AAAA", "cursor"],
    ["cursor of 200,000 characters", "nodes", `?cursor=${"A".repeat(200_000)}`, "cursor"],
    ["limit of 0", "jobs", "?limit=0", "limit"],
    ["limit past the maximum", "jobs", "?limit=1001", "limit"],
    ["limit that is no number", "nodes", "?limit=abc", "limit"],
    ["negative limit", "nodes", "?limit=-5", "limit"],
  ];
  it.each(bad)("a %s on GET /%s is a 422 naming it", async (_name, list, query, name) => {
    const r = await call(freshPool(), "GET", `/${list}${query}`);
    expect(r.status).toBe(422);
    const body = await json<{ detail: Array<{ loc: unknown[]; msg: string; type: string }> }>(r);
    expect(body.detail).toEqual([expect.objectContaining({ loc: ["query", name] })]);
    if (name === "cursor") expect(body.detail[0]!.msg).toMatch(/^Invalid cursor: .*Link/);
  });

  it("a cursor past the end is an empty last page, not an error", async () => {
    const pool = freshPool();
    await submitJob(pool, trialsJob(1));
    // Past the end of the last shard (at one shard, shard 0's own form).
    const last = shardsOf(pool) - 1;
    const past = jobShardCursor(last + 1).encode({ shard: last, key: 10 ** 9 });
    const page = await getPage<Job>(listUrl(pool, "jobs", `?cursor=${past}`));
    expect([page.status, page.items, page.next]).toEqual([200, [], null]);
  });
});

describe("a job's events with no query are the whole ledger", () => {
  async function finish(pool: string, lease: Lease) {
    const bytes = JSON.stringify({ task: lease.task_id });
    await upload(pool, `jobs/${lease.job_id}/${lease.task_id}/metrics.json`, bytes);
    return call(pool, "POST", `/attempts/${lease.lease_id}/complete`, { output_sha256: await sha256(bytes) });
  }

  async function eventsText(pool: string, jobId: string, query = "") {
    const r = await call(pool, "GET", `/jobs/${jobId}/events${query}`);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/^application\/json/);
    return r.text();
  }

  /** The whole ledger through the paged query, 1000 at a time. */
  async function paged(pool: string, jobId: string): Promise<Event[]> {
    const all: Event[] = [];
    for (;;) {
      const page = JSON.parse(await eventsText(pool, jobId, `?after=${all.at(-1)?.seq ?? 0}&limit=1000`));
      all.push(...(page as Event[]));
      if (page.length < 1000) return all;
    }
  }

  it("a 300-task job: every TASK_CREATED and every event after them, in order", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const job = await submitJob(pool, trialsJob(300));
    for (let i = 0; i < 4; i++)
      expect((await finish(pool, await json<Lease>(await claim(pool, "n1")))).status).toBe(200);

    const events = JSON.parse(await eventsText(pool, job.job_id)) as Event[];
    const types = events.map((e) => e.type);
    expect(types.slice(0, 2)).toEqual(["JOB_ACCEPTED", "BACKEND_SELECTED"]);
    expect(types.slice(2, 302)).toEqual(Array(300).fill("TASK_CREATED"));
    expect(events.slice(2, 302).map((e) => e.data.task_id)).toEqual(
      Array.from({ length: 300 }, (_, i) => `trial-${String(i).padStart(3, "0")}`),
    );
    expect(types.slice(302).filter((t) => t === "LEASE_CLAIMED")).toHaveLength(4);
    expect(types.length).toBeGreaterThan(302 + 4);
    // Exactly the ledger the object holds, in seq order, nothing more.
    expect(events.map((e) => ({ type: e.type, data: e.data }))).toEqual(await ledger(pool, job.job_id));
    expect(events.every((e, i) => i === 0 || e.seq > events[i - 1]!.seq)).toBe(true);
    expect(events.every((e) => e.job_id === job.job_id)).toBe(true);
    expect(await violations(pool)).toEqual([]);
  }, 60_000);

  it("with after and/or limit it is one page, as before: limit 100 when only after is given", async () => {
    const pool = freshPool();
    const job = await submitJob(pool, trialsJob(300));
    const all = JSON.parse(await eventsText(pool, job.job_id)) as Event[];
    expect(all).toHaveLength(302);
    const afterOnly = JSON.parse(await eventsText(pool, job.job_id, "?after=0")) as Event[];
    expect(afterOnly).toEqual(all.slice(0, 100));
    const afterSome = JSON.parse(await eventsText(pool, job.job_id, `?after=${all[149]!.seq}`)) as Event[];
    expect(afterSome).toEqual(all.slice(150, 250));
    const limitOnly = JSON.parse(await eventsText(pool, job.job_id, "?limit=5")) as Event[];
    expect(limitOnly).toEqual(all.slice(0, 5));
  }, 60_000);

  it.each([
    ["one event short of a page (answered at once)", EVENTS_STREAM_PAGE - 3],
    ["of exactly one page (streamed, its second page empty)", EVENTS_STREAM_PAGE - 2],
    ["one event past a page (streamed)", EVENTS_STREAM_PAGE - 1],
    ["of two and a half pages (streamed)", 2_500],
  ])(
    "a ledger %s is served whole, byte for byte the JSON list of its pages",
    async (_name, tasks) => {
      const pool = freshPool();
      const job = await submitJob(pool, trialsJob(tasks));
      const expected = await paged(pool, job.job_id);
      expect(expected).toHaveLength(tasks + 2);
      const whole = await eventsText(pool, job.job_id);
      expect(whole).toBe(JSON.stringify(expected));
    },
    60_000,
  );

  it("an unknown job is 404 before any streaming starts", async () => {
    const r = await call(freshPool(), "GET", "/jobs/000000000000/events");
    expect(r.status).toBe(404);
    expect(await json(r)).toEqual({ detail: "no such job: 000000000000" });
  });

  it("the reference CLI's call (GET {api}/v1alpha1/jobs/{id}/events, no query) reads every event", async () => {
    // `flashruntime events JOB --api URL`: the pool `local`, no query string, JSON accepted.
    const job = await submitJob("local", trialsJob(1_200));
    const r = await exports.default.fetch(
      new Request(`${BASE}/v1alpha1/jobs/${job.job_id}/events`, { headers: { accept: "application/json" } }),
    );
    expect(r.status).toBe(200);
    const events = (await r.json()) as Event[];
    expect(events).toHaveLength(1_202);
    expect(events.filter((e) => e.type === "TASK_CREATED")).toHaveLength(1_200);
    expect(events.at(-1)!.data.task_id).toBe("trial-1199");
  }, 60_000);
});

describe("a job id the pool already has is retried", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  /** Makes the Worker's next `times` job ids `jobId` (ids are 6 random bytes, hex). */
  function mintNext(jobId: string, times: number) {
    const bytes = Uint8Array.from(jobId.match(/../g)!, (h) => Number.parseInt(h, 16));
    const real = crypto.getRandomValues.bind(crypto);
    let left = times;
    type Filled = Parameters<typeof crypto.getRandomValues>[0];
    return vi.spyOn(crypto, "getRandomValues").mockImplementation(<T extends Filled>(array: T): T => {
      // 6 bytes are a one-shard pool's id; 4 the random part of a sharded pool's (the rest names shard and pool).
      if (left > 0 && array instanceof Uint8Array && (array.length === 6 || array.length === 4)) {
        left--;
        array.set(bytes.subarray(0, array.length));
        return array;
      }
      return real(array);
    });
  }

  /** The pool's rows, over all its shards. */
  async function poolState(pool: string) {
    const total = { jobs: 0, tasks: 0, events: 0 };
    for (const shard of shardStubs(pool)) {
      const counted = await runInDurableObject(shard, (_o, state) => {
        const n = (table: string) =>
          state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table}`).one().n;
        // A submission's TASK_CREATED events are runs of tasks (src/pool/ledger/created.ts), counted as events.
        const created = state.storage.sql
          .exec<{ n: number }>("SELECT COALESCE(SUM(count), 0) AS n FROM tasks_created")
          .one().n;
        return { jobs: n("jobs"), tasks: n("tasks"), events: n("events") + created };
      });
      for (const key of ["jobs", "tasks", "events"] as const) total[key] += counted[key];
    }
    return total;
  }

  it("a collision with a job inserted in the pool is retried with a fresh id: 201, the old job untouched", async () => {
    const pool = freshPool();
    const taken = "0123456789ab";
    const spec = JobSpecSchema.parse(trialsJob(2));
    await runInDurableObject(jobStub(pool, taken), (_o, state) =>
      state.storage.transactionSync(() =>
        insertJob(
          state.storage.sql,
          Date.now(),
          taken,
          spec,
          [task(taken, "trial-000"), task(taken, "trial-001")],
          DEFAULT_PLACE,
        ),
      ),
    );
    const before = await poolState(pool);
    const spy = mintNext(taken, 1);
    const r = await call(pool, "POST", "/jobs", trialsJob(3));
    expect(r.status).toBe(201);
    const job = await json<{ job_id: string }>(r);
    expect(spy).toHaveBeenCalled();
    expect(job.job_id).toMatch(/^[0-9a-f]{12}$/);
    expect(job.job_id).not.toBe(taken);
    expect(await poolState(pool)).toEqual({
      jobs: before.jobs + 1,
      tasks: before.tasks + 3,
      events: before.events + 5,
    });
    const old = await json<{ task_counts: Record<string, number> }>(await call(pool, "GET", `/jobs/${taken}`));
    expect(old.task_counts.PENDING).toBe(2);
    expect((await ledger(pool, taken)).map((e) => e.type)).toEqual([
      "JOB_ACCEPTED",
      "BACKEND_SELECTED",
      "TASK_CREATED",
      "TASK_CREATED",
    ]);
    expect((await json<Job>(await call(pool, "GET", `/jobs/${job.job_id}`))).task_counts.PENDING).toBe(3);
    expect(await violations(pool)).toEqual([]);
  });

  it("an id held only by tasks with no job record is taken too", async () => {
    const pool = freshPool();
    const taken = "abcdefabcdef";
    await insertTasks(pool, [task(taken, "trial-000")]);
    mintNext(taken, 1);
    const job = await submitJob(pool, trialsJob(1));
    expect(job.job_id).not.toBe(taken);
    expect((await poolState(pool)).tasks).toBe(2);
  });

  it("an id that keeps colliding is a 503 with a clear detail, and nothing is written", async () => {
    const pool = freshPool();
    const existing = await submitJob(pool, trialsJob(1));
    // Over several shards an id collides only in its own shard: every other shard gets a job with the same random
    // part, so wherever the submission is placed its ids are taken.
    const random8 = existing.job_id.slice(0, 8);
    for (const [k, shard] of shardStubs(pool).entries()) {
      const id = mintShardHex(pool, k, random8);
      if (id === existing.job_id) continue;
      const spec = JobSpecSchema.parse(trialsJob(1));
      await runInDurableObject(shard, (_o, state) =>
        state.storage.transactionSync(() =>
          insertJob(state.storage.sql, Date.now(), id, spec, [task(id, "trial-000")], DEFAULT_PLACE),
        ),
      );
    }
    const before = await poolState(pool);
    mintNext(existing.job_id, 1_000);
    const r = await call(pool, "POST", "/jobs", trialsJob(2));
    expect(r.status).toBe(503);
    expect((await json<{ detail: string }>(r)).detail).toMatch(/no unused job id .*submit the job again/);
    expect(await poolState(pool)).toEqual(before);
    vi.restoreAllMocks();
    expect((await call(pool, "POST", "/jobs", trialsJob(2))).status).toBe(201);
    expect(await violations(pool)).toEqual([]);
  });
});

describe("GET /jobs/{job}/artifacts pages (docs/protocol.md §12)", () => {
  it("40,000 keys, as any lease holder can create, come a page at a time with a Link, never a 5xx", async () => {
    const pool = freshPool();
    const job = await submitJob(pool, trialsJob(1));
    const keys = Array.from(
      { length: 40_000 },
      (_, i) => `jobs/${job.job_id}/trial-000/out/${String(i).padStart(5, "0")}`,
    );
    await runInDurableObject(jobStub(pool, job.job_id), (_o, state) => {
      state.storage.transactionSync(() => {
        for (const [i, key] of keys.entries()) {
          state.storage.sql.exec(
            "INSERT INTO artifacts (key, object, sha256, size_bytes, etag, created_ms) VALUES (?, ?, ?, 1, 'e', 0)",
            key,
            `pools/${pool}/objects/o${i}`,
            "0".repeat(64),
          );
        }
      });
    });
    const url = `${BASE}/pools/${pool}/v1alpha1/jobs/${job.job_id}/artifacts`;
    const first = await getPage<{ key: string; uri: string; size_bytes: number }>(url);
    expect(first.status).toBe(200);
    expect(first.items.map((a) => a.key)).toEqual(keys.slice(0, 100));
    expect(first.items[0]).toEqual({ uri: `artifact://${keys[0]}`, key: keys[0], size_bytes: 1 });
    const pages = await pageThrough<{ key: string }>(`${url}?limit=1000`);
    expect(pages).toHaveLength(40);
    expect(pages.flatMap((p) => p.items.map((a) => a.key))).toEqual(keys);
    expect(pages.at(-1)!.next).toBeNull();
  }, 120_000);
});
