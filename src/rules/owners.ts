// Owners of nodes (docs/protocol.md §14 "Independent replicas"), pure: replicas of one
// task run on nodes of distinct owners, so one person's many machines
// cannot form a quorum alone. A node's owner is what configuration says
// (FLASHML_NODE_OWNERS), else what the operator named when approving its
// enrolment, else the node itself. No I/O, no Cloudflare imports; a
// refusal never names a token.

import { MAX_OWNER_LENGTH } from "../protocol/limits";
import { nameValueList } from "./setting-lists";

/** Why an owner name is refused, or null when it is one. */
export function ownerProblem(owner: string): string | null {
  if (owner.trim() === "") return "an owner must not be empty";
  if (owner.length > MAX_OWNER_LENGTH) return `an owner is at most ${MAX_OWNER_LENGTH} characters`;
  return null;
}

/**
 * `node_id:owner,…` → node id to owner, or a message naming the setting and
 * the entry. A node listed twice is refused: which owner would count?
 */
export function parseNodeOwners(raw: string | undefined): ReadonlyMap<string, string> | string {
  const owners = new Map<string, string>();
  const list = nameValueList(raw);
  if (!Array.isArray(list)) return `FLASHML_NODE_OWNERS entry ${list.bad} is not node_id:owner`;
  for (const [i, { name: node, value: owner }] of list.entries()) {
    const problem = ownerProblem(owner);
    if (problem !== null) return `FLASHML_NODE_OWNERS entry ${i + 1}: ${problem}`;
    if (owners.has(node)) return `FLASHML_NODE_OWNERS entry ${i + 1} names node ${node} a second time`;
    owners.set(node, owner);
  }
  return owners;
}

/**
 * A node's owner: the configured one, else the one its enrolment was
 * approved with (`enrolled`, null for none), else the node id itself.
 */
export function ownerOf(nodeId: string, configured: ReadonlyMap<string, string>, enrolled: string | null): string {
  return configured.get(nodeId) ?? enrolled ?? nodeId;
}
