import { describe, expect, it } from "vitest";
import { claimWaitMs, DEFAULT_CLAIM_WAIT_SECONDS, MAX_CLAIM_WAIT_SECONDS } from "../../src/rules/long-poll";

describe("FLASHML_CLAIM_WAIT_SECONDS", () => {
  it.each([
    [undefined, DEFAULT_CLAIM_WAIT_SECONDS * 1000],
    ["", DEFAULT_CLAIM_WAIT_SECONDS * 1000],
    ["0", 0],
    ["10", 10_000],
    [" 12.5 ", 12_500],
    ["13", 13_000],
  ])("%j holds a claim %d ms", (raw, ms) => {
    expect(claimWaitMs(raw)).toBe(ms);
  });

  it("the default ends at least 2 s inside the agent's 15 s timeout", () => {
    expect(DEFAULT_CLAIM_WAIT_SECONDS).toBeLessThanOrEqual(MAX_CLAIM_WAIT_SECONDS);
    expect(MAX_CLAIM_WAIT_SECONDS).toBeLessThanOrEqual(13);
  });

  it.each(["13.5", "15", "-1", "ten", "1e1", "0x10", "Infinity", "NaN", "5s"])(
    "%j is refused with the range",
    (raw) => {
      expect(claimWaitMs(raw)).toBe("FLASHML_CLAIM_WAIT_SECONDS must be a number of seconds from 0 to 13");
    },
  );
});
