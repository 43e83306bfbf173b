// What a node says about itself: registration and heartbeat (docs/protocol.md §3.1).
// Every security-relevant field defaults to the safe value, so an old agent
// that omits a field reads as "not capable"; only module_capable, an
// availability flag, defaults to true. These defaults must never be
// loosened: the placement gate trusts them.

import { z } from "zod";
import { utf8Length } from "../rules/text";
import { MAX_ASSIGNED_POOLS, MAX_POOL_NAME_LENGTH, MAX_REGISTRATION_BYTES } from "./limits";
import { int, SchemaVersionSchema, StringMapSchema } from "./primitives";

/** One GPU as the host's driver reports it. Only `index` is required. */
export const GpuInfoSchema = z.object({
  index: int(),
  name: z.string().default(""),
  memory_total_mb: int().nullable().default(null),
  driver_version: z.string().default(""),
  compute_capability: z.string().default(""),
});
export type GpuInfo = z.infer<typeof GpuInfoSchema>;

/**
 * The hardware a node advertises. `gpus` and `pools` default to empty: a
 * node that says nothing has no GPUs and belongs to no team pool.
 */
export const NodeCapabilitiesSchema = z.object({
  cpu_cores: z.number().nullable().default(null),
  memory_bytes: int().nullable().default(null),
  gpus: z.array(GpuInfoSchema).default(() => []),
  pools: z.array(z.string()).default(() => []),
  os: z.string().default(""),
  architecture: z.string().default(""),
});
export type NodeCapabilities = z.infer<typeof NodeCapabilitiesSchema>;

export const NODE_ENVIRONMENTS = ["local", "cloud", "edge"] as const;

/**
 * `POST /v1alpha1/nodes/register`. `pool` is overwritten with the URL's pool
 * by the route (docs/protocol.md §2); `node_id` by the caller's identity when enforcing.
 */
export const NodeRegistrationSchema = z.object({
  schema_version: SchemaVersionSchema,
  node_id: z.string(),
  kubernetes_node: z.string(),
  hostname: z.string(),
  capabilities: NodeCapabilitiesSchema,
  environment: z.enum(NODE_ENVIRONMENTS).default("local"),
  sandbox_capable: z.boolean().default(false),
  argv_capable: z.boolean().default(false),
  // Availability, not safety: a module task on an incapable node only wastes
  // attempts, so an agent that predates the field keeps getting module work.
  module_capable: z.boolean().default(true),
  unsandboxed_argv_capable: z.boolean().default(false),
  local_datasets: z.array(z.string()).default(() => []),
  pool: z.string().default("local"),
  runtime_profile: z.string().default("kubernetes"),
  labels: StringMapSchema.default(() => ({})),
  agent_version: z.string().default(""),
});
export type NodeRegistration = z.infer<typeof NodeRegistrationSchema>;

/**
 * Whether a registration fits its stored row: its JSON, defaults applied, is
 * at most MAX_REGISTRATION_BYTES of UTF-8 (docs/protocol.md §12, "Bounded rows"). Both a
 * registration and a heartbeat that replaces its pools must keep it so.
 */
export function registrationFits(registration: NodeRegistration): boolean {
  return utf8Length(JSON.stringify(registration)) <= MAX_REGISTRATION_BYTES;
}

/** The 413 detail for a registration that does not fit. */
export const REGISTRATION_TOO_LARGE = `a node registration is limited to ${MAX_REGISTRATION_BYTES} bytes of JSON`;

export const NODE_STATUSES = ["online", "draining", "terminating"] as const;
export const NodeStatusSchema = z.enum(NODE_STATUSES);
export type NodeStatus = z.infer<typeof NodeStatusSchema>;

/**
 * `POST /v1alpha1/nodes/{id}/heartbeat`. `timestamp` is accepted but ignored
 * (the coordinator keeps its own clock); a zone-less timestamp, as a naive
 * Python datetime serialises, is accepted too. A non-null `pools` replaces
 * `capabilities.pools` wholesale; null leaves it unchanged.
 */
export const NodeHeartbeatSchema = z.object({
  schema_version: SchemaVersionSchema,
  node_id: z.string(),
  timestamp: z.iso.datetime({ offset: true, local: true }).optional(),
  status: NodeStatusSchema.default("online"),
  pools: z.array(z.string()).nullable().default(null),
});
export type NodeHeartbeat = z.infer<typeof NodeHeartbeatSchema>;

/**
 * Team pools an operator assigns a node (docs/protocol.md §9): a list, replacing the
 * node's earlier assignment wholesale (empty: a member of none). Names are
 * non-empty, as gate 6 requires of a task's pool.
 */
export const AssignedPoolsSchema = z
  .array(
    z
      .string()
      .min(1, "a team pool name must not be empty")
      .max(MAX_POOL_NAME_LENGTH, `a team pool name is at most ${MAX_POOL_NAME_LENGTH} characters`),
  )
  .max(MAX_ASSIGNED_POOLS, `at most ${MAX_ASSIGNED_POOLS} team pools`);

/** `PUT /v1alpha1/nodes/{node_id}/pools` (operator). */
export const NodePoolsRequestSchema = z.object({ pools: AssignedPoolsSchema });
export type NodePoolsRequest = z.infer<typeof NodePoolsRequestSchema>;
