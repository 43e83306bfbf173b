// @ts-check
// The CLI's only way to the coordinator: one pool's v1alpha1 routes over
// fetch, with the bearer token, lists read to their end through
// `Link: rel="next"` (docs/protocol.md §12), and every refusal turned into a sentence a
// person can act on. It never prints or logs the token.

import { CliError } from "./errors.mjs";

const TIMEOUT_MS = 30_000;
const POOL_RE = /^[a-z0-9-]{1,63}$/;
/** The most a list page may ask for (docs/protocol.md §12). */
export const PAGE_MAX = 1000;

/**
 * The pool's base URL: `URL` for the pool `local`, `URL/pools/P` for any other.
 * @param {string} url
 * @param {string} pool
 */
export function poolBase(url, pool) {
  /** @type {URL} */
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliError(`--url ${JSON.stringify(url)} is not a URL (e.g. http://127.0.0.1:8787)`, 2);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new CliError(`--url must be http:// or https://, not ${parsed.protocol}`, 2);
  }
  if (!POOL_RE.test(pool)) {
    throw new CliError(`--pool ${JSON.stringify(pool)}: lowercase letters, digits and '-', at most 63`, 2);
  }
  const root = parsed.href.replace(/\/+$/, "");
  return pool === "local" ? root : `${root}/pools/${pool}`;
}

/**
 * @param {unknown} body
 * @returns {string}
 */
function detailOf(body) {
  if (body && typeof body === "object" && "detail" in body) {
    const { detail } = body;
    if (typeof detail === "string") return detail;
    if (Array.isArray(detail)) {
      return detail
        .map((d) =>
          d && typeof d === "object" && "msg" in d
            ? `${Array.isArray(d.loc) ? d.loc.join(".") : ""}: ${d.msg}`
            : typeof d === "string"
              ? d
              : JSON.stringify(d),
        )
        .join("\n  ");
    }
  }
  return typeof body === "string" ? body : JSON.stringify(body);
}

/**
 * The sentence for a refusal.
 * @param {number} status
 * @param {string} method
 * @param {string} path
 * @param {unknown} body
 */
function refusal(status, method, path, body) {
  const detail = detailOf(body);
  switch (status) {
    case 401:
      return `no or wrong token (401): set FLASHEDGE_TOKEN or run flashedge login (${detail})`;
    case 403:
      return `refused (403): ${detail} — an operator's token is needed: set FLASHEDGE_TOKEN or run flashedge login`;
    case 404:
      return `not found (404): ${detail}`;
    case 405:
      return `the coordinator does not serve ${method} ${path} (405): it is older than this CLI`;
    case 422:
      return `invalid request (422):\n  ${detail}`;
    default:
      return `${method} ${path}: the coordinator answered ${status}: ${detail}`;
  }
}

/**
 * The URL of a `Link` header's rel="next", resolved against the page's URL; null at the end.
 * @param {string | null} header
 * @param {string} pageUrl
 */
export function nextPage(header, pageUrl) {
  if (!header) return null;
  for (const part of header.split(",")) {
    const match = /^\s*<([^>]*)>\s*;(.*)$/.exec(part);
    const rel = /;\s*rel\s*=\s*"?([^";]*)"?/i.exec(`;${match?.[2] ?? ""}`)?.[1];
    if (match && rel?.split(/\s+/).includes("next")) return new URL(match[1] ?? "", pageUrl).href;
  }
  return null;
}

/**
 * One pool of one coordinator.
 * @param {{ url: string, pool: string, token: string | null }} target
 */
export function coordinator({ url, pool, token }) {
  const base = poolBase(url, pool);
  const api = `${base}/v1alpha1`;

  /**
   * @param {string} method
   * @param {string} href
   * @param {string} path what the messages call it
   * @param {unknown} [body]
   */
  async function send(method, href, path, body) {
    /** @type {Record<string, string>} */
    const headers = { accept: "application/json" };
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    /** @type {Response} */
    let response;
    try {
      response = await fetch(href, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (error) {
      const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error);
      if (error instanceof Error && error.name === "TimeoutError") {
        throw new CliError(`no answer from the coordinator at ${base} within ${TIMEOUT_MS / 1000} s`);
      }
      throw new CliError(`no coordinator at ${base} (${cause})`);
    }
    const text = await response.text();
    /** @type {unknown} */
    let json = null;
    if (text) {
      try {
        json = JSON.parse(text);
      } catch {
        json = text;
      }
    }
    if (response.status >= 400) throw new CliError(refusal(response.status, method, path, json));
    return { status: response.status, json, link: response.headers.get("link") };
  }

  return {
    base,
    /**
     * One call; resolves to the JSON answer (null for an empty body).
     * @param {string} method
     * @param {string} path under /v1alpha1
     * @param {unknown} [body]
     * @returns {Promise<unknown>}
     */
    async call(method, path, body) {
      return (await send(method, api + path, path, body)).json;
    },
    /**
     * Every item of a paged list, following `Link: rel="next"`, or the first `limit`.
     * @param {string} path under /v1alpha1
     * @param {number} [limit]
     * @returns {Promise<unknown[]>}
     */
    async list(path, limit) {
      /** @type {unknown[]} */
      const items = [];
      /** @type {string | null} */
      let href = api + path + (limit ? `?limit=${Math.min(limit, PAGE_MAX)}` : "");
      while (href !== null) {
        const page = await send("GET", href, path);
        if (!Array.isArray(page.json)) throw new CliError(`GET ${path}: the answer is not a list`);
        items.push(...page.json);
        if (limit && items.length >= limit) return items.slice(0, limit);
        const next = nextPage(page.link, href);
        if (next === href) throw new CliError(`GET ${path}: the next page's link points at the same page`);
        href = next;
      }
      return items;
    },
  };
}

/** @typedef {ReturnType<typeof coordinator>} Coordinator */
