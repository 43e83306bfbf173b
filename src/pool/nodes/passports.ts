// Passports (docs/sharding.md §8.1): what another shard needs of a node
// whose home is elsewhere to gate, own and replicate its claims, as the home
// had it at one version. The home builds one from its rows (passportOf);
// the shard holding the work keeps the newest it was given (upsertPassport).
// The home stays the owner of the node's record: a passport is a copy, and
// a copy never overwrites a newer one; a copy no longer needed is forgotten
// (forgetPassports). Every function runs inside the caller's transaction.

import { ownerOf } from "../../rules/owners";
import { OPEN_STATES_SQL } from "../../rules/task-states";
import { trusted } from "../../rules/verification";
import { passportsSeen } from "./liveness";

/**
 * A node as its home has it at `version` (nodes.passport_version): its
 * stored registration (JSON), status, hold, trust for adaptive
 * replication, distrust, owner, assigned team pools (JSON, null when none)
 * and enrolled credential's hash (null for configured tokens and open mode,
 * and once revoked).
 */
export type Passport = {
  nodeId: string;
  home: number;
  version: number;
  registration: string;
  status: string;
  heldUntilMs: number;
  trusted: boolean;
  distrusted: string | null;
  owner: string;
  assignedPools: string | null;
  credentialSha256: string | null;
  revoked: boolean;
};

type HomeRow = {
  version: number;
  registration: string;
  status: string;
  held_until_ms: number;
  consecutive_valid: number;
  distrusted: string | null;
  assigned_pools: string | null;
  token_sha256: string | null;
  credential_owner: string | null;
  revoked_ms: number | null;
  has_credential: number;
  home: number | null;
};

/**
 * The node's passport at its home, or null when it is not registered here.
 * `owners` are the configured owners (FLASHML_NODE_OWNERS): the owner is
 * decided here, once, so every shard records the same one on its leases.
 */
export function passportOf(sql: SqlStorage, nodeId: string, owners: ReadonlyMap<string, string>): Passport | null {
  const row = sql
    .exec<HomeRow>(
      `SELECT n.passport_version AS version, n.registration, n.status, n.held_until_ms, n.consecutive_valid,
         n.distrusted, ap.pools AS assigned_pools, c.token_sha256, c.owner AS credential_owner, c.revoked_ms,
         c.node_id IS NOT NULL AS has_credential, (SELECT shard FROM shard_self) AS home
       FROM nodes n LEFT JOIN node_credentials c ON c.node_id = n.node_id
         LEFT JOIN node_pools ap ON ap.node_id = n.node_id
       WHERE n.node_id = ?`,
      nodeId,
    )
    .toArray()[0];
  if (!row) return null;
  // A revoked credential keeps its row (who revoked it, when) but neither its hash nor its owner.
  const live = row.has_credential === 1 && row.revoked_ms === null;
  return {
    nodeId,
    home: row.home ?? 0,
    version: row.version,
    registration: row.registration,
    status: row.status,
    heldUntilMs: row.held_until_ms,
    trusted: trusted(row),
    distrusted: row.distrusted,
    owner: ownerOf(nodeId, owners, live ? row.credential_owner : null),
    assignedPools: row.assigned_pools,
    credentialSha256: live ? row.token_sha256 : null,
    revoked: row.has_credential === 1 && row.revoked_ms !== null,
  };
}

/**
 * Keeps `passport` as this shard's copy of its node, unless the copy held
 * is newer: an older passport, late or replayed, never overwrites a newer
 * one. True when it is now the copy held. The copy held already, as most
 * forwarded claims bring it, is not written again (docs/protocol.md §16).
 */
export function upsertPassport(sql: SqlStorage, passport: Passport, now: number): boolean {
  const p = passport;
  const written =
    sql
      .exec(
        `INSERT INTO passports (node_id, home, version, registration, status, held_until_ms, trusted, distrusted, owner,
           assigned_pools, credential_sha256, revoked, received_ms, last_request_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (node_id) DO UPDATE SET home = excluded.home, version = excluded.version,
           registration = excluded.registration, status = excluded.status, held_until_ms = excluded.held_until_ms,
           trusted = excluded.trusted, distrusted = excluded.distrusted, owner = excluded.owner,
           assigned_pools = excluded.assigned_pools, credential_sha256 = excluded.credential_sha256,
           revoked = excluded.revoked, received_ms = excluded.received_ms
         WHERE excluded.version > passports.version OR (excluded.version = passports.version
           AND (passports.home, passports.registration, passports.status, passports.held_until_ms, passports.trusted,
             passports.distrusted, passports.owner, passports.assigned_pools, passports.credential_sha256, passports.revoked)
           IS NOT (excluded.home, excluded.registration, excluded.status, excluded.held_until_ms, excluded.trusted,
             excluded.distrusted, excluded.owner, excluded.assigned_pools, excluded.credential_sha256, excluded.revoked))
         RETURNING 1`,
        p.nodeId,
        p.home,
        p.version,
        p.registration,
        p.status,
        p.heldUntilMs,
        p.trusted ? 1 : 0,
        p.distrusted,
        p.owner,
        p.assignedPools,
        p.credentialSha256,
        p.revoked ? 1 : 0,
        now,
        now,
      )
      .toArray().length > 0;
  return (
    written ||
    sql.exec("SELECT 1 FROM passports WHERE node_id = ? AND version = ?", p.nodeId, p.version).toArray().length > 0
  );
}

/**
 * How long a passport outlives its node's last contact here: a request
 * here, or a claim forwarded, a change pushed or a cut-off sent here by its
 * home (docs/protocol.md §12). A day: every forward and push of an older
 * copy has long expired by then (a ticket is refused past its notAfter,
 * seconds away, before its passport is kept), so a forgotten copy is never
 * replaced by an older one that was already in flight.
 */
export const PASSPORT_RETENTION_MS = 24 * 60 * 60 * 1000;
/** Passports looked at per alarm run (src/pool/alarm/housekeeping.ts): forgetting never holds claims up for long. */
export const FORGET_PAGE = 100;

/**
 * Walks the passports a page at a time, after rowid `after`, and forgets
 * those of nodes not seen here for PASSPORT_RETENTION_MS that nothing here
 * still needs: no live lease of the node (its end tells the home, schema
 * step 20), no replica it holds or ran of a task still open here (the
 * verdict goes home, src/pool/nodes/outcomes.ts, and so does each change of the
 * task as a replicating one, schema step 22), no claim of it `held` here.
 * The outbox is addressed by shard and needs no passport. A node seen again gets a
 * new passport, whole, with its next forwarded claim. Answers the rowid the
 * next page starts after (0 once the walk has wrapped).
 */
export function forgetPassports(
  sql: SqlStorage,
  now: number,
  after: number,
  held: (nodeId: string) => boolean,
): { forgotten: string[]; next: number } {
  // CASE, not AND: the lease lookups run only for a copy past retention.
  const page = sql
    .exec<{ id: number; node_id: string; stale: number }>(
      `SELECT p.rowid AS id, p.node_id, CASE
           WHEN MAX(p.last_request_ms, p.received_ms) > ?2 THEN 0
           WHEN EXISTS (SELECT 1 FROM leases l WHERE l.node_id = p.node_id AND l.status = 'live') THEN 0
           WHEN EXISTS (SELECT 1 FROM leases r JOIN tasks t ON t.seq = r.task_seq
             WHERE r.node_id = p.node_id AND r.replica > 0 AND t.state IN ${OPEN_STATES_SQL}) THEN 0
           ELSE 1 END AS stale
         FROM passports p WHERE p.rowid > ?1 ORDER BY p.rowid LIMIT ${FORGET_PAGE}`,
      after,
      now - PASSPORT_RETENTION_MS,
    )
    .toArray();
  const forgotten = page.filter((p) => p.stale === 1 && !held(p.node_id)).map((p) => p.node_id);
  if (forgotten.length > 0)
    sql.exec("DELETE FROM passports WHERE node_id IN (SELECT value FROM json_each(?))", JSON.stringify(forgotten));
  for (const nodeId of forgotten) passportsSeen(sql).delete(nodeId);
  return { forgotten, next: page.length < FORGET_PAGE ? 0 : page[page.length - 1]!.id };
}
