// A claim forwarded by the node's home (docs/sharding.md §5.1, §13.1): the
// home checked the node and chose this shard for its work; this shard leases
// by today's claim, with the claimant from the passport the ticket carries.
// Object to object only: no route of the Worker reaches it and no node's
// session offers it, since a ticket is the home's word about a node.
//
// Idempotent by the ticket's claim id: a home that lost the answer to a
// reset asks again with the same id and gets the same lease, never a second.
// Never issues a lease once the ticket's notAfter has passed here, so no
// lease goes to a held claim its home has already answered. A claim for one
// job is held here, where that job's tasks and its cancel are (its home
// waits on the answer): the job's work wakes it, its close answers it.

import { isLiveLease } from "../../rules/leases";
import type { ClaimTicket, ForwardedClaimResult } from "../contract";
import { claim, claimPolicy, findLease } from "../leases/leases";
import { leaseRecord, type WireLease } from "../leases/rows";
import { toldHome } from "../nodes/liveness";
import { type Passport, upsertPassport } from "../nodes/passports";
import type { Pool } from "../pool";
import { countGrant } from "../shards/exchange";
import { replicaTask } from "../verification/replicas-elsewhere";
import { type ClaimResult, NOTHING, worthWaiting } from "./claim-result";

/** Serves a forwarded claim in one change, and holds one for a job that has nothing yet (see the header). */
export async function claimForwarded(pool: Pool, ticket: ClaimTicket): Promise<ForwardedClaimResult> {
  const result = await pool.change((now) => {
    // Its home restarted and the claim is being served again (src/pool/claims/lost-claims.ts).
    if (pool.lost.has(ticket.claimId, now)) return NOTHING;
    const policy = claimPolicy(pool.settings);
    return forwardedClaim(
      pool.sql,
      now,
      ticket,
      (sql, nodeId, jobId, claimId) => {
        const claimed = claim(sql, now, nodeId, jobId, policy, {
          claimId,
          mint: pool.mintHex,
          turn: ticket.turn,
          idleElsewhere: pool.summary.idleElsewhere(now),
        });
        if (claimed.ok) countGrant(pool, claimed);
        return claimed;
      },
      pool.link.built?.version ?? 0,
    );
  });
  const now = Date.now();
  // Held no later than the home may still take a lease (its hold end + 1 s, less that second here).
  const waitMs = Math.min(ticket.holdMs ?? 0, ticket.notAfter - NOT_AFTER_SLACK_MS - now);
  if (result.ok || !worthWaiting(result) || ticket.jobId === null || waitMs <= 0) return result;
  // A lost claim waits for nothing; nor does one already answered here (a retried ticket): its lease has ended.
  if (pool.lost.has(ticket.claimId, now) || leaseOfClaim(pool.sql, ticket.claimId) !== undefined) return NOTHING;
  return pool.held.hold(ticket.passport.nodeId, ticket.jobId, now, waitMs, { parked: true, claimId: ticket.claimId });
}

/**
 * The far half of the home's `recoverLost` (docs/sharding.md §13.1): claim
 * `claimId` of `nodeId` is lost with its home's memory. Its tickets still on
 * their way lease nothing here, a claim of it parked here is answered with
 * nothing, and the live lease it got here is answered again, as a retried
 * ticket's would be; the home gives it to the node.
 */
export function claimLost(pool: Pool, claimId: string, nodeId: string): Promise<ForwardedClaimResult> {
  const now = Date.now();
  pool.lost.add(claimId, now);
  pool.held.releaseClaim(claimId);
  return pool.change((now) => {
    const row = leaseOfClaim(pool.sql, claimId);
    return row !== undefined && isLiveLease(row, now) && row.node_id === nodeId
      ? placed(pool.sql, leaseRecord(row), row.task_seq, pool.link.built?.version ?? 0)
      : NOTHING;
  });
}

/**
 * A home's held claims forwarded here in one call (docs/sharding.md §5.3),
 * served in the order given, each in its own change: its oldest claims
 * first, as one call per claim could not promise. None is held here (a
 * claim for one job waits at the job's shard one by one), so a ticket's
 * hold is dropped, never its job.
 */
export function claimsForwarded(pool: Pool, tickets: readonly ClaimTicket[]): Promise<ForwardedClaimResult[]> {
  return Promise.all(tickets.map(({ holdMs: _, ...ticket }) => claimForwarded(pool, ticket)));
}

/**
 * The node's home changed it while a forward of its claim is here
 * (src/pool/claims/sent-passports.ts): the new passport is kept, and the node's
 * claims parked here are tried again by it at once (answered if it may no
 * longer claim at all). Newer-wins, like a ticket's.
 */
export function passportChanged(pool: Pool, passport: Passport): Promise<void> {
  return pool.change(
    (now) => {
      upsertPassport(pool.sql, passport, now);
    },
    { wakesNode: passport.nodeId },
  );
}

/** How long past the home's answer this shard may still lease (docs/sharding.md §5.3): clock skew between objects. */
export const NOT_AFTER_SLACK_MS = 1_000;

/**
 * The forwarded claim's transaction: refused past `notAfter`; the passport
 * kept (an older one never overwrites a newer); the lease already issued
 * for this claim id, if it is still live; else `claimAs`, today's claim
 * with the claim id on its lease. `digestVersion`: the version of this
 * shard's digest built last (0: none yet), which a replica's task is told
 * home with.
 */
export function forwardedClaim(
  sql: SqlStorage,
  now: number,
  ticket: ClaimTicket,
  claimAs: (sql: SqlStorage, nodeId: string, jobId: string | null, claimId: string) => ClaimResult,
  digestVersion = 0,
): ForwardedClaimResult {
  if (now > ticket.notAfter) return NOTHING;
  const { passport } = ticket;
  upsertPassport(sql, passport, now);
  const earlier = leaseOfClaim(sql, ticket.claimId);
  if (earlier !== undefined) {
    // The claim was served before its answer was lost; once that lease has ended, it gets nothing more.
    return isLiveLease(earlier, now) && earlier.node_id === passport.nodeId
      ? placed(sql, leaseRecord(earlier), earlier.task_seq, digestVersion)
      : NOTHING;
  }
  const result = claimAs(sql, passport.nodeId, ticket.jobId, ticket.claimId);
  return result.ok ? placed(sql, result.lease, leaseTask(sql, result.lease.lease_id), digestVersion) : result;
}

/** The lease issued here for claim `claimId`, live or not. */
function leaseOfClaim(sql: SqlStorage, claimId: string) {
  const issued = sql.exec<{ lease_id: string }>("SELECT lease_id FROM leases WHERE claim_id = ?", claimId).toArray()[0];
  return issued === undefined ? undefined : findLease(sql, issued.lease_id);
}

const leaseTask = (sql: SqlStorage, leaseId: string): number =>
  sql.exec<{ task_seq: number }>("SELECT task_seq FROM leases WHERE lease_id = ?", leaseId).one().task_seq;

/**
 * A lease's answer with its job's tenant and priority, for the home's own
 * count of grants, and a replica's task, for the home's count of the work
 * the node may take here (src/pool/verification/replicas-elsewhere.ts). The home learns
 * the deadline from it (docs/sharding.md §8.3).
 */
function placed(sql: SqlStorage, lease: WireLease, taskSeq: number, digestVersion: number): ForwardedClaimResult {
  toldHome(sql, lease.node_id, Date.parse(lease.deadline));
  const job = sql
    .exec<{ tenant: string; priority: number }>(
      "SELECT tenant, priority FROM job_queues WHERE job_id = ?",
      lease.job_id,
    )
    .toArray()[0];
  const replica = replicaTask(sql, taskSeq, digestVersion);
  return {
    ok: true,
    lease,
    ...(job ? { tenant: job.tenant, priority: job.priority } : {}),
    ...(replica ? { replica } : {}),
  };
}
