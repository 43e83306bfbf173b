// An enrolled node's session with its pool (docs/protocol.md §9): an RpcTarget that
// offers the pool object's node calls and re-checks the node's credential
// in the same turn as each call starts, so a credential revoked between two
// calls refuses the second. The Worker asks for it and calls it in one go
// (`stub.session(proof).claim(...)`): Workers RPC pipelines a call on the
// promise of a session, so the pair is still one round trip.
//
// It offers exactly the calls the object names for nodes (`NODE_CALLS` in
// src/pool/object.ts), by construction: a call the object gains, a call
// between shards say, is offered to no node until it is named there. Which
// of them a node may make is still its route's decision.

import { RpcTarget } from "cloudflare:workers";

/** The message of the error a refused session call throws (only an Error's message survives RPC). */
export const CREDENTIAL_REFUSED = "enrolled credential refused";

/** The calls of `T` a session offers: the methods named in `Offered`. */
export type SessionCalls<T, Offered extends keyof T> = {
  [K in Offered as T[K] extends (...args: never[]) => unknown ? K : never]: T[K];
};

/**
 * A session class offering `offered`, methods of `prototype`: each checks
 * `valid()` first, synchronously, then runs the method on the session's
 * target; a refusal rejects with CREDENTIAL_REFUSED. A name that is no
 * method of the prototype fails here, when the class is made.
 */
export function sessionClass<T extends object, Offered extends keyof T & string>(
  prototype: T,
  offered: readonly Offered[],
): new (
  target: T,
  valid: () => boolean,
) => RpcTarget & SessionCalls<T, Offered> {
  class Session extends RpcTarget {
    readonly #target: T;
    readonly #valid: () => boolean;

    constructor(target: T, valid: () => boolean) {
      super();
      this.#target = target;
      this.#valid = valid;
    }

    static {
      for (const name of offered) {
        const method: unknown = Object.getOwnPropertyDescriptor(prototype, name)?.value;
        if (typeof method !== "function") throw new TypeError(`a session offers no method ${name}`);
        Object.defineProperty(Session.prototype, name, {
          value(this: Session, ...args: unknown[]): unknown {
            // A rejection, not a throw: the runtime logs a method's synchronous throw as uncaught.
            if (!this.#valid()) return Promise.reject(new Error(CREDENTIAL_REFUSED));
            return (method as (...a: unknown[]) => unknown).apply(this.#target, args);
          },
        });
      }
    }
  }
  return Session as unknown as new (
    target: T,
    valid: () => boolean,
  ) => RpcTarget & SessionCalls<T, Offered>;
}
