// What a hosted run's rounds are (docs/protocol.md §17), pure: each round's
// job body, exactly as the reference driver builds it (Zolli-Labs/flashml
// d5b29dd: fedavg_driver._round_body, kmeans_driver.run_kmeans) plus the
// run's labels; the task ids its recipe gives; where its results are read
// and written; when a K-means run has converged.

import { type JobSpec, JobSpecSchema } from "../protocol/jobs";
import type { FedavgRun, KmeansRun, RunRequest } from "../protocol/runs";
import type { TaskSpec } from "../protocol/tasks";
import { expandJob } from "../recipes";
import { shardTaskId } from "../recipes/federated_averaging";
import type { ExpandOptions } from "../recipes/recipe";
import { kmeansTaskId } from "../recipes/sharded_kmeans";
import { parseWeights } from "./fedavg";
import { jobPriority, jobTenant } from "./scheduling";
import { jobReplication, type Replication, replicationWithoutIdentities } from "./verification";

/** The labels every round job of a run carries, beside the run's own. */
export const RUN_LABEL = "flashedge.dev/run";
export const ROUND_LABEL = "flashedge.dev/round";

/** One round's job body, for round `r` of `run`, fed the previous round's result (`null` before any). */
export function roundJobBody(run: RunRequest, runId: string, r: number, previous: RoundInput): Record<string, unknown> {
  const colon = run.image.lastIndexOf(":");
  const spec: Record<string, unknown> = {
    execution: { backend: "leases" },
    image: { repository: run.image.slice(0, colon), tag: run.image.slice(colon + 1) },
    isolation: { tier: run.isolation.tier, allowFallback: run.isolation.allowFallback },
    workload: {
      type: run.kind,
      parameters: run.kind === "federated_averaging" ? fedavgParams(run, r, previous) : kmeansParams(run, r, previous),
    },
  };
  if (run.placement !== undefined) spec.placement = run.placement;
  return {
    apiVersion: "flashml.dev/v1alpha1",
    kind: "Job",
    metadata: {
      name: run.kind === "federated_averaging" ? `fedavg-r${pad(r, 3)}` : `kmeans-it${pad(r, 2)}`,
      labels: { ...run.labels, [RUN_LABEL]: runId, [ROUND_LABEL]: String(r) },
    },
    spec,
  };
}

/** What a round is given: the weights artifact (federated averaging) or the centroids (K-means). */
export type RoundInput = { weightsUri: string | null; centroids: readonly (readonly number[])[] };

/** Why a run's own values cannot be what the reference reads, naming the field; null when they can. */
export function runProblem(run: RunRequest): { field: (string | number)[]; message: string } | null {
  if (run.kind === "federated_averaging" && typeof run.initial_weights !== "string") {
    const weights = parseWeights(run.initial_weights, "initial_weights");
    if (!weights.ok) return { field: ["initial_weights"], message: weights.message };
  }
  if (run.kind === "sharded_kmeans") {
    const dims = run.centroids[0]!.length;
    const ragged = run.centroids.findIndex((row) => row.length !== dims);
    if (ragged !== -1)
      return { field: ["centroids", ragged], message: `every centroid must have ${dims} coordinates, as the first` };
  }
  return null;
}

/**
 * Round `r` of `run` as job `jobId`: its spec, its tasks and where they
 * stand in the scheduling policy, as POST /jobs would judge the same body
 * from the run's operator; or why it would be refused, naming the run's
 * field where one is to blame (`field` null: the recipe's problems).
 */
export function planRound(
  run: RunRequest,
  runId: string,
  r: number,
  input: RoundInput,
  jobId: string,
  operator: string | null,
  options: ExpandOptions & { enforcing: boolean },
):
  | {
      ok: true;
      spec: JobSpec;
      tasks: TaskSpec[];
      place: { priority: number; tenant: string; replication: Replication };
    }
  | { ok: false; field: (string | number)[] | null; problem: string } {
  const priority = jobPriority(run.labels);
  const tenant = jobTenant(run.labels, operator);
  const replication = jobReplication(run.labels);
  const problems = [priority, tenant, replication].flatMap((x) => (x.ok ? [] : [x.problem]));
  const unverifiable = replication.ok ? replicationWithoutIdentities(replication.value, options.enforcing) : null;
  if (unverifiable !== null) problems.push(unverifiable);
  if (!priority.ok || !tenant.ok || !replication.ok || problems.length > 0)
    return { ok: false, field: ["labels"], problem: problems.join("; ") };
  const spec = JobSpecSchema.safeParse(roundJobBody(run, runId, r, input));
  if (!spec.success) {
    const issue = spec.error.issues[0]!;
    return { ok: false, field: issue.path.map(String), problem: `the round's job would be refused: ${issue.message}` };
  }
  const expansion = expandJob(spec.data, jobId, options);
  if (!expansion.ok) return { ok: false, field: null, problem: expansion.problems.join("; ") };
  return {
    ok: true,
    spec: spec.data,
    tasks: expansion.tasks,
    place: { priority: priority.value, tenant: tenant.value, replication: replication.value },
  };
}

function fedavgParams(run: FedavgRun, r: number, previous: RoundInput) {
  // dict(worker_params), then round, num_shards and lease_seconds over it, then weights when there are some.
  const params: Record<string, unknown> = {
    ...run.worker_params,
    round: r,
    num_shards: run.num_shards,
    lease_seconds: run.lease_seconds,
  };
  if (previous.weightsUri !== null) params.weights = previous.weightsUri;
  return params;
}

function kmeansParams(run: KmeansRun, r: number, previous: RoundInput) {
  return { shards: run.shards, centroids: previous.centroids, iteration: r, lease_seconds: run.lease_seconds };
}

/** The task ids a round's job has, in the recipe's order. */
export function roundTaskIds(run: RunRequest, r: number): string[] {
  return run.kind === "federated_averaging"
    ? Array.from({ length: run.num_shards }, (_, i) => shardTaskId(i))
    : run.shards.map((_, i) => kmeansTaskId(r, i));
}

/** How many accepted commits end a round: the quorum, or for K-means every shard. */
export function roundQuorum(run: RunRequest): number {
  return run.kind === "federated_averaging" ? run.min_participants : run.shards.length;
}

export function roundsOf(run: RunRequest): number {
  return run.kind === "federated_averaging" ? run.rounds : run.iterations;
}

/** Where round `r`'s result is written: the reference driver's weights key, and its K-means analogue. */
export function roundResultKey(run: RunRequest, jobId: string, r: number): string {
  return run.kind === "federated_averaging"
    ? `jobs/${jobId}/round-${pad(r, 3)}/weights.json`
    : `jobs/${jobId}/iteration-${pad(r, 2)}/centroids.json`;
}

/** The metrics key a task commits (every recipe's commit key). */
export function metricsKey(jobId: string, taskId: string): string {
  return `jobs/${jobId}/${taskId}/metrics.json`;
}

/** The reference driver's refusal when a round's deadline passes short of quorum. */
export function timedOut(r: number, committed: number, needed: number, dispatched: number): string {
  return `round ${r}: timed out with ${committed} of ${needed} needed (${dispatched} shards dispatched)`;
}

/** The reference driver's refusal when a round's job ends before quorum. */
export function endedShort(r: number, jobId: string, state: string, committed: number, needed: number): string {
  return `round ${r}: job ${jobId} ended ${state} with ${committed} of ${needed} needed`;
}

/** Whether no centroid moved further than `tolerance` (Euclidean distance) between two iterations. */
export function converged(
  before: readonly (readonly number[])[],
  after: readonly (readonly number[])[],
  tolerance: number | undefined,
): boolean {
  if (tolerance === undefined) return false;
  return after.every((row, j) => {
    let squares = 0;
    for (let d = 0; d < row.length; d++) squares += (row[d]! - before[j]![d]!) ** 2;
    return Math.sqrt(squares) <= tolerance;
  });
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, "0");
}
