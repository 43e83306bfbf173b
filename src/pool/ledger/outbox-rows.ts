// Outbox rows (docs/sharding.md §2.1, §8.2): the one statement that writes a
// row for another shard, inside the caller's transaction. A leaf: it never
// awaits and imports nothing that does, so any change may write a row and
// the sender (src/pool/shards/outbox.ts) delivers it after the change is durable.
// Schema steps 20, 22 and 36 write rows from triggers, which cannot call this:
// test/unit/trigger-rules.test.ts holds their columns to OUTBOX_COLUMNS.

/** The columns every outbox row is written with; `seq` is the table's own. */
export const OUTBOX_COLUMNS = ["to_shard", "kind", "body", "created_ms"] as const;

/** What a row carries: an outcome for a node's home (src/pool/nodes/outcomes.ts), the only kind the sender delivers. */
export type OutboxKind = "outcome";

const INSERT = `INSERT INTO outbox (${OUTBOX_COLUMNS.join(", ")}) VALUES (?, ?, ?, ?)`;

/** Queues `body`, as JSON, for shard `toShard`: sent once its change is durable (src/pool/shards/outbox.ts sendWritten). */
export function appendOutbox(sql: SqlStorage, toShard: number, kind: OutboxKind, body: object, now: number): void {
  sql.exec(INSERT, toShard, kind, JSON.stringify(body), now);
}
