import { fileURLToPath } from "node:url";
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

// The in-object benchmark: the same workerd + SQLite storage as the worker
// tests, under its own config so `npm test` (root config: test/unit and
// test/worker only) never runs it. Run from the repository root:
//   npx vitest run --config bench/vitest.bench.config.ts
const root = fileURLToPath(new URL("..", import.meta.url));

export default defineConfig({
  root,
  plugins: [
    cloudflareTest({
      wrangler: { configPath: `${root}/wrangler.toml` },
      // The bench reads its size from these (workerd has no process.env).
      // Per-change log lines off: the figures are of the object's work, not of console I/O to the runner.
      miniflare: {
        bindings: {
          BENCH_QUICK: process.env.BENCH_QUICK ?? "",
          BENCH_DEPTHS: process.env.BENCH_DEPTHS ?? "",
          BENCH_PROFILE: process.env.BENCH_PROFILE ?? "",
          BENCH_MARKS: process.env.BENCH_MARKS ?? "",
          BENCH_NODES: process.env.BENCH_NODES ?? "",
          BENCH_TASKS: process.env.BENCH_TASKS ?? "",
          BENCH_CHEATERS: process.env.BENCH_CHEATERS ?? "",
          BENCH_SOMETIMES: process.env.BENCH_SOMETIMES ?? "",
          BENCH_SEED: process.env.BENCH_SEED ?? "",
          BENCH_SIZES: process.env.BENCH_SIZES ?? "",
          BENCH_ADVERSARIES: process.env.BENCH_ADVERSARIES ?? "",
          // The sharded verification bench (bench/verification-shards.bench.test.ts): its pool's shards and tokens,
          // and claims answered at once (its rounds ask every node once; a held claim would stall them).
          BENCH_POOL_SHARDS: process.env.BENCH_POOL_SHARDS ?? "",
          ...(process.env.BENCH_POOL_SHARDS
            ? {
                FLASHML_POOL_SHARDS: `*=${process.env.BENCH_POOL_SHARDS}`,
                FLASHML_NODE_TOKENS: process.env.BENCH_NODE_TOKENS ?? "",
                FLASHML_OPERATOR_TOKENS: "ops:tok-ops",
                FLASHML_CLAIM_WAIT_SECONDS: "0",
              }
            : {}),
          FLASHML_LOG_STATE_CHANGES: "0",
        },
      },
    }),
  ],
  test: {
    include: ["bench/**/*.bench.test.ts"],
    testTimeout: 600_000,
    hookTimeout: 600_000,
  },
});
