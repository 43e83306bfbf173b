import { describe, expect, it } from "vitest";
import { jsonShapeProblem, MAX_JSON_DEPTH } from "../../src/protocol/json";

const arrays = (depth: number): unknown => JSON.parse("[".repeat(depth) + "]".repeat(depth));

describe("the shape every JSON body must have", () => {
  it.each([
    ["an object", { a: 1, b: [true, null, "x"] }],
    ["a bare string", "ok"],
    ["emoji (a surrogate pair)", { "😀": "😀" }],
    ["NUL, RTL and C1 characters", { "\u0000": "\u202e\u0085" }],
    [`${MAX_JSON_DEPTH} levels of nesting`, arrays(MAX_JSON_DEPTH)],
    ["a wide, shallow list", Array.from({ length: 100_000 }, (_, i) => i)],
  ])("accepts %s", (_name, value) => {
    expect(jsonShapeProblem(value)).toBeNull();
  });

  it.each([
    [`${MAX_JSON_DEPTH + 1} levels of nesting`, arrays(MAX_JSON_DEPTH + 1), { loc: [], type: "json_invalid" }],
    ["100,000 levels of nesting (without overflowing the stack)", arrays(100_000), { loc: [], type: "json_invalid" }],
    ["a lone high surrogate in a value", { a: ["x", "\ud800"] }, { loc: ["a", 1], type: "string_unicode" }],
    ["a lone low surrogate in a key", { a: { "\udc00": 1 } }, { loc: ["a", "\udc00"], type: "string_unicode" }],
    ["a lone surrogate as the whole body", "\ud83d", { loc: [], type: "string_unicode" }],
  ])("refuses %s", (_name, value, expected) => {
    expect(jsonShapeProblem(value)).toMatchObject(expected);
  });
});
