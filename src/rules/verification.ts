// Verified results' pure rules (SPEC §14): a job's replication from its
// labels, when two replicas' metrics agree, a task's verdict from its
// replicas' results, adaptive replication, and the wall-time lie check.
// Pure: no I/O, no clock, no randomness of its own (the random number is a
// parameter). Every doubt refuses or disagrees: a result is never accepted
// on a value these rules could not read.

export const REPLICAS_LABEL = "flashml.dev/replicas";
export const QUORUM_LABEL = "flashml.dev/quorum";
export const TOLERANCE_LABEL = "flashml.dev/tolerance";
export const MAX_REPLICAS = 5;
/** Replicas a disagreement may add beyond the job's `replicas` (SPEC §14: up to replicas + 2 in all). */
export const EXTRA_REPLICAS = 2;
/** Valid results in a row after which a node's work is trusted with one replica (adaptive replication). */
export const TRUST_AFTER_VALID = 10;
/** The chance that a trusted node's task is replicated anyway (the spot check). */
export const SPOT_CHECK_RATE = 0.1;
/** Seconds of slack when comparing an agent's wall_seconds with the coordinator's own claim-to-commit time. */
export const WALL_SLACK_S = 1;
/** Metrics nested deeper than this never agree: a bound on the comparison's work, not a real metrics shape. */
export const MAX_AGREE_DEPTH = 64;

type Read<T> = { ok: true; value: T } | { ok: false; problem: string };

export type Replication = { replicas: number; quorum: number; tolerance: number };
/** A job without replication labels: one run per task, accepted on its own. */
export const SINGLE_REPLICA: Replication = { replicas: 1, quorum: 1, tolerance: 0 };

// Own properties only, and strings only: labels arrive as JSON, and a value
// that is not a string at run time is refused, never coerced.
function label(labels: Readonly<Record<string, string>>, name: string): unknown {
  return Object.hasOwn(labels, name) ? labels[name] : undefined;
}

function integer(raw: unknown): number {
  // Plain decimal digits; leading zeros read as the number ("03" is 3), as the priority label does.
  return typeof raw === "string" && /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
}

/**
 * A job's replication from its labels: replicas from 1 to 5 (absent is 1);
 * quorum from 2 to replicas (absent is replicas), and no quorum label at all
 * when replicas is 1; tolerance a plain decimal from 0 up to but not
 * including 1 (absent is 0, exact).
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
  const tolerance =
    rawTolerance === undefined
      ? 0
      : typeof rawTolerance === "string" && /^\d+(\.\d+)?$/.test(rawTolerance)
        ? Number(rawTolerance)
        : Number.NaN;
  if (!(tolerance >= 0 && tolerance < 1)) {
    return {
      ok: false,
      problem: `label '${TOLERANCE_LABEL}' must be a decimal number from 0 up to but not including 1, got ${JSON.stringify(rawTolerance)}`,
    };
  }

  return { ok: true, value: { replicas, quorum, tolerance } };
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

// What JSON.parse makes for an object. A Map, Date or class instance has no
// own keys to compare, so two of them would "agree" vacuously: refuse them.
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function numbersAgree(a: unknown, b: unknown, tolerance: number): boolean {
  if (typeof a !== "number" || typeof b !== "number") return false;
  // JSON has no NaN or Infinity; one here is not a metric to vouch for.
  if (!Number.isFinite(a) || !Number.isFinite(b)) return false;
  return a === b || Math.abs(a - b) <= tolerance * Math.max(Math.abs(a), Math.abs(b));
}

/**
 * Whether two metrics values agree: the same JSON shape, the same keys in
 * any order, strings, booleans and null equal, numbers equal or within
 * `tolerance` of the larger magnitude. Values of different types never
 * agree, nor do values that JSON cannot hold, nor anything nested more than
 * MAX_AGREE_DEPTH levels deep.
 */
export function agree(a: unknown, b: unknown, tolerance: number): boolean {
  // An explicit stack, not recursion: a hostile depth must not blow the call stack.
  const pending: Array<[unknown, unknown, number]> = [[a, b, 0]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [x, y, depth] = next;
    if (depth > MAX_AGREE_DEPTH) return false;
    if (typeof x === "number" || typeof y === "number") {
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
      return false; // undefined, a function, a bigint: not metrics JSON
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
  tolerance: number,
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
 * Replicas to issue for a task with no replica out yet, given the claiming
 * node's run of valid results and a uniform random number in [0,1). A node
 * with TRUST_AFTER_VALID valid results in a row gets one replica, except for
 * the SPOT_CHECK_RATE share of its tasks (the spot check); everyone else
 * gets the job's replicas.
 */
export function replicasFor(replication: Replication, consecutiveValid: number, random: number): number {
  if (replication.replicas === 1) return 1;
  // Written as "not trusted" and "not spared" so a NaN replicates in full.
  if (!(consecutiveValid >= TRUST_AFTER_VALID)) return replication.replicas;
  if (!(random >= SPOT_CHECK_RATE)) return replication.replicas;
  return 1;
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
