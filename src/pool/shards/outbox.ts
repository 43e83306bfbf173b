// Sending the outbox (docs/sharding.md §2.1, §8.2, §13.4): the rows a change
// wrote for other shards leave right after it, in batches per shard, at
// least once; the receiver applies each once (src/pool/nodes/outcomes.ts deliver)
// and acks, and only then are they deleted here. Rows left undelivered are
// retried from the alarm. Outcomes that can distrust a node are awaited,
// for at most URGENT_WAIT_MS, before the request that caused them is
// answered. A pool of one shard never writes the outbox, and nothing here
// runs for it.
//
// What memory holds is the sends running and a backoff, never state: the
// rows a change wrote are those above the outbox's last seq before it, sent
// at once, and a failed send delays the next. Losing the backoff only sends
// sooner, and rows left are sent by the alarm, which reads SQL.

import { shardCount } from "../../rules/pool-shards";
import { shardOfName } from "../address";
import type { OutcomeMessage } from "../contract";
import type { Pool } from "../pool";

/** How long an undelivered row waits before the alarm tries it again, at first. */
const RETRY_MS = 1000;
/** The longest wait between tries while a shard stays unreachable. */
const MAX_RETRY_MS = 60_000;
/** How long a request waits for a distrusting outcome to reach the node's home (docs/sharding.md §8.2). */
export const URGENT_WAIT_MS = 500;
/** Rows per delivery: outcome bodies are small (a reason is at most 4 KiB), so a batch stays far below RPC's limit. */
const BATCH_ROWS = 100;

/**
 * After a change (src/pool/after-change.ts): sends the rows written since
 * the outbox's last seq before it (`since`; null at one shard, where
 * nothing is written), and re-arms the alarm once sent (`rearm`). Not
 * awaited by the request, unless an outcome that can distrust a node is
 * among the rows: then the request waits for it, up to URGENT_WAIT_MS.
 */
export async function sendWritten(pool: Pool, since: number | null, rearm: () => Promise<void>): Promise<void> {
  if (since === null) return;
  const written = pool.sql
    .exec<{ last: number | null; urgent: number | null }>(
      `SELECT MAX(seq) AS last, MAX(json_extract(body, '$.outcome') IN ('lie', 'invalid')) AS urgent
         FROM outbox WHERE seq > ?`,
      since,
    )
    .one();
  if (written.last === null) return;
  const sending = deliverOutbox(pool)
    .then(rearm)
    .catch((err: unknown) => undelivered(pool, null, err));
  if (written.urgent === 1) await within(sending, URGENT_WAIT_MS);
}

/**
 * Sends every outbox row to its shard, a batch at a time, and deletes what
 * each acked; a shard that fails is tried again after a backoff. One
 * delivery per shard runs at a time: asked meanwhile, it makes one more pass.
 */
export async function deliverOutbox(pool: Pool): Promise<void> {
  if (!sharded(pool)) return;
  const shards = pool.sql
    .exec<{ to_shard: number }>("SELECT DISTINCT to_shard FROM outbox WHERE kind = 'outcome'")
    .toArray();
  await Promise.all(shards.map(({ to_shard }) => deliverTo(pool, to_shard)));
}

/** When the alarm must retry undelivered rows; null when there are none (always, for a one-shard pool). */
export function outboxDue(pool: Pool): number | null {
  if (!sharded(pool)) return null;
  const oldest = pool.sql
    .exec<{ t: number | null }>("SELECT MIN(created_ms) AS t FROM outbox WHERE kind = 'outcome'")
    .one().t;
  return oldest === null ? null : Math.max(oldest + RETRY_MS, pool.outboxSends.retryAt);
}

function deliverTo(pool: Pool, shard: number): Promise<void> {
  const sender = pool.outboxSends;
  const running = sender.running.get(shard);
  if (running !== undefined) {
    sender.again.add(shard);
    return running;
  }
  const run = (async () => {
    try {
      do {
        sender.again.delete(shard);
        await sendRows(pool, shard);
      } while (sender.again.has(shard));
      sender.failures = 0;
      sender.retryAt = 0;
    } catch (err) {
      sender.failures += 1;
      sender.retryAt = Date.now() + Math.min(RETRY_MS * 2 ** (sender.failures - 1), MAX_RETRY_MS);
      undelivered(pool, shard, err);
    } finally {
      sender.running.delete(shard);
    }
  })();
  sender.running.set(shard, run);
  return run;
}

/** Sends the rows for `shard` in seq order, a batch at a time, deleting each batch once acked. */
async function sendRows(pool: Pool, shard: number): Promise<void> {
  const self = pool.shard;
  const target = pool.peers.at(shard);
  for (;;) {
    const rows = pool.sql
      .exec<{ seq: number; body: string }>(
        `SELECT seq, body FROM outbox WHERE to_shard = ? AND kind = 'outcome' ORDER BY seq LIMIT ${BATCH_ROWS}`,
        shard,
      )
      .toArray();
    if (rows.length === 0) return;
    const batch: OutcomeMessage[] = rows.map((r) => ({ seq: r.seq, body: JSON.parse(r.body) }));
    // The digest version built last: the `replica` outcomes among the rows show in every digest after it.
    const { acked } = await target.deliver(self, batch, pool.link.built?.version ?? 0);
    pool.transaction(() =>
      pool.sql.exec("DELETE FROM outbox WHERE to_shard = ? AND kind = 'outcome' AND seq <= ?", shard, acked),
    );
    if (rows.length < BATCH_ROWS || acked < rows[rows.length - 1]!.seq) return;
  }
}

/** Whether the pool spans more than one shard: only then can it have an outbox. */
function sharded(pool: Pool): boolean {
  return shardCount(pool.settings.poolShards, shardOfName(pool.name).pool) > 1;
}

/** Waits for `promise`, but no longer than `ms`. */
async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

function undelivered(pool: Pool, shard: number | null, err: unknown): void {
  console.error(
    JSON.stringify({
      level: "error",
      pool: pool.name,
      event: "OUTBOX_UNDELIVERED",
      to_shard: shard,
      error: String(err),
    }),
  );
}
