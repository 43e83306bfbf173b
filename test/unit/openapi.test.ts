// The OpenAPI document as the routes describe themselves (src/routes/openapi.ts
// over the app's route table): valid OpenAPI 3.1 by an independent
// validator, and saying what the routes and schemas actually do — what a
// client generated from it would rely on. The app is read in Node: the pool
// object's runtime base class is stubbed, as no request is served here.

import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it, vi } from "vitest";
import type { z } from "zod";
import app from "../../src/index";
import {
  ClaimRequestSchema,
  CommitCheckpointRequestSchema,
  CompleteRequestSchema,
  FailRequestSchema,
  JobSpecSchema,
  NodeHeartbeatSchema,
  NodeRegistrationSchema,
  parseRequest,
  QuarantineCheckpointRequestSchema,
  RegisterPartRequestSchema,
} from "../../src/protocol";
import type {
  Method,
  OpenApiDocument,
  Operation,
  Reference,
  ResponseObject,
  SchemaObject,
} from "../../src/protocol/openapi";
import { documentOf } from "../../src/routes/openapi";

vi.mock("cloudflare:workers", () => ({ DurableObject: class {}, RpcTarget: class {}, WorkflowEntrypoint: class {} }));

const doc = documentOf(app.routes);
const METHODS: Method[] = ["get", "put", "post"];

function operations(): [string, Method, Operation][] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.flatMap((method) => {
      const op = item[method];
      return op ? [[path, method, op] as [string, Method, Operation]] : [];
    }),
  );
}

function op(path: string, method: Method): Operation {
  const found = doc.paths[path]?.[method];
  if (!found) throw new Error(`${method.toUpperCase()} ${path} is not documented`);
  return found;
}

/** A response, its `#/components/responses/...` reference resolved. */
function response(operation: Operation, status: string): ResponseObject | undefined {
  const answer = operation.responses[status];
  if (answer === undefined || !("$ref" in answer)) return answer;
  return doc.components.responses[answer.$ref.replace("#/components/responses/", "")];
}

/** A schema, its `#/components/schemas/...` reference resolved. */
function schema(s: SchemaObject | Reference | undefined): SchemaObject {
  if (s === undefined) throw new Error("no schema");
  if (typeof s.$ref !== "string") return s;
  const named = doc.components.schemas[s.$ref.replace("#/components/schemas/", "")];
  if (!named) throw new Error(`unresolved ${s.$ref}`);
  return named;
}

function jsonSchemaOf(answer: ResponseObject | undefined): SchemaObject | undefined {
  return answer?.content?.["application/json"]?.schema;
}

function requestSchemaOf(operation: Operation): SchemaObject | undefined {
  return operation.requestBody?.content["application/json"]?.schema;
}

/** Whether a response body is `{"detail": ...}`. */
function hasDetailBody(answer: ResponseObject | undefined): boolean {
  const body = jsonSchemaOf(answer);
  if (!body) return false;
  const alternatives = (body.anyOf as SchemaObject[] | undefined) ?? [body];
  return alternatives.every((alt) => {
    const resolved = schema(alt);
    return (resolved.required as string[] | undefined)?.includes("detail") === true;
  });
}

function refsIn(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(refsIn);
  if (value === null || typeof value !== "object") return [];
  return Object.entries(value).flatMap(([k, v]) => (k === "$ref" && typeof v === "string" ? [v] : refsIn(v)));
}

describe("the OpenAPI document", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc) as unknown as Record<string, unknown>);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
    expect(doc.openapi).toBe("3.1.0");
  });

  it("has every reference resolve to a component", () => {
    const refs = refsIn(doc);
    expect(refs.length).toBeGreaterThan(100);
    for (const ref of new Set(refs)) {
      const [, kind, name] = /^#\/components\/(schemas|parameters|responses)\/(.+)$/.exec(ref) ?? [];
      expect(kind, ref).toBeDefined();
      expect(doc.components[kind as "schemas" | "parameters" | "responses"][name!], ref).toBeDefined();
    }
  });

  it("leaves no component unused", () => {
    const referenced = new Set(refsIn(doc));
    for (const name of Object.keys(doc.components.schemas)) {
      expect(referenced.has(`#/components/schemas/${name}`), name).toBe(true);
    }
  });

  it("has a unique operationId per operation", () => {
    const ids = operations().map(([, , o]) => o.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("serves every pool route both for the pool local and under /pools/{pool}", () => {
    for (const [path, method, operation] of operations()) {
      if (!path.startsWith("/v1alpha1/")) continue;
      const twin = op(`/pools/{pool}${path}`, method);
      expect(twin.parameters).toContainEqual({ $ref: "#/components/parameters/pool" });
      expect(response(twin, "404")?.description).toMatch(/pool name is invalid/);
      expect(operation.parameters ?? []).not.toContainEqual({ $ref: "#/components/parameters/pool" });
    }
    expect(doc.components.parameters.pool?.schema.pattern).toBe("^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$");
  });

  it("documents a claim as 200 with a Lease or 204 with no body", () => {
    const claim = op("/v1alpha1/leases/claim", "post");
    expect(jsonSchemaOf(response(claim, "200"))).toEqual({ $ref: "#/components/schemas/Lease" });
    expect(response(claim, "204")).toBeDefined();
    expect(response(claim, "204")?.content).toBeUndefined();
    const lease = schema({ $ref: "#/components/schemas/Lease" });
    expect(lease.required).toEqual(expect.arrayContaining(["lease_id", "deadline", "attempt_number", "payload"]));
    expect(response(claim, "403")?.description).toMatch(/register first/);
  });

  // What a request must carry, by the zod schema's own verdict on `{}`.
  it.each<[string, string, z.ZodType]>([
    ["/v1alpha1/nodes/register", "post", NodeRegistrationSchema],
    ["/v1alpha1/nodes/{node_id}/heartbeat", "post", NodeHeartbeatSchema],
    ["/v1alpha1/leases/claim", "post", ClaimRequestSchema],
    ["/v1alpha1/attempts/{lease_id}/complete", "post", CompleteRequestSchema],
    ["/v1alpha1/attempts/{lease_id}/fail", "post", FailRequestSchema],
    ["/v1alpha1/jobs", "post", JobSpecSchema],
    ["/v1alpha1/jobs/{job_id}/tasks/{task_id}/checkpoints/parts", "post", RegisterPartRequestSchema],
    ["/v1alpha1/jobs/{job_id}/tasks/{task_id}/checkpoints/commit", "post", CommitCheckpointRequestSchema],
    [
      "/v1alpha1/jobs/{job_id}/tasks/{task_id}/checkpoints/{manifest_id}/quarantine",
      "post",
      QuarantineCheckpointRequestSchema,
    ],
  ])("the body of %s requires exactly the fields the schema refuses to miss", (path, method, zodSchema) => {
    const operation = op(path, method as Method);
    expect(operation.requestBody?.required).toBe(true);
    const parsed = parseRequest(zodSchema, {});
    const missing = parsed.ok ? [] : parsed.detail.filter((d) => d.type === "missing").map((d) => d.loc[1]);
    expect(missing.length).toBeGreaterThan(0);
    expect(new Set(schema(requestSchemaOf(operation)).required as string[])).toEqual(new Set(missing));
  });

  it("describes a JobSpec request by its input side and a JobRecord's spec by its output side", () => {
    const submit = op("/v1alpha1/jobs", "post");
    const input = schema(requestSchemaOf(submit));
    expect(input.required).toEqual(["metadata", "spec"]);
    expect((input.properties as Record<string, SchemaObject>).kind).toMatchObject({ const: "Job", default: "Job" });
    const record = schema(jsonSchemaOf(response(submit, "201")));
    const spec = schema((record.properties as Record<string, SchemaObject>).spec);
    // Defaults are filled on the way out: every field is there.
    expect(spec.required).toEqual(expect.arrayContaining(["apiVersion", "kind", "metadata", "spec"]));
    expect(record.required).toEqual(expect.arrayContaining(["job_id", "state", "task_counts"]));
    expect(response(submit, "200")).toBeUndefined();
  });

  it("describes a 422 as FastAPI's validation shape, as the routes send it", () => {
    const parsed = parseRequest(JobSpecSchema, { metadata: {} });
    expect(parsed.ok).toBe(false);
    const entry = schema({ $ref: "#/components/schemas/ValidationError" });
    for (const row of parsed.ok ? [] : parsed.detail) {
      expect(Object.keys(row).sort()).toEqual([...(entry.required as string[])].sort());
    }
    const validation = jsonSchemaOf(response(op("/v1alpha1/leases/claim", "post"), "422"));
    expect(validation).toEqual({ $ref: "#/components/schemas/HTTPValidationError" });
  });

  it("gives every pool API operation at least one 4xx refusal with a detail body", () => {
    for (const [path, method, operation] of operations()) {
      if (!path.includes("/v1alpha1/")) continue;
      const refusals = Object.keys(operation.responses).filter((s) => s.startsWith("4"));
      expect(
        refusals.some((s) => hasDetailBody(response(operation, s))),
        `${method} ${path}`,
      ).toBe(true);
      for (const status of refusals) {
        // RFC 8628's own error body, which the agent reads: `{"error": "authorization_pending", ...}` (or a detail).
        if (path.endsWith("/device/token") && status === "400") continue;
        expect(hasDetailBody(response(operation, status)), `${status} ${path}`).toBe(true);
      }
    }
  });

  it("documents the refusing configuration (503) and the unexpected (500) on every operation", () => {
    for (const [path, , operation] of operations()) {
      expect(hasDetailBody(response(operation, "503")), path).toBe(true);
      expect(schema(jsonSchemaOf(response(operation, "500"))).required, path).toContain("request_id");
    }
  });

  it("documents the JSON body refusals wherever a JSON body is read", () => {
    for (const [path, , operation] of operations()) {
      if (requestSchemaOf(operation) === undefined) continue;
      for (const status of ["413", "415", "422"])
        expect(response(operation, status), `${status} ${path}`).toBeDefined();
    }
  });

  it("takes artifact bytes as octet-stream with a required Content-Length, and serves them as such", () => {
    const put = op("/v1alpha1/artifacts/{key}", "put");
    expect(put.requestBody?.required).toBe(true);
    expect(Object.keys(put.requestBody?.content ?? {})).toEqual(["application/octet-stream"]);
    expect(put.parameters).toContainEqual(
      expect.objectContaining({ name: "Content-Length", in: "header", required: true }),
    );
    for (const status of ["400", "403", "409", "411", "413"]) expect(hasDetailBody(response(put, status))).toBe(true);
    expect(jsonSchemaOf(response(put, "200"))).toEqual({ $ref: "#/components/schemas/ArtifactRecord" });
    const get = op("/v1alpha1/artifacts/{key}", "get");
    expect(Object.keys(response(get, "200")?.content ?? {})).toEqual(["application/octet-stream"]);
    expect(response(get, "200")?.headers).toHaveProperty("X-FlashML-Sha256");
  });

  it("takes the query parameters the routes read, with their bounds", () => {
    const events = op("/v1alpha1/jobs/{job_id}/events", "get").parameters ?? [];
    expect(events).toContainEqual(expect.objectContaining({ name: "after", in: "query" }));
    expect(events).toContainEqual(
      expect.objectContaining({ name: "limit", schema: expect.objectContaining({ minimum: 1, maximum: 1000 }) }),
    );
    const lostWork = op("/v1alpha1/jobs/{job_id}/tasks/{task_id}/checkpoints/lost-work", "get").parameters ?? [];
    expect(lostWork).toContainEqual(expect.objectContaining({ name: "failed_at_step", required: true }));
    const latest = op("/v1alpha1/jobs/{job_id}/tasks/{task_id}/checkpoints/latest", "get").parameters ?? [];
    expect(latest).toContainEqual(expect.objectContaining({ name: "world_size", required: false }));
  });

  it("makes a bearer token optional everywhere, and asks none of the public routes", () => {
    expect(doc.security).toEqual([{}, { bearer: [] }, { basic: [] }]);
    expect(doc.components.securitySchemes.basic).toMatchObject({ type: "http", scheme: "basic" });
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });
    for (const path of ["/healthz", "/openapi.json", "/", "/pools/{pool}/"])
      expect(op(path, "get").security).toEqual([]);
    expect(op("/v1alpha1/jobs", "get").security).toBeUndefined();
    expect(response(op("/v1alpha1/jobs", "get"), "401")).toBeDefined();
  });

  it("documents the delegation and join-code headers where they apply", () => {
    const onBehalfOf = { $ref: "#/components/parameters/onBehalfOf" };
    for (const path of [
      "/v1alpha1/nodes/register",
      "/v1alpha1/leases/claim",
      "/v1alpha1/attempts/{lease_id}/complete",
    ]) {
      expect(op(path, "post").parameters).toContainEqual(onBehalfOf);
    }
    expect(op("/v1alpha1/nodes/register", "post").parameters).toContainEqual({
      $ref: "#/components/parameters/joinCode",
    });
    expect(doc.components.parameters.onBehalfOf?.name).toBe("X-FlashML-On-Behalf-Of");
    expect(doc.components.parameters.joinCode?.name).toBe("X-FlashML-Join-Code");
  });

  it("describes the answers that have no zod schema", () => {
    const complete = schema(jsonSchemaOf(response(op("/v1alpha1/attempts/{lease_id}/complete", "post"), "200")));
    expect(complete.required).toEqual(["accepted"]);
    const commit = op("/v1alpha1/jobs/{job_id}/tasks/{task_id}/checkpoints/commit", "post");
    expect(schema(jsonSchemaOf(response(commit, "409"))).properties).toEqual({
      detail: { type: "array", items: { type: "string" } },
    });
    const metrics = response(op("/v1alpha1/metrics", "get"), "200");
    expect(Object.keys(metrics?.content ?? {})).toEqual(["text/plain"]);
    const tasks = schema(jsonSchemaOf(response(op("/v1alpha1/jobs/{job_id}/tasks", "get"), "200")));
    expect(schema(tasks.items as SchemaObject).required).toEqual(
      expect.arrayContaining(["task_id", "state", "attempts", "node_id", "deadline"]),
    );
  });

  it("is the same document on every build", () => {
    expect(documentOf(app.routes)).toEqual(doc satisfies OpenApiDocument);
  });
});

describe("the OpenAPI document's paged lists (docs/protocol.md §12)", () => {
  it.each(["/v1alpha1/jobs", "/pools/{pool}/v1alpha1/nodes"])(
    "%s takes limit and cursor and names the Link header",
    (path) => {
      const op = doc.paths[path]?.get;
      expect(op?.parameters).toContainEqual(
        expect.objectContaining({
          name: "limit",
          in: "query",
          schema: expect.objectContaining({ maximum: 1000, default: 100 }),
        }),
      );
      expect(op?.parameters).toContainEqual(expect.objectContaining({ name: "cursor", in: "query" }));
      const ok = op?.responses["200"];
      expect(ok && "headers" in ok ? Object.keys(ok.headers ?? {}) : []).toEqual(["Link"]);
      expect(op?.responses["422"]).toBeDefined();
    },
  );

  it("says a job's events with no query are the whole ledger, and limit has no fixed default", () => {
    const op = doc.paths["/v1alpha1/jobs/{job_id}/events"]?.get;
    expect(op?.description).toMatch(/neither .*whole ledger/);
    const limit = op?.parameters?.find((p) => "name" in p && p.name === "limit");
    expect(limit && "schema" in limit ? limit.schema.default : "absent").toBeUndefined();
  });
});
