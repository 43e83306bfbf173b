// Claims waiting for work (docs/protocol.md §5, long-poll): connections held open, not
// state. Losing them (eviction, restart) loses nothing: the Worker asks each
// again once (src/routes/leases.ts), then answers 204 and the agent claims
// again. The object's side is here (claiming or holding, waking held claims
// after a change, cutting a machine off), then the list itself,
// which keeps them in arrival order, answers each exactly once, and must
// never lease to a claim whose hold has ended: the object decides the hold's
// end itself, by its own clock, and a claim past it is answered with nothing
// instead of being tried. The Worker waits for that answer
// (src/routes/leases.ts), so no lease goes to a caller that already read 204.

import { newClaimId } from "../../protocol/ids";
import { arm } from "../alarm/housekeeping";
import type { ClaimIds, Turn } from "../contract";
import { liveCredential } from "../enrolment/credentials";
import { anyPending } from "../jobs/jobs";
import { claim, claimPolicy, endLeasesOf } from "../leases/leases";
import { type Passport, passportOf, upsertPassport } from "../nodes/passports";
import type { Pool } from "../pool";
import { countGrant } from "../shards/exchange";
import { type ClaimResult, worthWaiting } from "./claim-result";
import {
  type Credential,
  CUT_OFF,
  claimAcrossShards,
  holdElsewhere,
  jobElsewhere,
  type LocalClaim,
  recoverLost,
  releaseElsewhere,
} from "./forwarding";
import type { Answered, Refusals } from "./held-list";

// -- the object's side: claiming, holding, waking, ending ------------------

/**
 * Leases a task to the node, or, when nothing it may take is pending,
 * holds the claim up to `waitMs` (docs/protocol.md §5, long-poll): it is answered the
 * moment such a task appears, in the order the claims arrived, else with
 * nothing when the wait ends — by the object's clock, and never with a
 * lease after that. Each answer is its own claim transaction, so no task
 * is handed out twice. Held claims live in memory only: a restart drops
 * them, and the Worker asks a dropped claim again (`ClaimIds`).
 */
export async function claimOrHold(
  pool: Pool,
  nodeId: string,
  jobId: string | null,
  waitMs: number,
  ids: ClaimIds = { claimId: newClaimId() },
): Promise<ClaimResult> {
  // Its place among the held claims is its arrival here, not the end of its search, whose exchange may be slow.
  const arrived = pool.held.arrive();
  // At S > 1 the claim awaits before it leases or holds (a summary refresh, a forward), so the credential its
  // session was checked with in this turn is checked again then: a revocation answered meanwhile cuts it off (§9).
  const credential: Credential = pool.shards > 1 ? liveCredential(pool.sql, nodeId) : undefined;
  const cutOffSince = () => credential !== undefined && liveCredential(pool.sql, nodeId) !== credential;
  // A node that claims again has given up on its earlier claim (its client
  // timed out): answer that one now, so no lease goes to a closed connection.
  // A lease a forward of it still brings is the node's, and comes here.
  // One held at another shard is answered there first, so its answer comes now.
  const forwarded = pool.held.forwardOf(nodeId);
  pool.held.releaseNode(nodeId);
  if (forwarded !== null) void releaseElsewhere(pool, forwarded.shard, nodeId);
  const taken = forwarded === null ? null : await forwarded.forwarding;
  if (taken?.ok) return taken;
  // The Worker asks again a claim whose home restarted under it: what a forward of it left elsewhere is the node's.
  if (ids.lost !== undefined && pool.shards > 1) {
    const recovered = await recoverLost(pool, nodeId, ids.lost);
    if (recovered !== null) return cutOffSince() ? CUT_OFF : recovered;
  }
  const local: LocalClaim = (floor, turn) =>
    pool.change((now) => (cutOffSince() ? CUT_OFF : claimFor(pool, now, nodeId, jobId, { floor, turn })));
  const refused: Refusals = new Map();
  const result =
    pool.shards === 1
      ? await local()
      : await claimAcrossShards(pool, nodeId, jobId, local, { credential, claimId: ids.claimId }, refused);
  if (result.ok || !worthWaiting(result) || waitMs <= 0) return result;
  if (cutOffSince()) return CUT_OFF;
  // A claim for a job of another shard waits there, where the job's work and its close are.
  const elsewhere = jobId === null ? null : jobElsewhere(pool, jobId);
  if (elsewhere === null) {
    const held = pool.held.hold(nodeId, jobId, Date.now(), waitMs, { refused, arrived, claimId: ids.claimId });
    // A shard holding a claim ticks busy (nextTick): an alarm set while it was quiet, up to 5 s off, comes forward,
    // so the summary learns of the claim in one tick and pokes this shard when work appears elsewhere.
    if (pool.shards > 1 && pool.held.size === 1) void arm(pool);
    return held;
  }
  return pool.held.holdForwarded(
    nodeId,
    jobId,
    Date.now(),
    waitMs,
    elsewhere,
    () => holdElsewhere(pool, elsewhere, nodeId, jobId!, waitMs, { credential, claimId: ids.claimId }),
    { arrived, claimId: ids.claimId },
  );
}

/**
 * One claim transaction's body, by the settings' claim policy; `floor`, `turn`
 * and `claimId` (a parked claim's, on its lease) as claim's. Its grant counted.
 */
function claimFor(
  pool: Pool,
  now: number,
  nodeId: string,
  jobId: string | null,
  { floor, turn, claimId }: { floor?: number; turn?: Turn; claimId?: string } = {},
) {
  const result = claim(pool.sql, now, nodeId, jobId, claimPolicy(pool.settings), {
    mint: pool.mintHex,
    floor,
    turn,
    claimId,
    idleElsewhere: pool.summary.idleElsewhere(now), // 0 at one shard: its copy is empty
  });
  if (result.ok) countGrant(pool, result);
  return result;
}

/**
 * Gives every held claim (only `nodeId`'s when given), oldest first,
 * another try in one transaction. Those that got a lease, will never get
 * one, or whose hold has ended are taken off the list at once (so their
 * timers cannot answer them too) and returned to be answered once the
 * change is durable and its alarm armed.
 */
export function answerHeld(pool: Pool, nodeId: string | null): Answered {
  const now = Date.now();
  const answered = pool.transaction(() =>
    pool.held.retry(
      now,
      // A parked claim's lease names its claim: its home, restarted, finds it by that (§13.1).
      (held) => claimFor(pool, now, held.nodeId, held.jobId, held.parked ? { claimId: held.claimId } : {}),
      () => anyPending(pool.sql),
      nodeId,
    ),
  );
  pool.held.take(answered);
  return answered;
}

/**
 * A machine that can no longer commit (docs/protocol.md §9: its credential revoked or
 * replaced): its held claims are answered with nothing now — before the
 * change wakes held claims, so the tasks given back below cannot go to
 * them — and its live leases end as expiries do, requeued as worker
 * losses. Inside the change's transaction; answering a claim is only a
 * promise resolved, no await.
 */
export function cutOff(pool: Pool, now: number, nodeId: string, why: string): void {
  pool.held.releaseNode(nodeId);
  endLeasesOf(pool.sql, now, nodeId, why);
}

/**
 * At the node's home, after the change that cut it off: every other shard
 * of the pool cuts it off too (its claims held there, its leases there),
 * and keeps the revoked passport, at the version the revocation gave it,
 * before the operator is answered: a revoked machine's task goes to
 * another node now wherever it lives, and a forward of its claim still in
 * flight, carrying an older passport, is refused when it lands (an older
 * passport never replaces a newer one; a revoked one admits nothing). A
 * shard that cannot be reached keeps the lease to its deadline; the
 * credential is refused at home either way.
 */
export async function cutOffElsewhere(pool: Pool, nodeId: string, why: string): Promise<void> {
  if (pool.shards === 1) return;
  const passport = passportOf(pool.sql, nodeId, pool.settings.owners);
  await pool.peers.all(pool.peers.others(), async (peer) => peer.cutOffHere(nodeId, why, passport));
}

/** The far half of `cutOffElsewhere`, at one shard: one change. */
export function cutOffHere(pool: Pool, nodeId: string, why: string, passport: Passport | null): Promise<void> {
  return pool.change((now) => {
    cutOff(pool, now, nodeId, why);
    if (passport !== null) upsertPassport(pool.sql, passport, now);
    pool.sql.exec("UPDATE passports SET revoked = 1 WHERE node_id = ?", nodeId);
  });
}
