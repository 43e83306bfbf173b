// Step 23 of the pool's schema: two tables of step 18 that nothing ever
// read or wrote go (passport_holders, for version-only tickets no home
// sent, which are gone too; shard_stats, for counts kept in memory
// instead). Bounded work on any history: both are empty in every pool.

import type { Migration } from "./migration";

export const UNUSED: readonly Migration[] = [
  {
    id: 23,
    description: "drops passport_holders and shard_stats, which step 18 made and nothing used",
    up: "DROP TABLE passport_holders; DROP TABLE shard_stats;",
    down: `CREATE TABLE passport_holders (
    node_id TEXT NOT NULL, shard INTEGER NOT NULL, version INTEGER NOT NULL,
    PRIMARY KEY (node_id, shard)
  ) WITHOUT ROWID;
  CREATE TABLE shard_stats (name TEXT PRIMARY KEY, n INTEGER NOT NULL);`,
  },
];
