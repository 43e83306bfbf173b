// The dashboard's enrolment pages (docs/protocol.md §9): enrolled credentials, active
// first, and the enrolment requests of the last day. No user code or token
// is ever read here: node tokens read the dashboard too.

import type { DashboardCredential, DashboardEnrolmentRequest } from "../../protocol/dashboard";
import { CODE_RECORD_MS } from "../../rules/enrolment";
import { iso } from "../ledger/events";
import { clip } from "./clipping";

type CredentialRow = {
  node_id: string;
  owner: string | null;
  hostname: string;
  platform: string;
  approved_by: string;
  approved_ms: number;
  issued_ms: number;
  revoked_by: string | null;
  revoked_ms: number | null;
};

type RequestRow = {
  node_id: string;
  hostname: string;
  platform: string;
  requested_ms: number;
  expires_ms: number;
  state: "pending" | "approved" | "denied" | "redeemed";
  decided_by: string | null;
  decided_ms: number | null;
};

/**
 * Enrolled credentials (one row per node ever enrolled) and the requests
 * of the last day (at most MAX_PENDING_CODES per code lifetime), each page
 * by an index or a sort over a table as small as the fleet.
 */
export function enrolmentPages(sql: SqlStorage, now: number, limit: number) {
  const credentialCounts = sql
    .exec<{ total: number; revoked: number }>(
      "SELECT COUNT(*) AS total, COUNT(revoked_ms) AS revoked FROM node_credentials",
    )
    .one();
  const since = now - CODE_RECORD_MS;
  const requestCounts = sql
    .exec<{ total: number; pending: number }>(
      "SELECT COUNT(*) AS total, TOTAL(state = 'pending' AND expires_ms > ?) AS pending FROM device_codes WHERE expires_ms > ?",
      now,
      since,
    )
    .one();
  const credentials = sql
    .exec<CredentialRow>(
      `SELECT node_id, owner, hostname, platform, approved_by, approved_ms, issued_ms, revoked_by, revoked_ms
       FROM node_credentials ORDER BY revoked_ms IS NOT NULL, issued_ms DESC, node_id LIMIT ?`,
      limit,
    )
    .toArray()
    .map(
      (r): DashboardCredential => ({
        node_id: clip(r.node_id),
        owner: clip(r.owner ?? r.node_id),
        hostname: clip(r.hostname),
        platform: clip(r.platform),
        approved_by: clip(r.approved_by),
        approved_at: iso(r.approved_ms),
        issued_at: iso(r.issued_ms),
        revoked_by: r.revoked_by === null ? null : clip(r.revoked_by),
        revoked_at: r.revoked_ms === null ? null : iso(r.revoked_ms),
      }),
    );
  // A code's lifetime is fixed, so newest expiry is newest request (the device_codes_expiry index).
  const requests = sql
    .exec<RequestRow>(
      `SELECT node_id, hostname, platform, requested_ms, expires_ms, state, decided_by, decided_ms
       FROM device_codes WHERE expires_ms > ? ORDER BY expires_ms DESC LIMIT ?`,
      since,
      limit,
    )
    .toArray()
    .map(
      (r): DashboardEnrolmentRequest => ({
        node_id: clip(r.node_id),
        hostname: clip(r.hostname),
        platform: clip(r.platform),
        requested_at: iso(r.requested_ms),
        expires_at: iso(r.expires_ms),
        // An undecided or unredeemed code that ran out is simply expired.
        state: (r.state === "pending" || r.state === "approved") && r.expires_ms <= now ? "expired" : r.state,
        decided_by: r.decided_by === null ? null : clip(r.decided_by),
        decided_at: r.decided_ms === null ? null : iso(r.decided_ms),
      }),
    );
  return {
    counts: {
      enrolled: credentialCounts.total - credentialCounts.revoked,
      revoked: credentialCounts.revoked,
      pending_requests: requestCounts.pending,
    },
    pages: {
      credentials: { items: credentials, more: credentialCounts.total - credentials.length },
      requests: { items: requests, more: requestCounts.total - requests.length },
    },
  };
}
