// The calls an object offers, read from its prototype: what the layout
// guard (src/pool/layout.ts) and the legacy-id forward
// (src/pool/legacy-ids.ts) each wrap. A node's session names its calls
// instead (src/pool/session.ts).

/**
 * The calls an object's prototype offers: its own methods, less the
 * constructor and `skipped`.
 */
export function callsOf(
  prototype: object,
  skipped: readonly string[],
): Array<[string, (...args: unknown[]) => unknown]> {
  const left = new Set(["constructor", ...skipped]);
  return Object.getOwnPropertyNames(prototype).flatMap((name) => {
    const method: unknown = Object.getOwnPropertyDescriptor(prototype, name)?.value;
    return left.has(name) || typeof method !== "function" ? [] : [[name, method as (...args: unknown[]) => unknown]];
  });
}
