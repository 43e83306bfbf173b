// The pure half of docs/protocol.md §12 "Bounded rows": every sha256 field is 64
// lowercase hex characters, evidence text is cut short, and a registration
// is measured as it will be stored. The Worker half is
// test/worker/schema/bounded-rows.test.ts.

import { describe, expect, it } from "vitest";
import {
  ArtifactRecordSchema,
  CommitCheckpointRequestSchema,
  RegisterPartRequestSchema,
} from "../../src/protocol/checkpoints";
import { parseRequest } from "../../src/protocol/errors";
import { MAX_REGISTRATION_BYTES, MAX_STORED_TEXT_BYTES } from "../../src/protocol/limits";
import { NodeRegistrationSchema, registrationFits } from "../../src/protocol/nodes";
import { CompleteRequestSchema, parseEvidence } from "../../src/protocol/tasks";
import { registration } from "../fixtures/registration";

const SHA = "0123456789abcdef".repeat(4);
const bytes = (text: string) => new TextEncoder().encode(text).length;

const MALFORMED: Array<[string, unknown]> = [
  ["63 characters", SHA.slice(1)],
  ["65 characters", `${SHA}a`],
  ["uppercase", SHA.toUpperCase()],
  ["one uppercase digit", `${SHA.slice(1)}A`],
  ["a non-hex character", `${SHA.slice(1)}g`],
  ["a sha256: prefix", `sha256:${SHA}`],
  ["a trailing newline", `${SHA}\n`],
  ["empty", ""],
  ["a stand-in like sha-good", "sha-good"],
];

/** Every body with a sha256 field, with that field set to `sha`, and where the 422 must point. */
const FIELDS = (sha: unknown) =>
  [
    ["complete's output_sha256", CompleteRequestSchema, { output_sha256: sha }, ["body", "output_sha256"]],
    [
      "a registered part's sha256",
      RegisterPartRequestSchema,
      { attempt_id: "a", step: 0, part: { key: "k", sha256: sha, size_bytes: 1 } },
      ["body", "part", "sha256"],
    ],
    [
      "a commit's expected part sha256",
      CommitCheckpointRequestSchema,
      { attempt_id: "a", step: 0, storage_prefix: "p", expected_parts: [{ key: "k", sha256: sha, size_bytes: 1 }] },
      ["body", "expected_parts", 0, "sha256"],
    ],
  ] as const;

describe("every sha256 field is 64 lowercase hex characters", () => {
  it.each(FIELDS(SHA).map(([name, schema, body]) => [name, schema, body] as const))(
    "%s accepts a well-formed hash",
    (_name, schema, body) => {
      expect(parseRequest(schema, body).ok).toBe(true);
    },
  );

  it.each(
    MALFORMED.flatMap(([what, sha]) =>
      FIELDS(sha).map(([name, schema, body, loc]) => [name, what, schema, body, loc] as const),
    ),
  )("%s refuses %s with a 422 pointing at it", (_name, _what, schema, body, loc) => {
    const result = parseRequest(schema, body);
    expect(result.ok ? [] : result.detail).toEqual([{ loc, msg: expect.any(String), type: "string_pattern_mismatch" }]);
  });

  it("an artifact record's sha256 is one too, or null", () => {
    const record = {
      uri: "artifact://k",
      backend: "local",
      bucket: "b",
      object_key: "k",
      created_at: "2026-11-29T13:43:49.123Z",
    };
    expect(parseRequest(ArtifactRecordSchema, { ...record, sha256: SHA }).ok).toBe(true);
    expect(parseRequest(ArtifactRecordSchema, { ...record, sha256: null }).ok).toBe(true);
    expect(parseRequest(ArtifactRecordSchema, { ...record, sha256: SHA.toUpperCase() }).ok).toBe(false);
  });
});

describe("evidence is kept within the stored-text bound", () => {
  it("cuts a huge image digest to the bound with a marker, keeping every other field", () => {
    const digest = `sha256:${"f".repeat(2 * 1024 * 1024)}`;
    const evidence = parseEvidence({ wall_seconds: 3, exit_code: 0, image_digest: digest });
    expect(evidence).toMatchObject({ wall_seconds: 3, exit_code: 0 });
    expect(bytes(evidence!.image_digest)).toBeLessThanOrEqual(MAX_STORED_TEXT_BYTES);
    expect(evidence!.image_digest).toMatch(/^sha256:f+… \[truncated from 2097159 bytes\]$/);
  });

  it("keeps a real digest as reported", () => {
    const digest = `sha256:${SHA}`;
    expect(parseEvidence({ image_digest: digest })?.image_digest).toBe(digest);
  });
});

describe("registrationFits", () => {
  /** A parsed registration whose JSON is exactly `size` bytes, padded in a label. */
  function sized(size: number) {
    const base = NodeRegistrationSchema.parse(registration("n1", { labels: { pad: "" } }));
    const pad = size - bytes(JSON.stringify(base));
    return { ...base, labels: { pad: "é".repeat(Math.floor(pad / 2)) + "x".repeat(pad % 2) } };
  }

  it.each([
    [1024, true],
    [MAX_REGISTRATION_BYTES, true],
    [MAX_REGISTRATION_BYTES + 1, false],
  ])("a registration of %d bytes (counted in UTF-8) fits: %s", (size, fits) => {
    const reg = sized(size);
    expect(bytes(JSON.stringify(reg))).toBe(size);
    expect(registrationFits(reg)).toBe(fits);
  });
});
