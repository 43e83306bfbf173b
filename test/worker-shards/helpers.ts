// What the 4-shard tests share: a shard's stub, and a job put straight on a
// shard through the shard's own call, with an id minted for it, as the job
// route does after choosing the shard (docs/sharding.md §7.4).

import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { shardStub } from "../../src/pool/address";
import { JobSpecSchema } from "../../src/protocol/jobs";
import { expandJob } from "../../src/recipes";
import { mintShardHex } from "../../src/rules/shard-ids";
import { jobReplication, REPLICAS_LABEL } from "../../src/rules/verification";
import { trialsJob } from "../worker/helpers";

/** Shard k of `pool`, in the test's one location. */
export const shard = (pool: string, k: number) => shardStub(env, [], pool, k);

/**
 * Submits `job` straight to shard k and answers its id: one minted for k,
 * or `jobId` (an id from another time, say), of `tenant` ("default") at
 * `priority` (0). The submission answers once
 * Σ knows of a new class. `replicas` > 1 replicates every task.
 */
export async function submitTo(
  pool: string,
  k: number,
  job: unknown = trialsJob(1),
  options: { priority?: number; tenant?: string; replicas?: number; jobId?: string } = {},
): Promise<string> {
  const spec = JobSpecSchema.parse(job);
  const jobId = options.jobId ?? mintShardHex(pool, k, crypto.randomUUID().replaceAll("-", "").slice(0, 8));
  const expansion = expandJob(spec, jobId, { allowUnsandboxedArgv: false, maxWorkerLosses: 10 });
  if (!expansion.ok) throw new Error(expansion.problems.join("; "));
  const replicas = options.replicas ?? 1;
  const replication = jobReplication(replicas === 1 ? {} : { [REPLICAS_LABEL]: String(replicas) });
  if (!replication.ok) throw new Error(replication.problem);
  const place = {
    priority: options.priority ?? 0,
    tenant: options.tenant ?? "default",
    replication: replication.value,
  };
  const submitted = await shard(pool, k).submitJob(jobId, spec, expansion.tasks, pool, place);
  if (!submitted.ok) throw new Error(`shard ${k} refused the job`);
  return jobId;
}

/** The shards (of 4) whose `table` holds a row for node `nodeId`: where its registration or its credential lives. */
export async function shardsHolding(pool: string, table: "nodes" | "node_credentials", nodeId: string) {
  const shards = [0, 1, 2, 3];
  const rows = await Promise.all(
    shards.map((k) =>
      runInDurableObject(shard(pool, k), (_o, state) =>
        state.storage.sql.exec(`SELECT 1 FROM ${table} WHERE node_id = ?`, nodeId).toArray(),
      ),
    ),
  );
  return shards.filter((k) => rows[k]!.length > 0);
}

// Vite's import.meta.glob, which the source-reading checks use.
declare global {
  interface ImportMeta {
    glob(patterns: string[], options: { query: string; import: string; eager: true }): Record<string, unknown>;
  }
}

/** The calls of the pool object (src/pool/object.ts) whose body runs inside `wrap`: what each says wraps it. */
export function callsWrappedBy(wrap: string): string[] {
  const [source] = Object.values(
    import.meta.glob(["../../src/pool/object.ts"], { query: "?raw", import: "default", eager: true }),
  ) as string[];
  return [...source!.matchAll(/^ {2}(\w+)\([\s\S]*?\n {2}\}\n/gm)].filter((m) => m[0].includes(wrap)).map((m) => m[1]!);
}
