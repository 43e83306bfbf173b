// A claim with adaptive replication's spot-check draw fixed (docs/protocol.md §14), for
// the tests with tokens: run by hand in the job's shard, as a forwarded claim runs there,
// and its answer taken in at the node's home as a forward's is.

import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { ClaimResult } from "../../src/pool/claims/claim-result";
import { forwardedClaim } from "../../src/pool/claims/forwarded-claims";
import { tookLease } from "../../src/pool/claims/forwarding";
import { claim as claimInPool } from "../../src/pool/leases/leases";
import { passportOf } from "../../src/pool/nodes/passports";
import { PoolObject } from "../../src/pool/object";
import { Pool } from "../../src/pool/pool";
import { readSettings } from "../../src/rules/settings";
import { mintShardHex } from "../../src/rules/shard-ids";
import { homeShardOf, jobStub, shardOfJob, shardStubs, shardsOf } from "../worker/helpers";

/**
 * The pool's claim transaction run by hand with the spot check's draw fixed, in the shard of `job`
 * (the one its id names), as a claim forwarded there runs it: a ticket with the node's passport from
 * its home, a lease id that names the shard, and the answer taken in at the home (the lease's
 * deadline, a replica's task: src/pool/verification/replicas-elsewhere.ts).
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
  const claimAs = (sql: SqlStorage, now: number, claimId?: string) =>
    claimInPool(
      sql,
      now,
      nodeId,
      null,
      { weights: tenantWeights, random: () => draw, retryElsewhereMs, owners, membership },
      shardsOf(pool) > 1 ? { mint, ...(claimId ? { claimId } : {}) } : {},
    );
  // Through the object's own SQL handle, as its claims run: what it writes is counted (src/pool/metered-sql.ts).
  const r = await runInDurableObject(jobStub(pool, job), (o, state) =>
    state.storage.transactionSync(() => {
      const now = Date.now();
      const { sql } = PoolObject.poolOf(o);
      if (passport === null) return claimAs(sql, now);
      const ticket = { claimId: crypto.randomUUID().slice(0, 16), passport, jobId: null, notAfter: now + 10_000 };
      return forwardedClaim(sql, now, ticket, (sql, _node, _job, claimId) => claimAs(sql, now, claimId));
    }),
  );
  if (!r.ok) return r;
  if (k !== home) await runInDurableObject(homeObject, (_o, state) => tookLease(new Pool(state, env), k, nodeId, r));
  return { ok: true, lease: r.lease };
}
