// JSON content as it crosses the Durable Object RPC boundary. RPC types admit
// only serializable values, and `unknown` is not one; a precise recursive
// JSON type makes the RPC type mapping infinite. So an object of JSON is
// typed as an object of non-undefined values: callers narrow it as they would
// `unknown` (the gate does).

export type JsonObject = { [key: string]: {} | null };
