// What the pool object's modules share: its SQL, its storage, its settings
// and the one way to change state (`change`). Nothing here is state a later
// request depends on: the held claims are connections, the alarm fields a
// cache and a backoff (src/pool/housekeeping.ts), the summary's copy, grants
// and exchange state soft caches the next exchange rebuilds
// (src/pool/exchange.ts), and the object may be evicted between any two
// requests.

import { randomHex8 } from "../protocol/ids";
import { shardCount } from "../rules/pool-shards";
import { type Settings, settingsOf } from "../rules/settings";
import { mintShardHex } from "../rules/shard-ids";
import { ShardPeers, shardName, shardOfName } from "./address";
import { Grants } from "./digest";
import type { EventRow } from "./events";
import { SummaryLink } from "./exchange";
import { forwardHeld, pushPassports } from "./forwarding";
import { answerHeld, HeldClaims } from "./held-claims";
import { AlarmClock, arm } from "./housekeeping";
import { logEvent, logLine } from "./log";
import { MeteredSql } from "./metered-sql";
import { sendWritten } from "./outbox";
import { Reservations } from "./reservations";
import { SentPassports } from "./sent-passports";
import { SummaryCopy } from "./summary-copy";

export type ChangeOptions = {
  /** The change records no event but may let a held claim through (a cancel, a released node). */
  wakesClaims?: boolean;
  /** The change concerns one node: its held claim, if any, gets another try. */
  wakesNode?: string;
};

export class Pool {
  /** Every statement the object runs, counted (src/pool/metered-sql.ts). */
  readonly sql: MeteredSql;
  // Held claims in arrival order (src/pool/held-claims.ts): connections, not state.
  readonly held = new HeldClaims();
  readonly clock = new AlarmClock();
  // Submission slots promised to job routes (src/pool/reservations.ts): in memory, lapsing.
  readonly reservations = new Reservations();
  // The pool summary's side here (docs/sharding.md §6), used only at S > 1: the copy of the
  // other shards, the claims granted per tenant, and the exchanges with Σ.
  readonly summary = new SummaryCopy();
  readonly grants = new Grants();
  readonly link = new SummaryLink();
  /** Per shard: what is left of this home's allotment for held claims there at a digest version (docs/sharding.md §6.3). */
  readonly allotments = new Map<number, { version: number; left: number }>();
  /** The passports out at other shards with claims in flight (src/pool/sent-passports.ts). */
  readonly sent = new SentPassports();
  /** Claims sent to another shard since the object started (flashedge_forwarded_claims_total). */
  forwardedClaims = 0;

  constructor(
    readonly ctx: DurableObjectState,
    readonly env: Env,
  ) {
    this.sql = new MeteredSql(ctx.storage.sql);
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

  /** One synchronous transaction; its statements' rows are counted once it ends. */
  transaction<T>(fn: () => T): T {
    try {
      return this.ctx.storage.transactionSync(fn);
    } finally {
      this.sql.settle();
    }
  }

  /** The pool's name as the Worker routes it, recorded by the first job; null before any job. */
  storedName(): string | null {
    return this.sql.exec<{ name: string }>("SELECT name FROM pool_name").toArray()[0]?.name ?? null;
  }

  /**
   * Runs one state change as one synchronous transaction at one instant,
   * logs every ledger event it appended (docs/protocol.md §11: one JSON line per state
   * change), and keeps the alarm at the earliest live deadline. Every call
   * that can queue work, move a deadline or append an event goes through
   * here, so none can forget the alarm; the writes that do none of these (a
   * heartbeat no claim waits on, device codes, the alarm's own archive and
   * collection marks) use `transaction` directly. When the
   * change queued work or closed a job (`wakesClaims` for changes that
   * record no event), held claims get their turn before anyone else; a
   * change to one node (`wakesNode`) gives that node's held claim a turn.
   * Outcomes it wrote for other shards' nodes are sent after it, and those
   * that can distrust a node are awaited, briefly, before it returns
   * (docs/sharding.md §8.2).
   */
  async change<T>(fn: (now: number) => T, options: ChangeOptions = {}): Promise<T> {
    const before = this.logging || this.held.size > 0 ? this.lastEventSeq() : null;
    const now = Date.now();
    const result = this.transaction(() => fn(now));
    const wakeAll = this.held.size > 0 && (options.wakesClaims || (before !== null && this.workAppeared(before)));
    const woken = wakeAll
      ? answerHeld(this, null)
      : this.held.size > 0 && options.wakesNode !== undefined
        ? answerHeld(this, options.wakesNode)
        : [];
    if (before !== null && this.logging) {
      // A job's TASK_CREATED events are summarised by its JOB_ACCEPTED line (it
      // carries the count): a 10,000-task submission is one change, not 10,000.
      for (const row of this.sql.exec<EventRow>(
        "SELECT * FROM events WHERE seq > ? AND type != 'TASK_CREATED' ORDER BY seq",
        before,
      )) {
        logEvent(this.name, row);
      }
    }
    await arm(this);
    for (const [held, answer] of woken) held.resolve(answer);
    // A change to a node (a release, an assignment) may let its held claim take work on another shard too.
    // What another shard refused its claim for may be what changed: its refusals are forgotten.
    if ((options.wakesClaims || options.wakesNode !== undefined) && this.held.size > 0 && this.shards > 1)
      forwardHeld(this, options.wakesClaims ? null : options.wakesNode);
    // A node this change moved has its new passport at every shard its claims are in flight to, before the answer.
    await pushPassports(this);
    // Outbox rows the change wrote for other shards leave now (src/pool/outbox.ts); none at one shard.
    await sendWritten(this, () => arm(this));
    return result;
  }

  private lastEventSeq(): number {
    return this.sql.exec<{ seq: number | null }>("SELECT MAX(seq) AS seq FROM events").one().seq ?? 0;
  }

  /** Whether the ledger since `seq` queued work or closed a job: what a held claim waits for. */
  private workAppeared(seq: number): boolean {
    return (
      this.sql
        .exec(
          `SELECT 1 FROM events WHERE seq > ?
             AND type IN ('TASK_CREATED', 'TASK_REQUEUED', 'JOB_SUCCEEDED', 'JOB_FAILED') LIMIT 1`,
          seq,
        )
        .toArray().length > 0
    );
  }
}
