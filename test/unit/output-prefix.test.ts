import { describe, expect, it } from "vitest";
import { taskOfKey } from "../../src/protocol/keys";

describe("taskOfKey: the task whose output prefix jobs/{job}/{task}/ holds a key", () => {
  it.each([
    ["jobs/j1/t1/metrics.json", { jobId: "j1", taskId: "t1" }],
    ["jobs/j1/t1/ckpt/step-100/model.pt", { jobId: "j1", taskId: "t1" }],
    ["jobs/j1/t1/r2/metrics.json", { jobId: "j1", taskId: "t1" }],
  ])("%s belongs to its task", (key, owner) => {
    expect(taskOfKey(key)).toEqual(owner);
  });

  it.each([
    ["jobs/j1/t1", "the prefix itself without its trailing slash"],
    ["jobs/j1", "a job folder"],
    ["data/j1/t1/x", "a key outside jobs/"],
    ["Jobs/j1/t1/x", "a differently cased jobs/"],
    ["shared.bin", "a top-level key"],
  ])("%s belongs to no task (%s)", (key) => {
    expect(taskOfKey(key)).toBeNull();
  });
});
