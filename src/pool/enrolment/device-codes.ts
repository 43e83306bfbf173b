// Enrolment as the pool object runs it (docs/protocol.md §9 "Enrolled machines"): a
// machine asks for a device code, an operator decides, the machine redeems
// the approved code for its credential exactly once, and an operator may
// revoke it. Hashing happens before each transaction (it awaits); the
// records are in src/pool/enrolment/credentials.ts, one synchronous transaction each.

import type { DeviceCodeRequest, PendingEnrolment } from "../../protocol/device";
import { base64url, DEVICE_CODE_TTL_MS, enrolledToken, sha256Hex, userCodeFrom } from "../../rules/enrolment";
import type { Locale } from "../../rules/homing";
import { cutOff, cutOffElsewhere } from "../claims/held-claims";
import type { IssuedCredential } from "../contract";
import { enrolledHome, otherCandidates, peerAtHome } from "../nodes/homes";
import type { Pool } from "../pool";
import {
  approvedCode,
  decideCode,
  denyAllCodes,
  installCredentialRow,
  markRedeemed,
  pendingCodes,
  requestCode,
  revokeCredential as revokeRecord,
} from "./credentials";

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

/**
 * Device codes whose credential is being installed at a node's home on
 * another shard: a second redeem of one loses, as a concurrent redeem here
 * loses in its transaction. In memory: a restart ends the redeems too.
 */
const redeeming = new Set<string>();

/**
 * The token an approved code enrols, exactly once; null for every other
 * code alike. The code is redeemed here (device codes live in shard 0);
 * the credential is installed at the node's home (docs/sharding.md §8.4),
 * here in the same transaction, or at another shard first and the code
 * marked after: a restart between the two leaves the code approved, and
 * the agent's next poll installs a new credential over the one never
 * delivered.
 */
export async function redeemDeviceCode(
  pool: Pool,
  deviceCode: string,
  locale: Locale | null = null,
): Promise<{ token: string; node_id: string } | null> {
  const deviceCodeSha256 = await sha256Hex(deviceCode);
  const read = Date.now();
  const code = approvedCode(pool.sql, read, deviceCodeSha256);
  if (code === null || redeeming.has(deviceCodeSha256)) return null;
  const { nodeId, approval } = code;
  const home = enrolledHome(pool, nodeId, locale);
  if (home !== pool.shard) redeeming.add(deviceCodeSha256);
  try {
    const token = enrolledToken(nodeId, crypto.getRandomValues(new Uint8Array(32)));
    const credential = { ...approval, tokenSha256: await sha256Hex(token) };
    let installed: { replaced: boolean } | null;
    if (home === pool.shard) {
      // Checked again in the transaction: a concurrent redeem of the same code loses here.
      const redeem = (now: number) => markRedeemed(pool.sql, now, deviceCodeSha256, nodeId) !== null;
      installed = await installCredential(pool, nodeId, credential, redeem);
    } else {
      installed = await peerAtHome(pool, home, (peer) => peer.installCredential(nodeId, credential, locale));
      // Unexpired as of the read: the credential is installed by now.
      if (pool.transaction(() => markRedeemed(pool.sql, read, deviceCodeSha256, nodeId)) === null) return null;
    }
    if (installed === null) return null;
    pool.log({ event: "CREDENTIAL_ISSUED", node_id: nodeId, replaced: installed.replaced });
    return { token, node_id: nodeId };
  } finally {
    redeeming.delete(deviceCodeSha256);
  }
}

/**
 * Installs a node's credential here, its home, in one change with
 * `redeem` (the code's mark, when the code is redeemed here too; false:
 * nothing installed, null answered). A credential it replaces is cut off
 * here and on every shard. Pools named at approval become the node's
 * assignment: its held claim, if any, tries again.
 */
export async function installCredential(
  pool: Pool,
  nodeId: string,
  credential: IssuedCredential,
  redeem: (now: number) => boolean = () => true,
): Promise<{ replaced: boolean } | null> {
  const installed = await pool.change(
    (now) => {
      if (!redeem(now)) return null;
      const result = installCredentialRow(pool.sql, now, nodeId, credential);
      if (result.replaced) cutOff(pool, now, nodeId, `the credential of ${nodeId} was replaced`);
      return result;
    },
    { wakesNode: nodeId },
  );
  if (installed?.replaced) await cutOffElsewhere(pool, nodeId, `the credential of ${nodeId} was replaced`);
  return installed;
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

/**
 * The codes waiting for an operator, each saying whether its approval would
 * replace an enrolled credential: in a pool of shards the credential is at
 * the node's home, so the shards each node could live on are asked.
 */
export async function pendingDeviceCodes(pool: Pool): Promise<PendingEnrolment[]> {
  const codes = pendingCodes(pool.sql, Date.now());
  if (pool.shards === 1) return codes;
  const asked = new Map<number, string[]>();
  for (const code of codes)
    if (!code.replaces_credential)
      for (const k of otherCandidates(pool, code.node_id)) asked.set(k, [...(asked.get(k) ?? []), code.node_id]);
  const answers = await Promise.all([...asked].map(([k, nodeIds]) => pool.peers.at(k).enrolledAmong(nodeIds)));
  const enrolled = new Set(answers.flat());
  return codes.map((code) => (enrolled.has(code.node_id) ? { ...code, replaces_credential: true } : code));
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
