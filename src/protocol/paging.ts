// Paging of the list routes (docs/protocol.md §12 "Bounded answers"): the opaque cursor
// a `Link: rel="next"` header carries, the header itself, and the rule that
// ends a page early once its JSON body passes a size. Pure: it reads no rows
// and never decides which rows exist; a cursor only says where the last page
// ended, so a client can neither widen a page nor reach another list with it.

import { utf8Length } from "../rules/text";
import type { ValidationDetailEntry } from "./errors";
import { MAX_REGISTRATION_BYTES } from "./limits";

/**
 * A cursor is base64url (no padding) of `{list}:{key}`: the key of the last
 * row served, `jobs:{seq}` for jobs in submission order, `nodes:{node_id}`
 * for nodes sorted by node_id; in shard k ≥ 1 of a sharded pool
 * `{list}@{k}:{key}`, and `{list}@{k}` for the shard's start. Clients must
 * treat it as opaque.
 */
type CursorList = "jobs" | "nodes" | "artifacts" | "runs";

/** The longest cursor this coordinator hands out: a node_id is part of a bounded registration. */
const MAX_CURSOR_CHARS = Math.ceil(((MAX_REGISTRATION_BYTES + "nodes@255:".length) * 4) / 3);

export type DecodedCursor<K> = { ok: true; after: K | null } | { ok: false; detail: ValidationDetailEntry[] };

/**
 * Where a list over a pool's shards (docs/sharding.md §9) continues: a
 * shard, and the key inside it to continue after, or null for the shard's
 * start (`{list}@{k}`, written when a page ends with its shard).
 */
export type ShardKey<K> = { shard: number; key: K | null };

/** A cursor of a list walked over shards; shard 0's form is the one-shard list's, byte for byte. */
export type ShardCursor<K> = {
  decode: (raw: string | undefined) => DecodedCursor<ShardKey<K>>;
  encode: (at: ShardKey<K>) => string;
};

/** GET /jobs over a pool of `shards`: `jobs:{seq}` in shard 0, `jobs@{k}:{seq}` in shard k. */
export function jobShardCursor(shards: number): ShardCursor<number> {
  return seqShardCursor("jobs", shards);
}

/** GET /runs over a pool of `shards`: `runs:{seq}` in shard 0, `runs@{k}:{seq}` in shard k. */
export function runShardCursor(shards: number): ShardCursor<number> {
  return seqShardCursor("runs", shards);
}

function seqShardCursor(list: "jobs" | "runs", shards: number): ShardCursor<number> {
  return {
    decode: (raw) => {
      const read = decodeShard(list, raw, shards);
      if (!read.ok || read.after === null) return read as DecodedCursor<ShardKey<number>>;
      if (read.after.key === null) return { ok: true, after: { shard: read.after.shard, key: null } };
      // Exactly as encode writes it: a positive safe integer, no sign or leading zero.
      const seq = /^[1-9]\d{0,15}$/.test(read.after.key) ? Number(read.after.key) : Number.NaN;
      return Number.isSafeInteger(seq)
        ? { ok: true, after: { shard: read.after.shard, key: seq } }
        : refuse(`it does not continue a list of ${list}`);
    },
    encode: ({ shard, key }) => encodeShard(list, shard, key === null ? null : String(key)),
  };
}

/** GET /nodes over a pool of `shards`: `nodes:{node_id}` in shard 0, `nodes@{k}:{node_id}` in shard k. */
export function nodeShardCursor(shards: number): ShardCursor<string> {
  return {
    decode: (raw) => decodeShard("nodes", raw, shards),
    encode: ({ shard, key }) => encodeShard("nodes", shard, key),
  };
}

/** The cursor continuing GET /jobs/{id}/artifacts after the key `key`. */
export function encodeArtifactCursor(key: string): string {
  return encode("artifacts", key);
}

/** The key a GET /jobs/{id}/artifacts cursor continues after; null when no cursor was sent. */
export function decodeArtifactCursor(raw: string | undefined): DecodedCursor<string> {
  return decode("artifacts", raw);
}

/**
 * The RFC 8288 `Link` header value for the next page: the request's own URL
 * (path, pool and other parameters kept) with `cursor` and `limit` set.
 */
export function nextLink(requestUrl: string, cursor: string, limit: number): string {
  const url = new URL(requestUrl);
  url.searchParams.set("cursor", cursor);
  url.searchParams.set("limit", String(limit));
  return `<${url.href}>; rel="next"`;
}

/**
 * Fills a page from `rows`, in order, turning each into the item served:
 * every row, or fewer once the page's JSON body (`[item,item,…]`, UTF-8)
 * has passed `maxBytes`. The row that passes it is kept, so a page always
 * holds at least one row and paging always advances. Rows past the end are
 * never pulled from `rows` nor turned into items. `last` is the row of the
 * last item, the key to continue after.
 */
export function fillPage<R, T>(
  rows: Iterable<R>,
  maxBytes: number,
  toItem: (row: R) => T,
): { items: T[]; last: R | undefined } {
  const items: T[] = [];
  let last: R | undefined;
  let bytes = 1; // "["
  for (const row of rows) {
    const item = toItem(row);
    items.push(item);
    last = row;
    bytes += utf8Length(JSON.stringify(item)) + 1; // the item, then "," or "]"
    if (bytes > maxBytes) break;
  }
  return { items, last };
}

function encode(list: CursorList, key: string): string {
  return encodeShard(list, 0, key);
}

function encodeShard(list: CursorList, shard: number, key: string | null): string {
  const head = shard === 0 ? list : `${list}@${shard}`;
  const bytes = new TextEncoder().encode(key === null ? head : `${head}:${key}`);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function decode(list: CursorList, raw: string | undefined): DecodedCursor<string> {
  const read = decodeShard(list, raw, 1);
  return read.ok ? { ok: true, after: read.after?.key ?? null } : read;
}

/**
 * The shard and key a cursor of `list` continues after, in a pool of
 * `shards`: `{list}:{key}` is shard 0 (the one form at S = 1), `{list}@{k}:{key}`
 * shard k, with k written without leading zeros and below `shards`.
 */
function decodeShard(list: CursorList, raw: string | undefined, shards: number): DecodedCursor<ShardKey<string>> {
  if (raw === undefined) return { ok: true, after: null };
  if (raw === "") return refuse("it is empty; send the cursor of a Link header, or none for the first page");
  if (raw.length > MAX_CURSOR_CHARS) return refuse(`it is longer than ${MAX_CURSOR_CHARS} characters`);
  if (!/^[A-Za-z0-9_-]+$/.test(raw) || raw.length % 4 === 1) return refuse("it is not base64url");
  const binary = atob(raw.replace(/-/g, "+").replace(/_/g, "/"));
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(
      Uint8Array.from(binary, (c) => c.charCodeAt(0)),
    );
  } catch {
    return refuse("it does not continue this list");
  }
  // `{list}@{k}` alone is shard k's start; shard 0's start is the first page, which has no cursor.
  const head = new RegExp(`^${list}(?:@([1-9]\\d{0,2}))?(:|$)`).exec(text);
  const shard = head ? Number(head[1] ?? 0) : Number.NaN;
  if (!head || !(shard < shards) || (head[2] === "" && shard === 0)) return refuse("it does not continue this list");
  const key = head[2] === "" ? null : text.slice(head[0].length);
  // Only the one spelling this coordinator writes: no padding, no stray bits.
  if (encodeShard(list, shard, key) !== raw) return refuse("it is not a cursor this coordinator wrote");
  return { ok: true, after: { shard, key } };
}

function refuse(why: string): { ok: false; detail: ValidationDetailEntry[] } {
  return {
    ok: false,
    detail: [
      {
        loc: ["query", "cursor"],
        msg: `Invalid cursor: ${why}. Use the URL of the previous page's Link: rel="next" header as is.`,
        type: "value_error",
      },
    ],
  };
}
