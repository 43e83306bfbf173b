import { describe, expect, it } from "vitest";
import { DEFAULT_MAX_ARTIFACT_MB, maxArtifactBytes, readSettings, settingsOf } from "../../src/rules/settings";

describe("readSettings", () => {
  it("an empty environment is an open coordinator with every default", () => {
    const read = readSettings({});
    expect(read.ok && read.settings).toMatchObject({
      auth: { mode: "open" },
      membership: "reported",
      joinCode: null,
      poolLocations: [],
      claimWaitMs: 12_500,
      jobRetentionMs: 7 * 24 * 3600 * 1000,
      maxWorkerLosses: 10,
      retryElsewhereMs: 60_000,
      maxArtifactBytes: DEFAULT_MAX_ARTIFACT_MB * 1024 * 1024,
      allowUnsandboxedArgv: false,
      logStateChanges: true,
    });
  });

  it("tokens make membership an operator's word, and owners are read once for both modes", () => {
    const read = readSettings({ FLASHML_OPERATOR_TOKENS: "ops:tok-ops", FLASHML_NODE_OWNERS: "n1:alice" });
    expect(read.ok && read.settings.membership).toBe("assigned");
    expect(read.ok && [...read.settings.owners]).toEqual([["n1", "alice"]]);
    const open = readSettings({ FLASHML_NODE_OWNERS: "n1:alice" });
    expect(open.ok && [...open.settings.owners]).toEqual([["n1", "alice"]]);
  });

  it("the first unreadable setting is the one named, in the Worker's order", () => {
    expect(readSettings({ FLASHML_REQUIRE_NODE_AUTH: "1", FLASHML_MAX_ARTIFACT_MB: "x" })).toEqual({
      ok: false,
      detail:
        "FLASHML_REQUIRE_NODE_AUTH=1 but no FLASHML_NODE_TOKENS or FLASHML_OPERATOR_TOKENS is configured: refusing to serve open",
    });
    expect(readSettings({ FLASHML_CLAIM_WAIT_SECONDS: "99", FLASHML_MAX_ARTIFACT_MB: "x" })).toEqual({
      ok: false,
      detail: "FLASHML_CLAIM_WAIT_SECONDS must be a number of seconds from 0 to 13",
    });
  });

  it("one env is read once: the same value every time", () => {
    const env = { FLASHML_TENANT_WEIGHTS: "heavy:3" };
    expect(settingsOf(env)).toBe(settingsOf(env));
    expect(settingsOf({ ...env })).not.toBe(settingsOf(env));
  });
});

describe("maxArtifactBytes", () => {
  it.each([
    [undefined, 100 * 1024 * 1024],
    ["", 100 * 1024 * 1024],
    [" 100 ", 100 * 1024 * 1024],
    ["1", 1024 * 1024],
    ["0.5", 512 * 1024],
  ])("%j MiB is %d bytes", (raw, bytes) => {
    expect(maxArtifactBytes(raw)).toBe(bytes);
  });

  it.each(["0", "-1", "abc", "1e3", "Infinity", "5 MB"])("%j is refused, never a fallback", (raw) => {
    expect(maxArtifactBytes(raw)).toBe("FLASHML_MAX_ARTIFACT_MB must be a number of MiB greater than 0");
  });
});
