// The calls between a pool's objects (src/pool/contract.ts), on their own
// RpcTarget: the Worker and the other objects reach them through
// `stub.peer()`, and no route nor node session offers them. Each states
// what wraps it, as the object's own calls do: the layout check (but
// `layout` and `emptiness`, which a refusing pool still answers) and, for
// the calls about a node, the check that it lives here.

import { RpcTarget } from "cloudflare:workers";
import type { Locale } from "../rules/homing";
import { claimForwarded, claimLost, claimsForwarded, passportChanged } from "./claims/forwarded-claims";
import { cutOffHere } from "./claims/held-claims";
import type { ClaimTicket, CredentialProof, IssuedCredential, OutcomeMessage, ShardPeer } from "./contract";
import { credentialValid, enrolledAmong } from "./enrolment/credentials";
import { installCredential } from "./enrolment/device-codes";
import { homedFor, livesHere, type NodeCall, PROVING, registering, whereIs } from "./nodes/homes";
import { deliver } from "./nodes/outcomes";
import type { Passport } from "./nodes/passports";
import type { Pool } from "./pool";
import { exchangeNow } from "./shards/exchange";
import { emptiness, layout } from "./shards/layout";

/** What the peer surface needs of its object: its context, and the two wraps every call may take. */
export interface PeerHost {
  readonly pool: Pool;
  /** One call served: counted, and refused while the layout refuses, unless `open`. */
  serve<R>(run: () => R, open?: boolean): R;
  /** `run` once node `nodeId` is known to live here; a NOT_HOME rejection otherwise. */
  whenHome<R>(nodeId: unknown, how: NodeCall, run: () => R): R | Promise<Awaited<R>>;
}

export class PoolPeer extends RpcTarget implements ShardPeer {
  readonly #host: PeerHost;

  constructor(host: PeerHost) {
    super();
    this.#host = host;
  }

  get #pool(): Pool {
    return this.#host.pool;
  }

  layout() {
    return this.#host.serve(() => layout(this.#pool.sql, this.#pool.gate), true);
  }

  emptiness() {
    return this.#host.serve(() => emptiness(this.#pool.sql, this.#pool.shard), true);
  }

  vouch(proof: CredentialProof) {
    return this.#host.serve(() =>
      this.#host.whenHome(proof?.nodeId, PROVING, () => credentialValid(this.#pool.sql, proof)),
    );
  }

  livesHere(nodeId: string) {
    return this.#host.serve(() => livesHere(this.#pool.sql, nodeId));
  }

  whereIs(nodeId: string) {
    return this.#host.serve(() => whereIs(this.#pool.sql, this.#pool.shard, nodeId));
  }

  homedFor(registry: number) {
    return this.#host.serve(() => homedFor(this.#pool, registry));
  }

  installCredential(nodeId: string, credential: IssuedCredential, locale: Locale | null = null) {
    return this.#host.serve(() =>
      this.#host.whenHome(nodeId, registering(locale), () => installCredential(this.#pool, nodeId, credential)),
    );
  }

  enrolledAmong(nodeIds: string[]) {
    return this.#host.serve(() => enrolledAmong(this.#pool.sql, nodeIds));
  }

  claimForwarded(ticket: ClaimTicket) {
    return this.#host.serve(() => claimForwarded(this.#pool, ticket));
  }

  claimsForwarded(tickets: ClaimTicket[]) {
    return this.#host.serve(() => claimsForwarded(this.#pool, tickets));
  }

  cutOffHere(nodeId: string, why: string, passport: Passport | null = null) {
    return this.#host.serve(() => cutOffHere(this.#pool, nodeId, why, passport));
  }

  passportChanged(passport: Passport) {
    return this.#host.serve(() => passportChanged(this.#pool, passport));
  }

  releaseForwarded(nodeId: string) {
    return this.#host.serve(() => {
      this.#pool.held.releaseNode(nodeId);
    });
  }

  claimLost(claimId: string, nodeId: string) {
    return this.#host.serve(() => claimLost(this.#pool, claimId, nodeId));
  }

  deliver(from: number, batch: OutcomeMessage[], digestVersion?: number) {
    return this.#host.serve(() => deliver(this.#pool, from, batch, digestVersion));
  }

  async summaryChanged(): Promise<void> {
    await this.#host.serve(() => exchangeNow(this.#pool));
  }
}
