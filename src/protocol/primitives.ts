// The building blocks every v1alpha1 model shares: the schema_version stamp,
// ISO-8601 timestamps, strict integers and JSON objects. They exist so that
// "a wrong type is a 422, never coerced" (docs/protocol.md §3) is written once. Nothing
// here may coerce: no z.coerce, no preprocess.

import { z } from "zod";

/** The wire revision every versioned message carries. */
export const SCHEMA_VERSION = "v1alpha1";

/** `schema_version`: the literal "v1alpha1", defaulted when omitted. */
export const SchemaVersionSchema = z.literal(SCHEMA_VERSION).default(SCHEMA_VERSION);

/**
 * An ISO-8601 timestamp string with a zone (`Z` or `±hh:mm`), any number of
 * fractional digits — what both `Date.toISOString()` and pydantic emit.
 */
export const IsoDateTimeSchema = z.iso.datetime({ offset: true });

/**
 * The message an integer field gives for a value of the wrong type. The
 * 422 mapper (errors.ts) recognises it to report `int_type` rather than a
 * generic number error, because zod reports a string in an int field as
 * "expected number".
 */
export const INT_TYPE_MESSAGE = "Input should be a valid integer";

/**
 * A JSON integer (safe range). `1.5`, `"3"` and `true` are refused; a
 * missing value keeps zod's own message so the mapper can call it missing.
 */
export function int() {
  return z.int({
    error: (issue) => (issue.code === "invalid_type" && issue.input !== undefined ? INT_TYPE_MESSAGE : undefined),
  });
}

/** Any JSON object (not an array, not null): workload-defined content. */
export const JsonObjectSchema = z.record(z.string(), z.unknown());

/** A string-to-string map, such as `labels`. */
export const StringMapSchema = z.record(z.string(), z.string());
