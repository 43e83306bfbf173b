// JSON content as it crosses the Durable Object RPC boundary. RPC types admit
// only serializable values, and `unknown` is not one; a precise recursive
// JSON type makes the RPC type mapping infinite. So an object of JSON is
// typed as an object of non-undefined values: callers narrow it as they would
// `unknown` (the gate does).
//
// Also the shape rules every request body obeys before any schema sees it
// (docs/protocol.md §10): a bounded depth, and strings that are well-formed Unicode.

// biome-ignore lint/complexity/noBannedTypes: `{}` is "any value but null and undefined", the point of this type
export type JsonObject = { [key: string]: {} | null };

/**
 * Deepest nesting of arrays and objects a request body may have (the body
 * itself is level 1). Real bodies stay under a dozen levels; the bound keeps
 * recursive code further on (structured clone over RPC, JSON.stringify, the
 * gate) from ever running out of stack on a hostile body.
 */
export const MAX_JSON_DEPTH = 64;

/** Why a parsed JSON body is refused before validation, with where. */
export type JsonShapeProblem = { loc: (string | number)[]; msg: string; type: "json_invalid" | "string_unicode" };

/**
 * The first reason a parsed JSON value is unacceptable, or null: nested
 * deeper than MAX_JSON_DEPTH, or a string or key that is not well-formed
 * Unicode (a lone surrogate, written `"\ud800"` in JSON, has no UTF-8 form,
 * so SQLite would store something other than what was sent). Iterative, so
 * the check itself never overflows the stack.
 */
export function jsonShapeProblem(value: unknown): JsonShapeProblem | null {
  type Frame = { value: unknown; depth: number; parent: Frame | null; key: string | number | null };
  const locOf = (frame: Frame): (string | number)[] => {
    const path: (string | number)[] = [];
    for (let f: Frame | null = frame; f !== null && f.key !== null; f = f.parent) path.unshift(f.key);
    return path;
  };
  const badString = (frame: Frame): JsonShapeProblem => ({
    loc: locOf(frame),
    msg: "Input should be a valid string, unable to parse raw data as a unicode string (it contains a lone surrogate)",
    type: "string_unicode",
  });
  // Only containers are stacked; strings are checked where they are met.
  const stack: Frame[] = [];
  const visit = (
    item: unknown,
    depth: number,
    parent: Frame | null,
    key: string | number | null,
  ): JsonShapeProblem | null => {
    if (typeof item === "string" && !item.isWellFormed()) return badString({ value: item, depth, parent, key });
    if (item !== null && typeof item === "object") stack.push({ value: item, depth, parent, key });
    return null;
  };
  const top = visit(value, 0, null, null);
  if (top) return top;
  while (stack.length > 0) {
    const frame = stack.pop()!;
    const depth = frame.depth + 1;
    if (depth > MAX_JSON_DEPTH) {
      return { loc: [], msg: `JSON is nested more than ${MAX_JSON_DEPTH} levels deep`, type: "json_invalid" };
    }
    const entries: [string | number, unknown][] = Array.isArray(frame.value)
      ? frame.value.map((item, i) => [i, item])
      : Object.entries(frame.value as object);
    for (const [key, item] of entries) {
      if (typeof key === "string" && !key.isWellFormed()) return badString({ value: item, depth, parent: frame, key });
      const problem = visit(item, depth, frame, key);
      if (problem) return problem;
    }
  }
  return null;
}
