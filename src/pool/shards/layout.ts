// The layout authority in the object (docs/sharding.md §11): at every start,
// after migrate, a shard records which shard it is and the pool's history
// of shard counts. Shard 0 keeps that history and decides (src/rules/layout.ts);
// the other shards copy it from shard 0; a shard at or above the configured
// count is a removed shard and answers only shard 0's emptiness check. A
// refused pool refuses every call of every shard that knows it, so no
// request ever reads or changes a pool laid out over unreachable work.
//
// At S = 1 a start costs one SELECT of pool_layout and nothing else.
//
// Whether this object refuses is kept in memory, keyed by its SQL handle:
// it is decided again at every start (and re-checked at most every 60 s
// while refusing), so nothing is lost when the object is evicted.

import {
  type Emptiness,
  type LayoutEpoch,
  layoutDecision,
  layoutRefusal,
  layoutRefusedMessage,
} from "../../rules/layout";
import { type ObjectLoad, served } from "../../rules/object-load";
import type { ShardPeers } from "../address";
import type { LayoutAnswer } from "../contract";

/** The other shards a start may ask: a removed shard's emptiness, and shard 0's layout. */
export type LayoutPeers = {
  emptiness(shard: number): Promise<Emptiness>;
  layout(): Promise<LayoutAnswer>;
};

/** How long a refusing object serves its refusal before it checks the layout again. */
export const LAYOUT_RECHECK_MS = 60_000;
/** How long a shard refuses, at its start, while shard 0 upgrades its schema before it asks again. */
export const UPGRADE_RECHECK_MS = 1_000;

type Refusal = {
  /** The error message every refused call throws (LAYOUT_REFUSED first). */
  message: string;
  /** What layout() answers as `refusing`; null for a removed shard, which shard 0 never asks. */
  detail: string | null;
  checkedMs: number;
};

/** Whether this object refuses its calls, and why: decided at its start, in memory (the object's, on its Pool). */
export class LayoutGate {
  refusal: Refusal | undefined;
}

/**
 * Decides this shard's layout at its start and records it: the shard_self
 * row and the first epoch on a first start, a new epoch when shard 0 sees
 * a raise or a lower over empty shards, shard 0's history at the other
 * shards. Leaves the object refusing (see enterPool) when the pool is
 * lowered over work, when shard 0 refuses, or when this shard is removed.
 */
export async function layoutAtStart(
  sql: SqlStorage,
  gate: LayoutGate,
  pool: string,
  shard: number,
  configured: number,
  now: number,
  peers: LayoutPeers,
): Promise<void> {
  const history = sql.exec<LayoutEpoch>("SELECT * FROM pool_layout ORDER BY epoch").toArray();
  if (shard >= configured) {
    recordSelf(sql, pool, shard);
    const detail = `FLASHML_POOL_SHARDS gives it ${configured} shard${configured === 1 ? "" : "s"}, and shard ${shard} answers only shard 0's emptiness check`;
    gate.refusal = { message: layoutRefusedMessage(pool, detail), detail: null, checkedMs: now };
    return;
  }
  if (shard > 0) {
    let answer: LayoutAnswer;
    try {
      answer = await peers.layout();
    } catch (err) {
      // Shard 0 refuses for now (its schema upgraded a step per event, src/pool/object.ts): so does
      // this shard, and its first call UPGRADE_RECHECK_MS on asks again.
      if (!(err instanceof Error) || layoutRefusal(err) === null) throw err;
      gate.refusal = { message: err.message, detail: null, checkedMs: now - LAYOUT_RECHECK_MS + UPGRADE_RECHECK_MS };
      return;
    }
    if (JSON.stringify(answer.epochs) !== JSON.stringify(history)) {
      recordSelf(sql, pool, shard);
      sql.exec("DELETE FROM pool_layout");
      for (const e of answer.epochs) insertEpoch(sql, e);
    }
    refuseOrServe(gate, pool, answer.refusing, now);
    return;
  }
  let decision = layoutDecision(pool, history, configured, now);
  if (decision.kind === "check") {
    const facts = await Promise.all(decision.shards.map((k) => peers.emptiness(k)));
    decision = layoutDecision(pool, history, configured, now, facts);
  }
  if (decision.kind === "append") {
    if (decision.epoch.epoch === 0) recordSelf(sql, pool, 0);
    insertEpoch(sql, decision.epoch);
  }
  refuseOrServe(gate, pool, decision.kind === "refuse" ? decision.detail : null, now);
}

/**
 * Throws the refusal of a refusing object; does nothing otherwise (at S = 1,
 * always). Every call of the object passes here first. A refusal older than
 * LAYOUT_RECHECK_MS starts `recheck` (the layout decided again) and still
 * refuses this call.
 */
export function enterPool(gate: LayoutGate, recheck: () => void, now = Date.now()): void {
  const refusal = gate.refusal;
  if (refusal === undefined) return;
  if (now - refusal.checkedMs >= LAYOUT_RECHECK_MS) {
    refusal.checkedMs = now;
    recheck();
  }
  throw new Error(refusal.message);
}

/** Shard 0's layout() call: its history, and whether it refuses. A removed shard refuses it. */
export async function layout(sql: SqlStorage, gate: LayoutGate): Promise<LayoutAnswer> {
  // async: a refusal is a rejection, as serveCall makes every other call's.
  const refusal = gate.refusal;
  if (refusal !== undefined && refusal.detail === null) throw new Error(refusal.message);
  const epochs = sql.exec<LayoutEpoch>("SELECT * FROM pool_layout ORDER BY epoch").toArray();
  return { epochs, refusing: refusal?.detail ?? null };
}

/**
 * One call served: it counts in `load`, with its synchronous run as busy
 * time, and where `enter` is given (every call but the layout calls) it
 * runs first and, when it throws, the call rejects with its error instead
 * of running. Every call of the object and of its peer surface enters here.
 */
export function serveCall<R>(load: ObjectLoad, enter: (() => void) | null, run: () => R): R {
  // In memory, no write: a call costs two clock reads more. What a call
  // awaits (a hold, R2, another object) is not busy time, only its turn here.
  const startedMs = Date.now();
  try {
    try {
      enter?.();
    } catch (refused) {
      // A rejection, not a throw: the runtime logs a call's synchronous throw as uncaught.
      // Typed as the call's answer: over RPC every answer is awaited, and a refusal rejects it.
      return Promise.reject(refused) as R;
    }
    return run();
  } finally {
    served(load, startedMs, Date.now());
  }
}

/** What this shard holds that a lower removing it must find all zero (`Emptiness` says what counts and why). */
export function emptiness(sql: SqlStorage, shard: number): Emptiness {
  const counts = sql
    .exec<Omit<Emptiness, "shard" | "empty">>(
      `SELECT (SELECT COUNT(*) FROM jobs) AS jobs, (SELECT COUNT(*) FROM archived_jobs) AS archivedJobs,
         (SELECT COUNT(*) FROM nodes) AS nodes, (SELECT COUNT(*) FROM node_credentials) AS credentials,
         (SELECT COUNT(*) FROM leases WHERE status = 'live') AS liveLeases,
         (SELECT COUNT(*) FROM homes WHERE kind = 'node') AS pointers,
         (SELECT COUNT(*) FROM artifacts) AS artifacts,
         (SELECT COUNT(*) FROM unreferenced) + (SELECT COUNT(*) FROM uploads) AS unreferenced`,
    )
    .one();
  const empty = Object.values(counts).every((n) => n === 0);
  return { shard, empty, ...counts };
}

/** The pool's other shards as a start asks them: object to object, where the pool's location rule puts them. */
export function layoutPeers(peers: ShardPeers): LayoutPeers {
  return {
    emptiness: async (shard) => peers.at(shard).emptiness(),
    layout: async () => peers.at(0).layout(),
  };
}

/** The shard_self row, once: a shard removed at one start may remain at a later one. */
function recordSelf(sql: SqlStorage, pool: string, shard: number): void {
  sql.exec("INSERT INTO shard_self (pool, shard) SELECT ?, ? WHERE NOT EXISTS (SELECT 1 FROM shard_self)", pool, shard);
}

function insertEpoch(sql: SqlStorage, e: LayoutEpoch): void {
  sql.exec(
    "INSERT INTO pool_layout (epoch, shards, since_ms, lowered_from) VALUES (?, ?, ?, ?)",
    e.epoch,
    e.shards,
    e.since_ms,
    e.lowered_from,
  );
}

function refuseOrServe(gate: LayoutGate, pool: string, detail: string | null, now: number): void {
  gate.refusal = detail === null ? undefined : { message: layoutRefusedMessage(pool, detail), detail, checkedMs: now };
}
