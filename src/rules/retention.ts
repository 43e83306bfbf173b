// How long a finished job stays in the pool's SQLite before it is archived
// to R2 (docs/protocol.md §12), pure.

/** A week: long enough to look at a finished job live, short enough that a busy pool stays small. */
export const DEFAULT_JOB_RETENTION_SECONDS = 7 * 24 * 60 * 60;

/**
 * `FLASHML_JOB_RETENTION_SECONDS` in milliseconds, or a message naming what
 * is wrong. Unset or empty means the default; 0 archives a job as soon as
 * it finishes.
 */
export function jobRetentionMs(raw: string | undefined): number | string {
  const text = raw?.trim() ?? "";
  const seconds = text === "" ? DEFAULT_JOB_RETENTION_SECONDS : /^\d+(\.\d+)?$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isFinite(seconds) || seconds > 100 * 365 * 24 * 60 * 60) {
    return "FLASHML_JOB_RETENTION_SECONDS must be a number of seconds from 0 to 3153600000 (100 years)";
  }
  return Math.round(seconds * 1000);
}
