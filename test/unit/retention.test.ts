import { describe, expect, it } from "vitest";
import { DEFAULT_JOB_RETENTION_SECONDS, jobRetentionMs } from "../../src/rules/retention";

describe("FLASHML_JOB_RETENTION_SECONDS", () => {
  it.each([
    [undefined, DEFAULT_JOB_RETENTION_SECONDS * 1000],
    ["", DEFAULT_JOB_RETENTION_SECONDS * 1000],
    ["604800", 604_800_000],
    ["0", 0],
    [" 3 ", 3000],
    ["1.5", 1500],
  ])("%j keeps a finished job %d ms", (raw, ms) => {
    expect(jobRetentionMs(raw)).toBe(ms);
  });

  it("defaults to a week", () => {
    expect(DEFAULT_JOB_RETENTION_SECONDS).toBe(604_800);
  });

  it.each(["-1", "a week", "7d", "1e6", "Infinity", "NaN", "0x10", "3153600001"])("%j is refused", (raw) => {
    expect(jobRetentionMs(raw)).toBe(
      "FLASHML_JOB_RETENTION_SECONDS must be a number of seconds from 0 to 3153600000 (100 years)",
    );
  });
});
