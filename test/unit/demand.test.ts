// What a pending requirement class needs, in words, and the dashboard's line
// for it (issue 26).

import { describe, expect, it } from "vitest";
import { demandSentence, describeRequirement } from "../../src/rules/demand";
import { requirementOf } from "../../src/rules/placement";

describe("a requirement in words", () => {
  it.each([
    [{}, "nothing in particular"],
    [{ gpus: 2, gpu_memory_mb: 40960 }, "2 GPUs with ≥ 40960 MB"],
    [{ gpus: 1 }, "1 GPU"],
    [
      { gpus: 1, gpu_memory_mb: 16384, gpu_compute_capability: "08.0", gpu_driver_version: "535.0" },
      "1 GPU with ≥ 16384 MB and compute capability ≥ 8.0 and driver ≥ 535",
    ],
    [{ pool: "lab", isolation: { tier: "sandboxed" } }, "team pool 'lab', a sandboxed node"],
    [{ argv: ["python"], local_inputs: ["a", "b"] }, "2 local datasets, a command line"],
    [{ module: "m", exclude_nodes: ["n1"] }, "none of 1 excluded node"],
    [{ module: "m" }, "nothing in particular"],
    [{ gpus: "2" }, "a malformed requirement no node can meet"],
    [{ gpu_memory_mb: 40960 }, "a malformed requirement no node can meet"],
  ])("%j reads as %j", (payload, words) => {
    expect(describeRequirement(requirementOf(payload))).toBe(words);
  });

  it.each([null, [], "x", 1])("a stored requirement that is not an object (%j) is named, never guessed", (value) => {
    expect(describeRequirement(value)).toBe("a requirement no node can meet");
  });
});

describe("the dashboard's line for a pending class", () => {
  const base = { pending: 18, needs: "2 GPUs with ≥ 40960 MB", online_nodes_able: 0, every_node_checked: true };
  it.each([
    [{ ...base, servable: false }, "18 tasks need 2 GPUs with ≥ 40960 MB; no node has that"],
    [
      { ...base, servable: false, every_node_checked: false },
      "18 tasks need 2 GPUs with ≥ 40960 MB; none of the nodes checked has that",
    ],
    [{ ...base, servable: true }, "18 tasks need 2 GPUs with ≥ 40960 MB; no online node can take them now"],
    [
      { ...base, servable: true, online_nodes_able: 1 },
      "18 tasks need 2 GPUs with ≥ 40960 MB; 1 online node can take them",
    ],
    [
      { ...base, pending: 1, servable: true, online_nodes_able: 3 },
      "1 task needs 2 GPUs with ≥ 40960 MB; 3 online nodes can take them",
    ],
  ])("%j", (demand, line) => {
    expect(demandSentence(demand)).toBe(line);
  });
});
