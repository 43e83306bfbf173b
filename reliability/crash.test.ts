// The crash test: agents keep working while the coordinator process is
// SIGKILLed and restarted on the same state several times. Nothing may be
// lost and nothing accepted twice: every task ends COMPLETED exactly once,
// although one node fails everything (it is held back and its tasks finish
// elsewhere) and agents vanish mid-lease (worker losses), and the invariant
// checker finds nothing.

import { expect, it } from "vitest";
import { expectDrained, expectScheduling, reliabilityRun, sizes } from "./run";

it("survives SIGKILLs of the coordinator mid-run with nothing lost", async () => {
  const report = await reliabilityRun(
    sizes({
      nodes: 20,
      tasks: 300,
      seconds: 120,
      kills: 3,
      maxAttempts: 10,
      failRate: 0.05,
      broken: 1,
      vanishing: 2,
      shards: 1,
      raise: 0,
    }),
  );
  console.log(`RELIABILITY ${JSON.stringify(report)}`);
  expect(report.kills).toBe(report.options.kills);
  expect(report.stats.serverErrors).toEqual([]);
  expect(report.violations).toEqual([]);
  expectDrained(report);
  expectScheduling(report);
});
