// Which methods a path is served under, for the 405 a wrong method gets
// (RFC 9110 §15.5.6) and its Allow header. Read from the app's own route
// table, so the answer can never disagree with the routing. Pure: no I/O.

/** A route as Hono lists it in `app.routes`; middleware is method "ALL". */
export type RouteEntry = { method: string; path: string };

// Route patterns are few and fixed: each is compiled once.
const compiled = new Map<string, RegExp>();

/**
 * The methods some route serves for `path` (HEAD wherever GET is, as Hono
 * answers it), sorted; empty when no route matches the path at all, which
 * is a 404, not a 405. `path` is the path as the router matches it.
 */
export function allowedMethods(routes: readonly RouteEntry[], path: string): string[] {
  const methods = new Set<string>();
  for (const route of routes) {
    if (route.method === "ALL") continue;
    if (patternOf(route.path).test(path)) methods.add(route.method);
  }
  if (methods.has("GET")) methods.add("HEAD");
  return [...methods].sort();
}

/** `:param` matches one non-empty segment; a final `/*` matches nothing or any rest, as in Hono. */
function patternOf(route: string): RegExp {
  let regex = compiled.get(route);
  if (regex === undefined) {
    let source = "";
    for (const segment of route.split("/").slice(1)) {
      if (segment === "*") source += "(?:/.*)?";
      else if (segment.startsWith(":")) source += "/[^/]+";
      else source += `/${segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`;
    }
    regex = new RegExp(`^${source}$`, "s");
    compiled.set(route, regex);
  }
  return regex;
}
