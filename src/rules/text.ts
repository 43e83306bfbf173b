// Client-chosen text, cut short in one of two ways: as a message or a page
// shows it (`shorten`, counting characters), so that a reason repeated per
// task or a hostname on the dashboard never echoes a megabyte; and as
// storage keeps it (`truncateUtf8`, counting UTF-8 bytes), so that no row
// nears the platform's row limit (docs/protocol.md §12). One rule for every place that
// shortens; neither ever splits a surrogate pair into a lone half.

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

/** The size of `text` in UTF-8; a lone surrogate counts as the 3 bytes of the U+FFFD it encodes as. */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; ) {
    const [units, size] = codePointAt(text, i);
    bytes += size;
    i += units;
  }
  return bytes;
}

/**
 * `text` unchanged when it fits in `maxBytes` of UTF-8, else its longest
 * prefix of whole code points that fits together with the marker
 * `… [truncated from N bytes]` (N: the original size), so the result is at
 * most `maxBytes`. Truncates rather than refuses: a long crash log must not
 * make the request that carries it bounce. `maxBytes` must leave room for
 * the marker (64 bytes always do).
 */
export function truncateUtf8(text: string, maxBytes: number): string {
  const total = utf8Length(text);
  if (total <= maxBytes) return text;
  const marker = `… [truncated from ${total} bytes]`;
  const budget = maxBytes - utf8Length(marker);
  if (budget < 0) throw new RangeError(`${maxBytes} bytes leave no room for the truncation marker`);
  let kept = 0;
  let end = 0;
  while (end < text.length) {
    const [units, size] = codePointAt(text, end);
    if (kept + size > budget) break;
    kept += size;
    end += units;
  }
  return text.slice(0, end) + marker;
}

/** The code point starting at `i`: how many UTF-16 units it spans, and its UTF-8 size. */
function codePointAt(text: string, i: number): [units: 1 | 2, bytes: number] {
  const unit = text.charCodeAt(i);
  if (unit < 0x80) return [1, 1];
  if (unit < 0x800) return [1, 2];
  if (unit >= 0xd800 && unit <= 0xdbff) {
    const next = text.charCodeAt(i + 1); // NaN past the end
    if (next >= 0xdc00 && next <= 0xdfff) return [2, 4];
  }
  return [1, 3];
}

/**
 * A list of texts as storage keeps it: entries in order, each cut with
 * `truncateUtf8`, while their total stays within `maxBytes`; the entries
 * that did not fit are replaced by one last entry saying how many there
 * were. So a stored list is at most `maxBytes` plus that short entry.
 */
export function truncateList(texts: readonly string[], maxBytes: number): string[] {
  const kept: string[] = [];
  let used = 0;
  for (const [i, text] of texts.entries()) {
    const cut = truncateUtf8(text, maxBytes);
    used += utf8Length(cut);
    if (used > maxBytes) {
      kept.push(`… and ${texts.length - i} more`);
      break;
    }
    kept.push(cut);
  }
  return kept;
}
