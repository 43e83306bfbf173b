// Step 19 of the pool's schema: a node's passport version moves with every
// change its passport carries (docs/sharding.md §8.1), so a shard holding a
// copy can tell an older one from a newer one. Triggers, so no code path that
// writes those columns can forget the bump. Bounded work on any history:
// triggers only, no rows touched. Step 21 indexes replica leases by node,
// which the alarm's forgetting of passports reads: one pass over leases,
// whose rows are bounded by job retention.

import type { Migration } from "./migration";

/** The statement each trigger runs: one more version for the node. */
const bump = (row: "NEW" | "OLD") =>
  `UPDATE nodes SET passport_version = passport_version + 1 WHERE node_id = ${row}.node_id;`;

/** The note of a passport trigger: what change of the node it counts. */
const note = (what: string) =>
  `docs/sharding.md §8.1, passports: ${what} bumps the node's passport_version in the same transaction, so a shard holding an older passport (passports.version) is sent the newer one and never keeps it over a newer. TypeScript half: src/pool/passports.ts passportOf reads exactly these columns into the passport, upsertPassport keeps the higher version.`;

export const PASSPORTS: readonly Migration[] = [
  // 19: the passport_version triggers step 18 left for the step that writes
  // passports. The trusted() flip is consecutive_valid crossing
  // TRUST_AFTER_VALID (src/rules/verification.ts, 10: the literal here must
  // match) or distrusted changing, which the first trigger counts anyway.
  {
    id: 19,
    description:
      "passport versions: triggers bump nodes.passport_version on every change a passport carries (docs/sharding.md §8.1)",
    up: `
  CREATE TRIGGER nodes_passport AFTER UPDATE OF registration, status, held_until_ms, distrusted, consecutive_valid ON nodes
    WHEN OLD.registration IS NOT NEW.registration OR OLD.status IS NOT NEW.status
      OR OLD.held_until_ms IS NOT NEW.held_until_ms OR OLD.distrusted IS NOT NEW.distrusted
      OR (OLD.consecutive_valid >= 10) <> (NEW.consecutive_valid >= 10) BEGIN
    ${bump("NEW")}
  END;
  CREATE TRIGGER node_pools_passport_insert AFTER INSERT ON node_pools BEGIN
    ${bump("NEW")}
  END;
  CREATE TRIGGER node_pools_passport_update AFTER UPDATE OF pools ON node_pools WHEN OLD.pools IS NOT NEW.pools BEGIN
    ${bump("NEW")}
  END;
  CREATE TRIGGER node_pools_passport_delete AFTER DELETE ON node_pools BEGIN
    ${bump("OLD")}
  END;
  CREATE TRIGGER node_credentials_passport_insert AFTER INSERT ON node_credentials BEGIN
    ${bump("NEW")}
  END;
  CREATE TRIGGER node_credentials_passport_update AFTER UPDATE OF token_sha256, owner, revoked_ms ON node_credentials
    WHEN OLD.token_sha256 IS NOT NEW.token_sha256 OR OLD.owner IS NOT NEW.owner
      OR OLD.revoked_ms IS NOT NEW.revoked_ms BEGIN
    ${bump("NEW")}
  END;
  CREATE TRIGGER node_credentials_passport_delete AFTER DELETE ON node_credentials BEGIN
    ${bump("OLD")}
  END;
  `,
    down: `DROP TRIGGER nodes_passport; DROP TRIGGER node_pools_passport_insert; DROP TRIGGER node_pools_passport_update;
      DROP TRIGGER node_pools_passport_delete; DROP TRIGGER node_credentials_passport_insert;
      DROP TRIGGER node_credentials_passport_update; DROP TRIGGER node_credentials_passport_delete;`,
    triggers: {
      nodes_passport: note(
        "a change to the node's registration, status, hold (held_until_ms), distrust, or trusted() flag (consecutive_valid crossing TRUST_AFTER_VALID, src/rules/verification.ts: the literal 10 here must match)",
      ),
      node_pools_passport_insert: note("a first team-pool assignment (node_pools, the passport's assigned_pools)"),
      node_pools_passport_update: note("a changed team-pool assignment"),
      node_pools_passport_delete: note("a team-pool assignment removed"),
      node_credentials_passport_insert: note(
        "a first enrolled credential (its hash and owner, the passport's credential_sha256 and owner)",
      ),
      node_credentials_passport_update: note("a credential replaced, re-owned or revoked (revoked_ms)"),
      node_credentials_passport_delete: note("a credential removed"),
    },
  },
  // 20: liveness goes home (docs/sharding.md §8.3). A lease of another
  // shard's node that stops being live, by whatever code path, tells the
  // node's home its last request here and its latest live deadline here, so
  // the home's live_until_ms falls as step 14's trigger makes it fall for its
  // own leases. `told_until_ms`: the deadline the home last heard from here.
  {
    id: 20,
    description:
      "liveness goes home: a foreign node's lease that ends writes a 'seen' outcome for its home (docs/sharding.md §8.3)",
    up: `
  ALTER TABLE passports ADD COLUMN told_until_ms INTEGER NOT NULL DEFAULT 0;
  CREATE TRIGGER leases_end_tell_home AFTER UPDATE OF status ON leases
    WHEN OLD.status = 'live' AND NEW.status <> 'live' BEGIN
    INSERT INTO outbox (to_shard, kind, body, created_ms)
      SELECT p.home, 'outcome', json_object('node_id', p.node_id, 'outcome', 'seen', 'at', p.last_request_ms,
          'until', COALESCE((SELECT MAX(l.deadline_ms) FROM leases l WHERE l.node_id = p.node_id AND l.status = 'live'), 0),
          'ended', 1), p.last_request_ms
        FROM passports p WHERE p.node_id = NEW.node_id;
  END;
  `,
    down: "DROP TRIGGER leases_end_tell_home; ALTER TABLE passports DROP COLUMN told_until_ms;",
    triggers: {
      leases_end_tell_home:
        "docs/sharding.md §8.3, liveness: when a lease of a node whose home is another shard stops being live (commit, fail, expiry, cancel), an outcome row tells the home the node's last request here and its latest live deadline here, so the home lowers live_until_ms as leases_end_liveness does for its own. TypeScript half: src/pool/outcomes.ts applies the 'seen' outcome (ONLINE_WINDOW_MS, 15 s), src/pool/nodes.ts seen() sends the outbox after a request here.",
    },
  },
  // 21: passports are forgotten (docs/protocol.md §12): the alarm keeps the
  // copy of a node that holds or ran a replica of a task still open here,
  // since that task's verdict (src/pool/outcomes.ts) and its changes as a
  // replicating one (step 22's trigger) go to the home the copy names. A
  // replica's lease only: a task run once adds no entry.
  {
    id: 21,
    description:
      "forgetting passports: each node's replica leases (docs/protocol.md §12, src/pool/passports.ts forgetPassports)",
    up: "CREATE INDEX leases_replica_node ON leases (node_id, task_seq) WHERE replica > 0;",
    down: "DROP INDEX leases_replica_node;",
  },
];
