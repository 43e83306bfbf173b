// How long a claim with nothing to take is held open (docs/protocol.md §5, long-poll),
// pure. The agent times a request out after 15 s; a hold must end well
// before that, or the agent would see an error instead of a 204.

/**
 * The hold when the setting is unset. An idle agent sends a node heartbeat
 * and a claim per hold plus its 1 s sleep: 12.5 s keeps it under 0.15
 * requests/s (10 s would be 0.18), 2.5 s inside its timeout.
 */
export const DEFAULT_CLAIM_WAIT_SECONDS = 12.5;
/** The longest hold accepted: 2 s inside the agent's 15 s client timeout. */
export const MAX_CLAIM_WAIT_SECONDS = 13;

/**
 * `FLASHML_CLAIM_WAIT_SECONDS` in milliseconds, or a message naming what is
 * wrong. Unset or empty means the default; 0 answers 204 at once, as the
 * reference does.
 */
export function claimWaitMs(raw: string | undefined): number | string {
  const text = raw?.trim() ?? "";
  const seconds = text === "" ? DEFAULT_CLAIM_WAIT_SECONDS : /^\d+(\.\d+)?$/.test(text) ? Number(text) : Number.NaN;
  if (!(seconds >= 0 && seconds <= MAX_CLAIM_WAIT_SECONDS)) {
    return `FLASHML_CLAIM_WAIT_SECONDS must be a number of seconds from 0 to ${MAX_CLAIM_WAIT_SECONDS}`;
  }
  return Math.round(seconds * 1000);
}
