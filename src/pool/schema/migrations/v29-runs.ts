// Step 29 of the pool's schema: hosted runs (docs/protocol.md §17). A run
// lives at one shard, with every round job it submits: its row, and one
// row per round job, which the commit that meets the round's quorum
// freezes in the same transaction (src/pool/runs/rounds.ts). New tables
// only: bounded work on any history.

import type { Migration } from "./migration";

export const RUNS: readonly Migration[] = [
  {
    id: 29,
    description: "hosted runs: a run's row, and its round jobs with the quorum each freezes",
    up: `CREATE TABLE runs (
    seq INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    request TEXT NOT NULL,
    operator TEXT,
    state TEXT NOT NULL DEFAULT 'RUNNING',
    reason TEXT,
    result_uri TEXT,
    created_ms INTEGER NOT NULL,
    finished_ms INTEGER
  );
  CREATE TABLE run_rounds (
    job_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    round INTEGER NOT NULL,
    quorum INTEGER NOT NULL,
    frozen TEXT,
    ended TEXT,
    told INTEGER NOT NULL DEFAULT 1,
    result TEXT,
    UNIQUE (run_id, round)
  );
  CREATE INDEX run_rounds_untold ON run_rounds (job_id) WHERE told = 0;`,
    down: "DROP TABLE run_rounds; DROP TABLE runs;",
  },
];
