// What one of a pool's objects may call on another (docs/sharding.md §5.1,
// §8.2, §11): the peer surface each shard offers its pool's other shards,
// its summary and the Worker's credential check, and nothing else. The
// object offers it on its own RpcTarget (`PoolObject.peer()`,
// src/pool/peer.ts), never on a node's session; addressing hands it out
// as this interface (src/pool/address.ts).

import type { Locale } from "../rules/homing";
import type { Emptiness, LayoutEpoch } from "../rules/layout";
import type { ClaimResult } from "./claims/claim-result";
import type { Passport } from "./nodes/passports";

// -- what travels between them -------------------------------------------

/** What an enrolled caller presents: the node its token names and the token's SHA-256 (hex). */
export type CredentialProof = { nodeId: string; tokenSha256: string };

/** What a credential is issued with: its token's hash and the approval of the code it redeems. */
export type IssuedCredential = {
  tokenSha256: string;
  hostname: string;
  platform: string;
  approvedBy: string;
  approvedMs: number;
  /** The owner the approval named (docs/protocol.md §14); null: the node itself. */
  owner: string | null;
  /** The team pools the approval named (docs/protocol.md §9); null: none named. */
  pools: string[] | null;
};

/**
 * A home's forward of one claim: its id (16 random hex, docs/sharding.md §5.1),
 * the node's passport in full; the job the claim is restricted to; and the last
 * instant, on this shard's clock, at which a lease may still be issued
 * (the home's hold end + 1 s, epoch ms). `holdMs`, for a claim restricted
 * to a job: how long this shard holds it for that job's work.
 */
export type ClaimTicket = {
  claimId: string;
  passport: Passport;
  jobId: string | null;
  notAfter: number;
  holdMs?: number;
  /** The tenant the home judged furthest behind here by the pool-wide passes (docs/sharding.md §7.2). */
  turn?: Turn;
};

/**
 * A claim's answer, with its lease's tenant and priority on a lease, and on
 * a replica's lease its task (src/pool/verification/replicas-elsewhere.ts: for the home
 * alone, never passed on to the node).
 */
export type ForwardedClaimResult = ClaimResult | (Extract<ClaimResult, { ok: true }> & { replica?: ReplicaTask });

export type Turn = { priority: number; tenant: string };

/**
 * A claim's id, minted by the Worker for each claim request (16 random hex,
 * docs/sharding.md §13.1), which its forwards carry; and, when the Worker
 * asks again a claim whose home restarted under it, the id it was first
 * asked under (`lost`), whose leftovers on other shards the new home takes over.
 */
export type ClaimIds = { claimId: string; lost?: string };

/**
 * A replica's task as the job's shard tells its node's home: the task (its
 * seq there), its class and priority, whether it is among the shard's
 * replicating pending tasks now (`counted`), and the digest version the
 * shard built last before that (0: none yet), so the change shows in every
 * digest after it.
 */
export type ReplicaTask = { task: number; classKey: string; priority: number; counted: boolean; after: number };

/** What shard 0's layout() answers: its history, and its refusal's detail while it refuses. */
export type LayoutAnswer = { epochs: LayoutEpoch[]; refusing: string | null };

/**
 * One outcome for a node's record: `accepted` (an accepted commit, or a
 * replica accepted without comparison), `valid` (a replica a quorum agreed
 * with), `failed` (an attempt ended without an accepted commit), `abandoned`
 * (a replica failed or expired), `invalid` (a replica outvoted), `lie`
 * (evidence that lied, `reason` saying how), `seen` (the node's last
 * request at another shard, `at`, and its latest live deadline there,
 * `until`; `ended` when one of its leases there just stopped being live:
 * docs/sharding.md §8.3, written by schema step 20's trigger, by a
 * renewal there and by a commit there, with what the commit `earned`).
 */
export type Outcome =
  | RecordOutcome
  | { outcome: "seen"; at: number; until: number; ended?: number; earned?: RecordOutcome };

/** An outcome for the node's record; a commit's rides on its `seen` as `earned` (schema step 36). */
export type RecordOutcome =
  | { outcome: "accepted" | "valid" | "failed" | "abandoned" | "invalid" }
  | { outcome: "lie"; reason: string };

/** An outcome as it travels home: for which node. */
export type NodeOutcome = (Outcome | ReplicaOutcome) & { node_id: string };

/**
 * Not the node's record but its offers (src/pool/verification/replicas-elsewhere.ts):
 * a replicated task here the node holds or ran a replica of started
 * (`counted` 1) or stopped (0) counting among this shard's replicating
 * pending tasks. Written by schema step 22's trigger.
 */
export type ReplicaOutcome = { outcome: "replica"; task: number; class_key: string; priority: number; counted: number };

/** One outbox row as `deliver` receives it: the sender's seq and the outcome. */
export type OutcomeMessage = { seq: number; body: NodeOutcome };

// -- the calls ----------------------------------------------------------------

/** An answer, at once or later: what the peer serves; a caller over RPC always awaits it. */
export type Answer<T> = T | Promise<T>;

export interface ShardPeer {
  /** Shard 0's history of shard counts, and its refusal while it refuses (src/pool/shards/layout.ts). */
  layout(): Answer<LayoutAnswer>;
  /** What this shard holds, asked by shard 0 before a lower removes it. */
  emptiness(): Answer<Emptiness>;
  /** At a node's home: whether it holds `proof` as a valid credential (docs/sharding.md §8.4 "vouch"). */
  vouch(proof: CredentialProof): Answer<boolean>;
  /** Whether node `nodeId` lives here (src/pool/nodes/homes.ts). */
  livesHere(nodeId: string): Answer<boolean>;
  /** Where this shard knows node `nodeId` lives, itself or by its pointer; null: it does not know. */
  whereIs(nodeId: string): Answer<number | null>;
  /** The nodes held here whose registry shard is `registry`, pulled by it as pointers. */
  homedFor(registry: number): Answer<string[]>;
  /** A credential shard 0 issued, installed at the node's home (src/pool/enrolment/device-codes.ts). */
  installCredential(
    nodeId: string,
    credential: IssuedCredential,
    locale?: Locale | null,
  ): Answer<{ replaced: boolean } | null>;
  /** Those of `nodeIds` enrolled here, asked by shard 0 as it lists pending codes. */
  enrolledAmong(nodeIds: string[]): Answer<string[]>;
  /** A claim the node's home forwarded here, with the node's passport (src/pool/claims/forwarded-claims.ts). */
  claimForwarded(ticket: ClaimTicket): Answer<ForwardedClaimResult>;
  /** A home's held claims forwarded at once, served in the order given. */
  claimsForwarded(tickets: ClaimTicket[]): Answer<ForwardedClaimResult[]>;
  /** At a shard other than the node's home: its credential was revoked or replaced there. */
  cutOffHere(nodeId: string, why: string, passport?: Passport | null): Answer<void>;
  /** The home changed a node whose claim it forwarded here: its new passport. */
  passportChanged(passport: Passport): Answer<void>;
  /** Answers a claim of `nodeId` held here for its home with nothing: the node claimed again there. */
  releaseForwarded(nodeId: string): Answer<void>;
  /**
   * The home of `nodeId` restarted while claim `claimId` was forwarded here:
   * its tickets lease nothing more, a claim of it held here is answered with
   * nothing, and the live lease it got here, if any, is the answer.
   */
  claimLost(claimId: string, nodeId: string): Answer<ForwardedClaimResult>;
  /** At a node's home: outcomes of its leases on shard `from`, each applied once (src/pool/nodes/outcomes.ts). */
  deliver(from: number, batch: OutcomeMessage[], digestVersion?: number): Answer<{ acked: number }>;
  /** The summary's poke: work appeared elsewhere and this shard holds claims, so exchange now. */
  summaryChanged(): Answer<void>;
}
