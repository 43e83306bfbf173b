// @ts-check
// What the Node-side tests, benches, demo and drivers share, in one import:
// the `wrangler dev` launcher (wrangler.mjs), the coordinator client
// (client.mjs) and the simulated agent loop (agent.mjs).

export * from "./agent.mjs";
export * from "./client.mjs";
export * from "./wrangler.mjs";
