// An enrolled node's session with its pool (docs/protocol.md §9): an RpcTarget that
// offers every call of the pool object and re-checks the node's credential
// in the same turn as each call starts, so a credential revoked between two
// calls refuses the second. The Worker asks for it and calls it in one go
// (`stub.session(proof).claim(...)`): Workers RPC pipelines a call on the
// promise of a session, so the pair is still one round trip.
//
// There is no list of calls: the session's methods are the object's own,
// read from its prototype once, so a new call is offered the moment it
// exists. Which calls a node may make is still the routes' decision.

import { RpcTarget } from "cloudflare:workers";
import { callsOf } from "./calls";

/** The message of the error a refused session call throws (only an Error's message survives RPC). */
export const CREDENTIAL_REFUSED = "enrolled credential refused";

/** The calls of `T` a session offers: its methods, less the ones named in `Lifecycle`. */
export type SessionCalls<T, Lifecycle extends keyof T> = {
  [K in Exclude<keyof T, Lifecycle> as T[K] extends (...args: never[]) => unknown ? K : never]: T[K];
};

/**
 * A session class over `prototype`'s methods (all but the constructor and
 * `lifecycle`'s, which are no calls): each checks `valid()` first,
 * synchronously, then runs the method on the session's target; a refusal
 * rejects with CREDENTIAL_REFUSED.
 */
export function sessionClass<T extends object, Lifecycle extends keyof T & string>(
  prototype: T,
  lifecycle: readonly Lifecycle[],
): new (
  target: T,
  valid: () => boolean,
) => RpcTarget & SessionCalls<T, Lifecycle> {
  class Session extends RpcTarget {
    readonly #target: T;
    readonly #valid: () => boolean;

    constructor(target: T, valid: () => boolean) {
      super();
      this.#target = target;
      this.#valid = valid;
    }

    static {
      for (const [name, method] of callsOf(prototype, lifecycle)) {
        Object.defineProperty(Session.prototype, name, {
          value(this: Session, ...args: unknown[]): unknown {
            // A rejection, not a throw: the runtime logs a method's synchronous throw as uncaught.
            if (!this.#valid()) return Promise.reject(new Error(CREDENTIAL_REFUSED));
            return method.apply(this.#target, args);
          },
        });
      }
    }
  }
  return Session as unknown as new (
    target: T,
    valid: () => boolean,
  ) => RpcTarget & SessionCalls<T, Lifecycle>;
}
