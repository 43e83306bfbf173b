// Request-validation errors in the shape the Python client already reads:
// FastAPI's 422 `{"detail": [{loc, msg, type}]}` with `loc` starting at
// "body" and pydantic-v2 type codes and wording (docs/protocol.md §10). This file only
// translates zod issues; it never decides what is valid.

import type { z } from "zod";
import { INT_TYPE_MESSAGE } from "./primitives";

/** One row of a 422 `detail` list. */
export type ValidationDetailEntry = { loc: (string | number)[]; msg: string; type: string };

type Issue = z.core.$ZodIssue;

/**
 * Parses a request body, as a value rather than an exception: the parsed
 * body, or the 422 detail list for it. Prefer it over a bare safeParse — it
 * asks zod to keep each issue's input, so a missing field is told apart from
 * a wrong one without guessing.
 */
export function parseRequest<S extends z.ZodType>(
  schema: S,
  body: unknown,
): { ok: true; value: z.output<S> } | { ok: false; detail: ValidationDetailEntry[] } {
  const parsed = schema.safeParse(body, { reportInput: true });
  return parsed.success
    ? { ok: true, value: parsed.data }
    : { ok: false, detail: validationDetail(parsed.error, body) };
}

/**
 * The FastAPI-style detail list for a zod error: one `{loc, msg, type}` per
 * issue, `loc` = ["body", ...path], `type` a pydantic code ("missing",
 * "int_type", "bool_type", "literal_error", "greater_than_equal",
 * "value_error", ...), `msg` a readable sentence. Pass the parsed `body` (or
 * parse with `reportInput: true`) so a missing field reads as "missing";
 * without either, zod's own wording is used to tell.
 */
export function validationDetail(error: z.ZodError, body?: unknown): ValidationDetailEntry[] {
  return error.issues.map((issue) => {
    const loc: (string | number)[] = ["body", ...issue.path.map((p) => (typeof p === "symbol" ? String(p) : p))];
    return { loc, ...describe(issue, inputOf(issue, body)) };
  });
}

/** A 422 row for a body that is not JSON at all. */
export function jsonInvalidDetail(reason: string): ValidationDetailEntry[] {
  return [{ loc: ["body"], msg: `JSON decode error: ${reason}`, type: "json_invalid" }];
}

const MISSING = Symbol("missing");
type Input = unknown | typeof MISSING;

/** The value the issue was about, or MISSING when the field was absent. */
function inputOf(issue: Issue, body: unknown): Input {
  if ("input" in issue) return issue.input === undefined ? MISSING : issue.input;
  if (body !== undefined) {
    let cursor: unknown = body;
    for (const key of issue.path) {
      if (cursor === null || typeof cursor !== "object" || !Object.hasOwn(cursor, key)) return MISSING;
      cursor = (cursor as Record<PropertyKey, unknown>)[key];
    }
    return cursor === undefined ? MISSING : cursor;
  }
  // No input kept and no body: zod's default wording says "received undefined".
  return issue.code === "invalid_type" && issue.message.endsWith("received undefined") ? MISSING : undefined;
}

const TYPE_OF_EXPECTED: Record<string, { type: string; msg: string }> = {
  string: { type: "string_type", msg: "Input should be a valid string" },
  boolean: { type: "bool_type", msg: "Input should be a valid boolean" },
  number: { type: "float_type", msg: "Input should be a valid number" },
  int: { type: "int_type", msg: INT_TYPE_MESSAGE },
  array: { type: "list_type", msg: "Input should be a valid list" },
  tuple: { type: "list_type", msg: "Input should be a valid list" },
  object: { type: "model_type", msg: "Input should be an object" },
  record: { type: "dict_type", msg: "Input should be a valid dictionary" },
  null: { type: "none_required", msg: "Input should be None" },
};

function describe(issue: Issue, input: Input): { msg: string; type: string } {
  switch (issue.code) {
    case "invalid_type": {
      if (input === MISSING) return { type: "missing", msg: "Field required" };
      // zod says "expected int" only for a number that is not an integer;
      // any other value in an int field is "expected number" with our message.
      if (issue.expected === "int") {
        return { type: "int_from_float", msg: "Input should be a valid integer, got a number with a fractional part" };
      }
      const known = TYPE_OF_EXPECTED[issue.message === INT_TYPE_MESSAGE ? "int" : issue.expected];
      return known ?? { type: `${issue.expected}_type`, msg: `Input should be a valid ${issue.expected}` };
    }
    case "too_small":
      return bound(issue.origin, issue.minimum, issue.inclusive ?? false, "min");
    case "too_big":
      return bound(issue.origin, issue.maximum, issue.inclusive ?? false, "max");
    case "invalid_value":
      return { type: "literal_error", msg: `Input should be ${alternatives(issue.values)}` };
    case "invalid_format":
      if (issue.format === "datetime") {
        return {
          type: "datetime_parsing",
          msg: "Input should be a valid ISO-8601 datetime, e.g. 2026-11-29T13:43:49.123Z",
        };
      }
      if (issue.format === "starts_with" && "prefix" in issue) {
        return { type: "string_pattern_mismatch", msg: `String should start with '${String(issue.prefix)}'` };
      }
      if (issue.format === "regex" && "pattern" in issue) {
        return { type: "string_pattern_mismatch", msg: `String should match pattern '${String(issue.pattern)}'` };
      }
      return { type: "string_pattern_mismatch", msg: issue.message };
    case "not_multiple_of":
      return { type: "multiple_of", msg: `Input should be a multiple of ${String(issue.divisor)}` };
    case "unrecognized_keys":
      return { type: "extra_forbidden", msg: `Extra inputs are not permitted: ${issue.keys.join(", ")}` };
    case "invalid_key":
      return { type: "invalid_key", msg: `Invalid key: ${issue.message}` };
    case "custom":
      return { type: "value_error", msg: `Value error, ${issue.message}` };
    default:
      return { type: "value_error", msg: issue.message };
  }
}

function bound(
  origin: string,
  limit: number | bigint,
  inclusive: boolean,
  side: "min" | "max",
): { msg: string; type: string } {
  const n = String(limit);
  if (origin === "string") {
    return side === "min"
      ? { type: "string_too_short", msg: `String should have at least ${n} character${n === "1" ? "" : "s"}` }
      : { type: "string_too_long", msg: `String should have at most ${n} character${n === "1" ? "" : "s"}` };
  }
  if (origin === "array" || origin === "set") {
    return side === "min"
      ? { type: "too_short", msg: `List should have at least ${n} item${n === "1" ? "" : "s"}` }
      : { type: "too_long", msg: `List should have at most ${n} item${n === "1" ? "" : "s"}` };
  }
  if (side === "min") {
    return inclusive
      ? { type: "greater_than_equal", msg: `Input should be greater than or equal to ${n}` }
      : { type: "greater_than", msg: `Input should be greater than ${n}` };
  }
  return inclusive
    ? { type: "less_than_equal", msg: `Input should be less than or equal to ${n}` }
    : { type: "less_than", msg: `Input should be less than ${n}` };
}

/** `'a'`, `'a' or 'b'`, `'a', 'b' or 'c'` — pydantic's wording for a literal choice. */
function alternatives(values: readonly unknown[]): string {
  const quoted = values.map((v) => (typeof v === "string" ? `'${v}'` : String(v)));
  if (quoted.length <= 1) return quoted.join("");
  return `${quoted.slice(0, -1).join(", ")} or ${quoted[quoted.length - 1]}`;
}
