// What a node's row says about it now, each rule once, its SQL beside its
// TypeScript so the two cannot drift (docs/protocol.md §5, §13):
//
// - online: alive — it made a request within the online window, or holds
//   a live lease (`live_until_ms`).
// - accepting: it says it takes work — its reported status is the wire's
//   "online", not "draining" or "terminating". The column keeps the wire's
//   word; this module is the only place that reads it as "accepting".
// - held back: it failed often enough that it gets no lease for a while.
// - claimable: online, accepting and not held back — a node a claim could
//   lease a task to now.
//
// A passport (src/pool/nodes/passports.ts) is the copy of a node kept at a shard
// that is not its home. Its status and hold are its home's, in columns
// named as a node's, so accepting and held back read them unchanged. Its
// own facts:
//
// - online here: it made a request here within the online window (a shard
//   sees neither the node's requests elsewhere nor its home's live_until_ms).
// - admitting: its home has not revoked its credential. A revoked copy is
//   kept, since it outranks an older one still in flight, but it admits
//   nothing: to this shard, a node it knows by a revoked passport is unknown
//   (docs/sharding.md §8.1, §8.4).
// - claimable: online here, accepting, not held back and admitting.
//
// Each SQL form takes the table's alias (`n`, or "" for none) and the SQL
// text of the clock's parameter (`?`, `?1`), so a query binds `now` as it
// numbers its parameters.

/** The columns the rules read. */
export type NodeStateRow = { status: string; live_until_ms: number; held_until_ms: number };

/** The columns a passport's rules read (passports.revoked: 1 once its home revoked the node's credential). */
export type PassportStateRow = { status: string; held_until_ms: number; last_request_ms: number; revoked: number };

/**
 * A node is online for this long after any request it makes (docs/protocol.md §5), and
 * for as long as it holds a live lease: the agent sends no node heartbeats
 * while a task runs, and a node that dies loses its lease at the deadline.
 * When a lease stops being live (commit, fail, expiry, cancel), schema step
 * 14's trigger lowers the node's live_until_ms to its last request plus
 * this window, or another live lease's deadline (docs/protocol.md §13 rule 4): the
 * literal 15000 there must match.
 */
export const ONLINE_WINDOW_MS = 15_000;

/** The reported status that means accepting work (docs/protocol.md §3 NodeHeartbeat.status). */
export const ACCEPTING_STATUS = "online";

const column = (alias: string, name: string) => (alias === "" ? name : `${alias}.${name}`);

/** Alive at `now`. */
export function isOnline(node: Pick<NodeStateRow, "live_until_ms">, now: number): boolean {
  return node.live_until_ms > now;
}
export function onlineSql(alias: string, now: string): string {
  return `${column(alias, "live_until_ms")} > ${now}`;
}

/** The latest deadline of the node's live leases here (0 when none), for the node id `node` (a parameter or column). */
export function liveDeadlineSql(node: string): string {
  return `COALESCE((SELECT MAX(l.deadline_ms) FROM leases l WHERE l.node_id = ${node} AND l.status = 'live'), 0)`;
}

/** Says it takes work, alive or not. */
export function isAccepting(node: Pick<NodeStateRow, "status">): boolean {
  return node.status === ACCEPTING_STATUS;
}
export function acceptingSql(alias: string): string {
  return `${column(alias, "status")} = '${ACCEPTING_STATUS}'`;
}

/** Gets no lease until its hold ends (docs/protocol.md §13 rule 3). */
export function isHeldBack(node: Pick<NodeStateRow, "held_until_ms">, now: number): boolean {
  return node.held_until_ms > now;
}
export function heldBackSql(alias: string, now: string): string {
  return `${column(alias, "held_until_ms")} > ${now}`;
}

/** Online, accepting and not held back: a claim could lease it a task now. */
export function isClaimable(node: NodeStateRow, now: number): boolean {
  return isOnline(node, now) && isAccepting(node) && !isHeldBack(node, now);
}
export function claimableSql(alias: string, now: string): string {
  return `(${onlineSql(alias, now)} AND ${acceptingSql(alias)} AND ${column(alias, "held_until_ms")} <= ${now})`;
}

/**
 * A passport's node made a request here within the online window: `at` its
 * last request here (src/pool/nodes/liveness.ts lastRequestHere, for a row
 * that may lag). The SQL form reads the row, widened by `lag`, how far the
 * row may lag: a caller narrows its rows by the exact time.
 */
export function isOnlineHere(at: number, now: number): boolean {
  return at + ONLINE_WINDOW_MS > now;
}
export function onlineHereSql(alias: string, now: string, lag = 0): string {
  return `${column(alias, "last_request_ms")} + ${ONLINE_WINDOW_MS + lag} > ${now}`;
}

/** A passport whose node's credential its home has not revoked: it may admit the node's claims here. */
export function isAdmitting(passport: Pick<PassportStateRow, "revoked">): boolean {
  // Only an explicit 0: any other value reads as revoked.
  return passport.revoked === 0;
}
export function admittingSql(alias: string): string {
  return `${column(alias, "revoked")} = 0`;
}

/** Online here, accepting, not held back and admitting: a claim here could lease the passport's node a task now. */
export function isPassportClaimable(passport: PassportStateRow, now: number): boolean {
  return (
    isOnlineHere(passport.last_request_ms, now) &&
    isAccepting(passport) &&
    !isHeldBack(passport, now) &&
    isAdmitting(passport)
  );
}
export function passportClaimableSql(alias: string, now: string, lag = 0): string {
  return `(${onlineHereSql(alias, now, lag)} AND ${acceptingSql(alias)} AND ${column(alias, "held_until_ms")} <= ${now} AND ${admittingSql(alias)})`;
}
