import { describe, expect, it } from "vitest";
import { truncateList, truncateUtf8, utf8Length } from "../../src/rules/text";

const bytes = (text: string) => new TextEncoder().encode(text).length;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

describe("utf8Length", () => {
  it.each([
    ["", 0],
    ["abc", 3],
    ["é", 2],
    ["€", 3],
    ["😀", 4],
    ["a😀é€", 10],
    ["\ud800", 3], // a lone surrogate encodes as U+FFFD
    ["\udc00x", 4],
    ["\ud83d😀", 7], // a high surrogate alone, then a pair
  ])("%j is %d bytes, as TextEncoder says", (text, expected) => {
    expect(utf8Length(text)).toBe(expected);
    expect(utf8Length(text)).toBe(bytes(text));
  });
});

describe("truncateUtf8", () => {
  it.each([
    ["empty", "", 64],
    ["short ASCII", "out of memory", 64],
    ["exactly the limit", "x".repeat(4096), 4096],
    ["multi-byte text exactly at the limit", "😀".repeat(1024), 4096],
  ])("keeps %s unchanged", (_name, text, limit) => {
    expect(truncateUtf8(text, limit)).toBe(text);
  });

  it("cuts a 1 MiB crash log to the limit, keeping its beginning and saying how long it was", () => {
    const log = `Traceback (most recent call last):\n${"x".repeat(1024 * 1024)}`;
    const kept = truncateUtf8(log, 4096);
    expect(bytes(kept)).toBe(4096);
    const marker = `… [truncated from ${bytes(log)} bytes]`;
    expect(kept.endsWith(marker)).toBe(true);
    expect(log.startsWith(kept.slice(0, -marker.length))).toBe(true);
  });

  it("one byte over the limit is cut", () => {
    const kept = truncateUtf8("y".repeat(4097), 4096);
    expect(kept).toBe(`${"y".repeat(4096 - bytes("… [truncated from 4097 bytes]"))}… [truncated from 4097 bytes]`);
  });

  // Every alignment of 1-, 2-, 3- and 4-byte code points against the cut.
  const UNITS = ["a", "é", "€", "😀", "a😀", "é😀", "€😀", "ab😀é€"];
  const LIMITS = [64, 65, 66, 67, 100, 101, 102, 103, 4096];
  it.each(UNITS.flatMap((unit) => LIMITS.map((limit) => [unit, limit] as const)))(
    "never splits a code point: %j repeated, cut to %d bytes",
    (unit, limit) => {
      const text = unit.repeat(5000);
      const kept = truncateUtf8(text, limit);
      expect(bytes(kept)).toBeLessThanOrEqual(limit);
      expect(kept).not.toMatch(LONE_SURROGATE);
      const marker = `… [truncated from ${bytes(text)} bytes]`;
      expect(kept.endsWith(marker)).toBe(true);
      const prefix = kept.slice(0, -marker.length);
      expect(text.startsWith(prefix)).toBe(true);
      // The longest prefix that fits: one more code point would not.
      const next = String.fromCodePoint(text.codePointAt(prefix.length)!);
      expect(bytes(prefix + next + marker)).toBeGreaterThan(limit);
    },
  );

  it("refuses a limit that leaves no room for its marker: a caller's bug, not a client's", () => {
    expect(() => truncateUtf8("z".repeat(100), 10)).toThrow(RangeError);
  });
});

describe("truncateList", () => {
  it("keeps a list that fits unchanged", () => {
    expect(truncateList(["a", "b"], 4096)).toEqual(["a", "b"]);
    expect(truncateList([], 4096)).toEqual([]);
  });

  it("keeps whole entries while they fit, then says how many more there were", () => {
    const problems = Array.from({ length: 1000 }, (_, i) => `part 'p${i}' was never registered`.padEnd(100, "."));
    const kept = truncateList(problems, 4096);
    expect(kept.slice(0, -1)).toEqual(problems.slice(0, 40));
    expect(kept.at(-1)).toBe("… and 960 more");
  });

  it("cuts an entry too long on its own", () => {
    const kept = truncateList(["k".repeat(100_000), "next"], 4096);
    expect(kept[0]).toMatch(/… \[truncated from 100000 bytes\]$/);
    expect(bytes(kept[0]!)).toBe(4096);
    expect(kept.slice(1)).toEqual(["… and 1 more"]);
  });
});
