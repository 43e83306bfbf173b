// Step 18 of the pool's schema: what a shard of a sharded pool keeps beside
// today's tables (docs/sharding.md §2.1). Every table is empty at S = 1 but
// for shard_self's row and pool_layout's first epoch (src/pool/layout.ts).
// The step does bounded work on any history: new tables, two ALTERs with
// constant defaults, and one partial index over a column that is all NULL.

import type { Migration } from "./migration";

export const SHARDS: readonly Migration[] = [
  // 18: shards (docs/sharding.md §2.1, §4.2, §8.1, §8.2, §11, §13.1). The
  // passport_version triggers are not here: nothing writes passports yet,
  // and the step that does adds them (a trigger costs nothing to add later;
  // a column on a large table is what an early step saves).
  {
    id: 18,
    description:
      "sharded pools: shard identity, layout history, node homes, passports, outbox and inbox, idempotent forwarded claims, shard stats (docs/sharding.md §2.1; passport_version triggers come with passports)",
    up: `
  CREATE TABLE shard_self (pool TEXT NOT NULL, shard INTEGER NOT NULL);  -- one row, from the object's name ("P" or "P/k")
  CREATE TABLE pool_layout (
    epoch INTEGER PRIMARY KEY,            -- 0, 1, 2, … one per change of FLASHML_POOL_SHARDS seen at start
    shards INTEGER NOT NULL,              -- S in that epoch
    since_ms INTEGER NOT NULL,
    lowered_from INTEGER                  -- set when the epoch lowered S (after the emptiness check)
  );
  CREATE TABLE homes (
    kind TEXT NOT NULL,                   -- 'node' | 'key'
    name TEXT NOT NULL,                   -- node_id, or artifact key
    home INTEGER NOT NULL,
    recorded_ms INTEGER NOT NULL,
    PRIMARY KEY (kind, name)
  ) WITHOUT ROWID;
  CREATE TABLE passports (
    node_id TEXT PRIMARY KEY,
    home INTEGER NOT NULL,
    version INTEGER NOT NULL,             -- the home's nodes.passport_version when issued
    registration TEXT NOT NULL,           -- NodeRegistration JSON as stored at home
    status TEXT NOT NULL,                 -- online | draining | terminating
    held_until_ms INTEGER NOT NULL,
    trusted INTEGER NOT NULL,             -- rules/verification.ts trusted() at home
    distrusted TEXT,
    owner TEXT NOT NULL,                  -- rules/owners.ts ownerOf() at home
    assigned_pools TEXT,                  -- node_pools.pools JSON, NULL when none assigned
    credential_sha256 TEXT,               -- enrolled credential hash, NULL for configured tokens / open mode
    revoked INTEGER NOT NULL DEFAULT 0,
    received_ms INTEGER NOT NULL,
    last_request_ms INTEGER NOT NULL      -- liveness as seen here
  );
  CREATE TABLE passport_holders (
    node_id TEXT NOT NULL, shard INTEGER NOT NULL, version INTEGER NOT NULL,
    PRIMARY KEY (node_id, shard)
  ) WITHOUT ROWID;
  ALTER TABLE nodes ADD COLUMN passport_version INTEGER NOT NULL DEFAULT 0;
  CREATE TABLE outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    to_shard INTEGER NOT NULL,
    kind TEXT NOT NULL,                   -- 'outcome' | 'passport'
    body TEXT NOT NULL,                   -- outcome: small JSON; passport: {"node_id"}, read at delivery
    created_ms INTEGER NOT NULL
  );
  CREATE INDEX outbox_to ON outbox (to_shard, seq);
  CREATE TABLE inbox_seen (from_shard INTEGER PRIMARY KEY, last_seq INTEGER NOT NULL);  -- dedupe by sender's seq
  ALTER TABLE leases ADD COLUMN claim_id TEXT;     -- a forwarded claim's id (NULL: a local claim)
  CREATE UNIQUE INDEX leases_claim ON leases (claim_id) WHERE claim_id IS NOT NULL;
  CREATE TABLE shard_stats (name TEXT PRIMARY KEY, n INTEGER NOT NULL);
  `,
    down: `DROP TABLE shard_self; DROP TABLE pool_layout; DROP TABLE homes; DROP TABLE passports;
      DROP TABLE passport_holders; ALTER TABLE nodes DROP COLUMN passport_version;
      DROP INDEX outbox_to; DROP TABLE outbox; DROP TABLE inbox_seen;
      DROP INDEX leases_claim; ALTER TABLE leases DROP COLUMN claim_id; DROP TABLE shard_stats;`,
  },
];
