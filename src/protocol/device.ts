// Device-code enrolment on the wire (docs/protocol.md §9 "Enrolled machines"): what the
// agent's `flashnode login` sends and receives, and the operator's calls.
// Field names are RFC 8628's where it has them.

import { z } from "zod";
import { MAX_OWNER_LENGTH } from "./limits";
import { AssignedPoolsSchema } from "./nodes";

/** Short, client-chosen text kept in the pool and shown to an operator: bounded here, shortened for display. */
const shown = z.string().max(256);

/** `POST /v1alpha1/device/code` (no credential). */
export const DeviceCodeRequestSchema = z.object({
  node_id: z.string().min(1).max(256),
  hostname: shown.default(""),
  platform: shown.default(""),
});
export type DeviceCodeRequest = z.output<typeof DeviceCodeRequestSchema>;

/** `POST /v1alpha1/device/token` (no credential). */
export const DeviceTokenRequestSchema = z.object({ device_code: z.string().max(512) });

/** A user code an operator decides on. */
export const UserCodeRequestSchema = z.object({ user_code: z.string().max(64) });

/**
 * `POST /v1alpha1/device/deny` (operator): one code, or `{"all": true}` for
 * every pending code at once (one source flooding the pool). Exactly one.
 */
export const DenyRequestSchema = z
  .object({ user_code: z.string().max(64).optional(), all: z.literal(true).optional() })
  .refine((body) => (body.user_code === undefined) !== (body.all === undefined), {
    message: 'send exactly one of "user_code" or "all": true',
  });

/**
 * `POST /v1alpha1/device/approve` (operator): optionally the machine's
 * owner (docs/protocol.md §14: replicas of a task run on distinct owners), trimmed;
 * absent or null, the machine is its own owner.
 */
export const ApproveRequestSchema = UserCodeRequestSchema.extend({
  owner: z
    .string()
    .trim()
    .min(1, "owner must not be empty: leave it out for the machine to be its own owner")
    .max(MAX_OWNER_LENGTH, `owner is at most ${MAX_OWNER_LENGTH} characters`)
    .nullish(),
  /** Team pools the machine is assigned once it redeems the code (docs/protocol.md §9); absent or null: none named. */
  pools: AssignedPoolsSchema.nullish(),
});

/** One entry of `GET /v1alpha1/device/pending`: its schema is among the answers. */
export type { PendingEnrolment } from "./responses";
