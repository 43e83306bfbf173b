// The node registry: registrations, liveness, and the claim-time node view
// the placement gate reads. Registration JSON is stored as parsed (defaults
// applied), so the view is built from exactly what the node declared.

import { type NodeHeartbeat, type NodeRegistration, registrationFits } from "../../protocol/nodes";
import { fillPage } from "../../protocol/paging";
import { ownerOf } from "../../rules/owners";
import { type Membership, type NodeView, nodeView } from "../../rules/placement";
import { trusted } from "../../rules/verification";
import { iso } from "../ledger/events";
import { LIVENESS_LEAD_MS, lastRequestOf, lastRequests, seenHere, writeSeen } from "./liveness";
import { ACCEPTING_STATUS, admittingSql, isHeldBack, isOnline, liveDeadlineSql, ONLINE_WINDOW_MS } from "./states";

// The online window is the "online" rule's (src/pool/nodes/states.ts), which a
// passport's reads too; still exported here, where the shipped schema
// steps' notes name it.
export { ONLINE_WINDOW_MS } from "./states";

type NodeRow = {
  node_id: string;
  registration: string;
  status: string;
  last_heartbeat_ms: number; // the node's last request of any kind
  live_until_ms: number; // online while now < this
  accepted_tasks: number;
  consecutive_failures: number; // failed attempts since its last accepted commit
  held_until_ms: number; // held back from claiming while now < this (docs/protocol.md §13)
  valid_results: number; // replicas in a quorum's agreement (docs/protocol.md §14)
  invalid_results: number; // replicas outvoted, and evidence that lied
  consecutive_valid: number; // verified results since its last invalid one or abandoned replica
  verdicts: string; // its latest verdicts, oldest first: "v" valid, "i" lost (docs/protocol.md §14)
  distrusted: string | null; // why it may no longer run a task alone, until an operator releases it
};

/**
 * Replaces the registration; the accepted-task count and the operator's
 * pool assignment survive re-registering. `assignedBy`: the operator that
 * registered for the node (docs/protocol.md §9, delegation), whose word its pools are.
 */
export function registerNode(
  sql: SqlStorage,
  now: number,
  registration: NodeRegistration,
  assignedBy: string | null = null,
): void {
  sql.exec(
    `INSERT INTO nodes (node_id, registration, status, last_heartbeat_ms, live_until_ms) VALUES (?, ?, '${ACCEPTING_STATUS}', ?, ?)
     ON CONFLICT (node_id) DO UPDATE SET registration = excluded.registration,
       status = '${ACCEPTING_STATUS}', last_heartbeat_ms = excluded.last_heartbeat_ms,
       live_until_ms = MAX(live_until_ms, excluded.live_until_ms)`,
    registration.node_id,
    JSON.stringify(registration),
    now,
    // Written anyway, so ahead (LIVENESS_LEAD_MS), as `seen` writes it.
    now + ONLINE_WINDOW_MS + LIVENESS_LEAD_MS,
  );
  lastRequests(sql).saw(registration.node_id, now);
  if (assignedBy !== null) assignPools(sql, now, registration.node_id, registration.capabilities.pools, assignedBy);
}

/** The team pools an operator assigned a node (docs/protocol.md §9): which, by whom, when. */
export type PoolAssignment = { pools: string[]; assigned_by: string; assigned_ms: number };

/** Replaces the node's assigned team pools wholesale, recording which operator did and when. */
export function assignPools(
  sql: SqlStorage,
  now: number,
  nodeId: string,
  pools: readonly string[],
  operator: string,
): void {
  sql.exec(
    `INSERT INTO node_pools (node_id, pools, assigned_by, assigned_ms) VALUES (?, ?, ?, ?)
     ON CONFLICT (node_id) DO UPDATE SET pools = excluded.pools, assigned_by = excluded.assigned_by,
       assigned_ms = excluded.assigned_ms`,
    nodeId,
    JSON.stringify([...pools]),
    operator,
    now,
  );
}

/** The node's assignment, or null when no operator assigned it pools. */
export function poolAssignment(sql: SqlStorage, nodeId: string): PoolAssignment | null {
  const row = sql
    .exec<{ pools: string; assigned_by: string; assigned_ms: number }>(
      "SELECT pools, assigned_by, assigned_ms FROM node_pools WHERE node_id = ?",
      nodeId,
    )
    .toArray()[0];
  return row
    ? { pools: JSON.parse(row.pools) as string[], assigned_by: row.assigned_by, assigned_ms: row.assigned_ms }
    : null;
}

/** Whether the pool knows the node: registered, or holding an enrolled credential not yet used to register. */
export function nodeKnown(sql: SqlStorage, nodeId: string): boolean {
  return (
    sql
      .exec(
        `SELECT 1 FROM nodes WHERE node_id = ?1
         UNION ALL SELECT 1 FROM node_credentials WHERE node_id = ?1 AND revoked_ms IS NULL LIMIT 1`,
        nodeId,
      )
      .toArray().length > 0
  );
}

/** Why a node heartbeat changed nothing: an unknown node, or pools that would outgrow the registration's row. */
export type HeartbeatResult = { ok: true } | { ok: false; reason: "unknown" | "too_large" };

/**
 * Records a heartbeat on the coordinator's clock. A heartbeat whose `pools`
 * would grow the stored registration past its bound (docs/protocol.md §12) is refused
 * whole: no status, no pools, no liveness. Its pools are what the node
 * reports, unless an operator sent it for the node (`assignedBy`): then
 * they are that operator's assignment too.
 */
export function heartbeatNode(
  sql: SqlStorage,
  now: number,
  nodeId: string,
  hb: NodeHeartbeat,
  assignedBy: string | null = null,
): HeartbeatResult {
  const row = findNode(sql, nodeId);
  if (!row) return { ok: false, reason: "unknown" };
  let registration = row.registration;
  if (hb.pools != null) {
    // A non-null list replaces the team pools wholesale; null says nothing.
    const reg = JSON.parse(registration) as NodeRegistration;
    reg.capabilities = { ...reg.capabilities, pools: [...hb.pools] };
    if (!registrationFits(reg)) return { ok: false, reason: "too_large" };
    registration = JSON.stringify(reg);
  }
  // Most heartbeats change neither: a row rewritten unchanged is still a row billed (docs/protocol.md §16).
  if (hb.status !== row.status || registration !== row.registration)
    sql.exec("UPDATE nodes SET status = ?, registration = ? WHERE node_id = ?", hb.status, registration, nodeId);
  if (hb.pools != null && assignedBy !== null) assignPools(sql, now, nodeId, hb.pools, assignedBy);
  seen(sql, now, nodeId, 0, row.live_until_ms);
  return { ok: true };
}

/**
 * A request from `nodeId` proves it alive (docs/protocol.md §5): online for the window
 * from now, or until `holdsUntil` (the deadline of a lease it was just
 * issued), whichever is later; for a node with a passport here, its last
 * request here. Unknown nodes are left alone. True when the node's record
 * is here (its home). Soft (src/pool/nodes/liveness.ts): the row is written
 * only when it would say less than that, and then LIVENESS_LEAD_MS ahead.
 * `liveUntil` is the row's `live_until_ms` (null: no row here) when the
 * caller's transaction has just read it: one statement fewer per request.
 */
export function seen(
  sql: SqlStorage,
  now: number,
  nodeId: string,
  holdsUntil = 0,
  liveUntil: number | null = liveUntilOf(sql, nodeId),
): boolean {
  if (liveUntil !== null) {
    const needs = Math.max(now + ONLINE_WINDOW_MS, holdsUntil);
    if (liveUntil < needs)
      sql.exec(
        "UPDATE nodes SET last_heartbeat_ms = ?, live_until_ms = MAX(live_until_ms, ?) WHERE node_id = ?",
        now,
        needs + LIVENESS_LEAD_MS,
        nodeId,
      );
    lastRequests(sql).saw(nodeId, now);
    return true;
  }
  // A node whose home is another shard is alive here too (docs/sharding.md §8.3), its passport's row written
  // lazily (liveness.ts seenHere). Its home learns of it by its lease, and by the outcome a lease's end here
  // writes (schema step 20), sent once this change is durable.
  seenHere(sql, now, nodeId);
  return false;
}

/** The node's `live_until_ms` here; null when its record is not here. */
function liveUntilOf(sql: SqlStorage, nodeId: string): number | null {
  const row = sql
    .exec<{ live_until_ms: number }>("SELECT live_until_ms FROM nodes WHERE node_id = ?", nodeId)
    .toArray()[0];
  return row?.live_until_ms ?? null;
}

/**
 * A node homed here holds a live lease until `deadline`, renewed since its
 * row last said so: online until then (docs/protocol.md §5).
 */
export function holdsUntil(sql: SqlStorage, nodeId: string, deadline: number): void {
  sql.exec("UPDATE nodes SET live_until_ms = ?1 WHERE node_id = ?2 AND live_until_ms < ?1", deadline, nodeId);
}

/**
 * A lease of the node ended with no request from it (an expiry, a
 * revocation, a cancel): its row is written down at once to its last request plus the
 * window, or another live lease's deadline, whichever is later, as
 * `settleLiveness` would once due. A lease ended by its node's request
 * (commit, fail) writes nothing: the request was just seen, and the sweep
 * writes the row down once the node goes silent (docs/protocol.md §16).
 */
export function lostLease(sql: SqlStorage, nodeId: string): void {
  const at = lastRequests(sql).get(nodeId)?.at ?? 0;
  const exact = `MAX(MAX(last_heartbeat_ms, ?1) + ${ONLINE_WINDOW_MS},
    ${liveDeadlineSql("?2")})`;
  sql.exec(
    `UPDATE nodes SET last_heartbeat_ms = MAX(last_heartbeat_ms, ?1), live_until_ms = ${exact}
     WHERE node_id = ?2 AND live_until_ms > ${exact}`,
    at,
    nodeId,
  );
}

/**
 * Cancels the live leases `where` says (a condition on leases), which ends
 * them with no request from their nodes: each node's row is written down
 * (`lostLease`). A node homed at another shard has its last request here
 * written first, which the end tells its home (schema step 20).
 */
export function cancelLeases(sql: SqlStorage, where: string, ...bindings: SqlStorageValue[]): void {
  const live = sql.exec<{ node_id: string }>(
    `SELECT DISTINCT node_id FROM leases WHERE status = 'live' AND ${where}`,
    ...bindings,
  );
  writeSeen(
    sql,
    live.toArray().map((r) => r.node_id),
  );
  const ended = sql.exec<{ node_id: string }>(
    `UPDATE leases SET status = 'cancelled' WHERE status = 'live' AND ${where} RETURNING node_id`,
    ...bindings,
  );
  for (const nodeId of new Set(ended.toArray().map((r) => r.node_id))) lostLease(sql, nodeId);
}

/**
 * Writes down the rows of nodes gone silent, which `seen` wrote ahead: once
 * a node's last request is older than the window, and no live lease (here
 * or one another shard told of) keeps it online, its row says it is online
 * until that request + the window, as a lease's end makes it (schema step
 * 14). A node still holding a lease is online either way; its lease's end
 * writes its row exactly.
 */
export function settleLiveness(sql: SqlStorage, now: number): void {
  for (const [nodeId, { at, elsewhere }] of lastRequests(sql).takeDue(now)) {
    const exact = `MAX(?1 + ${ONLINE_WINDOW_MS}, ?3,
      ${liveDeadlineSql("?2")})`;
    sql.exec(
      `UPDATE nodes SET last_heartbeat_ms = MAX(last_heartbeat_ms, ?1), live_until_ms = ${exact}
       WHERE node_id = ?2 AND live_until_ms > ${exact} AND ${exact} <= ?4`,
      at,
      nodeId,
      elsewhere,
      now,
    );
  }
}

export function findNode(sql: SqlStorage, nodeId: string): NodeRow | undefined {
  return sql.exec<NodeRow>("SELECT * FROM nodes WHERE node_id = ?", nodeId).toArray()[0];
}

/**
 * What a claim knows of the claiming node: its stored registration, status,
 * hold, assigned team pools (node_pools.pools JSON, null when none), owner
 * (docs/protocol.md §14) and whether adaptive replication trusts it to run a task
 * alone (rules/verification.ts trusted()).
 */
export type ClaimantRow = {
  registration: string;
  status: string;
  held_until_ms: number;
  assigned_pools: string | null;
  owner: string;
  trusted: boolean;
  /** The node's row's, when its home is here; null for a passport. */
  live_until_ms: number | null;
};

/**
 * The claiming node as this shard knows it: its row, owner and pools in one
 * statement when its home is here; else the passport its home sent
 * (docs/sharding.md §5.1), whose owner and trust the home decided, while it
 * is admitting (src/pool/nodes/states.ts: never once the home revoked the
 * node's credential). `owners` are the configured ones
 * (FLASHML_NODE_OWNERS). Undefined: unknown here.
 */
export function claimant(
  sql: SqlStorage,
  nodeId: string,
  owners: ReadonlyMap<string, string>,
): ClaimantRow | undefined {
  type Home = NodeRow & { enrolled_owner: string | null; assigned_pools: string | null };
  const home = sql
    .exec<Home>(
      `SELECT n.*, c.owner AS enrolled_owner, ap.pools AS assigned_pools FROM nodes n
       LEFT JOIN node_credentials c ON c.node_id = n.node_id AND c.revoked_ms IS NULL ${ASSIGNED_POOLS}
       WHERE n.node_id = ?`,
      nodeId,
    )
    .toArray()[0];
  if (home) return { ...home, owner: ownerOf(nodeId, owners, home.enrolled_owner), trusted: trusted(home) };
  const foreign = sql
    .exec<Omit<ClaimantRow, "trusted" | "live_until_ms"> & { trusted: number }>(
      `SELECT registration, status, held_until_ms, assigned_pools, owner, trusted FROM passports
       WHERE node_id = ? AND ${admittingSql("")}`,
      nodeId,
    )
    .toArray()[0];
  return foreign && { ...foreign, trusted: foreign.trusted === 1, live_until_ms: null };
}

/**
 * The claim-time view of docs/protocol.md §4, built from the stored registration, its
 * team pools as `membership` says (`assignedJson`: node_pools.pools, null
 * when none were assigned). Every query that builds one joins node_pools
 * with ASSIGNED_POOLS.
 */
export function storedNodeView(
  registrationJson: string,
  membership: Membership,
  assignedJson: string | null,
): NodeView {
  const assigned = assignedJson === null ? null : (JSON.parse(assignedJson) as string[]);
  return nodeView(JSON.parse(registrationJson) as NodeRegistration, membership, assigned);
}

/** The join a node query adds for `storedNodeView`: `assigned_pools`, for nodes aliased `n`. */
export const ASSIGNED_POOLS = "LEFT JOIN node_pools ap ON ap.node_id = n.node_id";

/**
 * The team pools a node is a member of (docs/protocol.md §9, gate 6), as
 * GET /nodes and the dashboard show them: those it reports on an open
 * coordinator; when tokens are enforced, the operator's assignment
 * (`assignedJson`: node_pools.pools), none when there is none, whatever
 * the node reports.
 */
export function memberPools(
  reported: readonly string[] | undefined,
  membership: Membership,
  assignedJson: string | null,
): string[] {
  if (membership === "reported") return [...(reported ?? [])];
  return assignedJson === null ? [] : (JSON.parse(assignedJson) as string[]);
}

/**
 * One page of GET /nodes: registration fields plus liveness, sorted by
 * node_id, after the node `after` (from the first when null), at most
 * `limit` of them and fewer once the page's body passes `maxBytes`. `next`
 * is the node to continue after, null on the last page. Rows are read one
 * at a time through the primary key and stop being read once the page is full.
 * Each row names the node's owner (docs/protocol.md §14; `owners` are the configured ones),
 * and its `capabilities.pools` are the pools it is a member of as `membership` says (`memberPools`).
 */
export function listNodes(
  sql: SqlStorage,
  now: number,
  after: string | null,
  limit: number,
  maxBytes: number,
  owners: ReadonlyMap<string, string> = new Map(),
  membership: Membership = "reported",
) {
  const withOwner = `SELECT n.*, c.owner AS enrolled_owner, ap.pools AS assigned_pools FROM nodes n
    LEFT JOIN node_credentials c ON c.node_id = n.node_id AND c.revoked_ms IS NULL ${ASSIGNED_POOLS}`;
  type Row = NodeRow & { enrolled_owner: string | null; assigned_pools: string | null };
  // No text sorts before '', but a node_id may be '': the first page has no bound.
  const rows =
    after === null
      ? sql.exec<Row>(`${withOwner} ORDER BY n.node_id LIMIT ?`, limit)
      : sql.exec<Row>(`${withOwner} WHERE n.node_id > ? ORDER BY n.node_id LIMIT ?`, after, limit);
  const { items, last } = fillPage(rows, maxBytes, (row) => {
    const age = Math.max(0, now - lastRequestOf(sql, row.node_id, row.last_heartbeat_ms));
    const registration = JSON.parse(row.registration) as NodeRegistration;
    const pools = memberPools(registration.capabilities.pools, membership, row.assigned_pools);
    return {
      ...registration,
      capabilities: { ...registration.capabilities, pools },
      status: row.status,
      online: isOnline(row, now),
      last_heartbeat_age_s: Math.round(age / 100) / 10,
      accepted_tasks: row.accepted_tasks,
      consecutive_failures: row.consecutive_failures,
      held_until: isHeldBack(row, now) ? iso(row.held_until_ms) : null,
      valid_results: row.valid_results,
      invalid_results: row.invalid_results,
      distrusted: row.distrusted,
      owner: ownerOf(row.node_id, owners, row.enrolled_owner),
    };
  });
  const more =
    last !== undefined && sql.exec("SELECT 1 FROM nodes WHERE node_id > ? LIMIT 1", last.node_id).toArray().length > 0;
  return { items, next: more ? last.node_id : null };
}
