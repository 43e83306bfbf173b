import { describe, expect, expectTypeOf, it } from "vitest";
import type { PendingEnrolment as PagePendingEnrolment } from "../../src/enrol/wire";
import type { PendingEnrolment } from "../../src/protocol/device";
import { authenticate } from "../../src/rules/auth";
import {
  codeSource,
  enrolledToken,
  enrolledTokenNode,
  normalizeUserCode,
  sha256Hex,
  userCodeFrom,
} from "../../src/rules/enrolment";

const ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";

describe("user codes", () => {
  it("are eight letters of RFC 8628's consonants, shown XXXX-XXXX", () => {
    const code = userCodeFrom(Uint8Array.from({ length: 32 }, (_, i) => i * 7));
    expect(code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
  });

  it("use every letter equally often: bytes that would favour some are skipped", () => {
    const counts = new Map<string, number>();
    // Every byte value once, in eight-byte draws: 240 usable of 256.
    for (let start = 0; start < 256; start += 8) {
      const code = userCodeFrom(Uint8Array.from({ length: 8 }, (_, i) => start + i));
      for (const ch of (code ?? "").replace("-", "")) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    }
    // Draws reaching into 240..255 come up short (null), so 30 full draws of 240 bytes: 12 of each letter.
    expect([...counts.keys()].sort().join("")).toBe(ALPHABET);
    expect(new Set(counts.values())).toEqual(new Set([12]));
  });

  it("are null when the bytes run out before eight usable ones", () => {
    expect(userCodeFrom(new Uint8Array(8).fill(250))).toBeNull();
  });

  it.each([
    ["WDJB-MJHT", "WDJB-MJHT"],
    ["wdjbmjht", "WDJB-MJHT"],
    [" wdjb mjht ", "WDJB-MJHT"],
    ["WDJB--MJHT", "WDJB-MJHT"],
    ["WDJB-MJH", null],
    ["WDJB-MJHTX", null],
    ["WDJA-MJHT", null], // a vowel is never in a code
    ["WDJ0-MJHT", null],
    ["", null],
  ])("%j is typed as %j", (typed, stored) => {
    expect(normalizeUserCode(typed)).toBe(stored);
  });
});

describe("the source a code request counts against", () => {
  it.each([
    ["203.0.113.9", "203.0.113.9"],
    ["2001:db8:7:42::1", "2001:db8:7:42::/64"],
    ["2001:0DB8:0007:0042:ffff:1:2:3", "2001:db8:7:42::/64"],
    ["2001:db8::1", "2001:db8:0:0::/64"],
    ["::1", "0:0:0:0::/64"],
    ["::ffff:198.51.100.7", "198.51.100.7"],
    ["", ""],
    [null, ""],
    ["not:an::address::", "not:an::address::"],
    ["1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7:8:9"],
  ])("%j counts as %j", (address, source) => {
    expect(codeSource(address)).toBe(source);
  });
});

describe("enrolled tokens", () => {
  const secret = new Uint8Array(32).fill(7);

  it.each(["laptop-7", "n1", "node.with.dots", "höst/ü", "\uFEFFbom", "a".repeat(256)])(
    "name their node %j, and nothing else does",
    (nodeId) => {
      const token = enrolledToken(nodeId, secret);
      expect(token).toMatch(/^fe1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
      expect(enrolledTokenNode(token)).toBe(nodeId);
    },
  );

  it.each([
    "tok-n1",
    "fe1.bjE",
    `fe1..${"A".repeat(43)}`,
    `fe2.bjE.${"A".repeat(43)}`,
    `fe1.bjE.${"A".repeat(42)}`,
    `fe1.b+E.${"A".repeat(43)}`,
    `fe1./w.${"A".repeat(43)}`, // 0xFF: not UTF-8
    `fe1.bjE.${"A".repeat(43)}.x`,
  ])("%j is not one", (text) => {
    expect(enrolledTokenNode(text)).toBeNull();
  });

  it("are recognised only when no configured token matches, and never vouched for here", () => {
    const config = { nodes: [{ name: "n1", token: "tok-n1" }], operators: [{ name: "ops", token: "tok-ops" }] };
    const token = enrolledToken("laptop-7", secret);
    expect(authenticate(config, `Bearer ${token}`)).toEqual({ kind: "enrolled", nodeId: "laptop-7", token });
    expect(authenticate(config, "Bearer tok-n1")).toEqual({ kind: "node", nodeId: "n1" });
    expect(authenticate(config, "Bearer fe1.nonsense")).toBe("invalid");
    // A configured token that happens to look enrolled is what it is configured as.
    const shaped = enrolledToken("n1", secret);
    expect(authenticate({ nodes: [{ name: "n9", token: shaped }], operators: [] }, `Bearer ${shaped}`)).toEqual({
      kind: "node",
      nodeId: "n9",
    });
  });

  it("are stored as SHA-256 hex", async () => {
    expect(await sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  });
});

describe("the enrolment page's view of the API", () => {
  it("holds what the server sends (src/enrol/wire.d.ts is a copy the page's type check reads)", () => {
    expectTypeOf<PendingEnrolment>().toExtend<PagePendingEnrolment>();
  });
});
