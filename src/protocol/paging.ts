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
 * for nodes sorted by node_id. Clients must treat it as opaque.
 */
type CursorList = "jobs" | "nodes" | "artifacts";

/** The longest cursor this coordinator hands out: a node_id is part of a bounded registration. */
const MAX_CURSOR_CHARS = Math.ceil(((MAX_REGISTRATION_BYTES + "nodes:".length) * 4) / 3);

export type DecodedCursor<K> = { ok: true; after: K | null } | { ok: false; detail: ValidationDetailEntry[] };

/** The cursor continuing GET /jobs after the job with submission number `seq`. */
export function encodeJobCursor(seq: number): string {
  return encode("jobs", String(seq));
}

/** The job `seq` a GET /jobs cursor continues after; null when no cursor was sent. */
export function decodeJobCursor(raw: string | undefined): DecodedCursor<number> {
  const key = decode("jobs", raw);
  if (!key.ok) return key;
  if (key.after === null) return { ok: true, after: null };
  // Exactly as encodeJobCursor writes it: a positive safe integer, no sign or leading zero.
  const seq = /^[1-9]\d{0,15}$/.test(key.after) ? Number(key.after) : Number.NaN;
  return Number.isSafeInteger(seq) ? { ok: true, after: seq } : refuse("it does not continue a list of jobs");
}

/** The cursor continuing GET /nodes after the node `nodeId`. */
export function encodeNodeCursor(nodeId: string): string {
  return encode("nodes", nodeId);
}

/** The node_id a GET /nodes cursor continues after; null when no cursor was sent. */
export function decodeNodeCursor(raw: string | undefined): DecodedCursor<string> {
  return decode("nodes", raw);
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
  const bytes = new TextEncoder().encode(`${list}:${key}`);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function decode(list: CursorList, raw: string | undefined): DecodedCursor<string> {
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
  const prefix = `${list}:`;
  if (!text.startsWith(prefix)) return refuse("it does not continue this list");
  const key = text.slice(prefix.length);
  // Only the one spelling this coordinator writes: no padding, no stray bits.
  if (encode(list, key) !== raw) return refuse("it is not a cursor this coordinator wrote");
  return { ok: true, after: key };
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
