// JSON values as the placement gate compares them (docs/protocol.md §4 gate 3): deep
// equality, plain copies with sorted keys, and canonical text for requirement
// classes. Pure, and bounded: nothing nested deeper than MAX_DEPTH is
// followed, so no input can overflow the stack. Never throws on JSON input.

/**
 * Deep JSON equality: same JSON type and same value at every depth. A string
 * never equals a list, `true` never equals `1`, object key order is
 * irrelevant, `-0` equals `0`. A value that is not JSON (undefined, NaN,
 * Infinity, a bigint, a function) equals nothing, itself included, and so
 * does anything nested deeper than MAX_DEPTH, so no input can overflow the
 * stack.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  return jsonEqualAt(a, b, 0);
}

/** How deep a local_inputs element may nest before it can match nothing. */
export const MAX_DEPTH = 32;

export const NOT_JSON: unique symbol = Symbol("not JSON");

/** A plain copy with sorted keys, or NOT_JSON; same acceptance as jsonEqual. */
export function copyJson(value: unknown, depth: number): unknown {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isFinite(value) ? (value === 0 ? 0 : value) : NOT_JSON;
  if (depth >= MAX_DEPTH) return NOT_JSON;
  if (isList(value)) {
    const out: unknown[] = [];
    for (let i = 0; i < value.length; i++) {
      const item = copyJson(value[i], depth + 1);
      if (item === NOT_JSON) return NOT_JSON;
      out.push(item);
    }
    return out;
  }
  if (isObject(value)) {
    const entries: [string, unknown][] = [];
    for (const key of Object.keys(value).sort()) {
      const item = copyJson(value[key], depth + 1);
      if (item === NOT_JSON) return NOT_JSON;
      entries.push([key, item]);
    }
    // fromEntries defines own properties, so a "__proto__" key survives.
    return Object.fromEntries(entries);
  }
  return NOT_JSON;
}

function jsonEqualAt(a: unknown, b: unknown, depth: number): boolean {
  if (a === null || typeof a === "string" || typeof a === "boolean") return a === b;
  if (typeof a === "number") return Number.isFinite(a) && a === b;
  if (depth >= MAX_DEPTH) return false;
  if (isList(a)) {
    if (!isList(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqualAt(a[i], b[i], depth + 1)) return false;
    return true;
  }
  if (isObject(a)) {
    if (!isObject(b)) return false;
    const keys = Object.keys(a);
    if (keys.length !== Object.keys(b).length) return false;
    for (const key of keys) {
      if (!Object.prototype.propertyIsEnumerable.call(b, key)) return false;
      if (!jsonEqualAt(a[key], b[key], depth + 1)) return false;
    }
    return true;
  }
  return false;
}

/** Canonical JSON text of a plain JSON value: keys sorted at every depth. */
export function canonicalJson(value: unknown): string {
  if (isList(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (isObject(value)) {
    const members = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(value[key])}`);
    return `{${members.join(",")}}`;
  }
  return String(JSON.stringify(value));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !isList(value);
}

function isList(value: unknown): value is readonly unknown[] {
  return Array.isArray(value);
}
