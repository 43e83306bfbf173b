// Which of a pool's shards serves a request (docs/protocol.md §15,
// docs/sharding.md §2.3 and §4.4). Every route asks `c.var.shards`, never an
// object name: a job's calls go to the job's shard, a lease's to its lease's,
// a node's to its home, enrolment to shard 0, pool-wide reads to every shard.
// At one shard every answer is the pool's one object, as before sharding.
//
// Jobs spread over the shards (two choices, docs/sharding.md §7.4), and so
// do nodes: a node's home is its registry shard, jump(node_id, S), unless a
// NOT_HOME answer names another (src/pool/nodes/homes.ts), which the isolate keeps.
// An enrolled node's credential is installed at its home when its code is
// redeemed (§8.4); one enrolled before that lives in shard 0, and its
// registry shard points there. A credential is checked at one shard per
// request: its node's home, or the registry shard, which refuses an id it
// neither holds nor points to without asking another shard.

import { shardStub } from "../pool/address";
import type { CredentialProof } from "../pool/contract";
import { notHomeShard } from "../pool/nodes/homes";
import type { PoolObject } from "../pool/object";
import { CREDENTIAL_REFUSED } from "../pool/session";
import { randomHex8, randomHex12 } from "../protocol/ids";
import { jobOfKey } from "../protocol/keys";
import { isObjectReset } from "../rules/object-errors";
import { shardCount } from "../rules/pool-shards";
import type { Settings } from "../rules/settings";
import { placeSubmission, twoDistinct } from "../rules/shard-choice";
import { mintShardHex, registryShard, shardOfId } from "../rules/shard-ids";

/**
 * The pool's calls as this request makes them: the object's stub, or for an
 * enrolled node its session on that stub (src/pool/session.ts). A route can
 * only call what both offer, so a call the session lacked would not compile.
 */
export type PoolCalls = DurableObjectStub<PoolObject> | ReturnType<DurableObjectStub<PoolObject>["session"]>;

export interface PoolShards {
  /** S, the pool's configured shard count. */
  readonly count: number;
  /**
   * Shard k's calls, k in [0, S), where the caller's credential is checked
   * with each call: any shard for an unenrolled caller, the home for an
   * enrolled node. Throws for another shard of an
   * enrolled node, which holds no credentials: use `visit`.
   */
  shard(k: number): PoolCalls;
  /**
   * `call` on shard k's calls, for a request that visits it: an enrolled
   * node's home first vouches for its credential, once per request
   * (docs/sharding.md §8.4), and a refused one rejects with
   * CREDENTIAL_REFUSED (a 401).
   */
  visit<T>(k: number, call: (calls: PoolCalls) => Promise<T>): Promise<T>;
  /**
   * `read` of every shard, in parallel, in shard order (docs/sharding.md
   * §10): an enrolled node's home vouches for it first, so a refused
   * credential costs that one call.
   */
  every<T>(read: (calls: PoolCalls, k: number) => Promise<T>): Promise<T[]>;
  /**
   * `call` at the shard that holds a job, its tasks, events, checkpoints
   * and `jobs/{id}/…` artifacts: the one its id names (docs/sharding.md
   * §4.1), visited, so an enrolled node's home vouches for it first.
   */
  job<T>(jobId: string, call: (calls: PoolCalls) => Promise<T>): Promise<T>;
  /** `call` at the shard that issued a lease, by its id, visited. */
  lease<T>(leaseId: string, call: (calls: PoolCalls) => Promise<T>): Promise<T>;
  /** `call` at the shard that binds an artifact key: its job's for `jobs/{id}/…`, else shard 0 (where such keys are bound). */
  key<T>(key: string, call: (calls: PoolCalls) => Promise<T>): Promise<T>;
  /**
   * `call` at a node's home shard: its registration, hold, drain,
   * credential and claims. Made where the node is thought to live, and once
   * more where a NOT_HOME answer says it does.
   */
  home<T>(nodeId: string, call: (calls: PoolCalls) => Promise<T>): Promise<T>;
  /** Device codes and approvals (docs/sharding.md §8.4). */
  readonly enrolment: PoolCalls;
  /**
   * The shard a new job of `tasks` tasks is submitted to, and its
   * reservation there (docs/sharding.md §7.4): the lighter of two drawn at
   * random, each asked for a slot. One shard takes every job of a one-shard
   * pool.
   */
  place(tasks: number): Promise<{ shard: number; reservation?: string }>;
  /**
   * A fresh 12-hex id minted for shard k (docs/sharding.md §4.1): today's
   * random id at one shard, else one whose tag names k.
   */
  newId(k: number): string;
  /** The shard an id minted by `newId` names, after its `prefix` (shard 0 for one it does not name). */
  ofId(id: string, prefix: string): number;
}

/**
 * Homes this isolate has learnt from NOT_HOME answers, by pool and node: a
 * node's home never changes while it is registered, and a stale entry costs
 * one more NOT_HOME. Forgotten all at once when full.
 */
const learnt = new Map<string, number>();
const LEARNT = 100_000;

function learn(pool: string, nodeId: string, shard: number): void {
  if (learnt.size >= LEARNT) learnt.clear();
  learnt.set(`${pool}\n${nodeId}`, shard);
}

/**
 * The shards of `pool` as one request calls them: as the pool's stubs, or
 * for an enrolled node as its sessions on them (each call checks `proof`).
 * Stubs are made on first use and kept for the request.
 */
export function poolShards(
  env: Env,
  settings: Settings,
  pool: string,
  proof: CredentialProof | null,
  later: (work: Promise<unknown>) => void,
): PoolShards {
  const count = shardCount(settings.poolShards, pool);
  const made = new Map<number, PoolCalls>();
  const stub = (k: number) => {
    if (!(Number.isInteger(k) && k >= 0 && k < count)) throw new RangeError(`pool '${pool}' has no shard ${k}`);
    return shardStub(env, settings.poolLocations, pool, k);
  };
  const homeOf = (nodeId: string) =>
    count === 1 ? 0 : (learnt.get(`${pool}\n${nodeId}`) ?? registryShard(nodeId, count));
  const callerHome = () => (proof === null ? null : homeOf(proof.nodeId));
  const shard = (k: number): PoolCalls => {
    if (proof !== null && k !== callerHome()) throw new Error(`an enrolled node's calls at shard ${k} must visit it`);
    let calls = made.get(k);
    if (calls === undefined) {
      if (proof === null) calls = stub(k);
      else {
        const session = stub(k).session(proof);
        // Its refusal (NOT_HOME) reaches the caller through each call made on it, not as an unhandled rejection.
        session.catch(() => {});
        calls = session;
      }
      made.set(k, calls);
    }
    return calls;
  };
  /** `call` at node `nodeId`'s home: where it is thought to be, and once more where a NOT_HOME answer says. */
  const routed = async <T>(nodeId: string, call: (k: number) => Promise<T>): Promise<T> => {
    const at = homeOf(nodeId);
    try {
      return await call(at);
    } catch (error) {
      const moved = notHomeShard(error);
      if (moved === null || moved === at) throw error;
      learn(pool, nodeId, moved);
      made.delete(at); // a session there rejected, and stays rejected
      return await call(moved);
    }
  };
  const home = <T>(nodeId: string, call: (calls: PoolCalls) => Promise<T>): Promise<T> => {
    // A stub that saw its object reset is broken for good: a caller asking again gets a fresh one.
    const once = async (k: number) => {
      try {
        return await call(shard(k));
      } catch (error) {
        if (isObjectReset(error)) made.delete(k);
        throw error;
      }
    };
    return count === 1 ? once(0) : routed(nodeId, once);
  };
  let vouched: Promise<boolean> | null = null;
  const vouch = async (): Promise<void> => {
    vouched ??= routed(proof!.nodeId, (h) => stub(h).peer().vouch(proof!));
    if (!(await vouched)) throw new Error(CREDENTIAL_REFUSED);
  };
  const visit = async <T>(k: number, call: (calls: PoolCalls) => Promise<T>): Promise<T> => {
    if (proof === null || count === 1) return call(shard(k));
    if (k !== callerHome()) {
      await vouch();
      return call(stub(k));
    }
    // Thought to be the caller's home: its session there, or, where a NOT_HOME answer says it lives elsewhere, a visit.
    // Once this request's vouch is asked for (a read of every shard), it answers here too: a refusal costs that one call.
    if (vouched !== null) await vouch();
    return routed(proof.nodeId, (h) => (h === k ? call(shard(k)) : visit(k, call)));
  };
  const ofJob = (jobId: string) => shardOfId(pool, jobId, "", count).shard;
  return {
    count,
    shard,
    visit,
    every: async (read) => {
      if (proof !== null && count > 1) await vouch();
      return Promise.all(Array.from({ length: count }, (_, k) => visit(k, (calls) => read(calls, k))));
    },
    job: (jobId, call) => visit(ofJob(jobId), call),
    lease: (leaseId, call) => visit(shardOfId(pool, leaseId, "ls-", count).shard, call),
    key: (key, call) => {
      const jobId = jobOfKey(key);
      return visit(jobId === null ? 0 : ofJob(jobId), call);
    },
    home,
    get enrolment() {
      return shard(0); // device codes stay in shard 0 once nodes spread too
    },
    place: async (tasks) => {
      if (count === 1) return { shard: 0 };
      const drawn = twoDistinct(count, Math.random);
      const slots = await Promise.allSettled(
        drawn.map(async (k) => ({ shard: k, ...(await visit(k, (calls) => calls.reserveSlot(tasks))) })),
      );
      const offered = slots.flatMap((slot) => (slot.status === "fulfilled" ? [slot.value] : []));
      // A shard that cannot answer takes no job; with neither answering the submission fails as any call would.
      if (offered.length === 0) throw (slots[0] as PromiseRejectedResult).reason;
      const [a, b] = offered;
      const chosen = b === undefined || placeSubmission(a!, b, Math.random) === a!.shard ? a! : b;
      // Unreleased, the loser's slot would count for 2 s: every submission would weigh on both its draws.
      // A release that fails costs only that: the slot lapses.
      const other = offered.find((o) => o !== chosen);
      if (other !== undefined)
        later(visit(other.shard, (calls) => calls.releaseSlot(other.reservation)).catch(() => {}));
      return { shard: chosen.shard, reservation: chosen.reservation };
    },
    newId: (k) => (count === 1 ? randomHex12() : mintShardHex(pool, k, randomHex8())),
    ofId: (id, prefix) => shardOfId(pool, id, prefix, count).shard,
  };
}
