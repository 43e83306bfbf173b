// The names a placement answer gives the rule that refused a node (the
// `gate` field of GET …/placement, docs/protocol.md §4, §14): wire names,
// defined once here and used by the gate (src/rules/placement.ts) and the
// OpenAPI document alike.

/** The gates of docs/protocol.md §4, in protocol order: the order decides which refusal is reported, never the answer. */
export const GATE_NAMES = ["argv", "module", "local_data", "gpu", "exclusion", "pool", "isolation"] as const;
export type GateName = (typeof GATE_NAMES)[number];

/**
 * What can refuse a node a task: a gate, or "replica", the pool's rule
 * that each replica of a task runs on a node, and an owner, of its own
 * (docs/protocol.md §14). In this order a summary breaks ties between groups.
 */
export const REFUSAL_NAMES = [...GATE_NAMES, "replica"] as const;
export type RefusalName = (typeof REFUSAL_NAMES)[number];
