// @ts-check
// The pool the dashboard shows and its API (docs/protocol.md §11): which pool
// the page's path names, the GETs of that pool's API with the tab's token
// (a list's first page, and whether it has a next), and the summary it last
// answered. Inlined ahead of the panels and the poll loop
// (src/dashboard/page.ts); its one global, `apiKit`, is what they read.
//
// It never asks another origin: every request goes to this pool's API on
// the page's own origin, without cookies, and refuses to follow a redirect.
// The token the operator types is kept in this tab only (sessionStorage,
// pageKit's getToken and setToken). The constants the page shares with the
// server (the pool-name rule, the page size, the task states) come from the
// page's `flashedge-config` meta tag, which the Worker fills from their one
// definition: none is copied here.
//
// Type-checked as a browser script: `tsc --noEmit -p tsconfig.dashboard.json`.

// biome-ignore lint/correctness/noUnusedVariables: read by the dashboard scripts inlined after this one.
const apiKit = (() => {
  // biome-ignore lint/suspicious/noRedundantUseStrict: the page runs this as a classic script, where strict mode is opt-in.
  "use strict";

  /**
   * @typedef {import("./wire").PageConfig} PageConfig
   * @typedef {import("./wire").Summary} Summary
   */

  const { getToken } = pageKit;
  const config = /** @type {PageConfig} */ (pageKit.readConfig());
  const poolName = new RegExp(config.pool_name.source, config.pool_name.flags);
  const segment = /^\/pools\/([^/]+)\/?$/.exec(location.pathname)?.[1];
  const match = segment !== undefined && poolName.test(segment) ? segment : null;
  const pool = match ?? "local";
  const base = match ? `/pools/${match}/v1alpha1` : "/v1alpha1";
  const enrolPage = match ? `/pools/${match}/enrol` : "/enrol";

  /** The last summary drawn. @type {Summary | null} */
  let last = null;

  /** A response the server refused for want of a valid token. */
  class Unauthorized extends Error {}

  /**
   * A GET of this pool's API with the tab's token; rejects with the server's detail.
   * @param {string} path
   * @returns {Promise<unknown>}
   */
  function api(path) {
    return get(path).then((r) => r.json());
  }

  /**
   * The first page of one of this pool's lists (`/jobs`, `/runs`, …), and
   * whether the server links a next page (`Link: <…>; rel="next"`).
   * @param {string} path
   * @returns {Promise<{ items: unknown[], next: boolean }>}
   */
  function list(path) {
    return get(path).then((r) =>
      r.json().then((/** @type {unknown} */ body) => {
        if (!Array.isArray(body)) throw new Error("the list is not a JSON array");
        return { items: body, next: /;\s*rel="?next"?/.test(r.headers.get("link") ?? "") };
      }),
    );
  }

  /**
   * @param {string} path
   * @returns {Promise<Response>}
   */
  function get(path) {
    /** @type {Record<string, string>} */
    const headers = { accept: "application/json" };
    const token = getToken();
    if (token) headers.authorization = `Bearer ${token}`;
    return fetch(base + path, { headers, cache: "no-store", credentials: "omit", redirect: "error" }).then((r) => {
      if (r.status === 401) throw new Unauthorized("a valid token is required");
      if (!r.ok) {
        return r
          .json()
          .catch(() => ({}))
          .then((/** @type {unknown} */ body) => {
            const detail =
              typeof body === "object" && body !== null && "detail" in body && typeof body.detail === "string"
                ? body.detail
                : `HTTP ${r.status}`;
            throw new Error(detail);
          });
      }
      return r;
    });
  }

  /** The last summary drawn, or null before the first and once the token is forgotten. */
  function lastSummary() {
    return last;
  }

  /** @param {Summary | null} summary */
  function setLastSummary(summary) {
    last = summary;
  }

  /** @param {string} jobId */
  function jobLabel(jobId) {
    return last?.jobs.items.find((j) => j.job_id === jobId)?.name ?? null;
  }

  return { config, pool, base, enrolPage, Unauthorized, api, list, lastSummary, setLastSummary, jobLabel };
})();
