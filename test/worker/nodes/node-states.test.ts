// A passport's rules (src/pool/nodes/states.ts) on real SQLite: each
// TypeScript form answers as its SQL form does over the passports table,
// and a passport that is not admitting (its node's credential revoked at
// home) makes its node unknown to a claim here, whatever else it says.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { admit } from "../../../src/pool/leases/leases";
import { type Passport, passportOf, upsertPassport } from "../../../src/pool/nodes/passports";
import { claimant } from "../../../src/pool/nodes/registry";
import {
  admittingSql,
  isAdmitting,
  isPassportClaimable,
  ONLINE_WINDOW_MS,
  type PassportStateRow,
  passportClaimableSql,
} from "../../../src/pool/nodes/states";
import { freshPool, register, stub } from "../helpers";

const NOW = 1_000_000_000;

/** A passport's state, claimable at NOW unless a case changes it. */
const base: PassportStateRow = { status: "online", held_until_ms: 0, last_request_ms: NOW - 1000, revoked: 0 };

const CASES: [string, Partial<PassportStateRow>, boolean][] = [
  ["online here, accepting, not held back, admitting", {}, true],
  ["draining", { status: "draining" }, false],
  ["held back until after now", { held_until_ms: NOW + 1 }, false],
  ["its hold ended now", { held_until_ms: NOW }, true],
  ["its last request here a whole window ago", { last_request_ms: NOW - ONLINE_WINDOW_MS }, false],
  ["its last request here just inside the window", { last_request_ms: NOW - ONLINE_WINDOW_MS + 1 }, true],
  ["revoked, and otherwise claimable", { revoked: 1 }, false],
  ["revoked, held back and draining", { revoked: 1, held_until_ms: NOW + 1, status: "draining" }, false],
];

/** A node's passport from another home, built from `model`'s registration here. */
function passportFor(model: Passport, nodeId: string, change: Partial<Passport>): Passport {
  return { ...model, nodeId, home: 1, version: 1, ...change };
}

describe("a passport's rules", () => {
  it("claimable and admitting answer the same in TypeScript and in SQL, case for case", async () => {
    const answers = await runInDurableObject(stub(freshPool()), (_o, state) => {
      const sql = state.storage.sql;
      return CASES.map(([name, change]) => {
        const row = { ...base, ...change };
        sql.exec(
          `INSERT INTO passports (node_id, home, version, registration, status, held_until_ms, trusted, owner,
             revoked, received_ms, last_request_ms) VALUES (?, 1, 1, '{}', ?, ?, 0, ?, ?, ?, ?)`,
          name,
          row.status,
          row.held_until_ms,
          name,
          row.revoked,
          NOW,
          row.last_request_ms,
        );
        const bySql = (where: string, ...clock: number[]) =>
          sql.exec(`SELECT 1 FROM passports p WHERE p.node_id = ?1 AND ${where}`, name, ...clock).toArray().length > 0;
        return {
          name,
          claimable: isPassportClaimable(row, NOW),
          claimableSql: bySql(passportClaimableSql("p", "?2"), NOW),
          admitting: isAdmitting(row),
          admittingSql: bySql(admittingSql("p")),
        };
      });
    });
    expect(answers).toEqual(
      CASES.map(([name, change, claimable]) => ({
        name,
        claimable,
        claimableSql: claimable,
        admitting: change.revoked === undefined,
        admittingSql: change.revoked === undefined,
      })),
    );
  });

  it("a revoked passport admits no claim, and an older copy still in flight does not bring its node back", async () => {
    const pool = freshPool();
    await register(pool, "model");
    const seen = await runInDurableObject(stub(pool), (_o, state) => {
      const sql = state.storage.sql;
      const now = Date.now();
      const model = passportOf(sql, "model", new Map())!;
      upsertPassport(sql, passportFor(model, "kept", {}), now);
      upsertPassport(sql, passportFor(model, "revoked", { version: 2, revoked: true, credentialSha256: null }), now);
      const older = upsertPassport(sql, passportFor(model, "revoked", { version: 1 }), now);
      return {
        kept: [claimant(sql, "kept", new Map())?.owner, admit(sql, now, "kept", new Map()).ok],
        revoked: [claimant(sql, "revoked", new Map()), admit(sql, now, "revoked", new Map())],
        older,
        held: sql.exec("SELECT version, revoked FROM passports WHERE node_id = 'revoked'").one(),
      };
    });
    expect(seen).toEqual({
      kept: ["model", true],
      revoked: [undefined, { ok: false, reason: "unregistered" }],
      older: false,
      held: { version: 2, revoked: 1 },
    });
  });
});
