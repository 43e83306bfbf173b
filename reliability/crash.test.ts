// The crash test: agents keep working while the coordinator process is
// SIGKILLed and restarted on the same state several times. Nothing may be
// lost: every task ends COMPLETED exactly once, or FAILED with its attempts
// exhausted, and the invariant checker finds nothing.

import { expect, it } from "vitest";
import { reliabilityRun, sizes } from "./run";

it("survives SIGKILLs of the coordinator mid-run with nothing lost", async () => {
  const report = await reliabilityRun(
    sizes({ nodes: 20, tasks: 300, seconds: 120, kills: 3, maxAttempts: 10, failRate: 0.05 }),
  );
  console.log(`RELIABILITY ${JSON.stringify(report)}`);
  expect(report.kills).toBe(report.options.kills);
  expect(report.unfinished).toBe(0);
  expect(report.completed + report.failedExhausted).toBe(report.options.tasks);
  expect(report.acceptedCommits).toBe(report.completed);
  expect(report.stats.serverErrors).toEqual([]);
  expect(report.violations).toEqual([]);
});
