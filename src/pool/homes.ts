// Node homes (docs/sharding.md §4.2): a node lives in one shard, found from
// its id without a lookup: its registry shard jump(node_id, S). A node homed
// before that shard could know it (before a raise, in the pool's one-shard
// days, before homes spread, or enrolled: an enrolled credential is issued
// in shard 0) lives where homeCandidates says, and a shard asked about such
// a node answers NOT_HOME with the shard that holds it; the Worker calls
// that shard instead and remembers it. A shard learns a home once, in
// memory: the fact never changes while the node is registered.
//
// At S = 1 nothing here runs.

import { homeCandidates, registryShard } from "../rules/shard-ids";
import { shardStub } from "./address";
import type { PoolObject } from "./object";
import type { Pool } from "./pool";

/** The message of the error a call addressed to another shard's node rejects with (only a message survives RPC). */
export const NOT_HOME = "not this node's home shard:";

/** The shard a NOT_HOME rejection names, or null for any other error. */
export function notHomeShard(error: unknown): number | null {
  if (!(error instanceof Error) || !error.message.startsWith(NOT_HOME)) return null;
  const shard = Number(error.message.slice(NOT_HOME.length));
  return Number.isInteger(shard) && shard >= 0 ? shard : null;
}

/** How long a shard remembers that no shard holds a node, so a node that claims before it registers asks once a minute. */
const UNKNOWN_MS = 60_000;

/** Whether this shard is the home of `nodeId`: it holds its registration or its enrolled credential. */
export function holdsNode(sql: SqlStorage, nodeId: string): boolean {
  return (
    sql
      .exec(
        "SELECT 1 FROM nodes WHERE node_id = ? UNION ALL SELECT 1 FROM node_credentials WHERE node_id = ? LIMIT 1",
        nodeId,
        nodeId,
      )
      .toArray().length > 0
  );
}

/**
 * Where a credential issued here (shard 0, which redeems every code) is
 * installed: here when this shard holds the node, else at its registry
 * shard, which holds it, knows who does, or homes it (docs/sharding.md §8.4).
 */
export function enrolledHome(pool: Pool, nodeId: string): number {
  return pool.shards === 1 || holdsNode(pool.sql, nodeId) ? pool.shard : registryShard(nodeId, pool.shards);
}

/** `call` at shard `at`, thought to be the home of the node the call names, and once more where a NOT_HOME answer says it is. */
export async function atHome<T>(
  pool: Pool,
  at: number,
  call: (shard: DurableObjectStub<PoolObject>) => Promise<T>,
): Promise<T> {
  const shard = (k: number) => shardStub(pool.env, pool.settings.poolLocations, pool.poolName, k);
  try {
    return await call(shard(at));
  } catch (error) {
    const moved = notHomeShard(error);
    if (moved === null || moved === at) throw error;
    return await call(shard(moved));
  }
}

/** How many nodes a shard remembers either way; past it, it forgets them all and asks again. */
const REMEMBERED = 10_000;

/** What one shard has learnt of other shards' nodes, in memory. */
export class Homes {
  readonly #known = new Map<string, number>();
  readonly #unknown = new Map<string, number>();

  /**
   * Rejects with NOT_HOME when `nodeId` lives on another shard; resolves
   * when it lives here or nowhere. A node nowhere is homed here by a
   * registration (`registering`) when this shard is its registry shard or
   * one of its candidates (a Worker still on the layout before a raise
   * registers it at that layout's registry shard, where the others look),
   * and is otherwise sent to its registry shard.
   */
  async check(pool: Pool, nodeId: string, registering: boolean): Promise<void> {
    if (pool.shards === 1 || holdsNode(pool.sql, nodeId)) return;
    const known = this.#known.get(nodeId);
    if (known !== undefined && known !== pool.shard) throw new Error(`${NOT_HOME}${known}`);
    const now = Date.now();
    const registry = registryShard(nodeId, pool.shards);
    const earlier = homeCandidates(nodeId, layoutCounts(pool.sql, pool.shards));
    const candidates = otherCandidates(pool, nodeId, earlier);
    if (registering) this.#unknown.delete(nodeId);
    else if ((this.#unknown.get(nodeId) ?? 0) > now) return;
    const { poolLocations } = pool.settings;
    const held = await Promise.all(
      candidates.map((k) => shardStub(pool.env, poolLocations, pool.poolName, k).holdsNode(nodeId)),
    );
    const home = candidates.find((_, j) => held[j]);
    if (home !== undefined) {
      if (this.#known.size >= REMEMBERED) this.#known.clear();
      this.#known.set(nodeId, home);
      throw new Error(`${NOT_HOME}${home}`);
    }
    if (!registering) {
      if (this.#unknown.size >= REMEMBERED) this.#unknown.clear();
      this.#unknown.set(nodeId, now + UNKNOWN_MS);
      return;
    }
    const mayHome = registry === pool.shard || earlier.includes(pool.shard);
    if (!mayHome) throw new Error(`${NOT_HOME}${registry}`);
  }
}

/**
 * The shards other than this one that node `nodeId` could live on: its
 * registry shard first (a call reaches another shard only from a Worker
 * that learnt otherwise, or by hand), then its earlier candidates.
 */
export function otherCandidates(
  pool: Pool,
  nodeId: string,
  earlier = homeCandidates(nodeId, layoutCounts(pool.sql, pool.shards)),
): number[] {
  return [registryShard(nodeId, pool.shards), ...earlier].filter((k) => k !== pool.shard);
}

/** The layout's shard counts, oldest first, ending with today's (this object's configured count). */
function layoutCounts(sql: SqlStorage, configured: number): number[] {
  const counts = sql
    .exec<{ shards: number }>("SELECT shards FROM pool_layout ORDER BY epoch")
    .toArray()
    .map((e) => e.shards);
  if (counts.at(-1) !== configured) counts.push(configured);
  return counts;
}

/** Which argument of a call names the node it is about, and whether the call may home it. */
type NodeAddressed = { nodeOf: (args: unknown[]) => unknown; registering: boolean };

const FIRST: NodeAddressed = { nodeOf: (args) => args[0], registering: false };
const PROOF: NodeAddressed = {
  nodeOf: (args) => (args[0] as { nodeId?: unknown } | undefined)?.nodeId,
  registering: false,
};
const HOME_ROUTED: Readonly<Record<string, NodeAddressed>> = {
  register: { nodeOf: (args) => (args[0] as { node_id?: unknown } | undefined)?.node_id, registering: true },
  installCredential: { nodeOf: (args) => args[0], registering: true },
  heartbeatNode: FIRST,
  assignNodePools: FIRST,
  releaseNode: FIRST,
  claim: FIRST,
  revokeCredential: FIRST,
  session: PROOF,
  vouch: PROOF,
};

/** The home-routed call names, for the test that every one is covered. */
export const HOME_ROUTED_CALLS = Object.keys(HOME_ROUTED);

/**
 * Wraps the home-routed calls of `prototype` (the ones the Worker sends to
 * a node's home) so that, in a pool of shards, each first checks that the
 * node lives here (`Homes.check`) and rejects with NOT_HOME otherwise.
 */
export function guardHomes<T extends object>(prototype: T, homesOf: (object: T) => { pool: Pool; homes: Homes }): void {
  for (const [name, addressed] of Object.entries(HOME_ROUTED)) {
    const method = Object.getOwnPropertyDescriptor(prototype, name)?.value as (...args: unknown[]) => unknown;
    Object.defineProperty(prototype, name, {
      configurable: true,
      writable: true,
      value(this: T, ...args: unknown[]): unknown {
        const { pool, homes } = homesOf(this);
        const nodeId = addressed.nodeOf(args);
        if (pool.shards === 1 || typeof nodeId !== "string") return method.apply(this, args);
        return homes.check(pool, nodeId, addressed.registering).then(() => method.apply(this, args));
      },
    });
  }
}
