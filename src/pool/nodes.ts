// The node registry: registrations, liveness, and the claim-time node view
// the placement gate reads. Registration JSON is stored as parsed (defaults
// applied), so the view is built from exactly what the node declared.

import type { NodeHeartbeat, NodeRegistration } from "../protocol/nodes";
import { claimView, type NodeView } from "../rules/placement";

/**
 * A node is online for this long after any request it makes (SPEC §5), and
 * for as long as it holds a live lease: the agent sends no node heartbeats
 * while a task runs, and a node that dies loses its lease at the deadline.
 */
export const ONLINE_WINDOW_MS = 15_000;

type NodeRow = {
  node_id: string;
  registration: string;
  status: string;
  last_heartbeat_ms: number; // the node's last request of any kind
  live_until_ms: number; // online while now < this
  accepted_tasks: number;
};

/** Replaces the registration; the accepted-task count survives re-registering. */
export function registerNode(sql: SqlStorage, now: number, registration: NodeRegistration): void {
  sql.exec(
    `INSERT INTO nodes (node_id, registration, status, last_heartbeat_ms, live_until_ms) VALUES (?, ?, 'online', ?, ?)
     ON CONFLICT (node_id) DO UPDATE SET registration = excluded.registration,
       status = 'online', last_heartbeat_ms = excluded.last_heartbeat_ms,
       live_until_ms = MAX(live_until_ms, excluded.live_until_ms)`,
    registration.node_id,
    JSON.stringify(registration),
    now,
    now + ONLINE_WINDOW_MS,
  );
}

/** Records a heartbeat on the coordinator's clock; false for an unknown node. */
export function heartbeatNode(sql: SqlStorage, now: number, nodeId: string, hb: NodeHeartbeat): boolean {
  const row = findNode(sql, nodeId);
  if (!row) return false;
  let registration = row.registration;
  if (hb.pools != null) {
    // A non-null list replaces the team pools wholesale; null says nothing.
    const reg = JSON.parse(registration) as NodeRegistration;
    reg.capabilities = { ...reg.capabilities, pools: [...hb.pools] };
    registration = JSON.stringify(reg);
  }
  sql.exec("UPDATE nodes SET status = ?, registration = ? WHERE node_id = ?", hb.status, registration, nodeId);
  seen(sql, now, nodeId);
  return true;
}

/**
 * A request from `nodeId` proves it alive (SPEC §5): online for the window
 * from now, or until `holdsUntil` (the deadline of a lease it was just
 * issued or renewed), whichever is later. Unknown nodes are left alone.
 */
export function seen(sql: SqlStorage, now: number, nodeId: string, holdsUntil = 0): void {
  sql.exec(
    "UPDATE nodes SET last_heartbeat_ms = ?, live_until_ms = MAX(live_until_ms, ?, ?) WHERE node_id = ?",
    now,
    now + ONLINE_WINDOW_MS,
    holdsUntil,
    nodeId,
  );
}

export function findNode(sql: SqlStorage, nodeId: string): NodeRow | undefined {
  return sql.exec<NodeRow>("SELECT * FROM nodes WHERE node_id = ?", nodeId).toArray()[0];
}

/** The claim-time view of SPEC §4, built from the stored registration. */
export function nodeView(registrationJson: string): NodeView {
  return claimView(JSON.parse(registrationJson) as NodeRegistration);
}

/** GET /nodes: registration fields plus liveness, sorted by node_id. */
export function listNodes(sql: SqlStorage, now: number) {
  return sql
    .exec<NodeRow>("SELECT * FROM nodes ORDER BY node_id")
    .toArray()
    .map((row) => {
      const age = Math.max(0, now - row.last_heartbeat_ms);
      return {
        ...(JSON.parse(row.registration) as NodeRegistration),
        status: row.status,
        online: row.live_until_ms > now,
        last_heartbeat_age_s: Math.round(age / 100) / 10,
        accepted_tasks: row.accepted_tasks,
      };
    });
}
