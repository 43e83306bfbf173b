// How a route says what it answers, for the OpenAPI document. Each route in
// src/routes carries its own `describeRoute(documented({...}))` beside the
// handler that sends those statuses; `mounted` then adds what the route's
// mount sends for it (the identity middleware's refusals, the pool name's
// 404, the 500 and 503 every route may give) for each path it is served at.
// Pure: it describes and decides nothing; no I/O.

import { MAX_ARTIFACT_KEY_BYTES } from "./keys";
import { LIST_PAGE_DEFAULT, LIST_PAGE_MAX, LIST_PAGE_MAX_BYTES, MAX_JSON_BODY_BYTES } from "./limits";
import {
  type Operation,
  type ParameterObject,
  type Reference,
  type ResponseObject,
  type SchemaObject,
  served,
} from "./openapi";

export { request, served } from "./openapi";

type Refusals = Partial<
  Record<400 | 401 | 403 | 404 | 409 | 410 | 411 | 413 | 422 | 429 | 503, string | ResponseObject>
>;

/** What a route says about itself; its method and path are the router's. */
export type RouteDoc = {
  id: string;
  tag: string;
  summary: string;
  description?: string;
  parameters?: (ParameterObject | Reference)[];
  /** A JSON body (refused with 413/415/422 as every JSON body is, by readJson), or raw bytes. */
  body?: Reference | "bytes";
  ok: Record<string, ResponseObject>;
  /** The refusals the handler sends. */
  refusals?: Refusals;
};

export const string = { type: "string" };
export const count = { type: "integer", minimum: 0 };
export const list = (items: SchemaObject) => ({ type: "array", items });

export const jsonBody = (schema: SchemaObject, description: string): ResponseObject => ({
  description,
  content: { "application/json": { schema } },
});
export const refusal = (description: string) => jsonBody(served("Refusal"), description);
export const validation = (description = "The request does not fit its schema: one `{loc, msg, type}` per problem.") =>
  jsonBody(served("HTTPValidationError"), description);
export const parameter = (name: string): Reference => ({ $ref: `#/components/parameters/${name}` });
export const query = (name: string, description: string, schema: SchemaObject, required = false): ParameterObject => ({
  name,
  in: "query",
  required,
  description,
  schema,
});

/** What the dashboard and enrolment page routes answer. */
export const HTML_PAGE: ResponseObject = {
  description: "A self-contained HTML page.",
  content: { "text/html": { schema: string } },
};
export const OPERATOR_ONLY = "When tokens are configured, an operator token is required.";
export const NOT_AN_OPERATOR = "A node token: an operator token is required for this route.";
export const NO_NODE_IDENTITY = "An operator credential that names no node in X-FlashML-On-Behalf-Of.";
export const OPEN_COORDINATOR = "The coordinator is open (no tokens configured): there is nothing to enrol.";
export const MISCONFIGURED = "The coordinator's settings cannot be trusted: it refuses every request.";
export const INVALID_POOL = "The pool name is invalid.";

// GET /jobs and GET /nodes (docs/protocol.md §12): the body is the plain list, a Link header continues it.
export const PAGED = `One page of the list: \`limit\` rows, fewer once the body passes ${LIST_PAGE_MAX_BYTES} bytes. When more rows exist, a \`Link: <URL>; rel="next"\` header (RFC 8288) gives the URL of the next page; the last page has none.`;
export const pageParameters = [
  query("limit", "Rows per page.", { type: "integer", minimum: 1, maximum: LIST_PAGE_MAX, default: LIST_PAGE_DEFAULT }),
  query(
    "cursor",
    'Where the previous page ended: opaque, taken from its `Link: rel="next"` URL. None for the first page.',
    { type: "string" },
  ),
];
export const pageOf = (item: Reference, description: string): ResponseObject => ({
  ...jsonBody(list(item), description),
  headers: {
    Link: {
      description:
        'The next page, `<URL>; rel="next"` (the URL carries `cursor` and `limit`); absent on the last page.',
      schema: string,
    },
  },
});
export const badPage = validation(
  `\`limit\` is not an integer in [1, ${LIST_PAGE_MAX}], or \`cursor\` is not one this coordinator handed out.`,
);

// readJson's refusals (src/routes/context.ts), for every route that reads a JSON body.
const JSON_BODY_REFUSALS = {
  400: "The request body could not be read.",
  413: `The JSON body is larger than ${MAX_JSON_BODY_BYTES} bytes.`,
  415: "The content type is not JSON.",
};

/** Adds a refusal for `status`, or adds its cause to the one already there. */
function addRefusal(responses: Operation["responses"], status: number, description: string): void {
  const existing = responses[status];
  responses[status] =
    existing === undefined
      ? refusal(description)
      : "$ref" in existing
        ? existing
        : { ...existing, description: `${existing.description} ${description}` };
}

/**
 * The operation a route documents, for `describeRoute`: its answers, its
 * refusals and, when it reads a JSON body, the body's own refusals.
 */
export function documented(route: RouteDoc): Operation {
  const responses: Operation["responses"] = { ...route.ok };
  for (const [status, answer] of Object.entries(route.refusals ?? {})) {
    responses[status] = typeof answer === "string" ? refusal(answer) : answer;
  }
  if (route.body !== undefined && route.body !== "bytes") {
    for (const [status, description] of Object.entries(JSON_BODY_REFUSALS)) addRefusal(responses, +status, description);
    responses[422] ??= validation();
  }
  const content: Record<string, { schema: SchemaObject }> | undefined =
    route.body === "bytes"
      ? { "application/octet-stream": { schema: { type: "string", format: "binary" } } }
      : route.body && { "application/json": { schema: route.body } };
  return {
    operationId: route.id,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: [route.tag],
    ...(route.parameters ? { parameters: route.parameters } : {}),
    ...(content ? { requestBody: { required: true, content } } : {}),
    responses,
  };
}

const PATH_PARAMETERS: Record<string, string> = {
  node_id: "The node.",
  lease_id: "The lease (`ls-` and 12 lowercase hex digits).",
  job_id: "The job.",
  task_id: "The task.",
  manifest_id: "The checkpoint manifest (`ck-` and 12 lowercase hex digits).",
  key: `The artifact key: a relative path, '/' sent as is or percent-encoded; at most ${MAX_ARTIFACT_KEY_BYTES} bytes, no '.', '..' or empty segment, no backslash or control character.`,
};

/** How the pool API is mounted (src/index.ts). */
const POOL_API = /^(\/pools\/\{pool\})?\/v1alpha1\//;
/** What a middleware refuses for every route after it, for `describeRoute` beside its `use`. */
export type MiddlewareDoc = { responses: Record<string, ResponseObject> };

/** The refusals a middleware sends, as `describeRoute` takes them. */
export function refusedBy(refusals: Record<number, string>): MiddlewareDoc {
  return {
    responses: Object.fromEntries(Object.entries(refusals).map(([status, text]) => [status, refusal(text)])),
  };
}

/**
 * A route's operation as served at `path` (OpenAPI syntax), after
 * `middleware` (the described middleware mounted before it on its path):
 * it gains their refusals; under `/pools/{pool}` the pool parameter, its
 * 404 and an `InPool` operation id; outside the pool API it asks no
 * credential. Every route may answer 500 (the app's onError), and 503 when
 * the settings are bad (refuseMisconfigured, before every route).
 */
export function mounted(path: string, route: Operation, middleware: readonly MiddlewareDoc[] = []): Operation {
  const api = POOL_API.exec(path);
  const pooled = api?.[1] !== undefined;
  const responses: Operation["responses"] = structuredClone(route.responses);
  for (const { responses: refused } of middleware) {
    for (const [status, answer] of Object.entries(refused)) addRefusal(responses, +status, answer.description);
  }
  if (pooled) addRefusal(responses, 404, INVALID_POOL);
  responses[500] = { $ref: "#/components/responses/InternalError" };
  if (responses[503] === undefined) responses[503] = { $ref: "#/components/responses/Misconfigured" };
  else addRefusal(responses, 503, `Or, for every route: ${MISCONFIGURED.toLowerCase()}`);

  const own = (route.parameters ?? []).filter((p) => "$ref" in p || p.in !== "path");
  const pathNames = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!).filter((name) => name !== "pool");
  const parameters: (ParameterObject | Reference)[] = [
    ...(pooled ? [parameter("pool")] : []),
    ...pathNames.map((name) => ({
      name,
      in: "path" as const,
      required: true,
      description: PATH_PARAMETERS[name] ?? name,
      schema: string,
    })),
    ...own,
  ];
  const { parameters: _, requestBody, responses: __, ...rest } = route;
  return {
    ...rest,
    operationId: pooled ? `${route.operationId}InPool` : route.operationId,
    ...(api ? {} : { security: [] }),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(requestBody ? { requestBody } : {}),
    responses: Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b))),
  };
}
