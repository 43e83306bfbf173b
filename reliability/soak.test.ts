// The soak: many simulated nodes and thousands of tasks for a bounded time,
// recording claim and commit latencies. Zero 5xx, zero invariant violations,
// every task committed exactly once — with a node that fails everything (held
// back, its tasks retried elsewhere) and agents that vanish mid-lease (worker
// losses, which use no attempt).

import { expect, it } from "vitest";
import { expectDrained, expectScheduling, reliabilityRun, sizes } from "./run";

it("a large fleet drains a large job with no 5xx and no violation", async () => {
  const report = await reliabilityRun(
    sizes({
      nodes: 100,
      tasks: 2000,
      seconds: 120,
      kills: 0,
      maxAttempts: 4,
      failRate: 0.02,
      broken: 2,
      vanishing: 5,
      shards: 1,
      raise: 0,
    }),
  );
  console.log(`RELIABILITY ${JSON.stringify(report)}`);
  expect(report.stats.serverErrors).toEqual([]);
  expect(report.violations).toEqual([]);
  expectDrained(report);
  expectScheduling(report);
});
