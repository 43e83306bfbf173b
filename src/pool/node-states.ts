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
// Each SQL form takes the table's alias (`n`, or "" for none) and the SQL
// text of the clock's parameter (`?`, `?1`), so a query binds `now` as it
// numbers its parameters.

/** The columns the rules read. */
export type NodeStateRow = { status: string; live_until_ms: number; held_until_ms: number };

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
