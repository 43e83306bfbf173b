// The flashruntime v1alpha1 wire protocol as zod schemas, in one import.
// Pure: no I/O and no Cloudflare imports, so every layer may depend on it.

export * from "./checkpoints";
export * from "./errors";
export * from "./jobs";
export * from "./keys";
export * from "./nodes";
export * from "./primitives";
export * from "./tasks";
