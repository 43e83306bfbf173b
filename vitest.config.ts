import { cloudflareTest } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

// The pure layer in plain Node (fast, table-driven), and the Worker + Durable
// Object in workerd with real SQLite storage and R2: open, with its logs on,
// and with tokens configured; and the sharded files again over 4 shards.
// Claims answer 204 at once unless a test asks for a hold (long-poll tests
// pass their own FLASHML_CLAIM_WAIT_SECONDS).
const NO_HOLD = { FLASHML_CLAIM_WAIT_SECONDS: "0" };
const QUIET = { ...NO_HOLD, FLASHML_LOG_STATE_CHANGES: "0" };
// One weighted tenant, for the fair-share test; every other tenant weighs 1.
const WEIGHTS = { FLASHML_TENANT_WEIGHTS: "heavy:3" };
// Vitest hands every stylesheet import over as "" unless told otherwise; the
// dashboard imports its page.css as text (`?raw`) and needs it byte for byte.
const RAW_CSS = { include: [/\.css\?raw$/] };
// A timeout catches a hang, not slowness: on a loaded 2-core machine the
// concurrent tests (races, floods, batches) take several times their
// unloaded 1-2 s, past vitest's 5 s default. Speed is for the benches.
const BOUNDS = { testTimeout: 30_000, hookTimeout: 30_000 };
// Every pool over 4 shards (docs/protocol.md §15): the same files, run again.
const SHARDS4 = { FLASHML_POOL_SHARDS: "*=4" };
// Shards 0 and 1 of every pool in eastern North America, 2 and 3 in western Europe.
const TWO_LOCATIONS = { FLASHML_POOL_LOCATIONS: "*/0-1=enam,*/2-3=weur" };
// The tokens of the enforcing projects.
const TOKENS = {
  FLASHML_NODE_TOKENS: "n1:tok-n1, n2:tok-n2, m1:tok-m1, m2:tok-m2",
  FLASHML_OPERATOR_TOKENS: "ops:tok-ops",
  // Two machines of one owner (docs/protocol.md §14): together they must not make a quorum.
  FLASHML_NODE_OWNERS: "m1:mallory, m2:mallory",
};
// The files that run again with 4 shards: the Worker-level job, lease,
// scheduling, long-poll, node and list tests, and verification with tokens,
// plus what only sharding has (test/worker-shards/).
const SHARDED = [
  "test/worker/jobs/jobs.test.ts",
  "test/worker/leases/leases.test.ts",
  "test/worker/scheduling/scheduling.test.ts",
  "test/worker/claims/long-poll.test.ts",
  "test/worker/nodes/liveness.test.ts",
  "test/worker/nodes/nodes.test.ts",
  "test/worker/jobs/paging.test.ts",
  "test/worker/routing.test.ts",
  "test/worker/leases/races.test.ts",
  "test/worker/artifacts/artifacts.test.ts",
  "test/worker/artifacts/checkpoints.test.ts",
  "test/worker/scheduling/placement.test.ts",
  "test/worker/costs/costs.test.ts",
  "test/worker/runs/runs.test.ts",
  "test/worker/schema/upgrade.test.ts",
  "test/worker/jobs/ledger-numbers.test.ts",
  "test/worker/jobs/created-runs.test.ts",
  "test/worker-shards/*.test.ts",
];
const SHARDED_AUTH = [
  "test/worker-auth/verification.test.ts",
  "test/worker-auth/replicas.test.ts",
  "test/worker-auth/adversaries.test.ts",
  "test/worker-auth/owners.test.ts",
  "test/worker-auth/enrolment.test.ts",
  "test/worker-auth/team-pools.test.ts",
  "test/worker-auth/runs.test.ts",
  "test/worker-shards/auth/*.test.ts",
];

export default defineConfig({
  test: {
    projects: [
      {
        test: { ...BOUNDS, name: "unit", include: ["test/unit/**/*.test.ts"], environment: "node", css: RAW_CSS },
      },
      {
        // Per-change log lines are off here: every console.log crosses from
        // workerd to the test runner, and thousands of them slow it to a crawl.
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: { bindings: { ...QUIET, ...WEIGHTS } },
          }),
        ],
        test: { ...BOUNDS, name: "worker", include: ["test/worker/**/*.test.ts"], css: RAW_CSS },
      },
      {
        // The same Worker with its structured logs on, to test them.
        plugins: [cloudflareTest({ wrangler: { configPath: "./wrangler.toml" }, miniflare: { bindings: NO_HOLD } })],
        test: { ...BOUNDS, name: "worker-logs", include: ["test/worker-logs/**/*.test.ts"], css: RAW_CSS },
      },
      {
        // The same Worker with tokens configured: authentication enforced.
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: { bindings: { ...QUIET, ...TOKENS } },
          }),
        ],
        test: { ...BOUNDS, name: "worker-auth", include: ["test/worker-auth/**/*.test.ts"], css: RAW_CSS },
      },
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: { bindings: { ...QUIET, ...WEIGHTS, ...SHARDS4 } },
          }),
        ],
        test: { ...BOUNDS, name: "worker-shards", include: SHARDED, css: RAW_CSS },
      },
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: { bindings: { ...QUIET, ...TOKENS, ...SHARDS4 } },
          }),
        ],
        test: { ...BOUNDS, name: "worker-auth-shards", include: SHARDED_AUTH, css: RAW_CSS },
      },
      {
        // A pool of 4 shards over two locations (docs/protocol.md §15): nodes homed near their first request.
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: { bindings: { ...QUIET, ...TOKENS, ...SHARDS4, ...TWO_LOCATIONS } },
          }),
        ],
        test: { ...BOUNDS, name: "worker-locations", include: ["test/worker-locations/*.test.ts"], css: RAW_CSS },
      },
    ],
  },
});
