// Hosted runs (docs/protocol.md §17): what POST /v1alpha1/runs takes and
// what GET /runs/{id} answers. A run is a chain of ordinary jobs, one per
// round, each with exactly the body the reference driver submits
// (Zolli-Labs/flashml d5b29dd, flashml_workloads/fedavg_driver.py
// `_round_body` and kmeans_driver.py `run_kmeans`); this flashedge-only
// resource only says how many and when to stop.

import { z } from "zod";
import { int, JsonObjectSchema, StringMapSchema } from "./primitives";

/** The reference drivers' default image: `local/tier1:dev`, for its e2e fixtures and subprocess agents. */
export const DEFAULT_RUN_IMAGE = "local/tier1:dev";
/** Rounds or iterations a run may ask for: each is a job, kept under the pool's retention like any other. */
export const MAX_RUN_ROUNDS = 1000;

const ARTIFACT_URI = /^artifact:\/\/./;
const artifactUri = z.string().regex(ARTIFACT_URI, "must be an artifact:// URI");

/** `repository:tag`, the tag pinned, as the reference driver's `image` argument. */
const ImageSchema = z
  .string()
  .refine((image) => {
    const colon = image.lastIndexOf(":");
    return colon > 0 && colon < image.length - 1 && image.slice(colon + 1) !== "latest";
  }, "image must be 'repository:tag' with a pinned tag (not 'latest')")
  .default(DEFAULT_RUN_IMAGE);

/** What every kind of run shares: how its round jobs are placed and labelled, and how long a round may take. */
const common = {
  image: ImageSchema,
  isolation: z
    .object({ tier: z.enum(["standard", "sandboxed"]).default("standard"), allowFallback: z.boolean().default(false) })
    .strict()
    .prefault({}),
  placement: JsonObjectSchema.optional(),
  labels: StringMapSchema.default(() => ({})),
};

const seconds = (fallback: number) => z.number().positive().max(86_400).default(fallback);

/** A federated-averaging run: `run_fedavg`'s arguments. */
export const FedavgRunSchema = z
  .object({
    kind: z.literal("federated_averaging"),
    rounds: int().min(1).max(MAX_RUN_ROUNDS),
    num_shards: int().min(1).max(999),
    min_participants: int().min(1),
    worker_params: JsonObjectSchema,
    /** The weights the deltas apply to: an artifact URI, or the blob itself; `{}` means the first round's reduce is the weights. */
    initial_weights: z.union([artifactUri, JsonObjectSchema]).default(() => ({})),
    round_timeout_seconds: seconds(600),
    lease_seconds: seconds(120),
    ...common,
  })
  .strict()
  .refine((run) => run.min_participants <= run.num_shards, {
    message: "min_participants must not exceed num_shards: the round could never reach quorum",
    path: ["min_participants"],
  });

/** A K-means run: `run_kmeans`'s arguments; every shard's partial is needed each iteration. */
export const KmeansRunSchema = z
  .object({
    kind: z.literal("sharded_kmeans"),
    shards: z.array(artifactUri).min(1, "shards must name at least one artifact"),
    centroids: z.array(z.array(z.number()).min(1)).min(1, "centroids must be a non-empty list"),
    iterations: int().min(1).max(MAX_RUN_ROUNDS),
    /** Stop once no centroid moved further than this (Euclidean); absent, every iteration runs, as the reference's. */
    tolerance: z.number().nonnegative().optional(),
    round_timeout_seconds: seconds(300),
    lease_seconds: seconds(30),
    ...common,
  })
  .strict();

export const RunRequestSchema = z.discriminatedUnion("kind", [FedavgRunSchema, KmeansRunSchema]);
export type RunRequest = z.infer<typeof RunRequestSchema>;
export type FedavgRun = z.infer<typeof FedavgRunSchema>;
export type KmeansRun = z.infer<typeof KmeansRunSchema>;

export const RUN_STATES = ["RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"] as const;
export type RunState = (typeof RUN_STATES)[number];

/** A run id: `run-` and 12 lowercase hex (at several shards its tag names the run's shard, as a job id's does). */
export const RUN_ID_RE = /^run-[0-9a-f]{12}$/;

export const RunRoundSchema = z.object({
  round: int().min(0),
  job_id: z.string(),
  participants: int().min(1),
  task_ids: z.array(z.string()),
  mean_loss: z.number().optional(),
  inertia: z.number().optional(),
  clipped: z.array(z.object({ task_id: z.string(), norm: z.number(), cap: z.number(), scale: z.number() })).optional(),
  result_uri: z.string(),
  finished_at: z.string(),
});

/** One aggregated round of a run, as GET /runs/{id} lists it. */
export type RunRound = z.infer<typeof RunRoundSchema>;

/** GET /runs/{id}: the run, where it stands and every round it aggregated. */
export const RunRecordSchema = z.object({
  run_id: z.string().regex(RUN_ID_RE),
  kind: z.enum(["federated_averaging", "sharded_kmeans"]),
  state: z.enum(RUN_STATES),
  /** Why it FAILED, or who CANCELLED it; null while it runs and when it SUCCEEDED. */
  reason: z.string().nullable(),
  rounds: int().min(1),
  rounds_completed: int().min(0),
  /** The round being waited on: its job, its quorum and whether the quorum is frozen (being aggregated). */
  live_round: z
    .object({ round: int().min(0), job_id: z.string(), quorum: int().min(1), frozen: z.boolean() })
    .nullable(),
  /** The last round's weights or centroids; the final ones once SUCCEEDED. */
  result_uri: z.string().nullable(),
  created_at: z.string(),
  finished_at: z.string().nullable(),
  /** The operator who started it; null in an open pool. */
  started_by: z.string().nullable(),
  request: JsonObjectSchema,
  history: z.array(RunRoundSchema),
});
export type RunRecord = z.infer<typeof RunRecordSchema>;
