// Artifact records and the checkpoint catalog's wire models (docs/protocol.md §3.4, §8).
// A checkpoint is a manifest proving its parts exist with the right hashes;
// these schemas only check shapes (a sha256 is 64 lowercase hex characters)
// — "zero parts", "part never registered" and "hash differs" are 409s
// decided by the pool, never 422s from here.

import { z } from "zod";
import { IsoDateTimeSchema, int, SchemaVersionSchema } from "./primitives";

/** A sha256 digest as the wire carries it: exactly 64 lowercase hex characters. */
export const SHA256_RE = /^[0-9a-f]{64}$/;

/**
 * Every sha256 field (docs/protocol.md §12, "Bounded rows"): anything but 64 lowercase
 * hex characters is a 422 — never stored, never compared.
 */
export const Sha256Schema = z.string().regex(SHA256_RE);

/** A stored artifact. `backend` is always "local" (the coordinator hosts it; closed in v1alpha1). */
export const ArtifactRecordSchema = z.object({
  schema_version: SchemaVersionSchema,
  uri: z.string().startsWith("artifact://"),
  backend: z.literal("local"),
  bucket: z.string(),
  object_key: z.string(),
  etag: z.string().nullable().default(null),
  sha256: Sha256Schema.nullable().default(null),
  size_bytes: int().min(0).nullable().default(null),
  created_at: IsoDateTimeSchema,
});
export type ArtifactRecord = z.infer<typeof ArtifactRecordSchema>;

/** The ArtifactRecord of a key bound to stored bytes, as the wire shows it. */
/** An entry of GET /jobs/{id}/artifacts (docs/protocol.md §7). */
export function artifactListEntry(row: { key: string; size_bytes: number }) {
  return { uri: `artifact://${row.key}`, key: row.key, size_bytes: row.size_bytes };
}

export function artifactRecord(
  bound: { key: string; etag: string; sha256: string; size_bytes: number; created_ms: number },
  bucket: string,
): ArtifactRecord {
  return {
    schema_version: "v1alpha1",
    uri: `artifact://${bound.key}`,
    backend: "local",
    bucket,
    object_key: bound.key,
    etag: bound.etag,
    sha256: bound.sha256,
    size_bytes: bound.size_bytes,
    created_at: new Date(bound.created_ms).toISOString(),
  };
}

/** One uploaded file of a checkpoint, keyed relative to the manifest's prefix. */
export const CheckpointPartSchema = z.object({
  key: z.string(),
  sha256: Sha256Schema,
  size_bytes: int().min(0),
});
export type CheckpointPart = z.infer<typeof CheckpointPartSchema>;

export const CHECKPOINT_VALIDATIONS = ["hash_verified", "restore_verified", "invalid"] as const;
export const CheckpointValidationSchema = z.enum(CHECKPOINT_VALIDATIONS);
export type CheckpointValidation = z.infer<typeof CheckpointValidationSchema>;

/** "ck-" followed by 12 lowercase hex digits. */
export const MANIFEST_ID_RE = /^ck-[0-9a-f]{12}$/;

/**
 * A committed checkpoint. `compatible_world_sizes`, when omitted, is
 * `[world_size]` (the manifest restores at least at its own size).
 */
export const CheckpointManifestSchema = z
  .object({
    schema_version: SchemaVersionSchema,
    manifest_id: z.string().regex(MANIFEST_ID_RE),
    job_id: z.string(),
    attempt_id: z.string(),
    step: int().min(0),
    framework: z.string().default(""),
    strategy_family: z.string().default(""),
    world_size: int().min(1).default(1),
    compatible_world_sizes: z.array(int().min(1)).optional(),
    storage_prefix: z.string(),
    parts: z.array(CheckpointPartSchema),
    validation: CheckpointValidationSchema,
    created: IsoDateTimeSchema,
    checkpoint_duration_s: z.number().nullable().default(null),
  })
  .transform((m) => ({ ...m, compatible_world_sizes: m.compatible_world_sizes ?? [m.world_size] }));
export type CheckpointManifest = z.infer<typeof CheckpointManifestSchema>;

/** `POST .../checkpoints/parts`. Re-registering a key replaces it. */
export const RegisterPartRequestSchema = z.object({
  attempt_id: z.string(),
  step: int().min(0),
  part: CheckpointPartSchema,
});
export type RegisterPartRequest = z.infer<typeof RegisterPartRequestSchema>;

/**
 * `POST .../checkpoints/commit`: exactly the reference route's body. An
 * empty `expected_parts` is well-formed here and refused by the pool (409).
 */
export const CommitCheckpointRequestSchema = z.object({
  attempt_id: z.string(),
  step: int().min(0),
  expected_parts: z.array(CheckpointPartSchema),
  storage_prefix: z.string(),
  world_size: int().min(1).default(1),
  framework: z.string().default(""),
  strategy_family: z.string().default(""),
});
export type CommitCheckpointRequest = z.infer<typeof CommitCheckpointRequestSchema>;

/** `POST .../checkpoints/{manifest_id}/quarantine` (operator): why the manifest must never be restored. */
export const QuarantineCheckpointRequestSchema = z.object({
  reason: z
    .string()
    .refine((r) => r.trim() !== "", "reason must not be empty: say why the checkpoint cannot be restored"),
});
export type QuarantineCheckpointRequest = z.infer<typeof QuarantineCheckpointRequestSchema>;
