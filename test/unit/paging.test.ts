// Paging of the list routes (src/protocol/paging.ts): cursors round-trip and
// nothing else decodes, the Link header keeps the request's URL, and a page
// ends once its body passes the size bound, never before its first row.

import { describe, expect, it } from "vitest";
import { type DecodedCursor, fillPage, jobShardCursor, nextLink, nodeShardCursor } from "../../src/protocol/paging";

// A one-shard pool's cursors, as GET /jobs and GET /nodes read them at S = 1.
const jobs1 = jobShardCursor(1);
const nodes1 = nodeShardCursor(1);
const encodeJobCursor = (seq: number) => jobs1.encode({ shard: 0, key: seq });
const encodeNodeCursor = (nodeId: string) => nodes1.encode({ shard: 0, key: nodeId });
function keyOnly<K>(read: DecodedCursor<{ shard: number; key: K | null }>): DecodedCursor<K> {
  return read.ok ? { ok: true, after: read.after?.key ?? null } : read;
}
const decodeJobCursor = (raw: string | undefined) => keyOnly(jobs1.decode(raw));
const decodeNodeCursor = (raw: string | undefined) => keyOnly(nodes1.decode(raw));

const base64url = (text: string) =>
  btoa(String.fromCharCode(...new TextEncoder().encode(text)))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
/** The same bytes, spelled with a bit set that decoding drops (7 bytes end in 4 unused bits). */
function withStrayBit(cursor: string): string {
  return cursor.slice(0, -1) + ALPHABET[ALPHABET.indexOf(cursor.at(-1)!) + 1];
}

describe("job cursors", () => {
  it.each([1, 2, 99, 100, 123_456_789, Number.MAX_SAFE_INTEGER])("the cursor after seq %d decodes to it", (seq) => {
    const cursor = encodeJobCursor(seq);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeJobCursor(cursor)).toEqual({ ok: true, after: seq });
  });

  it("no cursor is the first page", () => {
    expect(decodeJobCursor(undefined)).toEqual({ ok: true, after: null });
  });

  const bad: [string, string][] = [
    ["an empty cursor", ""],
    ["a non-base64url character", "am9icz=oxMA"],
    ["a padded cursor", `${encodeJobCursor(10)}=`],
    ["standard base64's '+' and '/'", "+/+/"],
    ["a length no base64 has", "abcde"],
    ["plain text", "hello"],
    ["a number", "100"],
    ["a nodes cursor", encodeNodeCursor("n1")],
    ["seq 0", base64url("jobs:0")],
    ["a negative seq", base64url("jobs:-1")],
    ["a leading zero", base64url("jobs:010")],
    ["a fraction", base64url("jobs:1.5")],
    ["an exponent", base64url("jobs:1e3")],
    ["an unsafe integer", base64url("jobs:9007199254740993")],
    ["no seq", base64url("jobs:")],
    ["stray bits in the last character", withStrayBit(encodeJobCursor(10))],
    ["bytes that are not UTF-8", btoa("\xff\xfe").replace(/=+$/, "")],
    ["an absurdly long cursor", "A".repeat(200_000)],
  ];
  it.each(bad)("%s is refused with a 422 row naming the cursor", (_name, raw) => {
    const decoded = decodeJobCursor(raw);
    expect(decoded.ok).toBe(false);
    if (decoded.ok) return;
    expect(decoded.detail).toEqual([
      { loc: ["query", "cursor"], msg: expect.stringMatching(/^Invalid cursor: .+Link/), type: "value_error" },
    ]);
  });
});

describe("node cursors", () => {
  it.each([
    ["an ordinary id", "gpu-node-01"],
    ["an empty id", ""],
    ["an id with a colon", "rack:1:slot:2"],
    ["non-ASCII", "nœud-東京-🚀"],
    ["URL-significant characters", "a/b?c=d&e#f <>"],
    ["a long id", "x".repeat(60_000)],
  ])("the cursor after %s decodes to it", (_name, nodeId) => {
    const cursor = encodeNodeCursor(nodeId);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeNodeCursor(cursor)).toEqual({ ok: true, after: nodeId });
  });

  it("a jobs cursor does not continue the nodes", () => {
    expect(decodeNodeCursor(encodeJobCursor(5)).ok).toBe(false);
    expect(decodeNodeCursor(base64url("node:n1")).ok).toBe(false);
  });
});

describe("nextLink", () => {
  it.each([
    ["the pool local", "http://h.test/v1alpha1/jobs", "http://h.test/v1alpha1/jobs?cursor=CUR&limit=100"],
    [
      "a named pool, its limit replaced",
      "https://h.test/pools/team-a/v1alpha1/nodes?limit=7&cursor=OLD",
      "https://h.test/pools/team-a/v1alpha1/nodes?limit=100&cursor=CUR",
    ],
    [
      "other parameters kept",
      "http://h.test:8787/v1alpha1/jobs?x=1",
      "http://h.test:8787/v1alpha1/jobs?x=1&cursor=CUR&limit=100",
    ],
  ])("%s: the request's URL with cursor and limit", (_name, url, next) => {
    expect(nextLink(url, "CUR", 100)).toBe(`<${next}>; rel="next"`);
  });
});

describe("fillPage", () => {
  const item = (n: number) => ({ n, pad: "x".repeat(n) });
  const bodyBytes = (items: unknown[]) => new TextEncoder().encode(JSON.stringify(items)).byteLength;

  it("takes every row when the body stays within the bound", () => {
    const rows = [1, 2, 3];
    expect(fillPage(rows, 1_000, item)).toEqual({ items: rows.map(item), last: 3 });
  });

  it("ends once the body passes the bound, keeping the row that passed it", () => {
    const rows = [100, 100, 100, 100];
    const page = fillPage(rows, 250, item);
    expect(page.items).toHaveLength(3);
    expect(bodyBytes(page.items.slice(0, 2))).toBeLessThanOrEqual(250);
    expect(bodyBytes(page.items)).toBeGreaterThan(250);
  });

  it("ends exactly at the bound only once the body is past it", () => {
    const rows = [10, 10, 10];
    const two = bodyBytes(rows.slice(0, 2).map(item));
    expect(fillPage(rows, two, item).items).toHaveLength(3);
    expect(fillPage(rows, two - 1, item).items).toHaveLength(2);
  });

  it("always holds the first row, however large", () => {
    expect(fillPage([5_000, 1], 10, item)).toEqual({ items: [item(5_000)], last: 5_000 });
  });

  it("pulls no row past the end of the page", () => {
    let pulled = 0;
    function* rows() {
      for (let i = 0; i < 1_000; i++) {
        pulled++;
        yield 100;
      }
    }
    expect(fillPage(rows(), 500, item).items).toHaveLength(5);
    expect(pulled).toBe(5);
  });

  it("is empty with no rows", () => {
    expect(fillPage([], 10, item)).toEqual({ items: [], last: undefined });
  });
});

describe("cursors over a pool's shards (docs/sharding.md §9)", () => {
  it("writes shard 0 exactly as the one-shard list does, so a cursor survives a raise", () => {
    expect(jobShardCursor(4).encode({ shard: 0, key: 17 })).toBe(encodeJobCursor(17));
    expect(nodeShardCursor(4).encode({ shard: 0, key: "gpu-1" })).toBe(encodeNodeCursor("gpu-1"));
    expect(jobShardCursor(4).decode(encodeJobCursor(17))).toEqual({ ok: true, after: { shard: 0, key: 17 } });
  });

  it("names shard k as jobs@k and nodes@k, and reads them back", () => {
    const jobs = jobShardCursor(16);
    expect(jobs.encode({ shard: 3, key: 9 })).toBe(base64url("jobs@3:9"));
    expect(jobs.decode(base64url("jobs@15:9"))).toEqual({ ok: true, after: { shard: 15, key: 9 } });
    expect(nodeShardCursor(16).decode(base64url("nodes@2:a:b"))).toEqual({ ok: true, after: { shard: 2, key: "a:b" } });
    expect(jobs.decode(undefined)).toEqual({ ok: true, after: null });
  });

  it.each([
    ["a shard the pool does not have", "jobs@4:9"],
    ["a shard with a leading zero", "jobs@01:9"],
    ["shard 0 spelt out", "jobs@0:9"],
    ["another list's cursor", "nodes@2:x"],
    ["a bad key", "jobs@2:0"],
  ])("refuses %s", (_, text) => {
    const read = jobShardCursor(4).decode(base64url(text));
    expect(read.ok).toBe(false);
    expect(JSON.stringify(read)).toContain("Invalid cursor");
  });

  it("writes a shard's start as the list and shard alone, apart from a node id ''", () => {
    expect(jobShardCursor(4).encode({ shard: 2, key: null })).toBe(base64url("jobs@2"));
    expect(jobShardCursor(4).decode(base64url("jobs@2"))).toEqual({ ok: true, after: { shard: 2, key: null } });
    expect(nodeShardCursor(4).decode(base64url("nodes@2"))).toEqual({ ok: true, after: { shard: 2, key: null } });
    expect(nodeShardCursor(4).decode(base64url("nodes@2:"))).toEqual({ ok: true, after: { shard: 2, key: "" } });
    expect(jobShardCursor(4).decode(base64url("jobs")).ok).toBe(false);
  });

  it("accepts at 5 shards the shard-4 cursor it refuses at 4", () => {
    expect(jobShardCursor(5).decode(base64url("jobs@4:9"))).toEqual({ ok: true, after: { shard: 4, key: 9 } });
  });

  it("never lets the one-shard decoders read a shard cursor", () => {
    expect(decodeJobCursor(base64url("jobs@1:9")).ok).toBe(false);
    expect(decodeNodeCursor(base64url("nodes@1:x")).ok).toBe(false);
  });
});
