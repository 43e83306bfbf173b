// What the end of a lease writes to its node's record (docs/sharding.md §8.2):
// an accepted commit, a failed attempt and the hold-back it may bring, an
// abandoned replica, a verdict, a lie. Only the node's home keeps that record.
// For a node whose home is here each outcome applies at once, in the
// caller's transaction, exactly as before sharding; for one whose passport is
// here it becomes an outbox row to its home in the same transaction, sent
// after it (src/pool/shards/outbox.ts) and applied there by `deliver`, once per row.
// Every function but `deliver` runs inside the caller's transaction and
// never awaits.

import { MAX_STORED_TEXT_BYTES } from "../../protocol/limits";
import { HOLD_AFTER_FAILURES, holdBackMs } from "../../rules/scheduling";
import { truncateUtf8 } from "../../rules/text";
import { recordVerdict, trusted } from "../../rules/verification";
import type { NodeOutcome, Outcome, OutcomeMessage, ReplicaTask } from "../contract";
import { appendOutbox } from "../ledger/outbox-rows";
import type { Pool } from "../pool";
import { replicaElsewhere } from "../verification/replicas-elsewhere";
import { heardUntil, LIVENESS_LEAD_MS, lastRequestHere, lastRequests, passportsSeen } from "./liveness";
import { liveDeadlineSql, ONLINE_WINDOW_MS } from "./states";

/**
 * Records `outcome` for `nodeId`: at once when its home is here, else in
 * the outbox to its home (the shard its passport names). A node unknown
 * here is left alone, as always.
 */
export function nodeOutcome(sql: SqlStorage, now: number, nodeId: string, outcome: Outcome): void {
  if (applyOutcome(sql, now, nodeId, outcome)) return;
  const home = sql.exec<{ home: number }>("SELECT home FROM passports WHERE node_id = ?", nodeId).toArray()[0]?.home;
  if (home === undefined) return;
  const body: NodeOutcome =
    outcome.outcome === "lie"
      ? { node_id: nodeId, outcome: "lie", reason: truncateUtf8(outcome.reason, MAX_STORED_TEXT_BYTES) }
      : { node_id: nodeId, ...outcome };
  // Sent once the change is durable; one that can distrust the node is home before its request is answered (§8.6).
  appendOutbox(sql, home, "outcome", body, now);
}

/**
 * A commit here ended a lease of the node (docs/sharding.md §8.3). For a node
 * whose home is another shard, one outbox row tells the home its last request
 * here, its latest live deadline here and what the commit `earned` it
 * (nothing yet for a replica, whose outcome waits for its verdict): schema
 * step 36's trigger leaves a commit to this. For a node homed here `earned`
 * applies at once.
 */
export function committedHere(sql: SqlStorage, now: number, nodeId: string, earned?: { outcome: "accepted" }): void {
  if (earned !== undefined && applyOutcome(sql, now, nodeId, earned)) return;
  const passport = sql
    .exec<{ home: number; at: number; until: number }>(
      `SELECT home, last_request_ms AS at,
         ${liveDeadlineSql("?1")} AS until
       FROM passports WHERE node_id = ?1`,
      nodeId,
    )
    .toArray()[0];
  if (passport === undefined) return;
  const { home, until } = passport;
  const at = lastRequestHere(sql, nodeId, passport.at);
  const body: NodeOutcome = { node_id: nodeId, outcome: "seen", at, until, ended: 1, ...(earned && { earned }) };
  appendOutbox(sql, home, "outcome", body, at);
}

/**
 * Applies `outcome` to the node's record here; false when the node has no
 * record here (its home is elsewhere, or it is unknown). Each outcome is
 * the statements the end of a lease ran before sharding, in their order.
 */
export function applyOutcome(sql: SqlStorage, now: number, nodeId: string, outcome: Outcome): boolean {
  switch (outcome.outcome) {
    case "accepted":
    case "valid": {
      // The count and the end of a run of failures in one statement: one row.
      const found =
        sql.exec(`UPDATE nodes SET accepted_tasks = accepted_tasks + 1, ${SUCCEEDED} WHERE node_id = ?`, nodeId)
          .rowsWritten > 0;
      if (!found) return false;
      // A result accepted alone was compared with nothing: it earns no trust (docs/protocol.md §14).
      if (outcome.outcome === "valid") validResult(sql, nodeId);
      return true;
    }
    case "failed":
      return attemptFailedHere(sql, now, nodeId);
    case "abandoned":
      // A replica its node failed, let expire or committed invalid output for ends its run of valid results.
      return sql.exec("UPDATE nodes SET consecutive_valid = 0 WHERE node_id = ?", nodeId).rowsWritten > 0;
    case "invalid":
      return invalidResult(sql, now, nodeId, null);
    case "lie":
      return invalidResult(sql, now, nodeId, outcome.reason);
    case "seen": {
      // An accepted commit's count is written with the request (one row), then the rest of what it earned.
      const accepted = outcome.earned?.outcome === "accepted";
      const here = seenElsewhere(sql, nodeId, outcome, accepted ? 1 : 0);
      if (here && accepted) attemptSucceeded(sql, nodeId);
      else if (here && outcome.earned !== undefined) applyOutcome(sql, now, nodeId, outcome.earned);
      return here;
    }
  }
}

/**
 * A node's requests at another shard, at its home: its last request is the
 * later of the two, and it is online until that plus the window, or a live
 * lease's deadline. When a lease there ended, the home's view falls to
 * those, as its own leases' end makes it (schema step 14); a lease the node
 * holds at a third shard is not counted then, until that shard speaks.
 * Soft, as a request here is (src/pool/nodes/liveness.ts): the row is
 * written only when it would say less, and then LIVENESS_LEAD_MS ahead; the
 * request and the deadline wait in memory, and the sweep writes the row
 * down once the node is silent. `accepted` commits there count in the row.
 */
function seenElsewhere(
  sql: SqlStorage,
  nodeId: string,
  seen: { at: number; until: number; ended?: number },
  accepted: number,
): boolean {
  const row = sql
    .exec<{ live_until_ms: number }>("SELECT live_until_ms FROM nodes WHERE node_id = ?", nodeId)
    .toArray()[0];
  if (row === undefined) return false;
  const known = lastRequests(sql);
  known.saw(nodeId, Math.max(known.get(nodeId)?.at ?? 0, seen.at));
  const until = heardUntil(seen.until);
  known.heldElsewhere(nodeId, until, seen.ended === 1);
  const needs = Math.max(seen.at + ONLINE_WINDOW_MS, until);
  if (row.live_until_ms < needs)
    sql.exec(
      `UPDATE nodes SET last_heartbeat_ms = MAX(last_heartbeat_ms, ?1), live_until_ms = ?2,
         accepted_tasks = accepted_tasks + ?3 WHERE node_id = ?4`,
      seen.at,
      needs + LIVENESS_LEAD_MS,
      accepted,
      nodeId,
    );
  else if (accepted > 0)
    sql.exec("UPDATE nodes SET accepted_tasks = accepted_tasks + ?1 WHERE node_id = ?2", accepted, nodeId);
  return true;
}

/**
 * A renewal here of a lease of another shard's node (docs/sharding.md §8.3):
 * its home hears the new deadline once what it last heard, with the grace
 * it adds (`heardUntil`), covers less than half of the lease ahead, so a
 * long task stays online there at about one message per half lease plus a
 * minute, not one per heartbeat, and a one-minute task's renewals send none.
 */
export function renewedHere(sql: SqlStorage, now: number, nodeId: string, deadline: number): void {
  const passport = sql
    .exec<{ home: number; told_until_ms: number }>(
      "SELECT home, told_until_ms FROM passports WHERE node_id = ?",
      nodeId,
    )
    .toArray()[0];
  if (passport === undefined) return;
  const told = Math.max(passport.told_until_ms, passportsSeen(sql).get(nodeId)?.told ?? 0);
  if (heardUntil(told) - now >= (deadline - now) / 2) return;
  const body: NodeOutcome = { node_id: nodeId, outcome: "seen", at: now, until: deadline };
  appendOutbox(sql, passport.home, "outcome", body, now);
  sql.exec("UPDATE passports SET told_until_ms = ? WHERE node_id = ?", deadline, nodeId);
}

/**
 * At the home: applies a batch of outcomes sent by shard `from`, in seq
 * order, each once (inbox_seen keeps the last seq applied from each
 * sender: a batch sent again changes nothing). An outcome for a node not
 * registered here is dropped. Answers the last seq applied, which the
 * sender may delete up to. `digestVersion`: the sender's digest version
 * built last when it sent the batch, which its `replica` outcomes wait for
 * in this shard's copy of the summary.
 */
export function deliver(
  pool: Pool,
  from: number,
  batch: readonly OutcomeMessage[],
  digestVersion = 0,
): Promise<{ acked: number }> {
  return pool.change((now) => {
    const sql = pool.sql;
    const last =
      sql.exec<{ last_seq: number }>("SELECT last_seq FROM inbox_seen WHERE from_shard = ?", from).toArray()[0]
        ?.last_seq ?? 0;
    let acked = last;
    for (const { seq, body } of batch) {
      if (!Number.isSafeInteger(seq) || seq <= acked) continue;
      const replica = replicaOf(body, digestVersion);
      const outcome = outcomeOf(body);
      if (replica !== null) replicaElsewhere(pool, from, body.node_id, replica, false);
      else if (outcome !== null) applyOutcome(sql, now, body.node_id, outcome);
      acked = seq;
    }
    if (acked > last)
      sql.exec(
        `INSERT INTO inbox_seen (from_shard, last_seq) VALUES (?, ?)
         ON CONFLICT (from_shard) DO UPDATE SET last_seq = excluded.last_seq`,
        from,
        acked,
      );
    return { acked };
  });
}

/** The outcome a delivered body names; null for one this shard does not know (skipped, but acked). */
function outcomeOf(body: NodeOutcome): Outcome | null {
  if (typeof body?.node_id !== "string") return null;
  switch (body.outcome) {
    case "accepted":
    case "valid":
    case "failed":
    case "abandoned":
    case "invalid":
      return { outcome: body.outcome };
    case "lie":
      return typeof body.reason === "string" ? { outcome: "lie", reason: body.reason } : null;
    case "seen": {
      if (!Number.isSafeInteger(body.at) || !Number.isSafeInteger(body.until)) return null;
      const seen = { outcome: "seen", at: body.at, until: body.until, ended: body.ended ? 1 : 0 } as const;
      // What a commit earned rides along (schema step 36); one this shard cannot read is left, the request kept.
      const earned = typeof body.earned === "object" ? outcomeOf({ ...body.earned, node_id: body.node_id }) : null;
      return earned === null || earned.outcome === "seen" ? seen : { ...seen, earned };
    }
    default:
      return null;
  }
}

/** The replica's task a delivered `replica` body names; null for any other body, or a malformed one. */
function replicaOf(body: NodeOutcome, after: number): ReplicaTask | null {
  if (typeof body?.node_id !== "string" || body.outcome !== "replica") return null;
  const { task, class_key, priority, counted } = body;
  if (!Number.isSafeInteger(task) || typeof class_key !== "string" || !Number.isSafeInteger(priority)) return null;
  return {
    task,
    classKey: class_key,
    priority,
    counted: counted === 1,
    after: Number.isSafeInteger(after) ? after : 0,
  };
}

// -- the node's record -------------------------------------------------------

/**
 * The node half of a failed attempt (docs/protocol.md §13): its run of failures
 * grows, holding it back once long enough. False for a node with no record here.
 */
function attemptFailedHere(sql: SqlStorage, now: number, nodeId: string): boolean {
  const row = sql
    .exec<{ n: number }>(
      "UPDATE nodes SET consecutive_failures = consecutive_failures + 1 WHERE node_id = ? RETURNING consecutive_failures AS n",
      nodeId,
    )
    .toArray()[0];
  if (!row) return false;
  const hold = holdBackMs(row.n);
  // Never shortens a longer hold already set (a distrusted node's, docs/protocol.md §14).
  if (hold > 0)
    sql.exec("UPDATE nodes SET held_until_ms = MAX(held_until_ms, ?) WHERE node_id = ?", now + hold, nodeId);
  return true;
}

/**
 * An accepted commit ends the node's run of failures, and its hold, unless
 * the node is distrusted: a lie's hold runs out or is released (docs/protocol.md §14).
 */
function attemptSucceeded(sql: SqlStorage, nodeId: string): void {
  sql.exec(`UPDATE nodes SET ${SUCCEEDED} WHERE node_id = ? AND consecutive_failures > 0`, nodeId);
}

/**
 * What an accepted commit sets (`attemptSucceeded`): no run of failures, and
 * no hold for one, but a distrusted node's hold stands.
 */
const SUCCEEDED = `consecutive_failures = 0,
  held_until_ms = CASE WHEN consecutive_failures > 0 AND distrusted IS NULL THEN 0 ELSE held_until_ms END`;

/** A result a quorum agreed with: one more verified result in the node's run, and in its latest verdicts. */
function validResult(sql: SqlStorage, nodeId: string): void {
  const node = sql.exec<{ verdicts: string }>("SELECT verdicts FROM nodes WHERE node_id = ?", nodeId).toArray()[0];
  if (!node) return;
  sql.exec(
    `UPDATE nodes SET valid_results = valid_results + 1, consecutive_valid = consecutive_valid + 1, verdicts = ?
     WHERE node_id = ?`,
    recordVerdict(node.verdicts, false).window,
    nodeId,
  );
}

/**
 * A result that lost its quorum, or (with `lie` saying how) evidence that
 * lied: counted on the node, ending its run of valid results. A lie, a
 * verdict lost while the node was trusted to run tasks alone, or
 * LOST_VERDICTS_LIMIT lost among its latest verdicts distrusts the node:
 * held back (docs/protocol.md §13) and never again trusted with a task alone until an
 * operator releases it. The caller counts it as a failed attempt too.
 * False for a node with no record here.
 */
function invalidResult(sql: SqlStorage, now: number, nodeId: string, lie: string | null): boolean {
  const node = sql
    .exec<{ verdicts: string; distrusted: string | null; consecutive_failures: number; consecutive_valid: number }>(
      "SELECT verdicts, distrusted, consecutive_failures, consecutive_valid FROM nodes WHERE node_id = ?",
      nodeId,
    )
    .toArray()[0];
  if (!node) return false;
  const recorded = lie === null ? recordVerdict(node.verdicts, true) : { window: node.verdicts, distrust: true };
  const { window } = recorded;
  // Outvoted while trusted with tasks alone, it was wrong where nothing
  // checked it either: once is enough (an honest node is never outvoted).
  const caughtWhileTrusted = lie === null && trusted(node);
  const distrust = recorded.distrust || caughtWhileTrusted;
  sql.exec(
    "UPDATE nodes SET invalid_results = invalid_results + 1, consecutive_valid = 0, verdicts = ? WHERE node_id = ?",
    window,
    nodeId,
  );
  if (!distrust || node.distrusted !== null) return true;
  const lost = [...window].filter((v) => v === "i").length;
  const reason =
    lie ??
    (recorded.distrust
      ? `lost ${lost} of its last ${window.length} verdicts`
      : `outvoted while trusted to run tasks alone (after ${node.consecutive_valid} verified results in a row)`);
  const hold = holdBackMs(Math.max(node.consecutive_failures + 1, HOLD_AFTER_FAILURES));
  sql.exec(
    "UPDATE nodes SET distrusted = ?, held_until_ms = MAX(held_until_ms, ?) WHERE node_id = ?",
    reason,
    now + hold,
    nodeId,
  );
  return true;
}
