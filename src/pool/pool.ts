// What the pool object's modules share: its SQL, its storage, its settings,
// its peers and the one way to change state (`change`). Context only: it
// imports no module that works on the pool, and the work after a change is
// the object's, given at construction (src/pool/after-change.ts). Nothing
// here is state a later request depends on: the held claims are
// connections, the alarm fields a cache and a backoff
// (src/pool/alarm/alarm-clock.ts), the summary's copy, grants
// and exchange state soft caches the next exchange rebuilds
// (src/pool/shards/exchange.ts), and the object may be evicted between any two
// requests.

import { randomHex8 } from "../protocol/ids";
import { shardCount } from "../rules/pool-shards";
import { type Settings, settingsOf } from "../rules/settings";
import { mintShardHex } from "../rules/shard-ids";
import { ShardPeers, shardName, shardOfName } from "./address";
import { AlarmClock } from "./alarm/alarm-clock";
import { HeldClaims } from "./claims/held-list";
import { LostClaims } from "./claims/lost-claims";
import { SentPassports } from "./claims/sent-passports";
import { Reservations } from "./jobs/reservations";
import { LAST_SEQ_SQL } from "./ledger/created";
import { logLine } from "./ledger/log";
import { forgetReserved } from "./ledger/sequence";
import { eventTally } from "./ledger/tally";
import { MeteredSql } from "./metered-sql";
import { R2Operations } from "./r2-operations";
import { Grants } from "./shards/digest";
import { LayoutGate } from "./shards/layout";
import { OutboxSends } from "./shards/outbox-sends";
import { SummaryCopy } from "./shards/summary-copy";
import { SummaryLink } from "./shards/summary-link";

export type ChangeOptions = {
  /** The change records no event but may let a held claim through (a cancel, a released node). */
  wakesClaims?: boolean;
  /** The change concerns one node: its held claim, if any, gets another try. */
  wakesNode?: string;
};

/**
 * A change just made durable: its options, the ledger's last seq before it
 * (null: neither logging nor held claims needed it), and the outbox's (null
 * at one shard, which has none).
 */
export type ChangeMade = ChangeOptions & { before: number | null; outboxBefore: number | null };

/** The work after a change (wake held claims, log, arm the alarm, send the outbox), given by the object. */
export type AfterChange = (pool: Pool, change: ChangeMade) => Promise<void>;

export class Pool {
  /** Every statement the object runs, counted (src/pool/metered-sql.ts). */
  readonly sql: MeteredSql;
  /** R2 operations by billing class (docs/protocol.md §16). */
  readonly r2 = new R2Operations();
  // Held claims in arrival order (src/pool/claims/held-claims.ts): connections, not state.
  readonly held = new HeldClaims();
  readonly clock = new AlarmClock();
  // Submission slots promised to job routes (src/pool/jobs/reservations.ts): in memory, lapsing.
  readonly reservations = new Reservations();
  // The pool summary's side here (docs/sharding.md §6), used only at S > 1: the copy of the
  // other shards, the claims granted per tenant, and the exchanges with Σ.
  readonly summary = new SummaryCopy();
  readonly grants = new Grants();
  readonly link = new SummaryLink();
  /** Per shard: what is left of this home's allotment for held claims there at a digest version (docs/sharding.md §6.3). */
  readonly allotments = new Map<number, { version: number; left: number }>();
  /** The passports out at other shards with claims in flight (src/pool/claims/sent-passports.ts). */
  readonly sent = new SentPassports();
  /** Claims whose home restarted under their forward here (src/pool/claims/lost-claims.ts). */
  readonly lost = new LostClaims();
  /** Whether the pool's layout refuses this object's calls (src/pool/shards/layout.ts), decided at its start. */
  readonly gate = new LayoutGate();
  /** The outbox's deliveries running and its backoff (src/pool/shards/outbox.ts). */
  readonly outboxSends = new OutboxSends();
  /** Claims sent to another shard since the object started (flashedge_forwarded_claims_total). */
  forwardedClaims = 0;

  /** What runs after each change, which the object installs (src/pool/after-change.ts). */
  readonly #afterChange: AfterChange;

  constructor(
    readonly ctx: DurableObjectState,
    readonly env: Env,
    afterChange: AfterChange = async () => {},
  ) {
    this.sql = new MeteredSql(ctx.storage.sql);
    this.#afterChange = afterChange;
  }

  /**
   * The coordinator's settings, the same value the Worker checked before
   * the request reached the object (src/rules/settings.ts). Unreadable
   * settings never reach here through the Worker, which refuses them.
   */
  get settings(): Settings {
    const read = settingsOf(this.env);
    if (!read.ok) throw new Error(`coordinator refuses to serve: ${read.detail}`);
    return read.settings;
  }

  /**
   * The object's name, "P" or "P/k" (src/pool/address.ts). The runtime
   * gives no name to an object an alarm starts, so the name recorded at an
   * earlier start stands in: the shard's own row, or, in a pool from before
   * shards, the pool name its first job recorded. The object's id, for logs,
   * when neither exists.
   */
  get name(): string {
    return this.knownName ?? this.ctx.id.toString();
  }

  /** The object's name when the runtime or an earlier start knows it, else null. */
  get knownName(): string | null {
    if (this.ctx.id.name !== undefined) return this.ctx.id.name;
    const self = this.sql.exec<{ pool: string; shard: number }>("SELECT pool, shard FROM shard_self").toArray()[0];
    return self ? shardName(self.pool, self.shard) : this.storedName();
  }

  /** The pool this object is a shard of: its name without the shard's `/k`. */
  get poolName(): string {
    return shardOfName(this.name).pool;
  }

  /** Which of the pool's shards this object is (0 for the pool's first object). */
  get shard(): number {
    return shardOfName(this.name).shard;
  }

  /** The pool's other shards, as this one calls them (src/pool/contract.ts). */
  get peers(): ShardPeers {
    return new ShardPeers(this.env, this.settings.poolLocations, this.poolName, this.shard, this.shards);
  }

  /** S, the pool's configured shard count: 1 is a pool of one object, with no summary. */
  get shards(): number {
    // The env, and so the count, is fixed for the object's life. Unreadable settings (which the
    // Worker refuses before any call arrives) count as one shard here, so the constructor never throws.
    if (this.#shards === undefined) {
      const read = settingsOf(this.env);
      this.#shards = read.ok ? shardCount(read.settings.poolShards, this.poolName) : 1;
    }
    return this.#shards;
  }
  #shards: number | undefined;

  /**
   * The draw of 12 hex for an id this shard mints and routes by (a lease's,
   * docs/sharding.md §4.1): one that names this shard, in a pool of shards;
   * undefined at one shard, where the draw is today's.
   */
  get mintHex(): (() => string) | undefined {
    if (this.shards === 1) return undefined;
    const { poolName, shard } = this;
    return () => mintShardHex(poolName, shard, randomHex8());
  }

  /** Whether state changes are logged (docs/protocol.md §11). */
  get logging(): boolean {
    return this.settings.logStateChanges;
  }

  /** One log line for this pool, when logging is on. */
  log(fields: Record<string, string | number | boolean | null>): void {
    if (this.logging) logLine({ pool: this.name, ...fields });
  }

  /**
   * One synchronous transaction; its statements' rows are counted once it
   * ends, its events' tally kept if it commits, the reserved seqs read
   * again if it does not.
   */
  transaction<T>(fn: () => T): T {
    const tally = eventTally(this.sql);
    tally.begin();
    let committed = false;
    try {
      const result = this.ctx.storage.transactionSync(fn);
      committed = true;
      return result;
    } finally {
      tally.end(committed);
      // A block of seqs reserved may have rolled back with it.
      if (!committed) forgetReserved(this.sql);
      this.sql.settle();
    }
  }

  /** The pool's name as the Worker routes it, recorded by the first job; null before any job. */
  storedName(): string | null {
    return this.sql.exec<{ name: string }>("SELECT name FROM pool_name").toArray()[0]?.name ?? null;
  }

  /**
   * Runs one state change as one synchronous transaction at one instant,
   * then the object's after-change work (src/pool/after-change.ts: wake the
   * held claims it lets through, log its events, keep the alarm at the
   * earliest live deadline, send what it wrote for other shards) before it
   * returns. Every call that can queue work, move a deadline or append an
   * event goes through here, so none can forget the alarm; the writes that
   * do none of these (a heartbeat no claim waits on, device codes, the
   * alarm's own archive and collection marks) use `transaction` directly.
   * `wakesClaims` for changes that record no event but may let a held claim
   * through; `wakesNode` gives that node's held claim a turn.
   */
  async change<T>(fn: (now: number) => T, options: ChangeOptions = {}): Promise<T> {
    const before = this.logging || this.held.size > 0 ? this.lastEventSeq() : null;
    const outboxBefore = this.shards > 1 ? this.lastOutboxSeq() : null;
    const now = Date.now();
    const result = this.transaction(() => fn(now));
    await this.#afterChange(this, { ...options, before, outboxBefore });
    return result;
  }

  /** The outbox's last seq: the rows a change writes for other shards are those after it. */
  lastOutboxSeq(): number {
    return this.sql.exec<{ seq: number | null }>("SELECT MAX(seq) AS seq FROM outbox").one().seq ?? 0;
  }

  /** The ledger's last event seq: where the events a change appends start. */
  lastEventSeq(): number {
    return this.sql.exec<{ seq: number }>(`SELECT ${LAST_SEQ_SQL} AS seq`).one().seq;
  }
}
