import { fileURLToPath } from "node:url";
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

// The cost benchmark (bench/cost.mjs drives it): the same workerd + SQLite
// storage + R2 as the worker tests, with its own settings, so the benches'
// config keeps its own. Each shard count S of BENCH_COST_SHARDS gets its
// pools by name: `cost-s4-…` spans 4 shards, `cost-s1-…` is one object.
// A finished job is archived after 10 s instead of a week, so a run sees
// what archiving a job costs (the rows it deletes, the objects it writes);
// nothing else here depends on retention. Claims are held as wrangler.toml
// says (12.5 s): the idle agents' loop is measured at its real cadence.
const root = fileURLToPath(new URL("..", import.meta.url));
const shards = (process.env.BENCH_COST_SHARDS || "1,4").split(",").map(Number);

export default defineConfig({
  root,
  plugins: [
    cloudflareTest({
      wrangler: { configPath: `${root}/wrangler.toml` },
      miniflare: {
        bindings: {
          BENCH_COST: "1",
          BENCH_QUICK: process.env.BENCH_QUICK ?? "",
          BENCH_COST_SHARDS: shards.join(","),
          FLASHML_POOL_SHARDS: shards
            .filter((s) => s > 1)
            .map((s) => `cost-s${s}-*=${s}`)
            .join(","),
          FLASHML_JOB_RETENTION_SECONDS: "10",
          // Per-change log lines off: every console.log crosses from workerd to the runner.
          FLASHML_LOG_STATE_CHANGES: "0",
        },
      },
    }),
  ],
  test: {
    include: ["bench/cost.bench.test.ts"],
    testTimeout: 900_000,
    hookTimeout: 900_000,
  },
});
