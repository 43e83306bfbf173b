// What an error from a call to a Durable Object says about the call.

/**
 * Whether the runtime raised `e` because the object was reset or restarted
 * mid-call: the call may or may not have run, and asking again is safe for
 * a call that is idempotent (docs/sharding.md §13.1).
 */
export function isObjectReset(e: unknown): boolean {
  const flags = e as { retryable?: unknown; durableObjectReset?: unknown } | null;
  return typeof flags === "object" && flags !== null && (flags.retryable === true || flags.durableObjectReset === true);
}
