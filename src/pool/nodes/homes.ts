// Node homes (docs/sharding.md §4.2): a node lives in one shard, found from
// its id without a lookup: its registry shard jump(node_id, S). A node homed
// before that shard could know it (before a raise, in the pool's one-shard
// days, before homes spread, or enrolled while credentials lived in shard
// 0) lives where homeCandidates says, and a shard asked about such a node
// answers NOT_HOME with the shard that holds it; the Worker calls that
// shard instead and remembers it. In a pool spread over locations the
// registry shard homes a new node in the group nearest its first request
// and keeps a pointer to it (`homes`), which it answers the same way. A
// shard learns a home once, in memory: the fact never changes while the
// node is registered.
//
// A credential is checked at one shard only: a shard asked to check one
// for a node it neither holds nor points to never asks about that node
// elsewhere (the id is the caller's to pick, so a per-id question would
// let a forger make shard 0 answer for every id). It asks the shards that
// may hold its registry nodes for all of them at once, at most once a
// minute, and records pointers (`pullPointers`).
//
// At S = 1 nothing here runs.

import { type Locale, locationGroups, nearestHome } from "../../rules/homing";
import { homeCandidates, registryShard } from "../../rules/shard-ids";
import type { Answer, ShardPeer } from "../contract";
import type { Pool } from "../pool";

/** The message of the error a call addressed to another shard's node rejects with (only a message survives RPC). */
export const NOT_HOME = "not this node's home shard:";

/** The shard a NOT_HOME rejection names, or null for any other error. */
export function notHomeShard(error: unknown): number | null {
  if (!(error instanceof Error) || !error.message.startsWith(NOT_HOME)) return null;
  const shard = Number(error.message.slice(NOT_HOME.length));
  return Number.isInteger(shard) && shard >= 0 ? shard : null;
}

/**
 * How long a shard remembers that no shard holds a node, so a node that
 * claims before it registers asks once a minute; and how long pointers
 * pulled for credential checks stand before a check may pull again.
 */
const UNKNOWN_MS = 60_000;

/** Whether this shard is the home of `nodeId`: it holds its registration or its enrolled credential. */
export function livesHere(sql: SqlStorage, nodeId: string): boolean {
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
 * The home this shard's pointer names for `nodeId`, as its registry
 * shard: one it homed elsewhere by location (`node`), or one pulled from
 * the shard that holds the node (`pulled`, a copy of what that shard
 * knows, which a lower's emptiness check does not count).
 */
function pointer(sql: SqlStorage, nodeId: string): number | null {
  return (
    sql
      .exec<{ home: number }>(
        "SELECT home FROM homes WHERE kind IN ('node', 'pulled') AND name = ? ORDER BY kind LIMIT 1",
        nodeId,
      )
      .toArray()[0]?.home ?? null
  );
}

/**
 * The shards that may hold a node whose registry shard is `self` while
 * `self` holds no pointer to it: shard 0 (credentials installed there
 * before they went home, nodes of a pool's one-shard days or of pinned
 * homes), and, for a shard a raise added, every shard of each layout
 * before it (a node stays home, and jump hashing moves a node only onto
 * an added shard). `counts`: the layout's shard counts, oldest first.
 */
function pointerSources(self: number, counts: readonly number[]): number[] {
  const sources = new Set([0]);
  for (const s of counts.slice(0, -1)) if (self >= s) for (let k = 0; k < s; k++) sources.add(k);
  sources.delete(self);
  return [...sources];
}

/** The nodes this shard holds whose registry shard is `registry`: what that shard pulls as pointers here. */
export function homedFor(pool: Pool, registry: number): string[] {
  if (pool.shards === 1 || registry === pool.shard) return [];
  return pool.sql
    .exec<{ node_id: string }>("SELECT node_id FROM nodes UNION SELECT node_id FROM node_credentials")
    .toArray()
    .map((r) => r.node_id)
    .filter((nodeId) => registryShard(nodeId, pool.shards) === registry);
}

/**
 * Records a pointer here for every node a source shard holds whose
 * registry shard is this one (written once per node: an existing pointer
 * stands, as the first request's choice does).
 */
async function pullPointers(pool: Pool): Promise<void> {
  const sources = pointerSources(pool.shard, layoutCounts(pool.sql, pool.shards));
  const pulled = await Promise.all(
    sources.map(async (k) => ({
      home: k,
      nodeIds: await pool.peers.at(k).homedFor(pool.shard),
    })),
  );
  const now = Date.now();
  pool.transaction(() => {
    for (const { home, nodeIds } of pulled)
      if (nodeIds.length > 0)
        pool.sql.exec(
          "INSERT OR IGNORE INTO homes (kind, name, home, recorded_ms) SELECT 'pulled', value, ?, ? FROM json_each(?)",
          home,
          now,
          JSON.stringify(nodeIds),
        );
  });
}

/** Where this shard knows node `nodeId` lives: here, or where its pointer says; null: it does not know. */
export function whereIs(sql: SqlStorage, self: number, nodeId: string): number | null {
  return livesHere(sql, nodeId) ? self : pointer(sql, nodeId);
}

/**
 * The home of a node no shard holds, chosen here, its registry shard, by
 * where its first request came from: a shard of the location group
 * nearest it (src/rules/homing.ts), recorded as a pointer when it is
 * another shard, so that every later call here is sent there; this shard
 * when the pool has no groups or the request no place. The first
 * request's choice stands.
 */
function homeByLocation(pool: Pool, nodeId: string, locale: Locale | null): number {
  const groups = locationGroups(pool.settings.poolLocations, pool.poolName, pool.shards);
  const nearest = nearestHome(nodeId, locale, groups);
  if (nearest === null || nearest === pool.shard) return pool.shard;
  pool.sql.exec(
    "INSERT OR IGNORE INTO homes (kind, name, home, recorded_ms) VALUES ('node', ?, ?, ?)",
    nodeId,
    nearest,
    Date.now(),
  );
  return pointer(pool.sql, nodeId) ?? nearest;
}

/**
 * Where a credential issued here (shard 0, which redeems every code) is
 * installed: here when this shard holds the node; where its pointer says;
 * else at its registry shard, which holds it, knows who does, or homes it
 * (docs/sharding.md §8.4), by `locale` when that shard is this one.
 */
export function enrolledHome(pool: Pool, nodeId: string, locale: Locale | null): number {
  if (pool.shards === 1 || livesHere(pool.sql, nodeId)) return pool.shard;
  const pointed = pointer(pool.sql, nodeId);
  if (pointed !== null) return pointed;
  const registry = registryShard(nodeId, pool.shards);
  return registry === pool.shard ? homeByLocation(pool, nodeId, locale) : registry;
}

/** `call` at shard `at`, thought to be the home of the node the call names, and once more where a NOT_HOME answer says it is. */
export async function peerAtHome<T>(pool: Pool, at: number, call: (peer: ShardPeer) => Answer<T>): Promise<T> {
  try {
    return await call(pool.peers.at(at));
  } catch (error) {
    const moved = notHomeShard(error);
    if (moved === null || moved === at) throw error;
    return await call(pool.peers.at(moved));
  }
}

/** How many nodes a shard remembers either way; past it, it forgets them all and asks again. */
const REMEMBERED = 10_000;

/** What one shard has learnt of other shards' nodes, in memory. */
export class Homes {
  readonly #known = new Map<string, number>();
  readonly #unknown = new Map<string, number>();
  /** The last pull of pointers (`pullPointers`), and until when it stands. */
  #pulled: { done: Promise<void>; untilMs: number } | null = null;

  /**
   * Rejects with NOT_HOME when `nodeId` lives on another shard; resolves
   * when it lives here or nowhere. A node nowhere is homed here by a
   * registration (`registering`) when this shard is its registry shard or
   * one of its candidates (a Worker still on the layout before a raise
   * registers it at that layout's registry shard, where the others look),
   * or when a candidate's pointer names this shard, and is otherwise sent
   * to its registry shard. The registry shard itself sends it on to the
   * shard `locale` makes nearest, if another (`homeByLocation`).
   *
   * A call that checks a credential (`proving`) is never sent on by a
   * question about its node: only by what this shard holds, including
   * the pointers it pulls (`pullPointers`). Resolved, it finds no
   * credential here and is refused: one object call.
   */
  async check(
    pool: Pool,
    nodeId: string,
    registering: boolean,
    locale: Locale | null = null,
    proving = false,
  ): Promise<void> {
    if (pool.shards === 1 || livesHere(pool.sql, nodeId)) return;
    const known = this.#known.get(nodeId) ?? pointer(pool.sql, nodeId) ?? undefined;
    if (known !== undefined && known !== pool.shard) throw new Error(`${NOT_HOME}${known}`);
    if (proving) {
      // Only a Worker on another layout guesses another shard: the registry shard answers for the node.
      const registry = registryShard(nodeId, pool.shards);
      if (registry !== pool.shard) throw new Error(`${NOT_HOME}${registry}`);
      await this.#pull(pool);
      const pointed = pointer(pool.sql, nodeId);
      if (pointed !== null && pointed !== pool.shard) throw new Error(`${NOT_HOME}${pointed}`);
      return;
    }
    const now = Date.now();
    const registry = registryShard(nodeId, pool.shards);
    const earlier = homeCandidates(nodeId, layoutCounts(pool.sql, pool.shards));
    const candidates = otherCandidates(pool, nodeId, earlier);
    if (registering) this.#unknown.delete(nodeId);
    else if ((this.#unknown.get(nodeId) ?? 0) > now) return;
    const answers = await Promise.all(candidates.map((k) => pool.peers.at(k).whereIs(nodeId)));
    const home = answers.find((h) => h !== null);
    // Another shard's pointer naming this one: the node is being homed here, by its location.
    if (home === pool.shard) return;
    if (home !== undefined && home !== null) {
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
    if (registry !== pool.shard) return;
    const chosen = homeByLocation(pool, nodeId, locale);
    if (chosen !== pool.shard) throw new Error(`${NOT_HOME}${chosen}`);
  }

  /** Pulls pointers at most once a minute, however many ids are asked about; a failed pull is tried again by the next check. */
  #pull(pool: Pool): Promise<void> {
    const now = Date.now();
    if (this.#pulled !== null && this.#pulled.untilMs > now) return this.#pulled.done;
    const done = pullPointers(pool).catch((error: unknown) => {
      this.#pulled = null;
      throw error;
    });
    this.#pulled = { done, untilMs: now + UNKNOWN_MS };
    return done;
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

/** How a call about a node checks its home: whether it may home the node here, or checks its credential, and where it came from. */
export type NodeCall = { registering?: boolean; proving?: boolean; locale?: unknown };

/** A call about a node that lives elsewhere or nowhere yet (a heartbeat, a claim, a release). */
export const ABOUT_NODE: NodeCall = {};
/** A call checking a node's credential (a session, a vouch). */
export const PROVING: NodeCall = { proving: true };
/** A call that may home the node here (a registration, a credential installed), from `locale`. */
export function registering(locale: unknown): NodeCall {
  return { registering: true, locale };
}

/**
 * Runs `run` where node `nodeId` lives here: in a pool of shards it first
 * checks (`Homes.check`) and rejects with NOT_HOME when the node lives
 * elsewhere. The Worker sends each call about a node to its home, and each
 * such call of the object's says so in its body.
 */
export function whenHome<R>(
  pool: Pool,
  homes: Homes,
  nodeId: unknown,
  how: NodeCall,
  run: () => R,
): R | Promise<Awaited<R>> {
  if (pool.shards === 1 || typeof nodeId !== "string") return run();
  return homes
    .check(pool, nodeId, how.registering ?? false, asLocale(how.locale), how.proving)
    .then(() => run() as Awaited<R>);
}

/** A call's locale argument as a Locale, or null for anything else. */
function asLocale(value: unknown): Locale | null {
  if (typeof value !== "object" || value === null) return null;
  const { continent, longitude } = value as { continent?: unknown; longitude?: unknown };
  if (typeof continent !== "string") return null;
  return { continent, longitude: typeof longitude === "number" && Number.isFinite(longitude) ? longitude : null };
}
