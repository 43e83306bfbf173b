// Verified results' pure rules (docs/protocol.md §14): a job's replication from its
// labels, when two replicas' metrics agree, a task's verdict from its
// replicas' results, adaptive replication, and the wall-time lie check.
// Pure: no I/O, no clock, no randomness of its own (the random number is a
// parameter). Every doubt refuses or disagrees: a result is never accepted
// on a value these rules could not read.

export const REPLICAS_LABEL = "flashml.dev/replicas";
export const QUORUM_LABEL = "flashml.dev/quorum";
export const TOLERANCE_LABEL = "flashml.dev/tolerance";
export const TOLERANCE_ABS_LABEL = "flashml.dev/tolerance-abs";
/** Differences this small always agree under a relative tolerance, so values near zero can (docs/protocol.md §14). */
export const DEFAULT_TOLERANCE_ABS = 1e-12;
export const MAX_REPLICAS = 5;
/** Replicas a disagreement may add beyond the job's `replicas` (docs/protocol.md §14: up to replicas + 2 in all). */
export const EXTRA_REPLICAS = 2;
/** Valid results in a row after which a node's work is trusted with one replica (adaptive replication). */
export const TRUST_AFTER_VALID = 10;
/**
 * The chance that a trusted node's task is replicated anyway (the spot
 * check). A node that turns bad once trusted runs about (1 - rate) / rate
 * tasks alone before a check catches it: 0.2 keeps that near four
 * (BENCHMARKS.md, "Against adversaries").
 */
export const SPOT_CHECK_RATE = 0.2;
/** How many of a node's latest verdicts the lie threshold looks at, and how many lost ones distrust it (docs/protocol.md §14). */
export const VERDICT_WINDOW = 20;
export const LOST_VERDICTS_LIMIT = 3;
/** Seconds of slack when comparing an agent's wall_seconds with the coordinator's own claim-to-commit time. */
export const WALL_SLACK_S = 1;
/** Metrics nested deeper than this never agree: a bound on the comparison's work, not a real metrics shape. */
export const MAX_AGREE_DEPTH = 64;

type Read<T> = { ok: true; value: T } | { ok: false; problem: string };

export type Replication = { replicas: number; quorum: number; tolerance: number; toleranceAbs: number };
/** A job without replication labels: one run per task, accepted on its own. */
export const SINGLE_REPLICA: Replication = {
  replicas: 1,
  quorum: 1,
  tolerance: 0,
  toleranceAbs: DEFAULT_TOLERANCE_ABS,
};

// Own properties only, and strings only: labels arrive as JSON, and a value
// that is not a string at run time is refused, never coerced.
function label(labels: Readonly<Record<string, string>>, name: string): unknown {
  return Object.hasOwn(labels, name) ? labels[name] : undefined;
}

function integer(raw: unknown): number {
  // Plain decimal digits; leading zeros read as the number ("03" is 3), as the priority label does.
  return typeof raw === "string" && /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
}

function decimal(raw: unknown): number {
  return typeof raw === "string" && /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : Number.NaN;
}

/**
 * A job's replication from its labels: replicas from 1 to 5 (absent is 1);
 * quorum from 2 to replicas (absent is replicas), and no quorum label at all
 * when replicas is 1; tolerance a plain decimal from 0 up to but not
 * including 1 (absent is 0, exact); tolerance-abs a plain decimal below 1
 * (absent is 1e-12), only beside a relative tolerance, which it widens.
 */
export function jobReplication(labels: Readonly<Record<string, string>>): Read<Replication> {
  const rawReplicas = label(labels, REPLICAS_LABEL);
  const replicas = rawReplicas === undefined ? 1 : integer(rawReplicas);
  if (!(replicas >= 1 && replicas <= MAX_REPLICAS)) {
    return {
      ok: false,
      problem: `label '${REPLICAS_LABEL}' must be an integer from 1 to ${MAX_REPLICAS}, got ${JSON.stringify(rawReplicas)}`,
    };
  }

  const rawQuorum = label(labels, QUORUM_LABEL);
  let quorum = replicas;
  if (rawQuorum !== undefined) {
    // Even "1" is refused: a quorum label on an unreplicated job is a mistake worth naming.
    if (replicas === 1) {
      return {
        ok: false,
        problem: `label '${QUORUM_LABEL}' needs at least 2 replicas ('${REPLICAS_LABEL}' is 1), got ${JSON.stringify(rawQuorum)}`,
      };
    }
    quorum = integer(rawQuorum);
    if (!(quorum >= 2 && quorum <= replicas)) {
      return {
        ok: false,
        problem: `label '${QUORUM_LABEL}' must be an integer from 2 to ${replicas} (the replicas), got ${JSON.stringify(rawQuorum)}`,
      };
    }
  }

  const rawTolerance = label(labels, TOLERANCE_LABEL);
  const tolerance = rawTolerance === undefined ? 0 : decimal(rawTolerance);
  if (!(tolerance >= 0 && tolerance < 1)) {
    return {
      ok: false,
      problem: `label '${TOLERANCE_LABEL}' must be a decimal number from 0 up to but not including 1, got ${JSON.stringify(rawTolerance)}`,
    };
  }

  const rawAbs = label(labels, TOLERANCE_ABS_LABEL);
  if (rawAbs !== undefined && !(tolerance > 0)) {
    // Exact comparison stays exact: an absolute slack alone is a mistake worth naming.
    return {
      ok: false,
      problem: `label '${TOLERANCE_ABS_LABEL}' needs a relative tolerance ('${TOLERANCE_LABEL}' above 0), got ${JSON.stringify(rawAbs)}`,
    };
  }
  const toleranceAbs = rawAbs === undefined ? DEFAULT_TOLERANCE_ABS : decimal(rawAbs);
  if (!(toleranceAbs >= 0 && toleranceAbs < 1)) {
    return {
      ok: false,
      problem: `label '${TOLERANCE_ABS_LABEL}' must be a decimal number from 0 up to but not including 1, got ${JSON.stringify(rawAbs)}`,
    };
  }

  return { ok: true, value: { replicas, quorum, tolerance, toleranceAbs } };
}

/**
 * Why a job's tasks cannot be replicated as expanded, or null: replicas
 * resuming one another's checkpoints would not be independent runs.
 */
export function replicatedCheckpoints(
  replication: Replication,
  tasks: ReadonlyArray<{ payload: Readonly<Record<string, unknown>> }>,
): string | null {
  if (replication.replicas === 1 || !tasks.some((t) => t.payload.checkpoint !== undefined)) return null;
  return `a replicated job ('${REPLICAS_LABEL}' above 1) cannot use checkpoints; drop one of them`;
}

/**
 * Why a job's replication cannot be served here, or null: replicas are
 * independent only if the pool knows who runs them, and on an open
 * coordinator (no tokens) any caller can be any node (docs/protocol.md §14).
 */
export function replicationWithoutIdentities(replication: Replication, enforcing: boolean): string | null {
  if (replication.replicas === 1 || enforcing) return null;
  return `label '${REPLICAS_LABEL}' above 1 needs node identities, and this coordinator is open (no tokens configured): configure FLASHML_NODE_TOKENS or FLASHML_OPERATOR_TOKENS, or drop the label`;
}

// What JSON.parse makes for an object. A Map, Date or class instance has no
// own keys to compare, so two of them would "agree" vacuously: refuse them.
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** How numbers may differ and still agree: relative to the larger magnitude, and (beside it) absolutely. */
export type Tolerance = { relative: number; absolute: number };
export const EXACT: Tolerance = { relative: 0, absolute: 0 };

/**
 * Numbers as parsed by `parseMetrics`: a number, or a bigint for an integer
 * a double cannot hold exactly. Integers compare exactly at any size; only a
 * relative tolerance above 0 lets numbers differ, and then also by the
 * absolute slack.
 */
function numbersAgree(a: unknown, b: unknown, tolerance: Tolerance): boolean {
  const isNumeric = (x: unknown) => typeof x === "bigint" || (typeof x === "number" && Number.isFinite(x));
  // JSON has no NaN or Infinity; one here is not a metric to vouch for.
  if (!isNumeric(a) || !isNumeric(b)) return false;
  if (typeof a === "bigint" && typeof b === "bigint" && a === b) return true;
  if (typeof a === "number" && typeof b === "number" && a === b) return true;
  if (!(tolerance.relative > 0)) return false;
  const x = Number(a);
  const y = Number(b);
  const difference = typeof a === "bigint" && typeof b === "bigint" ? Math.abs(Number(a - b)) : Math.abs(x - y);
  return difference <= tolerance.relative * Math.max(Math.abs(x), Math.abs(y)) || difference <= tolerance.absolute;
}

/**
 * Whether two metrics values agree: the same JSON shape, the same keys in
 * any order, strings, booleans and null equal, numbers equal (integers
 * exactly, at any size) or within the tolerance. Values of different types never
 * agree, nor do values that JSON cannot hold, nor anything nested more than
 * MAX_AGREE_DEPTH levels deep.
 */
export function agree(a: unknown, b: unknown, tolerance: Tolerance): boolean {
  // An explicit stack, not recursion: a hostile depth must not blow the call stack.
  const pending: Array<[unknown, unknown, number]> = [[a, b, 0]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [x, y, depth] = next;
    if (depth > MAX_AGREE_DEPTH) return false;
    if (typeof x === "number" || typeof y === "number" || typeof x === "bigint" || typeof y === "bigint") {
      if (!numbersAgree(x, y, tolerance)) return false;
    } else if (typeof x === "string" || typeof x === "boolean" || x === null) {
      if (x !== y) return false;
    } else if (Array.isArray(x)) {
      if (!Array.isArray(y) || x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) pending.push([x[i], y[i], depth + 1]);
    } else if (isPlainObject(x)) {
      if (!isPlainObject(y)) return false;
      const keys = Object.keys(x);
      if (keys.length !== Object.keys(y).length) return false;
      for (const key of keys) {
        // Own keys only: y["__proto__"] would otherwise read Object.prototype, a keyless "plain object".
        if (!Object.hasOwn(y, key)) return false;
        pending.push([x[key], y[key], depth + 1]);
      }
    } else {
      return false; // undefined, a function, a symbol: not metrics JSON
    }
  }
  return true;
}

/** A replica's committed result: its lease id, its node, and its parsed metrics.json object. */
export type ReplicaResult = { id: string; node: string; value: unknown };

export type Verdict =
  | { kind: "accepted"; winners: string[]; losers: string[] } // result ids
  | { kind: "failed" } // a quorum can no longer be reached
  | { kind: "waiting"; more: number }; // replicas to issue now; 0: wait for the live ones

/**
 * The task's verdict once a result arrives: results (in commit order), replicas still live,
 * the quorum, the most replicas the task may ever be issued (`maxTotal`), and the tolerance.
 *
 * Each result joins the first group whose first member it agrees with, else
 * starts one. The largest group (ties: the earliest formed) is accepted once
 * it holds `quorum`; every other result loses. Otherwise the task waits for
 * the replicas still live and issues what it still lacks, and fails once the
 * live replicas and those it may still issue cannot make up the quorum.
 */
export function verdict(
  results: readonly ReplicaResult[],
  live: number,
  quorum: number,
  maxTotal: number,
  tolerance: Tolerance,
): Verdict {
  // Compared with each group's first member only, so a chain of near values
  // cannot drift a group past the tolerance.
  const groups: ReplicaResult[][] = [];
  for (const result of results) {
    const group = groups.find((members) => agree(members[0]!.value, result.value, tolerance));
    if (group) group.push(result);
    else groups.push([result]);
  }

  let largest: ReplicaResult[] = [];
  for (const group of groups) if (group.length > largest.length) largest = group;

  if (largest.length > 0 && largest.length >= quorum) {
    return {
      kind: "accepted",
      winners: largest.map((result) => result.id),
      losers: results.filter((result) => !largest.includes(result)).map((result) => result.id),
    };
  }

  const need = quorum - largest.length;
  const room = maxTotal - (results.length + live);
  if (live + room < need) return { kind: "failed" };
  return { kind: "waiting", more: Math.max(0, need - live) };
}

/** How many results must agree: the job's quorum, or 1 for a task trusted to one replica (adaptive replication). */
export function effectiveQuorum(task: { quorum: number; wanted: number }): number {
  return task.wanted === 1 ? 1 : task.quorum;
}

/**
 * Whether a node's record lets it run a task alone: TRUST_AFTER_VALID
 * verified results in a row, and never distrusted since an operator last
 * released it.
 */
export function trusted(node: { consecutive_valid: number; distrusted: string | null }): boolean {
  // Written as "not below" so a NaN is never trusted.
  return node.distrusted === null && node.consecutive_valid >= TRUST_AFTER_VALID;
}

/**
 * Replicas to issue for a task, decided once at its first lease (docs/protocol.md
 * §14), given whether the claiming node is `trusted` and a uniform random
 * number in [0,1): a trusted node's task runs alone, except for the
 * SPOT_CHECK_RATE share (the spot check); everyone else's gets the job's
 * replicas.
 */
export function replicasFor(replication: { replicas: number }, isTrusted: boolean, random: number): number {
  if (replication.replicas === 1) return 1;
  if (!isTrusted) return replication.replicas;
  // Written as "not spared" so a NaN replicates in full.
  if (!(random >= SPOT_CHECK_RATE)) return replication.replicas;
  return 1;
}

/**
 * A node's latest verdicts (oldest first, "v" valid and "i" lost, at most
 * VERDICT_WINDOW) with one more, and whether they now reach the lie
 * threshold: LOST_VERDICTS_LIMIT lost among them.
 */
export function recordVerdict(window: string, lost: boolean): { window: string; distrust: boolean } {
  const next = `${window}${lost ? "i" : "v"}`.slice(-VERDICT_WINDOW);
  const losses = [...next].filter((v) => v === "i").length;
  return { window: next, distrust: losses >= LOST_VERDICTS_LIMIT };
}

/**
 * Whether the agent's evidence claims more run time than elapsed between claim and commit (a lie),
 * beyond WALL_SLACK_S. Absent or malformed wall_seconds is no claim, not a lie.
 */
export function evidenceLies(evidence: unknown, elapsedMs: number): boolean {
  if (!isPlainObject(evidence) || !Object.hasOwn(evidence, "wall_seconds")) return false;
  const wall = evidence.wall_seconds;
  return typeof wall === "number" && Number.isFinite(wall) && wall > elapsedMs / 1000 + WALL_SLACK_S;
}
