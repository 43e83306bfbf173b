// The pool object's node calls (docs/protocol.md §4, §9, §13): registration,
// heartbeats, team-pool assignment and releasing a held-back node, each one
// change (src/pool/pool.ts). A change to the node itself may make work
// eligible for it (docs/protocol.md §5): its held claim gets another try, as when work
// appears.
//
// `assignedBy`: the operator that sent a registration or heartbeat for the
// node (delegation, docs/protocol.md §9), whose pools in it are that operator's
// assignment; null when the node sent it itself (or nobody is authenticated).

import { LIST_PAGE_MAX_BYTES } from "../../protocol/limits";
import type { NodeHeartbeat, NodeRegistration } from "../../protocol/nodes";
import type { Pool } from "../pool";
import { endHoldBack } from "../scheduling/scheduling";
import { assignPools, heartbeatNode as beat, nodeKnown, listNodes as nodesPage, registerNode } from "./registry";

export async function register(pool: Pool, registration: NodeRegistration, assignedBy: string | null): Promise<void> {
  const nodeId = registration.node_id;
  await pool.change((now) => registerNode(pool.sql, now, registration, assignedBy), { wakesNode: nodeId });
  pool.log({ event: "NODE_REGISTERED", node_id: nodeId });
  if (assignedBy !== null) logAssignment(pool, nodeId, registration.capabilities.pools, assignedBy);
}

export async function heartbeatNode(pool: Pool, nodeId: string, heartbeat: NodeHeartbeat, assignedBy: string | null) {
  // Liveness is not a state change worth a log line every few seconds per
  // node: only a node with a held claim, or a claim in flight to another
  // shard (whose passport a drain must reach), needs the whole change.
  if (!pool.held.holds(nodeId) && !pool.sent.has(nodeId)) {
    const now = Date.now();
    return pool.transaction(() => beat(pool.sql, now, nodeId, heartbeat, assignedBy));
  }
  return pool.change((now) => beat(pool.sql, now, nodeId, heartbeat, assignedBy), { wakesNode: nodeId });
}

/**
 * An operator assigns a node's team pools (docs/protocol.md §9), replacing any
 * earlier assignment; its held claim gets another try at once. False:
 * the pool does not know the node.
 */
export async function assignNodePools(pool: Pool, nodeId: string, pools: string[], operator: string): Promise<boolean> {
  const assigned = await pool.change(
    (now) => {
      if (!nodeKnown(pool.sql, nodeId)) return false;
      assignPools(pool.sql, now, nodeId, pools, operator);
      return true;
    },
    { wakesNode: nodeId },
  );
  if (assigned) logAssignment(pool, nodeId, pools, operator);
  return assigned;
}

function logAssignment(pool: Pool, nodeId: string, pools: readonly string[], operator: string): void {
  pool.log({ event: "NODE_POOLS_ASSIGNED", node_id: nodeId, pools: JSON.stringify(pools), operator });
}

/** Lets a held-back node claim again (docs/protocol.md §13); its waiting claim tries at once. False: unknown node. */
export function releaseNode(pool: Pool, nodeId: string): Promise<boolean> {
  return pool.change(() => endHoldBack(pool.sql, nodeId), { wakesNode: nodeId });
}

/**
 * One page of this shard's GET /nodes, after the node `after` (null: the
 * first page); `maxBytes` is what is left of a page walked over shards
 * (src/routes/context.ts).
 */
export function listNodes(pool: Pool, after: string | null, limit: number, maxBytes = LIST_PAGE_MAX_BYTES) {
  const { owners, membership } = pool.settings;
  return nodesPage(pool.sql, Date.now(), after, limit, Math.min(maxBytes, LIST_PAGE_MAX_BYTES), owners, membership);
}
