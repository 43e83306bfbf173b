import { fileURLToPath } from "node:url";
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

// The interleaved S = 1 bench (bench/ab/s1.ab.test.ts): one workerd process
// holding today's pool object and an earlier commit's (bench/ab/worker.ts),
// so both are timed on the same machine at the same moment. Run by
// bench/shards-s1.mjs, which extracts that commit's src to bench/.base/src.
const root = fileURLToPath(new URL("..", import.meta.url));
const sqlite = (className: string) => ({ className, useSQLite: true });

export default defineConfig({
  root,
  resolve: { alias: { "flashedge-base": `${root}/bench/.base/src` } },
  plugins: [
    cloudflareTest({
      main: `${root}/bench/ab/worker.ts`,
      wrangler: { configPath: `${root}/wrangler.toml` },
      miniflare: {
        durableObjects: {
          POOL: sqlite("PoolObject"),
          SUMMARY: sqlite("PoolSummary"),
          BASE_POOL: sqlite("BasePoolObject"),
        },
        bindings: {
          BENCH_DEPTHS: process.env.BENCH_DEPTHS ?? "",
          BENCH_ROUNDS: process.env.BENCH_ROUNDS ?? "",
          FLASHML_LOG_STATE_CHANGES: "0",
        },
      },
    }),
  ],
  test: {
    include: ["bench/ab/*.ab.test.ts"],
    testTimeout: 1_800_000,
    hookTimeout: 600_000,
  },
});
