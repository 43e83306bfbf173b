// JSON text for hostile requests: bodies built as objects, then written with
// values JSON.stringify cannot write (-0, 2**53+1, 1e400, NaN spelled out)
// and with own `__proto__` keys. Pure; the generator and the case tables
// share it.

/** JSON text written verbatim in place of a value. */
export class Raw {
  constructor(readonly text: string) {}
}
export const raw = (text: string) => new Raw(text);

export type Body = { [key: string]: unknown };

/** JSON text of a value; a Raw is written verbatim. Iterative callers keep nesting shallow. */
export function encode(value: unknown): string {
  if (value instanceof Raw) return value.text;
  if (Array.isArray(value)) return `[${value.map(encode).join(",")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}:${encode(v)}`)
      .join(",")}}`;
  }
  return JSON.stringify(value);
}

/** Sets an own property, even `__proto__`. */
export function setOwn(target: Body, key: string, value: unknown) {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Sets the value at a path, creating (or replacing non-object) parents on the way. */
export function setAt(body: Body, path: readonly string[], value: unknown) {
  let cursor = body;
  for (const key of path.slice(0, -1)) {
    const next = cursor[key];
    if (next === null || typeof next !== "object" || Array.isArray(next) || next instanceof Raw)
      setOwn(cursor, key, {});
    cursor = cursor[key] as Body;
  }
  setOwn(cursor, path.at(-1)!, value);
}

export function deleteAt(body: Body, path: readonly string[]) {
  let cursor: unknown = body;
  for (const key of path.slice(0, -1)) cursor = (cursor as Body | undefined)?.[key];
  if (cursor !== null && typeof cursor === "object") delete (cursor as Body)[path.at(-1)!];
}

export const nestedArrays = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
export const nestedObjects = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
