// Client-chosen text as a message or a page shows it: cut short, so that a
// reason repeated per task or a hostname on the dashboard never echoes a
// megabyte. One rule for every place that shortens.

/**
 * `text` unchanged when it has at most `keep` characters, else its first
 * `keep` characters and "…". Counts code points, so a cut never splits a
 * surrogate pair into a lone half.
 */
export function shorten(text: string, keep: number): string {
  if (text.length <= keep) return text;
  const chars = Array.from(text);
  return chars.length <= keep ? text : `${chars.slice(0, keep).join("")}…`;
}
