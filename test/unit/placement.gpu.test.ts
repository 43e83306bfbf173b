// GPU requirements beyond a count (docs/protocol.md §4 gate 4): memory, compute
// capability and driver per GPU, every malformed value on both sides, the
// comparison edges the protocol names, the reasons, and the canonical class.

import { describe, expect, it } from "vitest";
import { GPU_LABELS, gpuLabelFields } from "../../src/rules/gpu";
import { eligible, gateAnswer, requirementClass, requirementOf } from "../../src/rules/placement";

type Json = Record<string, unknown>;

function gpuNode(...gpus: unknown[]): Json {
  return {
    node_id: "node-a",
    sandbox_capable: false,
    argv_capable: false,
    module_capable: true,
    unsandboxed_argv_capable: false,
    local_datasets: [],
    capabilities: { cpu_cores: 8, gpus, pools: [] },
  };
}

const RTX_3060 = {
  index: 0,
  name: "GeForce RTX 3060",
  memory_total_mb: 12288,
  compute_capability: "8.6",
  driver_version: "535.54.03",
};
const A100_80 = {
  index: 0,
  name: "A100-SXM4-80GB",
  memory_total_mb: 81920,
  compute_capability: "8.0",
  driver_version: "550.54.15",
};
const V100 = {
  index: 0,
  name: "Tesla V100",
  memory_total_mb: 32768,
  compute_capability: "7.0",
  driver_version: "470.82",
};
const H100 = { index: 0, name: "H100", memory_total_mb: 81559, compute_capability: "9.0", driver_version: "550.90" };

/** A node that passes every other gate, with every GPU field set to pass anything asked here. */
const PLENTY = gpuNode(
  ...Array.from({ length: 4 }, (_, index) => ({
    index,
    memory_total_mb: 10 ** 9,
    compute_capability: "99.99",
    driver_version: "9999.9999",
  })),
);
const NODES = [PLENTY, gpuNode(A100_80, A100_80), gpuNode(RTX_3060), gpuNode(H100), gpuNode(), {}];

function refusal(payload: unknown, view: unknown): string | null {
  const answer = gateAnswer(payload, view);
  expect(eligible(payload, view)).toBe(answer.eligible);
  return answer.eligible ? null : `${answer.gate} | ${answer.reason}`;
}

describe("a malformed GPU requirement refuses everywhere, even on a node with plenty", () => {
  const MALFORMED: Array<[string, unknown]> = [
    ...[0, -1, -0.5, 1.5, 40960.5, "40960", "", true, false, [], [40960], {}, Number.NaN, Number.POSITIVE_INFINITY].map(
      (v): [string, unknown] => ["gpu_memory_mb", v],
    ),
    ...[8, 8.6, "8", "8.", ".0", "8.0.0", "v8.0", " 8.0", "8.0 ", "8.0\n", "", "8,0", "-8.0", "8.-1", "８.０"].map(
      (v): [string, unknown] => ["gpu_compute_capability", v],
    ),
    ...[true, [], {}, ["8", "0"], { major: 8, minor: 0 }].map((v): [string, unknown] => ["gpu_compute_capability", v]),
    ...[535, 535.54, "", "535.", ".535", "535..54", "v535", "535.54-1", " 535", "535.54\n", "r535", true, []].map(
      (v): [string, unknown] => ["gpu_driver_version", v],
    ),
  ];
  it.each(MALFORMED)("%s = %j", (key, value) => {
    const payload = { gpus: 1, [key]: value };
    for (const view of NODES) expect(refusal(payload, view)).toMatch(new RegExp(`^gpu \\| gpu: ${key} must be`));
    expect(requirementOf(payload)).toEqual({ isolation: "unplaceable" });
  });
});

describe("a GPU requirement on a task that asks for no GPU refuses everywhere", () => {
  const REQUIREMENTS: Json[] = [
    { gpu_memory_mb: 40960 },
    { gpu_compute_capability: "8.0" },
    { gpu_driver_version: "535" },
    { gpu_memory_mb: 1, gpu_compute_capability: "0.0", gpu_driver_version: "0" },
  ];
  const COUNTS: Array<[string, Json]> = [
    ["absent", {}],
    ["null", { gpus: null }],
    ["0", { gpus: 0 }],
  ];
  for (const [name, count] of COUNTS) {
    it.each(REQUIREMENTS)(`gpus ${name} with %j`, (requirement) => {
      const payload = { ...count, ...requirement };
      for (const view of NODES)
        expect(refusal(payload, view)).toMatch(/^gpu \| gpu: the task asks for .* but for no GPU/);
      expect(requirementOf(payload)).toEqual({ isolation: "unplaceable" });
    });
  }

  it("a malformed count is named before the requirement", () => {
    expect(refusal({ gpus: "1", gpu_memory_mb: 40960 }, PLENTY)).toMatch(/^gpu \| gpu: gpus must be a whole number/);
  });
});

describe("a null requirement asks for nothing, as an absent one", () => {
  it.each([
    { gpu_memory_mb: null },
    { gpu_compute_capability: null },
    { gpu_driver_version: null },
    { gpu_memory_mb: null, gpu_compute_capability: null, gpu_driver_version: null },
  ])("%j", (nulls) => {
    expect(refusal({ gpus: 1, ...nulls }, gpuNode({ index: 0 }))).toBeNull();
    expect(refusal({ ...nulls }, gpuNode())).toBeNull();
    expect(requirementClass({ gpus: 1, ...nulls })).toBe(requirementClass({ gpus: 1 }));
    expect(requirementClass(nulls)).toBe(requirementClass({}));
  });
});

describe("a GPU qualifies only by a readable field that meets the requirement", () => {
  // [requirement, the GPU's field, its value (undefined = absent), qualifies]
  const CASES: Array<[Json, string, unknown, boolean]> = [
    ...(
      [
        [undefined, false],
        [null, false],
        ["81920", false],
        [81920.5, false],
        [true, false],
        [[81920], false],
        [Number.NaN, false],
        [0, false],
        [-40960, false],
        [40959, false],
        [40960, true],
        [81920, true],
        [Number.MAX_SAFE_INTEGER, true],
      ] as Array<[unknown, boolean]>
    ).map(([v, ok]): [Json, string, unknown, boolean] => [{ gpu_memory_mb: 40960 }, "memory_total_mb", v, ok]),
    ...(
      [
        [undefined, false],
        [null, false],
        ["", false],
        ["8", false],
        ["8.0.0", false],
        [8, false],
        [8.6, false],
        ["sm_80", false],
        [" 8.0", false],
        ["8.0 ", false],
        ["7.5", false],
        ["7.10", false],
        ["0.9", false],
        ["8.0", true],
        ["08.00", true],
        ["8.6", true],
        ["9.0", true],
        ["12.0", true],
        ["80.0", true],
      ] as Array<[unknown, boolean]>
    ).map(([v, ok]): [Json, string, unknown, boolean] => [
      { gpu_compute_capability: "8.0" },
      "compute_capability",
      v,
      ok,
    ]),
    // The protocol.s own edges: "12.0" > "9.0", "8.10" > "8.9", compared as integers.
    [{ gpu_compute_capability: "9.0" }, "compute_capability", "12.0", true],
    [{ gpu_compute_capability: "12.0" }, "compute_capability", "9.0", false],
    [{ gpu_compute_capability: "8.9" }, "compute_capability", "8.10", true],
    [{ gpu_compute_capability: "8.10" }, "compute_capability", "8.9", false],
    [{ gpu_compute_capability: "8.10" }, "compute_capability", "8.10", true],
    [{ gpu_compute_capability: "0.0" }, "compute_capability", "0.0", true],
    // No length is too long to compare exactly (no floating point).
    [{ gpu_compute_capability: "9007199254740993.0" }, "compute_capability", "9007199254740992.0", false],
    [{ gpu_compute_capability: "8.0" }, "compute_capability", `${"9".repeat(400)}.0`, true],
    ...(
      [
        [undefined, false],
        [null, false],
        ["", false],
        [535.54, false],
        ["535.54-1", false],
        ["r535", false],
        ["535.", false],
        ["535", false],
        ["535.53.99", false],
        ["470.82.01", false],
        ["535.54", true],
        ["535.54.0", true],
        ["535.54.03", true],
        ["535.104.05", true],
        ["550", true],
        ["1000.0", true],
        ["0535.054", true],
      ] as Array<[unknown, boolean]>
    ).map(([v, ok]): [Json, string, unknown, boolean] => [{ gpu_driver_version: "535.54" }, "driver_version", v, ok]),
    // Missing trailing components are 0, on either side.
    [{ gpu_driver_version: "535.0.0" }, "driver_version", "535", true],
    [{ gpu_driver_version: "535" }, "driver_version", "535.0.0", true],
    [{ gpu_driver_version: "535.0.1" }, "driver_version", "535", false],
    [{ gpu_driver_version: "0" }, "driver_version", "0", true],
  ];
  it.each(CASES)("needing %j, a GPU with %s = %j qualifies: %s", (requirement, key, value, qualifies) => {
    const gpu: Json = { index: 0 };
    if (value !== undefined) gpu[key] = value;
    const payload = { gpus: 1, ...requirement };
    expect(eligible(payload, gpuNode(gpu))).toBe(qualifies);
    expect(gateAnswer(payload, gpuNode(gpu)).eligible).toBe(qualifies);
    // The class the pool stores gets the same answer.
    expect(eligible(JSON.parse(JSON.stringify(requirementOf(payload))), gpuNode(gpu))).toBe(qualifies);
  });
});

describe("the node needs at least `gpus` GPUs that each satisfy every requirement", () => {
  const NEED_TWO_40G = { gpus: 2, gpu_memory_mb: 40960 };
  const CASES: Array<[string, Json, unknown, string | null]> = [
    [
      "a 12 GB consumer card",
      { gpus: 1, gpu_memory_mb: 40960 },
      gpuNode(RTX_3060),
      "gpu: task needs 1 GPU with ≥ 40960 MB, node has 0 such of 1",
    ],
    ["an 80 GB data-centre card", { gpus: 1, gpu_memory_mb: 40960 }, gpuNode(A100_80), null],
    [
      "one 80 GB and one 12 GB card for two",
      NEED_TWO_40G,
      gpuNode(A100_80, RTX_3060),
      "gpu: task needs 2 GPUs with ≥ 40960 MB, node has 1 such of 2",
    ],
    ["two 80 GB cards for two", NEED_TWO_40G, gpuNode(A100_80, { ...A100_80, index: 1 }), null],
    ["two 80 GB and a 12 GB card for two", NEED_TWO_40G, gpuNode(RTX_3060, A100_80, A100_80), null],
    [
      "one card for two (the count is named first)",
      NEED_TWO_40G,
      gpuNode(A100_80),
      "gpu: task needs 2 GPUs, node advertises 1",
    ],
    [
      "GPU entries that are not objects",
      { gpus: 1, gpu_memory_mb: 1 },
      gpuNode(null, "A100", 81920, [A100_80]),
      "gpu: task needs 1 GPU with ≥ 1 MB, node has 0 such of 4",
    ],
    [
      "a Volta card for a capability 8.0 kernel",
      { gpus: 1, gpu_compute_capability: "8.0" },
      gpuNode(V100),
      "gpu: task needs 1 GPU with compute capability ≥ 8.0, node has 0 such of 1",
    ],
    [
      "an old driver for a CUDA 12 image",
      { gpus: 1, gpu_driver_version: "525.60.13" },
      gpuNode(V100),
      "gpu: task needs 1 GPU with driver ≥ 525.60.13, node has 0 such of 1",
    ],
    [
      "memory on one card and capability on another, neither both",
      { gpus: 1, gpu_memory_mb: 40960, gpu_compute_capability: "9.0" },
      gpuNode(A100_80, { ...H100, memory_total_mb: 24576 }),
      "gpu: task needs 1 GPU with ≥ 40960 MB and compute capability ≥ 9.0, node has 0 such of 2",
    ],
    [
      "every requirement met by one card",
      { gpus: 1, gpu_memory_mb: 40960, gpu_compute_capability: "9.0", gpu_driver_version: "550" },
      gpuNode(A100_80, H100),
      null,
    ],
    [
      "the driver unmet after memory and capability",
      { gpus: 1, gpu_memory_mb: 40960, gpu_compute_capability: "8.0", gpu_driver_version: "555" },
      gpuNode(A100_80, H100),
      "gpu: task needs 1 GPU with ≥ 40960 MB and compute capability ≥ 8.0 and driver ≥ 555, node has 0 such of 2",
    ],
    [
      "capabilities.gpus not a list",
      { gpus: 1, gpu_memory_mb: 1 },
      { capabilities: { gpus: "A100" } },
      "gpu: task needs 1 GPU, node advertises none (capabilities.gpus is 'A100', not a list)",
    ],
    [
      "a node view that is not an object",
      { gpus: 1, gpu_memory_mb: 1 },
      null,
      "gpu: task needs 1 GPU, node advertises none (capabilities is absent, not an object)",
    ],
  ];
  it.each(CASES)("%s", (_name, payload, view, reason) => {
    expect(refusal(payload, view)).toBe(reason === null ? null : `gpu | ${reason}`);
  });

  it("a GPU node with requirements met still gets CPU work", () => {
    expect(refusal({}, gpuNode(A100_80))).toBeNull();
  });

  it("a GPU list whose entries throw on read refuses, never throws", () => {
    const hostile = new Proxy(
      {},
      {
        get: () => {
          throw new Error("boom");
        },
        has: () => {
          throw new Error("boom");
        },
        getOwnPropertyDescriptor: () => {
          throw new Error("boom");
        },
      },
    );
    const view = gpuNode(hostile);
    expect(() => gateAnswer({ gpus: 1, gpu_memory_mb: 1 }, view)).not.toThrow();
    expect(eligible({ gpus: 1, gpu_memory_mb: 1 }, view)).toBe(false);
  });
});

describe("requirement classes hold GPU requirements canonically", () => {
  it.each([
    [
      { gpus: 1, gpu_compute_capability: "08.00" },
      { gpus: 1, gpu_compute_capability: "8.0" },
    ],
    [
      { gpus: 1, gpu_driver_version: "535.54.0" },
      { gpus: 1, gpu_driver_version: "535.54" },
    ],
    [
      { gpus: 1, gpu_driver_version: "0535.054.00" },
      { gpus: 1, gpu_driver_version: "535.54" },
    ],
    [
      { gpus: 1, gpu_driver_version: "0.0" },
      { gpus: 1, gpu_driver_version: "0" },
    ],
  ])("%j is in the class of %j", (a, b) => {
    expect(requirementClass(a)).toBe(requirementClass(b));
    expect(requirementOf(a)).toEqual(b);
  });

  it.each([
    [{ gpus: 1, gpu_memory_mb: 40960 }, { gpus: 1 }],
    [
      { gpus: 1, gpu_memory_mb: 40960 },
      { gpus: 1, gpu_memory_mb: 40961 },
    ],
    [
      { gpus: 1, gpu_compute_capability: "8.1" },
      { gpus: 1, gpu_compute_capability: "8.10" },
    ],
    [
      { gpus: 2, gpu_memory_mb: 40960 },
      { gpus: 1, gpu_memory_mb: 40960 },
    ],
  ])("%j and %j are different classes", (a, b) => {
    expect(requirementClass(a)).not.toBe(requirementClass(b));
  });
});

describe("GPU labels stamp the payload fields, or name what is wrong", () => {
  const MEM = GPU_LABELS.gpu_memory_mb;
  const CC = GPU_LABELS.gpu_compute_capability;
  const DRV = GPU_LABELS.gpu_driver_version;

  it("well-formed labels on a GPU job become the payload fields", () => {
    expect(gpuLabelFields({ [MEM]: "40960", [CC]: "8.0", [DRV]: "535.54", other: "x" }, 2)).toEqual({
      ok: true,
      fields: { gpu_memory_mb: 40960, gpu_compute_capability: "8.0", gpu_driver_version: "535.54" },
    });
    expect(gpuLabelFields({ [MEM]: "040960" }, 1)).toEqual({ ok: true, fields: { gpu_memory_mb: 40960 } });
    expect(gpuLabelFields({}, 0)).toEqual({ ok: true, fields: {} });
  });

  const BAD: Array<[string, string]> = [
    ...["", "0", "00", "-1", "+1", "1.5", "1e5", " 40960", "40960 ", "40 GB", "0x10", "９", "99999999999999999"].map(
      (v): [string, string] => [MEM, v],
    ),
    ...["", "8", "8.", ".0", "8.0.0", "v8.0", "8,0", " 8.0", "sm_80"].map((v): [string, string] => [CC, v]),
    ...["", "535.", ".535", "535..54", "v535", "535.54-1", "r535", " 535"].map((v): [string, string] => [DRV, v]),
  ];
  it.each(BAD)("label %s = %j is refused by name", (label, value) => {
    const read = gpuLabelFields({ [label]: value }, 1);
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.problems).toEqual([expect.stringContaining(`label '${label}' must be`)]);
  });

  it.each([MEM, CC, DRV])("label %s on a job with gpuPerTask 0 is refused by name", (label) => {
    const value = label === MEM ? "40960" : "8.0";
    const read = gpuLabelFields({ [label]: value }, 0);
    expect(read).toEqual({
      ok: false,
      problems: [
        expect.stringContaining(`label '${label}' asks for a kind of GPU, but spec.resources.gpuPerTask is 0`),
      ],
    });
  });

  it("every bad label is listed at once", () => {
    const read = gpuLabelFields({ [MEM]: "", [CC]: "8", [DRV]: "x" }, 1);
    expect(read.ok ? [] : read.problems).toHaveLength(3);
  });
});
