// What the pool object's modules share: its SQL, its storage, its settings
// and the one way to change state (`change`). Nothing here is state a later
// request depends on: the held claims are connections, the alarm fields a
// cache and a backoff (src/pool/housekeeping.ts), the summary's copy, grants
// and exchange state soft caches the next exchange rebuilds
// (src/pool/exchange.ts), and the object may be evicted between any two
// requests.

import { shardCount } from "../rules/pool-shards";
import { type Settings, settingsOf } from "../rules/settings";
import { shardOfName } from "./address";
import { Grants } from "./digest";
import type { EventRow } from "./events";
import { joinSummary, SummaryLink } from "./exchange";
import { answerHeld, HeldClaims } from "./held-claims";
import { AlarmClock, arm } from "./housekeeping";
import { logEvent, logLine } from "./log";
import { SummaryCopy } from "./summary-copy";

export type ChangeOptions = {
  /** The change records no event but may let a held claim through (a cancel, a released node). */
  wakesClaims?: boolean;
  /** The change concerns one node: its held claim, if any, gets another try. */
  wakesNode?: string;
};

export class Pool {
  readonly sql: SqlStorage;
  // Held claims in arrival order (src/pool/held-claims.ts): connections, not state.
  readonly held = new HeldClaims();
  readonly clock = new AlarmClock();
  // The pool summary's side here (docs/sharding.md §6), used only at S > 1: the copy of the
  // other shards, the claims granted per tenant, and the exchanges with Σ.
  readonly summary = new SummaryCopy();
  readonly grants = new Grants();
  readonly link = new SummaryLink();

  constructor(
    readonly ctx: DurableObjectState,
    readonly env: Env,
  ) {
    this.sql = ctx.storage.sql;
    if (this.shards > 1) joinSummary(this);
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

  /** The pool's name for logs (the object's id when the runtime does not know the name). */
  get name(): string {
    return this.ctx.id.name ?? this.ctx.id.toString();
  }

  /** The pool this object is a shard of: its name without the shard's `/k`. */
  get poolName(): string {
    return shardOfName(this.name).pool;
  }

  /** Which of the pool's shards this object is (0 for the pool's first object). */
  get shard(): number {
    return shardOfName(this.name).shard;
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

  /** Whether state changes are logged (docs/protocol.md §11). */
  get logging(): boolean {
    return this.settings.logStateChanges;
  }

  /** One log line for this pool, when logging is on. */
  log(fields: Record<string, string | number | boolean | null>): void {
    if (this.logging) logLine({ pool: this.name, ...fields });
  }

  /** One synchronous transaction. */
  transaction<T>(fn: () => T): T {
    return this.ctx.storage.transactionSync(fn);
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
