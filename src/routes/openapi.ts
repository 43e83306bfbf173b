// GET /openapi.json: the OpenAPI 3.1 description of this Worker's API, read
// from the app's own route table. Every route carries its description
// (hono-openapi's `describeRoute`, filled by `documented`) beside its
// handler; this gathers them per path the route is served at, adds what its
// mount sends (`mounted`) and builds the document around them. A route with
// no description fails the document, so none can be served undocumented.
// Public like /healthz (it describes routes and holds no pool data), so it is
// mounted on the root app, outside the identity middleware.

import { Hono } from "hono";
import { findTargetHandler } from "hono/utils/handler";
import { describeRoute, uniqueSymbol } from "hono-openapi";
import { type Method, type OpenApiDocument, type Operation, openApiDocument } from "../protocol/openapi";
import { documented, jsonBody, type MiddlewareDoc, mounted } from "../protocol/openapi-operations";
import type { AppEnv } from "./context";
import type { RouteEntry } from "./methods";

type Described = { [uniqueSymbol]?: { spec?: Operation & MiddlewareDoc } };

/** Hono's `:name` and a final `*` (an artifact key) as OpenAPI's `{name}`. */
function openApiPath(path: string): string {
  return path.replace(/:(\w+)/g, "{$1}").replace(/\/\*$/, "/{key}");
}

/** The document of `routes` (an app's `routes`): each served path and method, as its route describes it. */
export function documentOf(routes: readonly (RouteEntry & { handler: unknown })[]): OpenApiDocument {
  const paths: OpenApiDocument["paths"] = {};
  // Described middleware (`use`) applies to the routes registered after it under its path, as Hono runs it.
  const middleware: { prefix: string; doc: MiddlewareDoc }[] = [];
  for (const route of routes) {
    const spec = (findTargetHandler(route.handler as never) as Described)[uniqueSymbol]?.spec;
    if (!spec) continue;
    if (route.method === "ALL") {
      middleware.push({ prefix: route.path.replace(/\/?\*$/, ""), doc: spec });
      continue;
    }
    const before = middleware.filter(({ prefix }) => route.path === prefix || route.path.startsWith(`${prefix}/`));
    const path = openApiPath(route.path);
    const item = paths[path] ?? {};
    item[route.method.toLowerCase() as Method] = mounted(
      path,
      spec,
      before.map(({ doc }) => doc),
    );
    paths[path] = item;
  }
  const missing = routes.filter(
    (r) => r.method !== "ALL" && paths[openApiPath(r.path)]?.[r.method.toLowerCase() as Method] === undefined,
  );
  if (missing.length > 0) {
    throw new Error(`routes without describeRoute: ${missing.map((r) => `${r.method} ${r.path}`).join(", ")}`);
  }
  return openApiDocument(paths);
}

/** GET /openapi.json for `app`: built once per isolate on first use, as it depends only on the code. */
export function openapiOf(app: { routes: readonly (RouteEntry & { handler: unknown })[] }) {
  let text: string | undefined;
  return new Hono<AppEnv>().get(
    "/",
    describeRoute(
      documented({
        id: "openApiDocument",
        tag: "service",
        summary: "This document",
        ok: { 200: jsonBody({ type: "object" }, "The OpenAPI 3.1 description of the API.") },
      }),
    ),
    (c) => {
      text ??= JSON.stringify(documentOf(app.routes));
      return c.body(text, 200, { "content-type": "application/json; charset=utf-8" });
    },
  );
}
