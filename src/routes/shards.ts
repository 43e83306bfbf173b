// Which of a pool's shards serves a request (docs/protocol.md §15,
// docs/sharding.md §2.3 and §4.4). Every route asks `c.var.shards`, never an
// object name: a job's calls go to the job's shard, a lease's to its lease's,
// a node's to its home, enrolment to shard 0, pool-wide reads to every shard.
// At one shard every answer is the pool's one object, as before sharding.
//
// Until work and nodes spread (docs/sharding.md §16, steps 6-7) a pool of
// any count is pinned: everything lives in shard 0, which is a correct pool,
// and raising the count later moves nothing. So the pool-wide reads (lists,
// dashboard, metrics, fleet) read shard 0 until they fan out (step 9).

import { shardStub } from "../pool/address";
import type { CredentialProof } from "../pool/enrolment";
import { randomHex8, randomHex12 } from "../protocol/ids";
import { shardCount } from "../rules/pool-shards";
import type { Settings } from "../rules/settings";
import { mintShardHex } from "../rules/shard-ids";
import type { PoolCalls } from "./context";

export interface PoolShards {
  /** S, the pool's configured shard count. */
  readonly count: number;
  /** Shard k's calls, k in [0, S). */
  shard(k: number): PoolCalls;
  /** The shard that holds a job, its tasks, events, checkpoints and `jobs/{id}/…` artifacts. */
  job(jobId: string): PoolCalls;
  /** The shard that issued a lease. */
  lease(leaseId: string): PoolCalls;
  /** The shard that binds an artifact key. */
  key(key: string): PoolCalls;
  /** A node's home shard: its registration, hold, drain, credential and claims. */
  home(nodeId: string): PoolCalls;
  /** Device codes and approvals (docs/sharding.md §8.4). */
  readonly enrolment: PoolCalls;
  /** The shard a new job is submitted to. */
  submission(): number;
  /**
   * A fresh 12-hex id minted for shard k (docs/sharding.md §4.1): today's
   * random id at one shard, else one whose tag names k.
   */
  newId(k: number): string;
}

/**
 * The shards of `pool` as one request calls them: as the pool's stubs, or
 * for an enrolled node as its sessions on them (each call checks `proof`).
 * Stubs are made on first use and kept for the request.
 */
export function poolShards(env: Env, settings: Settings, pool: string, proof: CredentialProof | null): PoolShards {
  const count = shardCount(settings.poolShards, pool);
  const made = new Map<number, PoolCalls>();
  const shard = (k: number): PoolCalls => {
    if (!(Number.isInteger(k) && k >= 0 && k < count)) throw new RangeError(`pool '${pool}' has no shard ${k}`);
    let calls = made.get(k);
    if (calls === undefined) {
      const stub = shardStub(env, settings.poolLocations, pool, k);
      calls = proof === null ? stub : stub.session(proof);
      made.set(k, calls);
    }
    return calls;
  };
  const pinned = () => shard(0);
  return {
    count,
    shard,
    job: pinned,
    lease: pinned,
    key: pinned,
    home: pinned,
    get enrolment() {
      return shard(0);
    },
    submission: () => 0,
    newId: (k) => (count === 1 ? randomHex12() : mintShardHex(pool, k, randomHex8())),
  };
}
