// What every route shares: the Hono environment type, the pool shards of the
// request, and JSON body parsing into the spec's error shapes.

import type { Context } from "hono";
import type { z } from "zod";
import { jsonInvalidDetail, parseRequest } from "../protocol/errors";
import { jsonShapeProblem } from "../protocol/json";
import { LIST_PAGE_DEFAULT, LIST_PAGE_MAX, LIST_PAGE_MAX_BYTES, MAX_JSON_BODY_BYTES } from "../protocol/limits";
import { type DecodedCursor, nextLink, type ShardCursor, type ShardKey } from "../protocol/paging";
import type { Caller } from "../rules/auth";
import type { Locale } from "../rules/homing";
import type { Settings } from "../rules/settings";
import { utf8Length } from "../rules/text";
import type { PoolShards } from "./shards";

export type AppEnv = {
  Bindings: Env;
  Variables: {
    pool: string;
    shards: PoolShards;
    caller: Caller;
    settings: Settings;
  };
};
export type AppContext = Context<AppEnv>;

export type Parsed<T> = { ok: true; value: T } | { ok: false; response: Response };

/**
 * Reads and validates a JSON body: 413 past the limit (MAX_JSON_BODY_BYTES
 * unless the route sets a smaller `maxBytes`), 415 for a non-JSON content
 * type, 422 with `[{loc, msg, type}]` for malformed JSON, a body nested too
 * deep or holding a lone surrogate, or a body the schema refuses. Never
 * throws for anything a client can send.
 */
export async function readJson<S extends z.ZodType>(
  c: AppContext,
  schema: S,
  { maxBytes = MAX_JSON_BODY_BYTES }: { maxBytes?: number } = {},
): Promise<Parsed<z.output<S>>> {
  const type = c.req.header("content-type");
  if (type !== undefined && !/^application\/([\w.+-]*\+)?json\s*(;|$)/i.test(type.trim())) {
    return fail(c.json({ detail: `unsupported content type '${type}': send application/json` }, 415));
  }
  const declared = Number(c.req.header("content-length") ?? "0");
  if (declared > maxBytes) return fail(tooLarge(c, maxBytes));
  let text: string;
  try {
    text = await readLimited(c.req.raw, maxBytes);
  } catch (e) {
    if (e instanceof BodyTooLarge) return fail(tooLarge(c, maxBytes));
    return fail(c.json({ detail: "could not read the request body" }, 400));
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (e) {
    const reason = text.trim() === "" ? "the request body is empty: send a JSON object" : (e as Error).message;
    return fail(c.json({ detail: jsonInvalidDetail(reason) }, 422));
  }
  // Before the schema: a hostile shape must never reach recursive code.
  const shape = jsonShapeProblem(body);
  if (shape) return fail(c.json({ detail: [{ ...shape, loc: ["body", ...shape.loc] }] }, 422));
  const parsed = parseRequest(schema, body);
  return parsed.ok ? parsed : fail(c.json({ detail: parsed.detail }, 422));
}

/**
 * An integer query parameter within [min, max], or null when absent. A bad
 * one is the 422 FastAPI would give: `[{loc: ["query", name], msg, type}]`.
 */
export function queryInt(
  c: AppContext,
  name: string,
  bounds: { min: number; max?: number },
): { ok: true; value: number | null } | { ok: false; response: Response } {
  const raw = c.req.query(name);
  if (raw === undefined) return { ok: true, value: null };
  const loc = ["query", name];
  const refuse = (msg: string, type: string) => fail(c.json({ detail: [{ loc, msg, type }] }, 422));
  if (!/^-?\d{1,15}$/.test(raw))
    return refuse("Input should be a valid integer, unable to parse string as an integer", "int_parsing");
  const value = Number(raw);
  if (value < bounds.min) return refuse(`Input should be greater than or equal to ${bounds.min}`, "greater_than_equal");
  if (bounds.max !== undefined && value > bounds.max)
    return refuse(`Input should be less than or equal to ${bounds.max}`, "less_than_equal");
  return { ok: true, value };
}

/**
 * A paged list route (docs/protocol.md §12): reads `?limit=` and the opaque `?cursor=`,
 * fetches one page, and answers its items as the plain list the reference
 * returns, with a `Link: rel="next"` header when more rows exist.
 */
export async function pagedList<K>(
  c: AppContext,
  cursor: { decode: (raw: string | undefined) => DecodedCursor<K>; encode: (key: K) => string },
  fetchPage: (after: K | null, limit: number) => Promise<{ items: unknown[]; next: K | null }>,
): Promise<Response> {
  const query = pageQuery(c, cursor.decode);
  if (!query.ok) return query.response;
  const { after, size } = query;
  const page = await fetchPage(after, size);
  if (page.next !== null) c.header("link", nextLink(c.req.url, cursor.encode(page.next), size));
  return c.json(page.items);
}

/**
 * A paged list over the pool's shards (docs/sharding.md §9), walked in
 * shard order: a page that runs out of one shard goes on in the next with
 * what is left of its limit and byte bound, so empty shards cost a request
 * but never an empty page. Every item has one shard, so none is served
 * twice. At one shard this is `pagedList`, cursor bytes included.
 */
export async function shardedList<K>(
  c: AppContext,
  cursor: ShardCursor<K>,
  fetchPage: (
    shard: number,
    after: K | null,
    limit: number,
    maxBytes: number,
  ) => Promise<{ items: unknown[]; next: K | null }>,
): Promise<Response> {
  const query = pageQuery(c, cursor.decode);
  if (!query.ok) return query.response;
  const { size } = query;
  const last = c.var.shards.count - 1;
  let next: ShardKey<K> | null = query.after ?? { shard: 0, key: null };
  const items: unknown[] = [];
  let bytes = 1;
  while (next !== null && items.length < size && bytes < LIST_PAGE_MAX_BYTES) {
    const { shard, key }: ShardKey<K> = next;
    const page = await fetchPage(shard, key, size - items.length, LIST_PAGE_MAX_BYTES - bytes);
    for (const item of page.items) bytes += utf8Length(JSON.stringify(item)) + 1;
    items.push(...page.items);
    next = page.next !== null ? { shard, key: page.next } : shard < last ? { shard: shard + 1, key: null } : null;
    if (page.next !== null) break;
  }
  // A full page that ended its shard links on only if a later shard has something: as at one shard, the last page has no Link.
  while (next !== null && next.key === null && (await fetchPage(next.shard, null, 1, 1)).items.length === 0)
    next = next.shard < last ? { shard: next.shard + 1, key: null } : null;
  if (next !== null) c.header("link", nextLink(c.req.url, cursor.encode(next), size));
  return c.json(items);
}

/** A list request's `?limit=` (422 when bad, else the default) and `?cursor=` (422 when it continues no page of this list). */
function pageQuery<K>(
  c: AppContext,
  decode: (raw: string | undefined) => DecodedCursor<K>,
): { ok: true; size: number; after: K | null } | { ok: false; response: Response } {
  const limit = queryInt(c, "limit", { min: 1, max: LIST_PAGE_MAX });
  if (!limit.ok) return limit;
  const at = decode(c.req.query("cursor"));
  if (!at.ok) return fail(c.json({ detail: at.detail }, 422));
  return { ok: true, size: limit.value ?? LIST_PAGE_DEFAULT, after: at.after };
}

function fail(response: Response): { ok: false; response: Response } {
  return { ok: false, response };
}

function tooLarge(c: AppContext, limit: number): Response {
  return c.json({ detail: `request body exceeds ${limit} bytes` }, 413);
}

class BodyTooLarge extends Error {}

/** Reads a body as UTF-8 text, stopping as soon as it passes `limit` bytes. */
async function readLimited(request: Request, limit: number): Promise<string> {
  if (!request.body) return "";
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw new BodyTooLarge();
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    all.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return new TextDecoder().decode(all);
}

/**
 * Where the request came from, as Cloudflare tells the Worker
 * (`request.cf`): a pool spread over locations homes a new node by it
 * (src/rules/homing.ts). Null when the platform says nothing (wrangler dev).
 */
export function localeOf(c: AppContext): Locale | null {
  const cf = c.req.raw.cf as { continent?: unknown; longitude?: unknown } | undefined;
  if (typeof cf?.continent !== "string") return null;
  const longitude = Number(cf.longitude);
  return {
    continent: cf.continent,
    longitude: typeof cf.longitude === "string" && Number.isFinite(longitude) ? longitude : null,
  };
}
