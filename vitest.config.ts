import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

// Two projects: the pure layer in plain Node (fast, table-driven), and the
// Worker + Durable Object in workerd with real SQLite storage and R2.
export default defineConfig({
  test: {
    projects: [
      {
        test: { name: "unit", include: ["test/unit/**/*.test.ts"], environment: "node" },
      },
      {
        plugins: [cloudflareTest({ wrangler: { configPath: "./wrangler.toml" } })],
        test: { name: "worker", include: ["test/worker/**/*.test.ts"] },
      },
      {
        // The same Worker with tokens configured: authentication enforced.
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: { bindings: { FLASHML_NODE_TOKENS: "n1:tok-n1, n2:tok-n2", FLASHML_OPERATOR_TOKENS: "ops:tok-ops" } },
          }),
        ],
        test: { name: "worker-auth", include: ["test/worker-auth/**/*.test.ts"] },
      },
    ],
  },
});
