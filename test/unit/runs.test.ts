// A hosted run's rounds as jobs (src/rules/runs.ts): the reference driver's
// body, byte for byte in what it sets (Zolli-Labs/flashml d5b29dd,
// fedavg_driver._round_body and kmeans_driver.run_kmeans), plus the run's
// labels; the task ids the recipes give; K-means' optional early stop.

import { describe, expect, it } from "vitest";
import { RunRequestSchema } from "../../src/protocol/runs";
import { converged, roundJobBody, roundQuorum, roundResultKey, roundTaskIds, timedOut } from "../../src/rules/runs";

const fedavg = RunRequestSchema.parse({
  kind: "federated_averaging",
  rounds: 3,
  num_shards: 2,
  min_participants: 1,
  worker_params: { lr: 0.1, round: 99, seed: 4 },
  image: "ghcr.io/acme/fl:1.2",
  isolation: { tier: "sandboxed" },
  placement: { pool: "team-a" },
  labels: { "flashml.dev/priority": "5" },
});
const kmeans = RunRequestSchema.parse({
  kind: "sharded_kmeans",
  shards: ["artifact://d/0.csv", "artifact://d/1.csv", "artifact://d/2.csv"],
  centroids: [[0, 0]],
  iterations: 2,
});

describe("a round's job", () => {
  it("is the reference's _round_body: the run's worker params under its own round, num_shards and lease_seconds", () => {
    expect(roundJobBody(fedavg, "run-0123456789ab", 0, { weightsUri: null, centroids: [] })).toEqual({
      apiVersion: "flashml.dev/v1alpha1",
      kind: "Job",
      metadata: {
        name: "fedavg-r000",
        labels: { "flashml.dev/priority": "5", "flashedge.dev/run": "run-0123456789ab", "flashedge.dev/round": "0" },
      },
      spec: {
        execution: { backend: "leases" },
        image: { repository: "ghcr.io/acme/fl", tag: "1.2" },
        isolation: { tier: "sandboxed", allowFallback: false },
        workload: {
          type: "federated_averaging",
          parameters: { lr: 0.1, round: 0, seed: 4, num_shards: 2, lease_seconds: 120 },
        },
        placement: { pool: "team-a" },
      },
    });
  });

  it("names the previous round's weights from round 1 on", () => {
    const body = roundJobBody(fedavg, "run-0123456789ab", 12, {
      weightsUri: "artifact://jobs/j/round-011/weights.json",
      centroids: [],
    });
    expect(body.metadata).toMatchObject({ name: "fedavg-r012" });
    expect((body.spec as { workload: { parameters: unknown } }).workload.parameters).toMatchObject({
      round: 12,
      weights: "artifact://jobs/j/round-011/weights.json",
    });
  });

  it("is run_kmeans's body for K-means: the shards, the centroids it is given, the iteration", () => {
    const body = roundJobBody(kmeans, "run-0123456789ab", 1, { weightsUri: null, centroids: [[1.5, 2]] });
    expect(body.metadata).toMatchObject({ name: "kmeans-it01" });
    expect((body.spec as { workload: unknown }).workload).toEqual({
      type: "sharded_kmeans",
      parameters: {
        shards: kmeans.kind === "sharded_kmeans" ? kmeans.shards : [],
        centroids: [[1.5, 2]],
        iteration: 1,
        lease_seconds: 30,
      },
    });
    expect((body.spec as Record<string, unknown>).placement).toBeUndefined();
  });

  it("has the recipes' task ids, needs its quorum (K-means: every shard), and writes where the reference writes", () => {
    expect(roundTaskIds(fedavg, 4)).toEqual(["shard-000", "shard-001"]);
    expect(roundTaskIds(kmeans, 3)).toEqual(["it03-shard-000", "it03-shard-001", "it03-shard-002"]);
    expect([roundQuorum(fedavg), roundQuorum(kmeans)]).toEqual([1, 3]);
    expect(roundResultKey(fedavg, "abc", 7)).toBe("jobs/abc/round-007/weights.json");
    expect(roundResultKey(kmeans, "abc", 7)).toBe("jobs/abc/iteration-07/centroids.json");
    expect(timedOut(2, 1, 3, 4)).toBe("round 2: timed out with 1 of 3 needed (4 shards dispatched)");
  });
});

describe("K-means' early stop", () => {
  it("stops once no centroid moved further than the tolerance, and never without one", () => {
    const before = [
      [0, 0],
      [3, 4],
    ];
    expect(
      converged(
        before,
        [
          [0, 0],
          [3, 4.5],
        ],
        0.5,
      ),
    ).toBe(true);
    expect(
      converged(
        before,
        [
          [0, 0],
          [3, 4.5],
        ],
        0.49,
      ),
    ).toBe(false);
    expect(
      converged(
        before,
        [
          [0.3, 0.4],
          [3, 4],
        ],
        0.5,
      ),
    ).toBe(true);
    expect(converged(before, before, undefined)).toBe(false);
  });
});
