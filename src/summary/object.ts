// PoolSummary (Σ): one Durable Object per pool of more than one shard
// (docs/sharding.md §2.2, §6.2). It keeps, in memory, the latest digest of
// every shard and the pool's tenant passes (src/rules/summary.ts), and
// answers each shard's exchange with what changed since that shard last
// asked. It is soft state: a cache of facts the shards own, rebuilt in one
// round of exchanges after a restart, so it must never be the only place
// anything lives. The one thing it writes is a snapshot of the passes, at
// most every PASSES_SNAPSHOT_MS, so a restart hands no tenant a fresh start.
// At S = 1 no PoolSummary exists.

import { DurableObject } from "cloudflare:workers";
import { shardPeer } from "../pool/address";
import { type ExchangeReason, noSummaryLoad, type SummaryLoad, summaryServed } from "../rules/object-load";
import { settingsOf } from "../rules/settings";
import {
  applyExchange,
  type DigestDelta,
  type ExchangeReply,
  freshSummary,
  type GlobalPass,
  passesSnapshot,
  type ShardDigest,
  SUMMARY_LOG_MS,
  type SummaryState,
} from "../rules/summary";

/** The passes are written at most this often. */
export const PASSES_SNAPSHOT_MS = 5_000;
/** A shard is poked at most this often (4 a second, §6.2). */
export const POKE_SPACING_MS = 250;

const NO_WEIGHTS: ReadonlyMap<string, number> = new Map();

export class PoolSummary extends DurableObject<Env> {
  #state: SummaryState = freshSummary(crypto.randomUUID());
  // A snapshot alarm is set (or none need be): the next change need not set one.
  #snapshotArmed = false;
  #snapshotMs = 0;
  #startMs = Date.now();
  // The snapshot read at start, if any: until every shard has reported again, the passes of the
  // tenants not yet seen active are only there, so no snapshot is written before then.
  #restored = false;
  #written = "[]";
  #pokedMs = new Map<number, number>();
  /** Pokes sent since this instance started (observability, tests). */
  pokes = 0;
  // Calls served since this instance started, by kind (GET /metrics): in memory, no write per call.
  readonly #load = noSummaryLoad();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    void ctx.blockConcurrencyWhile(async () => {
      const sql = ctx.storage.sql;
      sql.exec(`CREATE TABLE IF NOT EXISTS tenant_passes (
        priority INTEGER NOT NULL, tenant TEXT NOT NULL, pass REAL NOT NULL, PRIMARY KEY (priority, tenant)
      ) WITHOUT ROWID`);
      const passes = sql.exec<GlobalPass>("SELECT priority, tenant, pass FROM tenant_passes").toArray();
      this.#state = freshSummary(crypto.randomUUID(), passes);
      this.#restored = passes.length > 0;
      this.#written = JSON.stringify(ordered(passes));
    });
  }

  /**
   * One shard's exchange (§6.2): merges what `from` sent (a delta against the
   * digest Σ acknowledged, or its whole digest) and answers what changed
   * since Σ's version `since`. A class newly pending at `from` pokes the
   * shards holding claims. `reason` is why the shard asks, for the counts only.
   */
  exchange(
    from: number,
    sent: DigestDelta | ShardDigest,
    since: number,
    reason: ExchangeReason = "tick",
  ): ExchangeReply {
    const now = Date.now();
    try {
      return this.#exchange(from, sent, since, now);
    } finally {
      summaryServed(this.#load, reason, now, Date.now());
    }
  }

  /** The calls this summary served since it started, by kind, and their busy time. */
  load(): SummaryLoad {
    // As a shard's metrics call, this read is counted after the copy it answers.
    const startedMs = Date.now();
    const load = structuredClone(this.#load);
    summaryServed(this.#load, "other", startedMs, Date.now());
    return load;
  }

  #exchange(from: number, sent: DigestDelta | ShardDigest, since: number, now: number): ExchangeReply {
    const before = new Set(this.#state.shards.get(from)?.classes.keys());
    const version = this.#state.version;
    const settings = settingsOf(this.env);
    const weights = settings.ok ? settings.settings.tenantWeights : NO_WEIGHTS;
    const { reply } = applyExchange(this.#state, from, sent, since, now, weights);
    if (this.#state.version !== version) {
      this.#armSnapshot(now);
      const after = this.#state.shards.get(from)?.classes.keys() ?? [];
      if ([...after].some((key) => !before.has(key))) this.#poke(from, now);
    }
    return reply;
  }

  /** Writes the passes' snapshot when it changed. */
  override async alarm(): Promise<void> {
    const now = Date.now();
    try {
      await this.#snapshot(now);
    } finally {
      summaryServed(this.#load, "other", now, Date.now());
    }
  }

  async #snapshot(now: number): Promise<void> {
    if (this.#restored && now < this.#startMs + SUMMARY_LOG_MS) {
      // An alarm an earlier instance set, before every shard has reported to this one: a snapshot
      // now would drop the passes of tenants not yet seen again.
      await this.ctx.storage.setAlarm(this.#startMs + SUMMARY_LOG_MS);
      this.#snapshotArmed = true;
      return;
    }
    this.#snapshotArmed = false;
    this.#restored = false;
    this.#snapshotMs = now;
    const passes = ordered(passesSnapshot(this.#state));
    const text = JSON.stringify(passes);
    if (text === this.#written) return;
    const sql = this.ctx.storage.sql;
    this.ctx.storage.transactionSync(() => {
      sql.exec("DELETE FROM tenant_passes");
      for (const p of passes)
        sql.exec("INSERT INTO tenant_passes (priority, tenant, pass) VALUES (?, ?, ?)", p.priority, p.tenant, p.pass);
    });
    this.#written = text;
  }

  /**
   * Sets the snapshot's alarm after a change, unless one is set: at most
   * every PASSES_SNAPSHOT_MS, and after a start from a snapshot not before
   * every shard has had time to report (a tick is at most 5 s).
   */
  #armSnapshot(now: number): void {
    if (this.#snapshotArmed) return;
    this.#snapshotArmed = true;
    const at = Math.max(
      now,
      this.#snapshotMs + PASSES_SNAPSHOT_MS,
      this.#restored ? this.#startMs + SUMMARY_LOG_MS : 0,
    );
    // Not awaited: the reply waits only for the alarm's write, as for any storage write.
    void this.ctx.storage.setAlarm(at);
  }

  /**
   * Tells every other shard whose digest shows held claims that work
   * appeared (`summaryChanged`), each at most every POKE_SPACING_MS. Fire and
   * forget: a poke lost or skipped costs only that shard's next tick.
   */
  #poke(from: number, now: number): void {
    const pool = this.ctx.id.name;
    if (pool === undefined) return;
    const settings = settingsOf(this.env);
    const rules = settings.ok ? settings.settings.poolLocations : [];
    for (const [shard, record] of this.#state.shards) {
      if (shard === from || record.held.claims <= 0) continue;
      if (now - (this.#pokedMs.get(shard) ?? Number.NEGATIVE_INFINITY) < POKE_SPACING_MS) continue;
      this.#pokedMs.set(shard, now);
      this.pokes += 1;
      this.ctx.waitUntil(Promise.resolve(shardPeer(this.env, rules, pool, shard).summaryChanged()).catch(() => {}));
    }
  }
}

function ordered(passes: GlobalPass[]): GlobalPass[] {
  return [...passes].sort(
    (a, b) => a.priority - b.priority || (a.tenant < b.tenant ? -1 : a.tenant > b.tenant ? 1 : 0),
  );
}
