// The outbox's sends in memory (src/pool/shards/outbox.ts): the delivery running
// to each shard, and a backoff after failures. Not state: losing it only
// sends sooner; the rows themselves are in SQL.

export class OutboxSends {
  /** The delivery running to each shard, and the shards asked for another pass meanwhile. */
  readonly running = new Map<number, Promise<void>>();
  readonly again = new Set<number>();
  /** Failed sends in a row, and no retry from the alarm before `retryAt`. */
  failures = 0;
  retryAt = 0;
}
