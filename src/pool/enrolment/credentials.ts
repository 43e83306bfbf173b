// Device-code enrolment in the pool (docs/protocol.md §9 "Enrolled machines"): the
// codes waiting for an operator, and the credentials of enrolled nodes.
// Only hashes of device codes and tokens are stored; a token exists in
// plain text once, in the answer that redeems its code. Every function runs
// inside the caller's transaction.

import type { PendingEnrolment } from "../../protocol/device";
import { constantTimeEqual } from "../../rules/auth";
import {
  CODE_RECORD_MS,
  codeSource,
  DEVICE_CODE_TTL_MS,
  MAX_PENDING_CODES,
  MAX_PENDING_CODES_PER_SOURCE,
} from "../../rules/enrolment";
import type { CredentialProof, IssuedCredential } from "../contract";
import { iso } from "../ledger/events";
import { assignPools } from "../nodes/registry";

export type CodeRequest = {
  deviceCodeSha256: string;
  userCode: string;
  nodeId: string;
  hostname: string;
  platform: string;
  from: string | null;
};

type CodeRow = {
  user_code: string;
  node_id: string;
  hostname: string;
  platform: string;
  requested_ms: number;
  requested_from: string | null;
  expires_ms: number;
};

/**
 * Records a code waiting for an operator, after forgetting records past
 * their keeping time (a bounded batch). "full": the pool already holds
 * MAX_PENDING_CODES pending codes; "source_full": the request's source
 * (`codeSource`) holds MAX_PENDING_CODES_PER_SOURCE; "taken": the user code
 * is in use (draw another).
 */
export function requestCode(sql: SqlStorage, now: number, r: CodeRequest): "ok" | "full" | "source_full" | "taken" {
  sql.exec(
    "DELETE FROM device_codes WHERE rowid IN (SELECT rowid FROM device_codes WHERE expires_ms < ? ORDER BY expires_ms LIMIT 100)",
    now - CODE_RECORD_MS,
  );
  const pending = sql
    .exec<{ n: number }>("SELECT COUNT(*) AS n FROM device_codes WHERE state = 'pending' AND expires_ms > ?", now)
    .one().n;
  if (pending >= MAX_PENDING_CODES) return "full";
  const source = codeSource(r.from);
  const fromSource = sql
    .exec<{ n: number }>(
      "SELECT COUNT(*) AS n FROM device_codes WHERE source = ? AND state = 'pending' AND expires_ms > ?",
      source,
      now,
    )
    .one().n;
  if (fromSource >= MAX_PENDING_CODES_PER_SOURCE) return "source_full";
  if (sql.exec("SELECT 1 FROM device_codes WHERE user_code = ?", r.userCode).toArray().length > 0) return "taken";
  sql.exec(
    `INSERT INTO device_codes (device_code_sha256, user_code, node_id, hostname, platform, requested_ms, requested_from, expires_ms, source)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    r.deviceCodeSha256,
    r.userCode,
    r.nodeId,
    r.hostname,
    r.platform,
    now,
    r.from,
    now + DEVICE_CODE_TTL_MS,
    source,
  );
  return "ok";
}

/** An approved code's approval, as its credential keeps it. */
export type Approval = Omit<IssuedCredential, "tokenSha256">;

type ApprovalRow = {
  node_id: string;
  hostname: string;
  platform: string;
  decided_by: string;
  decided_ms: number;
  owner: string | null;
  pools: string | null;
};

const APPROVAL = "node_id, hostname, platform, decided_by, decided_ms, owner, pools";

function approvalOf(row: ApprovalRow): Approval {
  return {
    hostname: row.hostname,
    platform: row.platform,
    approvedBy: row.decided_by,
    approvedMs: row.decided_ms,
    owner: row.owner,
    pools: row.pools === null ? null : (JSON.parse(row.pools) as string[]),
  };
}

/** The node an approved, unexpired, unredeemed code enrols, and its approval; null for every other code alike. */
export function approvedCode(
  sql: SqlStorage,
  now: number,
  deviceCodeSha256: string,
): { nodeId: string; approval: Approval } | null {
  const row = sql
    .exec<ApprovalRow>(
      `SELECT ${APPROVAL} FROM device_codes WHERE device_code_sha256 = ? AND state = 'approved' AND expires_ms > ?`,
      deviceCodeSha256,
      now,
    )
    .toArray()[0];
  return row ? { nodeId: row.node_id, approval: approvalOf(row) } : null;
}

/**
 * Marks an approved code redeemed: once only, and only while it is still
 * approved, unexpired at `now` and for `nodeId`. Null: not redeemed.
 */
export function markRedeemed(sql: SqlStorage, now: number, deviceCodeSha256: string, nodeId: string): Approval | null {
  const row = sql
    .exec<ApprovalRow>(
      `UPDATE device_codes SET state = 'redeemed'
       WHERE device_code_sha256 = ? AND state = 'approved' AND expires_ms > ? AND node_id = ?
       RETURNING ${APPROVAL}`,
      deviceCodeSha256,
      now,
      nodeId,
    )
    .toArray()[0];
  return row ? approvalOf(row) : null;
}

/**
 * Installs a node's credential at its home. It replaces the node's earlier
 * one, revoked or not; `replaced` says an unrevoked one stops here. The
 * pools the approval named become the approving operator's assignment, as
 * of the approval.
 */
export function installCredentialRow(
  sql: SqlStorage,
  now: number,
  nodeId: string,
  credential: IssuedCredential,
): { replaced: boolean } {
  const replaced =
    sql.exec("SELECT 1 FROM node_credentials WHERE node_id = ? AND revoked_ms IS NULL", nodeId).toArray().length > 0;
  sql.exec(
    `INSERT INTO node_credentials (node_id, token_sha256, hostname, platform, approved_by, approved_ms, issued_ms, owner)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (node_id) DO UPDATE SET token_sha256 = excluded.token_sha256, hostname = excluded.hostname,
       platform = excluded.platform, approved_by = excluded.approved_by, approved_ms = excluded.approved_ms,
       issued_ms = excluded.issued_ms, owner = excluded.owner, revoked_by = NULL, revoked_ms = NULL`,
    nodeId,
    credential.tokenSha256,
    credential.hostname,
    credential.platform,
    credential.approvedBy,
    credential.approvedMs,
    now,
    credential.owner,
  );
  if (credential.pools !== null)
    assignPools(sql, credential.approvedMs, nodeId, credential.pools, credential.approvedBy);
  return { replaced };
}

/**
 * An operator's decision on a pending, unexpired code; the node it names,
 * or null (404) for any other code. An approval may name the machine's
 * owner (docs/protocol.md §14), which its credential keeps (null: the node itself),
 * and its team pools (docs/protocol.md §9), assigned when the code is redeemed (null:
 * none named).
 */
export function decideCode(
  sql: SqlStorage,
  now: number,
  userCode: string,
  decision: "approved" | "denied",
  operator: string,
  owner: string | null = null,
  pools: readonly string[] | null = null,
): string | null {
  const row = sql
    .exec<{ node_id: string }>(
      `UPDATE device_codes SET state = ?, decided_by = ?, decided_ms = ?, owner = ?, pools = ?
       WHERE user_code = ? AND state = 'pending' AND expires_ms > ? RETURNING node_id`,
      decision,
      operator,
      now,
      decision === "approved" ? owner : null,
      decision === "approved" && pools !== null ? JSON.stringify([...pools]) : null,
      userCode,
      now,
    )
    .toArray()[0];
  return row?.node_id ?? null;
}

/** An operator denies every pending, unexpired code at once; the nodes they named, oldest first. */
export function denyAllCodes(sql: SqlStorage, now: number, operator: string): string[] {
  return sql
    .exec<{ node_id: string; requested_ms: number }>(
      `UPDATE device_codes SET state = 'denied', decided_by = ?, decided_ms = ?
       WHERE state = 'pending' AND expires_ms > ? RETURNING node_id, requested_ms`,
      operator,
      now,
      now,
    )
    .toArray()
    .sort((a, b) => a.requested_ms - b.requested_ms)
    .map((r) => r.node_id);
}

/** The codes waiting for an operator, oldest first (at most MAX_PENDING_CODES by construction). */
export function pendingCodes(sql: SqlStorage, now: number): PendingEnrolment[] {
  return sql
    .exec<CodeRow & { enrolled: number }>(
      `SELECT d.user_code, d.node_id, d.hostname, d.platform, d.requested_ms, d.requested_from, d.expires_ms,
              EXISTS (SELECT 1 FROM node_credentials c WHERE c.node_id = d.node_id AND c.revoked_ms IS NULL) AS enrolled
       FROM device_codes d WHERE d.state = 'pending' AND d.expires_ms > ? ORDER BY d.requested_ms, d.user_code`,
      now,
    )
    .toArray()
    .map((r) => ({
      user_code: r.user_code,
      node_id: r.node_id,
      hostname: r.hostname,
      platform: r.platform,
      requested_at: iso(r.requested_ms),
      requested_from: r.requested_from,
      expires_at: iso(r.expires_ms),
      replaces_credential: r.enrolled === 1,
    }));
}

/** Those of `nodeIds` with an enrolled, unrevoked credential here, their home. */
export function enrolledAmong(sql: SqlStorage, nodeIds: readonly string[]): string[] {
  return sql
    .exec<{ node_id: string }>(
      "SELECT node_id FROM node_credentials WHERE node_id IN (SELECT value FROM json_each(?)) AND revoked_ms IS NULL",
      JSON.stringify(nodeIds),
    )
    .toArray()
    .map((r) => r.node_id);
}

/** The owner a node's enrolled, unrevoked credential was approved with (docs/protocol.md §14); null without one. */
export function enrolledOwner(sql: SqlStorage, nodeId: string): string | null {
  const row = sql
    .exec<{ owner: string | null }>(
      "SELECT owner FROM node_credentials WHERE node_id = ? AND revoked_ms IS NULL",
      nodeId,
    )
    .toArray()[0];
  return row?.owner ?? null;
}

/**
 * The hash of the node's enrolled, unrevoked credential; null without one
 * (configured tokens, open mode, revoked). A claim at S > 1 reads it when
 * its session is checked and again before it leases or holds, since it
 * awaits between the two (docs/sharding.md §8.4).
 */
export function liveCredential(sql: SqlStorage, nodeId: string): string | null {
  return (
    sql
      .exec<{ token_sha256: string }>(
        "SELECT token_sha256 FROM node_credentials WHERE node_id = ? AND revoked_ms IS NULL",
        nodeId,
      )
      .toArray()[0]?.token_sha256 ?? null
  );
}

/** Whether the proof matches the node's enrolled, unrevoked credential (compared in constant time). */
export function credentialValid(sql: SqlStorage, proof: CredentialProof): boolean {
  const live = liveCredential(sql, proof.nodeId);
  return live !== null && constantTimeEqual(proof.tokenSha256, live);
}

/**
 * Revokes a node's enrolled credential, keeping who revoked it and when
 * (the dashboard lists it) but not its hash; false when it has none.
 */
export function revokeCredential(sql: SqlStorage, now: number, nodeId: string, operator: string): boolean {
  return (
    sql
      .exec(
        `UPDATE node_credentials SET token_sha256 = '', revoked_by = ?, revoked_ms = ?
         WHERE node_id = ? AND revoked_ms IS NULL RETURNING 1`,
        operator,
        now,
        nodeId,
      )
      .toArray().length > 0
  );
}
