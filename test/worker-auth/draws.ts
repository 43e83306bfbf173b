// A claim with adaptive replication's spot-check draw fixed (docs/protocol.md §14), for
// the tests with tokens: run by hand in the job's shard, as a forwarded claim runs there.

import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { type ClaimResult, claim as claimInPool } from "../../src/pool/leases";
import { seen } from "../../src/pool/nodes";
import { passportOf, upsertPassport } from "../../src/pool/passports";
import { readSettings } from "../../src/rules/settings";
import { mintShardHex } from "../../src/rules/shard-ids";
import { homeShardOf, jobStub, shardOfJob, shardStubs, shardsOf } from "../worker/helpers";

/**
 * The pool's claim transaction run by hand with the spot check's draw fixed, in the shard of `job`
 * (the one its id names), as a claim forwarded there runs it: the node's passport copied from its
 * home first, a lease id that names the shard, and the home told of the lease.
 */
export async function claimWithDraw(pool: string, job: string, nodeId: string, draw: number): Promise<ClaimResult> {
  const read = readSettings(env);
  if (!read.ok) throw new Error(read.detail);
  const { owners, tenantWeights, retryElsewhereMs, membership } = read.settings;
  const k = shardOfJob(pool, job);
  const mint = () => mintShardHex(pool, k, crypto.randomUUID().replaceAll("-", "").slice(0, 8));
  const home = await homeShardOf(pool, nodeId);
  const homeObject = shardStubs(pool)[home]!;
  const passport =
    k === home
      ? null
      : await runInDurableObject(homeObject, (_o, state) => passportOf(state.storage.sql, nodeId, owners));
  const r = await runInDurableObject(jobStub(pool, job), (_o, state) =>
    state.storage.transactionSync(() => {
      const now = Date.now();
      if (passport) upsertPassport(state.storage.sql, passport, now);
      return claimInPool(
        state.storage.sql,
        now,
        nodeId,
        null,
        tenantWeights,
        () => draw,
        retryElsewhereMs,
        owners,
        membership,
        shardsOf(pool) > 1 ? { mint } : {},
      );
    }),
  );
  if (r.ok && k !== home) {
    const deadline = Date.parse(r.lease.deadline);
    await runInDurableObject(homeObject, (_o, state) =>
      state.storage.transactionSync(() => seen(state.storage.sql, Date.now(), nodeId, deadline)),
    );
  }
  return r;
}
