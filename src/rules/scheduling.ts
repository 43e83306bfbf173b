// The scheduling policy's pure rules (docs/protocol.md §13): a job's priority and
// tenant from its labels, tenant weights, how long a failing node is held
// back, and how many workers a task may be lost to. The claim that applies
// them is src/pool/leases/leases.ts.

export const PRIORITY_LABEL = "flashml.dev/priority";
export const TENANT_LABEL = "flashml.dev/tenant";
export const MIN_PRIORITY = -1000;
export const MAX_PRIORITY = 1000;
export const DEFAULT_TENANT = "default";

/** Attempts that must fail in a row, with no accepted commit between, before a node is held back. */
export const HOLD_AFTER_FAILURES = 5;
/** The first hold; each further failure doubles it, up to MAX_HOLD_MS. */
export const FIRST_HOLD_MS = 30 * 1000;
export const MAX_HOLD_MS = 60 * 60 * 1000;

export const DEFAULT_MAX_WORKER_LOSSES = 10;

/** How long after a node failed a task its retry waits for another idle node (docs/protocol.md §13 rule 4). */
export const DEFAULT_RETRY_ELSEWHERE_SECONDS = 60;
/** The longest retry-elsewhere window accepted: a day. */
export const MAX_RETRY_ELSEWHERE_SECONDS = 86_400;

type Read<T> = { ok: true; value: T } | { ok: false; problem: string };

/** The priority label: an integer string from -1000 to 1000; absent is 0. */
export function jobPriority(labels: Readonly<Record<string, string>>): Read<number> {
  const raw = labels[PRIORITY_LABEL];
  if (raw === undefined) return { ok: true, value: 0 };
  const value = /^[+-]?\d{1,4}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= MIN_PRIORITY && value <= MAX_PRIORITY)) {
    return {
      ok: false,
      problem: `label '${PRIORITY_LABEL}' must be an integer from ${MIN_PRIORITY} to ${MAX_PRIORITY}, got ${JSON.stringify(raw)}`,
    };
  }
  return { ok: true, value: value === 0 ? 0 : value }; // never -0
}

/** A tenant name: what a Kubernetes label value may be, so a label can always carry it. */
const TENANT_RE = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/;

/**
 * Whose share a job draws on: the submitting operator when tokens are
 * enforced (a label cannot move work into another team's share), else the
 * tenant label, else "default".
 */
export function jobTenant(labels: Readonly<Record<string, string>>, operator: string | null): Read<string> {
  if (operator !== null) return { ok: true, value: operator };
  const raw = labels[TENANT_LABEL];
  if (raw === undefined) return { ok: true, value: DEFAULT_TENANT };
  if (!TENANT_RE.test(raw)) {
    return {
      ok: false,
      problem: `label '${TENANT_LABEL}' must be 1 to 63 letters, digits, '.', '_' or '-', starting and ending with a letter or digit, got ${JSON.stringify(raw)}`,
    };
  }
  return { ok: true, value: raw };
}

/**
 * `FLASHML_TENANT_WEIGHTS` (`tenant:weight,…`, weights from 0.01 to 1000)
 * as a map, or a message naming what is wrong. A tenant not listed weighs 1.
 */
export function tenantWeights(raw: string | undefined): ReadonlyMap<string, number> | string {
  const weights = new Map<string, number>();
  const text = raw?.trim() ?? "";
  if (text === "") return weights;
  for (const entry of text.split(",")) {
    const at = entry.lastIndexOf(":");
    const tenant = entry.slice(0, at).trim();
    const weightText = entry.slice(at + 1).trim();
    const weight = /^\d+(\.\d+)?$/.test(weightText) ? Number(weightText) : Number.NaN;
    if (at < 0 || !TENANT_RE.test(tenant) || !(weight >= 0.01 && weight <= 1000) || weights.has(tenant)) {
      return "FLASHML_TENANT_WEIGHTS must be tenant:weight pairs separated by commas, each tenant once, weights from 0.01 to 1000";
    }
    weights.set(tenant, weight);
  }
  return weights;
}

/** `FLASHML_MAX_WORKER_LOSSES`: an integer from 1 to 1000, or a message naming what is wrong. */
export function maxWorkerLosses(raw: string | undefined): number | string {
  const text = raw?.trim() ?? "";
  if (text === "") return DEFAULT_MAX_WORKER_LOSSES;
  const value = /^\d{1,4}$/.test(text) ? Number(text) : Number.NaN;
  if (!(value >= 1 && value <= 1000)) return "FLASHML_MAX_WORKER_LOSSES must be an integer from 1 to 1000";
  return value;
}

/**
 * `FLASHML_RETRY_ELSEWHERE_SECONDS` in milliseconds, or a message naming
 * what is wrong: seconds from 0 to a day; unset or empty is the default. 0
 * lets the node that failed a task take it again at once.
 */
export function retryElsewhereMs(raw: string | undefined): number | string {
  const text = raw?.trim() ?? "";
  const seconds =
    text === "" ? DEFAULT_RETRY_ELSEWHERE_SECONDS : /^\d+(\.\d+)?$/.test(text) ? Number(text) : Number.NaN;
  if (!(seconds >= 0 && seconds <= MAX_RETRY_ELSEWHERE_SECONDS)) {
    return `FLASHML_RETRY_ELSEWHERE_SECONDS must be a number of seconds from 0 to ${MAX_RETRY_ELSEWHERE_SECONDS}`;
  }
  return Math.round(seconds * 1000);
}

/**
 * How long a node is held back after `consecutiveFailures` failed attempts
 * in a row: nothing below HOLD_AFTER_FAILURES, then FIRST_HOLD_MS doubling
 * with each further failure, at most MAX_HOLD_MS.
 */
export function holdBackMs(consecutiveFailures: number): number {
  if (consecutiveFailures < HOLD_AFTER_FAILURES) return 0;
  const doublings = Math.min(consecutiveFailures - HOLD_AFTER_FAILURES, 20);
  return Math.min(FIRST_HOLD_MS * 2 ** doublings, MAX_HOLD_MS);
}

/**
 * Whether a task whose attempt just ended may run again. `fail` and a
 * rejected output use one of `maxAttempts`; a lease expiry is a worker loss
 * when the job retries worker loss (`maxWorkerLosses` > 0) and uses an
 * attempt otherwise. `attemptsUsed` counts every lease issued, losses
 * included; `workerLosses` already counts this loss.
 */
export function mayRetry(task: {
  attempts_used: number;
  max_attempts: number;
  worker_losses: number;
  max_worker_losses: number;
}): boolean {
  const failures = task.attempts_used - task.worker_losses;
  if (task.max_worker_losses > 0 && task.worker_losses >= task.max_worker_losses) return false;
  return failures < task.max_attempts;
}
