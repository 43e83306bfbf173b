import { defineConfig } from "vitest/config";

// The crash and soak drivers: plain Node, driving `wrangler dev` over HTTP.
// Not part of `npm test`; run by scripts/reliability.mjs (npm run crash / soak).
export default defineConfig({
  test: {
    root: new URL("..", import.meta.url).pathname,
    include: ["reliability/**/*.test.ts"],
    environment: "node",
    testTimeout: 30 * 60_000,
    fileParallelism: false,
  },
});
