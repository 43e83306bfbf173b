// What one of a pool's objects may call on another (docs/sharding.md §5.1,
// §8.2, §11): the peer surface each shard offers its pool's other shards,
// its summary and the Worker's credential check, and nothing else. The
// object offers it on its own RpcTarget (`PoolObject.peer()`,
// src/pool/peer.ts), never on a node's session; addressing hands it out
// as this interface (src/pool/address.ts).

import type { Locale } from "../rules/homing";
import type { Emptiness } from "../rules/layout";
import type { CredentialProof, IssuedCredential } from "./enrolment";
import type { ClaimTicket, ForwardedClaimResult } from "./forwarded-claims";
import type { LayoutAnswer } from "./layout";
import type { OutcomeMessage } from "./outcomes";
import type { Passport } from "./passports";

/** An answer, at once or later: what the peer serves; a caller over RPC always awaits it. */
export type Answer<T> = T | Promise<T>;

export interface ShardPeer {
  /** Shard 0's history of shard counts, and its refusal while it refuses (src/pool/layout.ts). */
  layout(): Answer<LayoutAnswer>;
  /** What this shard holds, asked by shard 0 before a lower removes it. */
  emptiness(): Answer<Emptiness>;
  /** At a node's home: whether it holds `proof` as a valid credential (docs/sharding.md §8.4 "vouch"). */
  vouch(proof: CredentialProof): Answer<boolean>;
  /** Whether node `nodeId` lives here (src/pool/homes.ts). */
  holdsNode(nodeId: string): Answer<boolean>;
  /** Where this shard knows node `nodeId` lives, itself or by its pointer; null: it does not know. */
  whereIs(nodeId: string): Answer<number | null>;
  /** The nodes held here whose registry shard is `registry`, pulled by it as pointers. */
  homedFor(registry: number): Answer<string[]>;
  /** A credential shard 0 issued, installed at the node's home (src/pool/enrolment-flows.ts). */
  installCredential(
    nodeId: string,
    credential: IssuedCredential,
    locale?: Locale | null,
  ): Answer<{ replaced: boolean } | null>;
  /** Those of `nodeIds` enrolled here, asked by shard 0 as it lists pending codes. */
  enrolledAmong(nodeIds: string[]): Answer<string[]>;
  /** A claim the node's home forwarded here, with the node's passport (src/pool/forwarded-claims.ts). */
  claimForwarded(ticket: ClaimTicket): Answer<ForwardedClaimResult>;
  /** A home's held claims forwarded at once, served in the order given. */
  claimsForwarded(tickets: ClaimTicket[]): Answer<ForwardedClaimResult[]>;
  /** At a shard other than the node's home: its credential was revoked or replaced there. */
  cutOffHere(nodeId: string, why: string, passport?: Passport | null): Answer<void>;
  /** The home changed a node whose claim it forwarded here: its new passport. */
  passportChanged(passport: Passport): Answer<void>;
  /** Answers a claim of `nodeId` held here for its home with nothing: the node claimed again there. */
  releaseForwarded(nodeId: string): Answer<void>;
  /** At a node's home: outcomes of its leases on shard `from`, each applied once (src/pool/outcomes.ts). */
  deliver(from: number, batch: OutcomeMessage[], digestVersion?: number): Answer<{ acked: number }>;
  /** The summary's poke: work appeared elsewhere and this shard holds claims, so exchange now. */
  summaryChanged(): Answer<void>;
}
