// The fuzz generator in plain Node (test/fuzz/generator.ts): the same seed
// makes the same requests, and its own guard never has to drop one. The
// workerd side (test/worker/fuzz.test.ts) sends them; this keeps the
// generator's failures fast and away from the Worker.

import { describe, expect, it } from "vitest";
import { Rng } from "../fixtures/rng";
import { describeRequest, type FuzzRequest, generator, mightBeValid, type World } from "../fuzz/generator";

/** Ids shaped like the ones the fuzz test seeds (no Worker needed to make them). */
const WORLD: World = {
  pool: "t-0f0f0f0f",
  nodes: ["n1", "n2", "ñødé-😀-\u202e"],
  job: "0123456789ab",
  tasks: { live: "trial-000", done: "trial-001", pending: "trial-002" },
  leases: { live: "ls-aaaaaaaaaaaa", dead: "ls-bbbbbbbbbbbb", done: "ls-cccccccccccc" },
  manifest: "ck-dddddddddddd",
  artifactKeys: ["datasets/train.csv", "jobs/0123456789ab/trial-000/partial.bin"],
};

function generate(seed: number, n: number): FuzzRequest[] {
  const { next } = generator(WORLD, new Rng(seed));
  return Array.from({ length: n }, next);
}

describe("the fuzz generator", () => {
  it("makes the same requests from the same seed, and different ones from another", () => {
    const summary = (requests: FuzzRequest[]) => requests.map(describeRequest);
    expect(summary(generate(0x5eed_f1a5, 300))).toEqual(summary(generate(0x5eed_f1a5, 300)));
    expect(summary(generate(1, 300))).not.toEqual(summary(generate(2, 300)));
  });

  it("never makes a request its guard calls possibly valid", () => {
    const seed = 0x5eed_f1a5;
    const flagged = generate(seed, 4000)
      .map((r) => [mightBeValid(WORLD, r), r] as const)
      .filter(([why]) => why !== null)
      .map(([why, r]) => `${why}: ${describeRequest(r)}`);
    expect(flagged, `seed 0x${seed.toString(16)}`).toEqual([]);
  });

  it("sends every route it names", () => {
    const { next, routes } = generator(WORLD, new Rng(0x5eed_f1a5));
    const sent = new Set(Array.from({ length: 4000 }, () => next().route));
    expect(routes.filter((route) => !sent.has(route))).toEqual([]);
  });
});
