// The home's side of a claim in a pool of shards (docs/sharding.md §5.1,
// §5.3, §7.1). The home checks the node as it always has, then asks its
// copy of the summary whether another shard offers this node better work
// (a higher priority) or any work when it has none; if so it forwards the
// claim, object to object, with the node's passport, and the chosen shard's
// own scheduler picks the task (late binding: a stale offer costs a retry,
// never a wrong lease). Held claims are sent on the same way when a summary
// reply brings new work elsewhere. At one shard nothing here runs.

import { newClaimId } from "../../protocol/ids";
import { isObjectReset } from "../../rules/object-errors";
import { chooseShard, type Offer, shardOffers } from "../../rules/shard-choice";
import { shardOfId } from "../../rules/shard-ids";
import { allotment, pendingOf } from "../../rules/summary";
import type { ClaimTicket, ForwardedClaimResult, ReplicaTask, Turn } from "../contract";
import { admit } from "../leases/leases";
import { heardUntil, lastRequests } from "../nodes/liveness";
import { passportOf } from "../nodes/passports";
import { seen } from "../nodes/registry";
import type { Pool } from "../pool";
import { pendingHere } from "../shards/digest";
import { refresh } from "../shards/exchange";
import { hadOneShard } from "../shards/legacy-ids";
import { classesFor, replicaElsewhere } from "../verification/replicas-elsewhere";
import { type ClaimResult, NOTHING } from "./claim-result";
import { NOT_AFTER_SLACK_MS } from "./forwarded-claims";
import { gateOf, type NodeGate } from "./held-gates";
import type { HeldClaim, Refusals } from "./held-list";

/**
 * At most this many shards are asked per claim (§5.1), unless a shard not
 * yet asked offers a higher priority than the home's own work: priority
 * beats home-first, at up to S − 1 forwards for a claim whose offers are stale.
 */
export const MAX_FORWARDS = 2;
/**
 * How long a forward of a claim that is not held may still lease: the home
 * waits for its answer, so only a shard far behind (a busy object, a slow
 * machine) comes this late, and its lease then is lost to the node's client.
 */
export const UNHELD_NOT_AFTER_MS = 10_000;
/** A held claim with less than this left waits out its hold here (§5.3). */
export const MIN_FORWARD_MS = 500;

/**
 * The home's own claim transaction, floored at a priority (§7.1): no local
 * work below it; and serving first the tenant whose turn it is pool-wide (§7.2).
 */
export type LocalClaim = (floor?: number, turn?: Turn) => Promise<ClaimResult>;

/**
 * One claim at the node's home: served here when this shard's work is at
 * least as good as any other shard's offer, else forwarded to the shard
 * the summary picks (at most MAX_FORWARDS), else whatever is left here.
 * A claim restricted to a job goes where the job lives. `refused` gets the
 * shards a forward found nothing at, with their digest versions then.
 */
export async function claimAcrossShards(
  pool: Pool,
  nodeId: string,
  jobId: string | null,
  local: LocalClaim,
  claimed: Claimed,
  refused: Refusals = new Map(),
): Promise<ClaimResult> {
  if (jobId !== null) {
    const k = jobElsewhere(pool, jobId) ?? pool.shard;
    const there = k === pool.shard ? await local() : await forwardAdmitted(pool, k, nodeId, jobId, claimed);
    // An id from the pool's one-shard days names a shard by chance and lives in shard 0 (src/pool/shards/legacy-ids.ts).
    if (there.ok || there.reason !== "job_closed" || k === 0 || !hadOneShard(pool.sql)) return there;
    return pool.shard === 0 ? local() : forwardAdmitted(pool, 0, nodeId, jobId, claimed);
  }
  await refresh(pool);
  const node = gateOf(pool, nodeId);
  const offers = node === null ? [] : offersFor(pool, node, nodeId);
  if (node === null || offers.length === 0) return local();
  // The home's own work is weighed exactly, by the same pool-wide passes as the others' (§7.1, §7.2).
  let here: Offer | null = localOffer(pool, node);
  const tried = new Set<number>();
  for (let forwards = 0; ; ) {
    const choice = chooseShard(offers, pool.shard, here, tried, Math.random);
    if (choice.kind === "none") break;
    if (choice.kind === "local") {
      const result = await local(here!.priority, turnOf(here!));
      if (result.ok || result.reason !== "nothing") return result;
      here = null;
      continue;
    }
    const offered = offers.find((o) => o.shard === choice.shard)!;
    // Past MAX_FORWARDS a forward is owed only to a priority above this shard's own work, which the
    // fallback below would serve instead (§13 rule 1 over home-first); each shard is asked once at most.
    if (forwards >= MAX_FORWARDS && (here === null || offered.priority <= here.priority)) break;
    forwards++;
    const version = pool.summary.version(choice.shard);
    const result = await forward(pool, choice.shard, nodeId, null, Date.now() + UNHELD_NOT_AFTER_MS, {
      ...claimed,
      turn: turnOf(offered),
    });
    if (result.ok || result.reason !== "nothing") return result;
    tried.add(choice.shard);
    refused.set(choice.shard, version);
  }
  // Nothing better elsewhere after all: this shard's best.
  return local();
}

/**
 * The shard that holds a job this home does not, for a claim restricted to
 * it that waits: held there (src/pool/claims/forwarded-claims.ts). Null for a job of
 * this shard, and for a legacy id a one-shard past put in this one.
 */
export function jobElsewhere(pool: Pool, jobId: string): number | null {
  const k = shardOfId(pool.poolName, jobId, "", pool.shards).shard;
  return k === pool.shard ? null : k;
}

/**
 * A claim for one job held at the job's shard k for `holdMs`, its home's
 * claim waiting on the answer: a lease, nothing at the hold's end, or the
 * job's close.
 */
export function holdElsewhere(pool: Pool, k: number, nodeId: string, jobId: string, holdMs: number, claimed: Claimed) {
  return forward(pool, k, nodeId, jobId, Date.now() + holdMs + NOT_AFTER_SLACK_MS, { ...claimed, holdMs });
}

/** Answers a claim of `nodeId` held at shard k with nothing, now: the node claimed again. */
export async function releaseElsewhere(pool: Pool, k: number, nodeId: string): Promise<void> {
  try {
    await pool.peers.at(k).releaseForwarded(nodeId);
  } catch {
    // A shard that restarted holds no claims.
  }
}

/** A claim for one job on shard k, once the home has admitted the node. */
async function forwardAdmitted(
  pool: Pool,
  k: number,
  nodeId: string,
  jobId: string,
  claimed: Claimed,
): Promise<ClaimResult> {
  const admitted = await pool.change((now) => admit(pool.sql, now, nodeId, pool.settings.owners));
  if (!admitted.ok) return admitted;
  return forward(pool, k, nodeId, jobId, Date.now() + UNHELD_NOT_AFTER_MS, claimed);
}

/**
 * Gives the held claims, oldest first, a forward to a shard whose
 * advertised work their node may take, within this home's allotment there
 * (§6.3: its share of that shard's pending work by the held claims that
 * accept it, per version of that shard's digest), so a burst of work does
 * not draw every held claim in the pool; and not to a shard that had
 * nothing for the claim at the digest version the copy still holds. A
 * claim is answered by its forward's lease, or stays held. After a change
 * to a node (`changed`: its id, or null for every node) its claims'
 * refusals are forgotten: a shard may have refused the node as it was; and
 * one node's claim forwards outside the allotment, as a new claim would.
 */
export function forwardHeld(pool: Pool, changed?: string | null): void {
  const now = Date.now();
  const waiting = pool.held.waiting();
  for (const held of waiting) if (changed === null || changed === held.nodeId) held.refused.clear();
  const gates = new Map(
    waiting
      .filter((held) => held.jobId === null && held.endsAt - now >= MIN_FORWARD_MS)
      .map((held) => [held, gateOf(pool, held.nodeId)]),
  );
  const all = [...gates.values()];
  const left = (k: number) => allottedAt(pool, k, all, now);
  // One call per shard with its tickets in this order, so K serves them oldest first: calls on one
  // stub reach their object in no promised order (seen locally: a younger claim served first).
  const batches = new Map<number, Array<{ held: HeldClaim; ticket: ClaimTicket }>>();
  for (const [held, node] of gates) {
    if (node === null) continue;
    const own = held.nodeId === changed;
    const offers = offersFor(pool, node, held.nodeId).filter(
      (o) => (own || left(o.shard).left > 0) && held.refused.get(o.shard) !== pool.summary.version(o.shard),
    );
    const choice = chooseShard(offers, pool.shard, null, new Set(), Math.random);
    if (choice.kind !== "forward") continue;
    const offered = offers.find((o) => o.shard === choice.shard)!;
    const ticket = ticketFor(pool, held.nodeId, null, held.endsAt + NOT_AFTER_SLACK_MS, {
      claimId: held.claimId ?? newClaimId(),
      turn: turnOf(offered),
    });
    if (typeof ticket === "string") continue;
    left(choice.shard).left -= 1;
    const batch = batches.get(choice.shard) ?? [];
    batches.set(choice.shard, batch);
    batch.push({ held, ticket });
  }
  for (const [k, batch] of batches) {
    const version = pool.summary.version(k);
    const tickets = batch.map((b) => b.ticket);
    const notAfter = Math.min(...tickets.map((t) => t.notAfter));
    pool.forwardedClaims += tickets.length;
    const out = tickets.map((t) => pool.sent.add(t.passport.nodeId, k, t.passport.version));
    const answers = ask<ForwardedClaimResult[]>(
      async () => await pool.peers.at(k).claimsForwarded(tickets),
      notAfter,
      tickets.map(() => NOTHING),
    ).finally(() => {
      for (const end of out) end();
    });
    batch.forEach(({ held, ticket }, i) => {
      const forwarding = answers.then((results) => received(pool, k, ticket.passport.nodeId, results[i] ?? NOTHING));
      pool.held.forward(held, forwarding, k, version);
    });
  }
}

/**
 * What is left of this home's allotment at shard k for the digest version
 * of k its copy holds: set when first asked at that version, from each
 * class pending at k (§6.3): `gates` are the held claims here; the other
 * homes' counts are their digests' `held.nodesByClass`, or, for a class a
 * home has not counted (new to it, or not among its 16), all its held
 * claims: such a class draws too few forwards rather than too many.
 */
function allottedAt(pool: Pool, k: number, gates: NodeGate[], now: number): { version: number; left: number } {
  const version = pool.summary.version(k);
  const known = pool.allotments.get(k);
  if (known?.version === version) return known;
  let left = 0;
  for (const c of pool.summary.classes(now)) {
    if (c.shard !== k) continue;
    const pending = pendingOf(c.levels);
    const mine = gates.filter((accepts) => accepts?.(c.requirement)).length;
    if (mine === 0) continue;
    let others = 0;
    for (let h = 0; h < pool.shards; h++) {
      if (h === pool.shard || h === k) continue;
      const held = pool.summary.shard(h, now)?.held;
      if (held) others += held.nodesByClass?.[c.key] ?? held.claims;
    }
    left += allotment(pending, mine, mine + others);
  }
  const fresh = { version, left };
  pool.allotments.set(k, fresh);
  return fresh;
}

/**
 * Each other shard's best offer for this node, by the home's copy of the
 * summary, less the replicating tasks there the node may not take: those it
 * or its owner ran a replica of (src/pool/verification/replicas-elsewhere.ts), so whether
 * its claim is sent on never depends on whether its own task is being checked.
 */
function offersFor(pool: Pool, accepts: (requirement: string) => boolean, nodeId: string): Offer[] {
  const now = Date.now();
  const copied = pool.summary.classes(now);
  if (copied.length === 0) return [];
  const classes = classesFor(pool, nodeId, copied);
  return shardOffers(classes, accepts, pool.summary.tenants(now), passOf(pool), weightOf(pool), servedOf(pool));
}

/** This shard's own best offer for the node, from its tables, by the pool-wide passes. */
function localOffer(pool: Pool, accepts: (requirement: string) => boolean): Offer | null {
  const self = pool.shard;
  const { classes, tenants } = pendingHere(pool.sql);
  const offers = shardOffers(
    classes.map((c) => ({ shard: self, requirement: c.requirement, levels: c.levels })),
    accepts,
    tenants.map((t) => ({ shard: self, ...t })),
    passOf(pool),
    weightOf(pool),
    servedOf(pool),
  );
  return offers[0] ?? null;
}

/** The turn an offer names: its tenant at its priority. */
const turnOf = (offer: Offer): Turn | undefined =>
  offer.tenant === undefined ? undefined : { priority: offer.priority, tenant: offer.tenant };

const passOf = (pool: Pool) => (priority: number, tenant: string) => pool.summary.pass(priority, tenant);
const servedOf = (pool: Pool) => (shard: number, priority: number, tenant: string) =>
  pool.summary.served(shard, priority, tenant);
const weightOf = (pool: Pool) => (tenant: string) => pool.settings.tenantWeights.get(tenant) ?? 1;

/**
 * Forwards one claim to shard k with the node's passport (§5.1). A reset of
 * k mid-call is asked once more under the same claim id, which k answers
 * with the lease it may have issued, never a second one (§13.1); any other
 * failure is nothing from k. A lease is recorded at home: the node counts
 * as online while it holds it (§8.3).
 */
async function forward(
  pool: Pool,
  k: number,
  nodeId: string,
  jobId: string | null,
  notAfter: number,
  options: TicketOptions,
): Promise<ClaimResult> {
  const ticket = ticketFor(pool, nodeId, jobId, notAfter, options);
  if (ticket === "unregistered") return { ok: false, reason: "unregistered" };
  if (ticket === "cut_off") return CUT_OFF;
  pool.forwardedClaims += 1;
  const end = pool.sent.add(nodeId, k, ticket.passport.version);
  try {
    const result = await ask<ForwardedClaimResult>(
      async () => await pool.peers.at(k).claimForwarded(ticket),
      notAfter,
      NOTHING,
    );
    return received(pool, k, nodeId, result);
  } finally {
    end();
  }
}

/**
 * The credential a claim's session was checked with, read in that turn:
 * its hash, null for none (configured tokens, open mode), undefined when
 * the claim is no node's own (a held claim's forward: a revocation
 * releases those first).
 */
export type Credential = string | null | undefined;

/** What a claim's forwards carry of it: its id, and the credential its session was checked with. */
export type Claimed = { claimId: string; credential?: Credential };

type TicketOptions = Claimed & { holdMs?: number; turn?: Turn };

/** A claim whose machine was cut off while it was under way: answered at once, never held (§9). */
export const CUT_OFF: ClaimResult = { ok: false, reason: "not_accepting" };

/**
 * A forward's ticket: the claim's id and the node's passport; none for a
 * node no longer registered here, or for a revoked machine, or one
 * whose credential is no longer the one its claim was checked with (§9: no
 * lease after a revocation's answer, on any shard).
 */
function ticketFor(
  pool: Pool,
  nodeId: string,
  jobId: string | null,
  notAfter: number,
  { claimId, holdMs, turn, credential }: TicketOptions,
): ClaimTicket | "unregistered" | "cut_off" {
  const passport = passportOf(pool.sql, nodeId, pool.settings.owners);
  if (passport === null) return "unregistered";
  if (passport.revoked || (credential !== undefined && passport.credentialSha256 !== credential)) return "cut_off";
  return { claimId, passport, jobId, notAfter, ...(holdMs ? { holdMs } : {}), ...(turn ? { turn } : {}) };
}

/**
 * The Worker asks again a claim whose home (this shard, before it
 * restarted) lost it mid-forward (§13.1): every other shard drops what the
 * lost claim left there, and the live lease one of them issued it, if any,
 * is the node's answer now, as the lost home would have answered it. Null
 * when none did. A shard that cannot be reached holds only tickets that end
 * by their notAfter.
 */
export async function recoverLost(pool: Pool, nodeId: string, lost: string): Promise<ClaimResult | null> {
  const answers = await pool.peers.all(pool.peers.others(), async (peer) => await peer.claimLost(lost, nodeId));
  for (const answer of answers)
    if (answer.status === "fulfilled" && answer.value.ok) return received(pool, answer.shard, nodeId, answer.value);
  return null;
}

/**
 * After a change at home: each node with a forward in flight whose
 * passport the change moved has the new one pushed to the shards holding
 * those forwards, awaited, so the change's caller is answered only once
 * they have it (src/pool/claims/sent-passports.ts). There it re-admits the
 * node's claims parked for a job: answered when it may no longer claim,
 * and gated by the new copy when work comes back. A shard that cannot be
 * reached holds only a forward that ends by its ticket's notAfter.
 */
export async function pushPassports(pool: Pool): Promise<void> {
  if (pool.sent.size === 0) return;
  const versions = new Map(
    pool.sql
      .exec<{ node_id: string; version: number }>(
        "SELECT node_id, passport_version AS version FROM nodes WHERE node_id IN (SELECT value FROM json_each(?))",
        JSON.stringify(pool.sent.nodes()),
      )
      .toArray()
      .map((row) => [row.node_id, row.version]),
  );
  const pushes: Promise<unknown>[] = [];
  for (const { nodeId, shards } of pool.sent.outdated(versions)) {
    const passport = passportOf(pool.sql, nodeId, pool.settings.owners);
    if (passport === null) continue;
    for (const k of shards)
      pushes.push(ask(async () => await pool.peers.at(k).passportChanged(passport), Date.now() + 1_000, null));
  }
  // `ask` answers null for a push that fails: none rejects.
  await Promise.all(pushes);
}

/**
 * A call to another shard, asked once more on a fresh stub (a reset breaks
 * the old one for good) when the shard reset mid-call before `notAfter`;
 * `none` when it fails otherwise. Tickets keep their claim ids, so asking
 * again never leases twice.
 */
async function ask<T>(call: () => Promise<T>, notAfter: number, none: T): Promise<T> {
  try {
    return await call();
  } catch (e) {
    if (!isObjectReset(e) || Date.now() >= notAfter) return none;
    try {
      return await call();
    } catch {
      return none;
    }
  }
}

/**
 * Shard k's answer to a forward of `nodeId`'s claim, taken in at home: its
 * grant counted, its lease's deadline seen, a replica's task kept for the
 * node's offers. The node gets the lease and nothing else of the answer.
 */
function received(pool: Pool, k: number, nodeId: string, result: ForwardedClaimResult): ClaimResult {
  if (!result.ok) return result;
  if (result.tenant !== undefined && result.priority !== undefined)
    pool.summary.granted(result.priority, result.tenant, weightOf(pool)(result.tenant), k);
  tookLease(pool, k, nodeId, result);
  return { ok: true, lease: result.lease };
}

/** A lease shard k issued `nodeId`, recorded at its home (docs/sharding.md §8.3, §8.6); in one transaction. */
export function tookLease(
  pool: Pool,
  k: number,
  nodeId: string,
  { lease, replica }: { lease: { deadline: string }; replica?: ReplicaTask },
): void {
  // Held online a minute past the deadline: the renewals there need not tell this shard (liveness.ts HEARD_GRACE_MS).
  const deadline = heardUntil(Date.parse(lease.deadline));
  pool.transaction(() => {
    seen(pool.sql, Date.now(), nodeId, deadline);
    lastRequests(pool.sql).heldElsewhere(nodeId, deadline, false);
    if (replica !== undefined) replicaElsewhere(pool, k, nodeId, replica, true);
  });
}
