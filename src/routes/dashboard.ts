// Dashboard routes (docs/protocol.md §11). Two parts:
// - `dashboardPage`, mounted on the root app: `GET /` and `GET /pools/{pool}/`
//   serve the self-contained page (src/dashboard/page.ts). It holds no data,
//   so it needs no credential; it is served under a CSP that admits only its
//   own two inline blocks (by the hash of the very bytes inlined) and requests
//   to this origin: never 'unsafe-inline', never another origin. `servePage`
//   and `contentSecurityPolicy` serve the enrolment page the same way
//   (src/routes/enrol.ts).
// - `dashboardData`, mounted under `/v1alpha1`: the bounded JSON summary the
//   page polls. A read like any other: any valid credential when enforcing.

import { Hono } from "hono";
import { describeRoute } from "hono-openapi";
import { DASHBOARD_HTML, DASHBOARD_SCRIPT, DASHBOARD_STYLE } from "../dashboard/page";
import { DEMAND_CLASSES_CHECKED } from "../pool/reads/fleet";
import { invalidPoolDetail, isPoolName } from "../protocol/keys";
import { DASHBOARD_LIMIT_DEFAULT, DASHBOARD_LIMIT_MAX } from "../protocol/limits";
import { documented, HTML_PAGE, jsonBody, parameter, query, served, validation } from "../protocol/openapi-operations";
import { mergeDashboards } from "../rules/shard-merge";
import { type AppContext, type AppEnv, queryInt } from "./context";
import { everyShard, poolNodeAnswers } from "./every-shard";
import { viewerOf } from "./identity";

export const dashboardData = new Hono<AppEnv>().get(
  "/",
  describeRoute(
    documented({
      id: "dashboardView",
      tag: "observability",
      summary: "The pool's bounded summary the dashboard page polls",
      parameters: [
        query("limit", "Entries per list.", {
          type: "integer",
          minimum: 1,
          maximum: DASHBOARD_LIMIT_MAX,
          default: DASHBOARD_LIMIT_DEFAULT,
        }),
      ],
      ok: { 200: jsonBody(served("DashboardSummary"), "Counts, and at most `limit` entries of each list.") },
      refusals: { 422: validation(`\`limit\` is not an integer in [1, ${DASHBOARD_LIMIT_MAX}].`) },
    }),
  ),
  async (c) => {
    const limit = queryInt(c, "limit", { min: 1, max: DASHBOARD_LIMIT_MAX });
    if (!limit.ok) return limit.response;
    c.header("cache-control", "no-store");
    const n = limit.value ?? DASHBOARD_LIMIT_DEFAULT;
    if (c.var.shards.count === 1) return c.json(await c.var.shards.shard(0).dashboard(c.var.pool, n, viewerOf(c)));
    const answers = await poolNodeAnswers(c);
    const parts = await everyShard(c, (calls) => calls.shardDashboard(c.var.pool, n, viewerOf(c), answers));
    return c.json(mergeDashboards(parts, n, DEMAND_CLASSES_CHECKED));
  },
);

export const dashboardPage = new Hono<AppEnv>()
  .get(
    "/",
    describeRoute(
      documented({
        id: "dashboardPage",
        tag: "observability",
        summary: "The dashboard page of the pool `local`",
        ok: { 200: HTML_PAGE },
      }),
    ),
    (c) => page(c),
  )
  .get(
    "/pools/:pool/",
    describeRoute(
      documented({
        id: "poolDashboardPage",
        tag: "observability",
        summary: "The dashboard page of a pool",
        parameters: [parameter("pool")],
        ok: { 200: HTML_PAGE },
        refusals: { 404: "The pool name is invalid." },
      }),
    ),
    (c) => page(c),
  )
  // Without the trailing slash too: the page computes its API base from the
  // path either way.
  .get(
    "/pools/:pool",
    describeRoute(
      documented({
        id: "poolDashboardPageNoSlash",
        tag: "observability",
        summary: "The dashboard page of a pool (without the trailing slash)",
        parameters: [parameter("pool")],
        ok: { 200: HTML_PAGE },
        refusals: { 404: "The pool name is invalid." },
      }),
    ),
    (c) => page(c),
  );

const dashboardPolicy = contentSecurityPolicy(DASHBOARD_SCRIPT, DASHBOARD_STYLE);

function page(c: AppContext) {
  return servePage(c, DASHBOARD_HTML, dashboardPolicy);
}

/**
 * Serves one of the coordinator's self-contained pages for the pool in the
 * path (`local` without one; an invalid name is a 404): never cached, never
 * framed, no referrer, under the page's own CSP.
 */
export async function servePage(c: AppContext, html: string, policy: () => Promise<string>) {
  const pool = c.req.param("pool") ?? "local";
  if (!isPoolName(pool)) return c.json({ detail: invalidPoolDetail(pool) }, 404);
  return c.body(html, 200, {
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": await policy(),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
  });
}

/**
 * A page's CSP: only its own inline script and style run (admitted by the
 * hash of the very bytes inlined); fetches go to this origin only. The hashes
 * depend only on the page's constants: computed once per isolate, on first use.
 */
export function contentSecurityPolicy(script: string, style: string): () => Promise<string> {
  let policy: Promise<string> | undefined;
  return () => {
    policy ??= Promise.all([sha256Source(script), sha256Source(style)]).then(([scriptHash, styleHash]) =>
      [
        "default-src 'none'",
        `script-src '${scriptHash}'`,
        `style-src '${styleHash}'`,
        "connect-src 'self'",
        "img-src data:",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
      ].join("; "),
    );
    return policy;
  };
}

async function sha256Source(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  let binary = "";
  for (const byte of new Uint8Array(digest)) binary += String.fromCharCode(byte);
  return `sha256-${btoa(binary)}`;
}
