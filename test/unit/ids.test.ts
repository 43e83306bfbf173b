import { describe, expect, it } from "vitest";
import { mintId, randomHex12 } from "../../src/protocol/ids";

describe("mintId", () => {
  it("draws again past ids already taken", () => {
    const draws = ["aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc"];
    const taken = new Set(["ls-aaaaaaaaaaaa", "ls-bbbbbbbbbbbb"]);
    expect(
      mintId(
        "ls-",
        (id) => taken.has(id),
        () => draws.shift()!,
      ),
    ).toBe("ls-cccccccccccc");
  });

  it("gives up, loudly, only when the random source keeps repeating itself", () => {
    expect(() =>
      mintId(
        "ck-",
        () => true,
        () => "aaaaaaaaaaaa",
      ),
    ).toThrow(/no unused ck-… id in 8 draws/);
  });

  it("mints 12 lowercase hex digits by default", () => {
    expect(mintId("ls-", () => false)).toMatch(/^ls-[0-9a-f]{12}$/);
    expect(randomHex12()).toMatch(/^[0-9a-f]{12}$/);
  });
});
