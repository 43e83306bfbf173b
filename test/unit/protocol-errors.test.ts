// The 422 detail list: FastAPI's `[{loc, msg, type}]` shape with pydantic's
// codes, whichever way the route obtained its zod error.

import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  jsonInvalidDetail,
  NodeRegistrationSchema,
  parseRequest,
  TaskSpecSchema,
  validationDetail,
} from "../../src/protocol";

const registration = { node_id: "n", kubernetes_node: "", hostname: "h", capabilities: {} };

describe("validationDetail", () => {
  it("gives exactly loc, msg and type per problem, loc starting at body", () => {
    const error = NodeRegistrationSchema.safeParse({ ...registration, sandbox_capable: "yes", argv_capable: 0 }).error!;
    const detail = validationDetail(error);
    expect(detail).toEqual([
      { loc: ["body", "sandbox_capable"], msg: "Input should be a valid boolean", type: "bool_type" },
      { loc: ["body", "argv_capable"], msg: "Input should be a valid boolean", type: "bool_type" },
    ]);
    for (const row of detail) expect(Object.keys(row).sort()).toEqual(["loc", "msg", "type"]);
  });

  it("survives JSON serialisation unchanged, as the route sends it", () => {
    const body = { ...registration, capabilities: { gpus: [{ index: "0" }] } };
    const detail = validationDetail(NodeRegistrationSchema.safeParse(body).error!);
    expect(JSON.parse(JSON.stringify({ detail }))).toEqual({
      detail: [
        { loc: ["body", "capabilities", "gpus", 0, "index"], msg: "Input should be a valid integer", type: "int_type" },
      ],
    });
  });

  const missingBody = { kubernetes_node: "", hostname: "h", capabilities: {} };
  it.each([
    ["from a plain safeParse error", () => validationDetail(NodeRegistrationSchema.safeParse(missingBody).error!)],
    [
      "from the error and the body",
      () => validationDetail(NodeRegistrationSchema.safeParse(missingBody).error!, missingBody),
    ],
    [
      "from an error that kept its input",
      () => validationDetail(NodeRegistrationSchema.safeParse(missingBody, { reportInput: true }).error!),
    ],
  ])("tells a missing field apart from a wrong one %s", (_name, detailOf) => {
    expect(detailOf()).toEqual([{ loc: ["body", "node_id"], msg: "Field required", type: "missing" }]);
  });

  it("reports a missing integer as missing, not as a wrong type", () => {
    const detail = validationDetail(z.object({ n: z.int() }).safeParse({}).error!);
    expect(detail).toEqual([{ loc: ["body", "n"], msg: "Field required", type: "missing" }]);
    const body = { ...registration, capabilities: { gpus: [{}] } };
    const expected = [{ loc: ["body", "capabilities", "gpus", 0, "index"], msg: "Field required", type: "missing" }];
    const ours = parseRequest(NodeRegistrationSchema, body);
    expect(ours.ok ? [] : ours.detail).toEqual(expected);
    // The route's path: a bare safeParse error, no body, no kept input.
    expect(validationDetail(NodeRegistrationSchema.safeParse(body).error!)).toEqual(expected);
  });

  it("reports an explicit null as the wrong type, not as missing", () => {
    const body = { ...registration, node_id: null };
    expect(validationDetail(NodeRegistrationSchema.safeParse(body).error!, body)).toEqual([
      { loc: ["body", "node_id"], msg: "Input should be a valid string", type: "string_type" },
    ]);
  });

  it("reports a body that is not an object at loc [body]", () => {
    for (const body of [[], "register me", 42, null]) {
      const result = parseRequest(NodeRegistrationSchema, body);
      expect(result.ok ? [] : result.detail).toEqual([
        { loc: ["body"], msg: "Input should be an object", type: "model_type" },
      ]);
    }
  });

  it.each([
    ["a literal choice", { environment: "mars" }, "literal_error", "Input should be 'local', 'cloud' or 'edge'"],
    ["a single literal", { schema_version: "v2" }, "literal_error", "Input should be 'v1alpha1'"],
  ])("words %s like pydantic", (_name, patch, type, msg) => {
    const result = parseRequest(NodeRegistrationSchema, { ...registration, ...patch });
    expect(result.ok ? [] : result.detail).toEqual([{ loc: ["body", Object.keys(patch)[0]], msg, type }]);
  });

  it.each([
    [{ max_attempts: 0 }, "greater_than_equal", "Input should be greater than or equal to 1"],
    [{ lease_seconds: 4.9 }, "greater_than_equal", "Input should be greater than or equal to 5"],
    [{ max_attempts: 1.5 }, "int_from_float", "Input should be a valid integer, got a number with a fractional part"],
    [{ max_attempts: "3" }, "int_type", "Input should be a valid integer"],
    [{ lease_seconds: "60" }, "float_type", "Input should be a valid number"],
    [{ max_attempts: 2 ** 60 }, "less_than_equal", "Input should be less than or equal to 9007199254740991"],
  ])("words the number rule %j as %s", (patch, type, msg) => {
    const body = { task_id: "t", job_id: "j", commit_key: "k", ...patch };
    const result = parseRequest(TaskSpecSchema, body);
    expect(result.ok ? [] : result.detail).toEqual([{ loc: ["body", Object.keys(patch)[0]], msg, type }]);
  });

  it("prefixes a rule's own message with 'Value error, ' like a pydantic validator", () => {
    const schema = z.object({ tag: z.string().refine((t) => t !== "latest", "image tag must be pinned") });
    expect(validationDetail(schema.safeParse({ tag: "latest" }).error!)).toEqual([
      { loc: ["body", "tag"], msg: "Value error, image tag must be pinned", type: "value_error" },
    ]);
  });

  it.each([
    [z.object({ s: z.string().min(3) }), { s: "ab" }, "string_too_short", "String should have at least 3 characters"],
    [z.object({ s: z.string().max(1) }), { s: "ab" }, "string_too_long", "String should have at most 1 character"],
    [z.object({ a: z.array(z.int()).min(1) }), { a: [] }, "too_short", "List should have at least 1 item"],
    [
      z.object({ s: z.string().regex(/^x$/) }),
      { s: "y" },
      "string_pattern_mismatch",
      "String should match pattern '/^x$/'",
    ],
    [
      z.object({ s: z.string().startsWith("artifact://") }),
      { s: "s3://" },
      "string_pattern_mismatch",
      "String should start with 'artifact://'",
    ],
  ])("maps zod's built-in checks to pydantic codes (%#)", (schema, body, type, msg) => {
    expect(validationDetail(schema.safeParse(body).error!)).toEqual([
      { loc: ["body", Object.keys(body)[0]], msg, type },
    ]);
  });

  it("returns the parsed value when the body is valid", () => {
    const result = parseRequest(NodeRegistrationSchema, registration);
    expect(result.ok && result.value.module_capable).toBe(true);
  });
});

describe("jsonInvalidDetail", () => {
  it("describes a body that is not JSON in the same row shape", () => {
    expect(jsonInvalidDetail("Unexpected token } in JSON at position 7")).toEqual([
      { loc: ["body"], msg: "JSON decode error: Unexpected token } in JSON at position 7", type: "json_invalid" },
    ]);
  });
});
