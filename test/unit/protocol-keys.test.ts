// Artifact key safety (docs/protocol.md §7) and pool names (docs/protocol.md §2): every good shape
// accepted, every bad kind refused with a message that names the problem.

import { describe, expect, it } from "vitest";
import { artifactKeyProblem, isPoolName, MAX_ARTIFACT_KEY_BYTES, POOL_NAME_RE } from "../../src/protocol";

const utf8Bytes = (s: string) => new TextEncoder().encode(s).byteLength;

describe("artifactKeyProblem", () => {
  const good: [string, string][] = [
    ["a single segment", "metrics.json"],
    ["a task output path", "jobs/0123456789ab/task-000/metrics.json"],
    ["a dot inside a name", "a.b/c.d.e"],
    ["a hidden file", ".hidden/.env"],
    ["names that merely start or end with dots", "..a/b../...c"],
    ["a space", "my file.txt"],
    ["non-ASCII letters", "名前/données.json"],
    ["an emoji", "results/🚀.json"],
    ["exactly 1024 ASCII bytes", "x".repeat(1024)],
    ["exactly 1024 bytes of two-byte characters", "é".repeat(512)],
    ["exactly 1024 bytes of three-byte characters and one ASCII", `${"€".repeat(341)}a`],
    ["exactly 1024 bytes of four-byte characters", "😀".repeat(256)],
  ];
  it.each(good)("accepts %s", (_name, key) => {
    expect(artifactKeyProblem(key)).toBeNull();
  });

  const bad: [string, string, RegExp][] = [
    ["an empty key", "", /empty/],
    ["a '..' segment in the middle", "a/../b", /'\.\.' segment/],
    ["a key that is only '..'", "..", /'\.\.' segment/],
    ["a leading '.' segment", "./x", /'\.' segment/],
    ["a trailing '.' segment", "a/.", /'\.' segment/],
    ["an empty segment", "a//b", /empty segment/],
    ["a trailing slash", "jobs/", /empty segment/],
    ["an absolute path", "/abs", /leading '\/'/],
    ["a backslash", "a\\b", /backslash/],
    ["a Windows-style traversal", "..\\secret", /backslash/],
    ["NUL", "\u0000", /control character U\+0000/],
    ["a NUL inside a name", "a\u0000.json", /control character U\+0000 at position 1/],
    ["a tab", "a\tb", /control character U\+0009/],
    ["a newline", "a\nb", /control character U\+000A/],
    ["unit separator (last C0)", "a\u001fb", /control character U\+001F/],
    ["DEL", "a\u007fb", /control character U\+007F/],
    ["NEL (C1)", "a\u0085b", /control character U\+0085/],
    ["the last C1 control", "a\u009fb", /control character U\+009F/],
    ["1025 ASCII bytes", "x".repeat(1025), /1025 bytes long; the limit is 1024/],
    ["1026 bytes of two-byte characters (513 characters)", "é".repeat(513), /1026 bytes long/],
    ["1025 bytes from one multibyte character over the limit", `${"x".repeat(1022)}€`, /1025 bytes long/],
    ["a lone surrogate", "a\ud800b", /well-formed/],
  ];
  it.each(bad)("refuses %s", (_name, key, message) => {
    expect(artifactKeyProblem(key)).toMatch(message);
  });

  it("measures the limit in UTF-8 bytes, not characters", () => {
    const key = "€".repeat(342);
    expect(key.length).toBeLessThan(MAX_ARTIFACT_KEY_BYTES);
    expect(utf8Bytes(key)).toBe(1026);
    expect(artifactKeyProblem(key)).toMatch(/1026 bytes/);
  });

  it("answers in one line for every bad key", () => {
    for (const [, key] of bad) expect(artifactKeyProblem(key)).not.toContain("\n");
  });
});

describe("pool names", () => {
  it.each(["local", "a", "0", "team-a", "gpu-pool-2", "a".repeat(63), "9lives"])("accepts %j", (name) => {
    expect(isPoolName(name)).toBe(true);
    expect(POOL_NAME_RE.test(name)).toBe(true);
  });

  it.each(["", "Local", "-a", "a-", "a".repeat(64), "a_b", "a.b", "local\n", " local", "team a", "ümlaut"])(
    "refuses %j",
    (name) => {
      expect(isPoolName(name)).toBe(false);
    },
  );

  it.each([undefined, null, 5, ["local"]])("refuses the non-string %j", (value) => {
    expect(isPoolName(value)).toBe(false);
  });
});
