// The coordinator's settings (every FLASHML_* variable), pure: read once
// into one typed value that the Worker and the pool object both use, so no
// setting is parsed twice with two fallbacks. A setting that cannot be read
// refuses everything: the Worker answers 503 with `detail` (src/routes/
// settings.ts), and the object, which reads the same env, never serves it.
// The checks run in a fixed order; the first problem is the one named.

import { type AuthConfig, authConfig } from "./auth";
import { claimWaitMs } from "./long-poll";
import type { Membership } from "./placement";
import { type PoolLocationRule, parsePoolLocations } from "./pool-location";
import { type PoolShardRule, parsePoolShards } from "./pool-shards";
import { jobRetentionMs } from "./retention";
import { maxWorkerLosses, retryElsewhereMs, tenantWeights } from "./scheduling";

/** Largest artifact upload when FLASHML_MAX_ARTIFACT_MB is unset or empty, in MiB (docs/protocol.md §7). */
export const DEFAULT_MAX_ARTIFACT_MB = 100;

/** The env variables read here: wrangler.toml's [vars] and the secrets (src/secrets.d.ts), each may be absent. */
export type SettingsEnv = Partial<
  Record<
    | "FLASHML_NODE_TOKENS"
    | "FLASHML_OPERATOR_TOKENS"
    | "FLASHML_REQUIRE_NODE_AUTH"
    | "FLASHML_NODE_OWNERS"
    | "FLASHML_JOIN_CODE"
    | "FLASHML_POOL_LOCATIONS"
    | "FLASHML_POOL_SHARDS"
    | "FLASHML_CLAIM_WAIT_SECONDS"
    | "FLASHML_JOB_RETENTION_SECONDS"
    | "FLASHML_TENANT_WEIGHTS"
    | "FLASHML_MAX_WORKER_LOSSES"
    | "FLASHML_RETRY_ELSEWHERE_SECONDS"
    | "FLASHML_MAX_ARTIFACT_MB"
    | "FLASHML_ALLOW_UNSANDBOXED_ARGV"
    | "FLASHML_LOG_STATE_CHANGES",
    string
  >
>;

export type Settings = {
  /** Tokens (docs/protocol.md §9): open or enforcing; a refusing configuration never becomes Settings. */
  readonly auth: Exclude<AuthConfig, { mode: "refusing" }>;
  /** FLASHML_NODE_OWNERS (docs/protocol.md §14): configured owners by node id. */
  readonly owners: ReadonlyMap<string, string>;
  /** Whose word makes a node a team pool's member (docs/protocol.md §9): an operator's unless the coordinator is open. */
  readonly membership: Membership;
  /** FLASHML_JOIN_CODE: required on register when set (empty is unset). */
  readonly joinCode: string | null;
  readonly poolLocations: readonly PoolLocationRule[];
  /** FLASHML_POOL_SHARDS (docs/protocol.md §15): shard counts by pool name pattern; read with shardCount(). */
  readonly poolShards: readonly PoolShardRule[];
  readonly claimWaitMs: number;
  readonly jobRetentionMs: number;
  readonly tenantWeights: ReadonlyMap<string, number>;
  readonly maxWorkerLosses: number;
  readonly retryElsewhereMs: number;
  readonly maxArtifactBytes: number;
  readonly allowUnsandboxedArgv: boolean;
  readonly logStateChanges: boolean;
};

export type SettingsRead = { ok: true; settings: Settings } | { ok: false; detail: string };

/** Every setting, or the first one that cannot be read (its message never names a token). */
export function readSettings(env: SettingsEnv): SettingsRead {
  const auth = authConfig(env);
  if (auth.mode === "refusing") return { ok: false, detail: auth.detail };
  const poolLocations = parsePoolLocations(env.FLASHML_POOL_LOCATIONS);
  if (typeof poolLocations === "string") return { ok: false, detail: poolLocations };
  const poolShards = parsePoolShards(env.FLASHML_POOL_SHARDS);
  if (typeof poolShards === "string") return { ok: false, detail: poolShards };
  const claimWait = claimWaitMs(env.FLASHML_CLAIM_WAIT_SECONDS);
  if (typeof claimWait === "string") return { ok: false, detail: claimWait };
  const retention = jobRetentionMs(env.FLASHML_JOB_RETENTION_SECONDS);
  if (typeof retention === "string") return { ok: false, detail: retention };
  const weights = tenantWeights(env.FLASHML_TENANT_WEIGHTS);
  if (typeof weights === "string") return { ok: false, detail: weights };
  const workerLosses = maxWorkerLosses(env.FLASHML_MAX_WORKER_LOSSES);
  if (typeof workerLosses === "string") return { ok: false, detail: workerLosses };
  const retryElsewhere = retryElsewhereMs(env.FLASHML_RETRY_ELSEWHERE_SECONDS);
  if (typeof retryElsewhere === "string") return { ok: false, detail: retryElsewhere };
  const artifactBytes = maxArtifactBytes(env.FLASHML_MAX_ARTIFACT_MB);
  if (typeof artifactBytes === "string") return { ok: false, detail: artifactBytes };
  return {
    ok: true,
    settings: {
      auth,
      owners: auth.owners,
      membership: auth.mode === "open" ? "reported" : "assigned",
      joinCode: env.FLASHML_JOIN_CODE || null,
      poolLocations,
      poolShards,
      claimWaitMs: claimWait,
      jobRetentionMs: retention,
      tenantWeights: weights,
      maxWorkerLosses: workerLosses,
      retryElsewhereMs: retryElsewhere,
      maxArtifactBytes: artifactBytes,
      allowUnsandboxedArgv: env.FLASHML_ALLOW_UNSANDBOXED_ARGV === "1",
      logStateChanges: env.FLASHML_LOG_STATE_CHANGES !== "0",
    },
  };
}

/**
 * `FLASHML_MAX_ARTIFACT_MB` in bytes (MiB × 2²⁰), or a message naming what
 * is wrong: a number greater than 0; unset or empty is the default.
 */
export function maxArtifactBytes(raw: string | undefined): number | string {
  const text = raw?.trim() ?? "";
  const mb = text === "" ? DEFAULT_MAX_ARTIFACT_MB : /^\d+(\.\d+)?$/.test(text) ? Number(text) : Number.NaN;
  if (!(mb > 0 && Number.isFinite(mb))) return "FLASHML_MAX_ARTIFACT_MB must be a number of MiB greater than 0";
  return Math.floor(mb * 1024 * 1024);
}

const read = new WeakMap<object, SettingsRead>();

/**
 * The settings of `env`, read on first use and kept for as long as the env
 * object lives: an isolate's env does not change while it runs.
 */
export function settingsOf(env: SettingsEnv): SettingsRead {
  let found = read.get(env);
  if (found === undefined) {
    found = readSettings(env);
    read.set(env, found);
  }
  return found;
}
