// Enrolment as the pool object runs it (docs/protocol.md §9 "Enrolled machines"): a
// machine asks for a device code, an operator decides, the machine redeems
// the approved code for its credential exactly once, and an operator may
// revoke it. Hashing happens before each transaction (it awaits); the
// records are in src/pool/enrolment.ts, one synchronous transaction each.

import type { DeviceCodeRequest } from "../protocol/device";
import { base64url, DEVICE_CODE_TTL_MS, enrolledToken, sha256Hex, userCodeFrom } from "../rules/enrolment";
import {
  approvedNode,
  decideCode,
  denyAllCodes,
  pendingCodes,
  redeemCode,
  requestCode,
  revokeCredential as revokeRecord,
} from "./enrolment";
import { cutOff, cutOffElsewhere } from "./held-claims";
import type { Pool } from "./pool";

/** A new device code for a machine asking to join; "full" / "source_full" past the pool's / the source's pending limit. */
export async function requestDeviceCode(
  pool: Pool,
  request: DeviceCodeRequest,
  from: string | null,
): Promise<
  { ok: true; deviceCode: string; userCode: string; expiresMs: number } | { ok: false; reason: "full" | "source_full" }
> {
  // A drawn user code already in the records (a day's worth) is drawn again.
  for (let draw = 0; draw < 5; draw++) {
    const userCode = userCodeFrom(crypto.getRandomValues(new Uint8Array(32)));
    if (userCode === null) continue;
    const deviceCode = base64url(crypto.getRandomValues(new Uint8Array(32)));
    const deviceCodeSha256 = await sha256Hex(deviceCode);
    const now = Date.now();
    const result = pool.transaction(() =>
      requestCode(pool.sql, now, {
        deviceCodeSha256,
        userCode,
        nodeId: request.node_id,
        hostname: request.hostname,
        platform: request.platform,
        from,
      }),
    );
    if (result === "full" || result === "source_full") return { ok: false, reason: result };
    if (result === "ok") {
      pool.log({ event: "ENROLMENT_REQUESTED", node_id: request.node_id });
      return { ok: true, deviceCode, userCode, expiresMs: now + DEVICE_CODE_TTL_MS };
    }
  }
  throw new Error("no unused user code in 5 draws");
}

/** The token an approved code enrols, exactly once; null for every other code alike. */
export async function redeemDeviceCode(
  pool: Pool,
  deviceCode: string,
): Promise<{ token: string; node_id: string } | null> {
  const deviceCodeSha256 = await sha256Hex(deviceCode);
  const nodeId = approvedNode(pool.sql, Date.now(), deviceCodeSha256);
  if (nodeId === null) return null;
  const token = enrolledToken(nodeId, crypto.getRandomValues(new Uint8Array(32)));
  const tokenSha256 = await sha256Hex(token);
  // Checked again in the transaction: a concurrent redeem of the same code loses here.
  // Pools named at approval become the node's assignment here: its held claim, if any, tries again.
  const redeemed = await pool.change(
    (now) => {
      const result = redeemCode(pool.sql, now, deviceCodeSha256, nodeId, tokenSha256);
      if (result?.replaced) cutOff(pool, now, nodeId, `the credential of ${nodeId} was replaced`);
      return result;
    },
    { wakesNode: nodeId },
  );
  if (!redeemed) return null;
  if (redeemed.replaced) await cutOffElsewhere(pool, nodeId, `the credential of ${nodeId} was replaced`);
  pool.log({ event: "CREDENTIAL_ISSUED", node_id: nodeId, replaced: redeemed.replaced });
  return { token, node_id: nodeId };
}

/**
 * An operator approves or denies a pending code, an approval naming the
 * machine's owner (null: the node itself) and its team pools (null: none
 * named, an earlier assignment stands); null: no such pending code.
 */
export function decideDeviceCode(
  pool: Pool,
  userCode: string,
  decision: "approved" | "denied",
  operator: string,
  owner: string | null,
  pools: string[] | null,
): string | null {
  const now = Date.now();
  const nodeId = pool.transaction(() => decideCode(pool.sql, now, userCode, decision, operator, owner, pools));
  if (nodeId !== null) {
    const event = decision === "approved" ? "ENROLMENT_APPROVED" : "ENROLMENT_DENIED";
    pool.log({ event, node_id: nodeId, operator, ...(owner === null ? {} : { owner }) });
  }
  return nodeId;
}

/** An operator denies every pending code at once (one source flooding the pool); the nodes they named. */
export function denyAllDeviceCodes(pool: Pool, operator: string): string[] {
  const now = Date.now();
  const nodeIds = pool.transaction(() => denyAllCodes(pool.sql, now, operator));
  for (const nodeId of nodeIds) pool.log({ event: "ENROLMENT_DENIED", node_id: nodeId, operator });
  return nodeIds;
}

/** The codes waiting for an operator. */
export function pendingDeviceCodes(pool: Pool) {
  return pendingCodes(pool.sql, Date.now());
}

/**
 * Revokes a node's enrolled credential: its next request is refused, and
 * its machine is cut off (`cutOff`). False: it had none.
 */
export async function revokeCredential(pool: Pool, nodeId: string, operator: string): Promise<boolean> {
  const revoked = await pool.change((now) => {
    if (!revokeRecord(pool.sql, now, nodeId, operator)) return false;
    cutOff(pool, now, nodeId, `the credential of ${nodeId} was revoked`);
    return true;
  });
  if (revoked) await cutOffElsewhere(pool, nodeId, `the credential of ${nodeId} was revoked`);
  if (revoked) pool.log({ event: "CREDENTIAL_REVOKED", node_id: nodeId, operator });
  return revoked;
}
