import { describe, expect, it } from "vitest";
import { storageReport } from "../../src/rules/storage";

describe("storageReport", () => {
  it.each([
    [0, false],
    [4_000_000_000, false],
    [8_000_000_000, false], // exactly 80%: not yet
    [8_000_000_001, true],
    [10_000_000_000, true],
  ])("%d bytes of 10 GB warns: %s", (bytes, warning) => {
    expect(storageReport(bytes)).toEqual({ bytes, limit_bytes: 10_000_000_000, warning });
  });
});
