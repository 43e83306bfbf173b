// Settings written as `name:value,…` lists (FLASHML_NODE_TOKENS,
// FLASHML_OPERATOR_TOKENS, FLASHML_NODE_OWNERS; FLASHML_POOL_SHARDS with
// `=`), split one way. Pure. The callers check the values and word the
// refusals: a token is never named.

/** The list's entries, trimmed; or the 1-based number of the first that is not `name{separator}value` with both non-empty. */
export function nameValueList(
  raw: string | undefined,
  separator: ":" | "=" = ":",
): Array<{ name: string; value: string }> | { bad: number } {
  if (raw === undefined || raw.trim() === "") return [];
  const entries: Array<{ name: string; value: string }> = [];
  const parts = raw.split(",");
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!.trim();
    const colon = part.indexOf(separator);
    const name = colon < 0 ? "" : part.slice(0, colon).trim();
    const value = colon < 0 ? "" : part.slice(colon + 1).trim();
    if (name === "" || value === "") return { bad: i + 1 };
    entries.push({ name, value });
  }
  return entries;
}
