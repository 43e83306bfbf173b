import { describe, expect, it } from "vitest";
import type { CheckpointPart } from "../../src/protocol/checkpoints";
import { commitProblems } from "../../src/rules/checkpoints";

const H1 = "1".repeat(64);
const H2 = "2".repeat(64);
const part = (key: string, sha256 = H1, size_bytes = 10): CheckpointPart => ({ key, sha256, size_bytes });
const registered = new Map([
  ["model.pt", part("model.pt")],
  ["optim.pt", part("optim.pt", H2, 20)],
]);

describe("commitProblems", () => {
  it("accepts a manifest naming registered parts with their hashes and sizes", () => {
    expect(commitProblems(registered, [part("model.pt"), part("optim.pt", H2, 20)])).toEqual([]);
  });

  it("accepts a manifest naming a subset of the registered parts", () => {
    expect(commitProblems(registered, [part("model.pt")])).toEqual([]);
  });

  it.each<[string, CheckpointPart[], string[]]>([
    ["no parts at all", [], ["a checkpoint needs at least one part: expected_parts is empty"]],
    [
      "a part never registered",
      [part("missing.pt")],
      ["part 'missing.pt' was never registered for this attempt and step"],
    ],
    [
      "a hash other than the registered one",
      [part("model.pt", H2)],
      [`part 'model.pt' has sha256 ${H2}, but ${H1} was registered`],
    ],
    [
      "a size other than the registered one",
      [part("model.pt", H1, 11)],
      ["part 'model.pt' has size_bytes 11, but 10 was registered"],
    ],
    ["a key listed twice", [part("model.pt"), part("model.pt")], ["part 'model.pt' is listed more than once"]],
  ])("refuses %s", (_, expected, problems) => {
    expect(commitProblems(registered, expected)).toEqual(problems);
  });

  it("lists every problem at once, in the committer's order", () => {
    expect(commitProblems(registered, [part("a"), part("model.pt", H2), part("b")])).toEqual([
      "part 'a' was never registered for this attempt and step",
      `part 'model.pt' has sha256 ${H2}, but ${H1} was registered`,
      "part 'b' was never registered for this attempt and step",
    ]);
  });
});
