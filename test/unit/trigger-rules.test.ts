// The rules a trigger repeats in SQL, held to their TypeScript half: the
// outbox's columns (src/pool/ledger/outbox-rows.ts) and the trust threshold
// (src/rules/verification.ts TRUST_AFTER_VALID). A shipped step is never
// edited, so each is read twice: in the step that last created the trigger
// (a new step that makes it again is what a changed rule needs) and in
// src/pool/schema/schema.sql, the schema those steps make.

import { describe, expect, it } from "vitest";
import { OUTBOX_COLUMNS } from "../../src/pool/ledger/outbox-rows";
import { MIGRATIONS } from "../../src/pool/schema/schema";
import { TRUST_AFTER_VALID, trusted } from "../../src/rules/verification";

// Vite's import.meta.glob, which the test reads the schema's text with.
declare global {
  interface ImportMeta {
    glob(patterns: string[], options: { query: string; import: string; eager: true }): Record<string, unknown>;
  }
}

const schemaSql = Object.values(
  import.meta.glob(["../../src/pool/schema/schema.sql"], { query: "?raw", import: "default", eager: true }),
)[0] as string;

/** Each trigger the steps leave, by name: its SQL and note as the step that created it last wrote them. */
function triggersMade(): Map<string, { step: number; sql: string; note: string }> {
  const made = new Map<string, { step: number; sql: string; note: string }>();
  // No CREATE, DROP or ALTER stands inside a trigger's body: each starts a statement of its own.
  for (const step of MIGRATIONS)
    for (const statement of step.up.split(/(?=\b(?:CREATE|DROP|ALTER)\s)/)) {
      const created = /^CREATE TRIGGER (?:IF NOT EXISTS )?(\w+)/.exec(statement)?.[1];
      const dropped = /^DROP TRIGGER (?:IF EXISTS )?(\w+)/.exec(statement)?.[1];
      if (created !== undefined)
        made.set(created, { step: step.id, sql: statement, note: step.triggers?.[created] ?? "" });
      if (dropped !== undefined) made.delete(dropped);
    }
  return made;
}

/** Where each rule is written in SQL: the current triggers that write it, and schema.sql. */
function sources(writes: RegExp): [string, string][] {
  const triggers = [...triggersMade()]
    .filter(([, t]) => t.sql.search(writes) !== -1)
    .map(([name, t]): [string, string] => [`${name} (step ${t.step})`, `${t.sql}\n-- ${t.note}`]);
  // schema.sql wraps each note over comment lines: one line each, so a phrase is never split.
  return [...triggers, ["src/pool/schema/schema.sql", schemaSql.replaceAll(/\n-- /g, " ")]];
}

describe("the outbox's columns", () => {
  const inserts = /INSERT INTO outbox\s*\(([^)]*)\)/g;
  const columnsIn = (sql: string) => [...sql.matchAll(inserts)].map((m) => m[1]!.split(",").map((c) => c.trim()));

  it("are written in steps 36 and 22's triggers", () => {
    const names = sources(/INSERT INTO outbox/).map(([name]) => name);
    expect(names).toEqual(
      expect.arrayContaining(["leases_end_tell_home (step 36)", "tasks_replicating_tell_homes (step 22)"]),
    );
  });

  it.each(sources(/INSERT INTO outbox/))("are appendOutbox's in %s", (_name, sql) => {
    const written = columnsIn(sql);
    expect(written.length).toBeGreaterThan(0);
    for (const columns of written) expect(columns).toEqual([...OUTBOX_COLUMNS]);
  });
});

describe("the trust threshold", () => {
  const comparisons = /consecutive_valid\s*(>=|<=|<>|!=|==|=|>|<)\s*(\d+)/g;
  // A trigger's note names the literal its SQL uses: "TRUST_AFTER_VALID, …: the literal 10 here must match".
  const named = /TRUST_AFTER_VALID[^)]*?the literal (\d+) here must match/g;

  it("is compared in step 19's trigger nodes_passport", () => {
    expect(sources(comparisons).map(([name]) => name)).toContain("nodes_passport (step 19)");
  });

  it.each(sources(comparisons))("is TRUST_AFTER_VALID, read as trusted() reads it, in %s", (_name, sql) => {
    const found = [...sql.matchAll(comparisons)].map((m) => ({ op: m[1], literal: Number(m[2]) }));
    expect(found.length).toBeGreaterThan(0);
    for (const comparison of found) expect(comparison).toEqual({ op: ">=", literal: TRUST_AFTER_VALID });
    const notes = [...sql.matchAll(named)].map((m) => Number(m[1]));
    expect(notes.length).toBeGreaterThan(0);
    for (const literal of notes) expect(literal).toBe(TRUST_AFTER_VALID);
  });

  it("flips trusted() exactly at the literal the triggers compare with", () => {
    const record = (consecutive_valid: number) => ({ consecutive_valid, distrusted: null });
    expect(trusted(record(TRUST_AFTER_VALID - 1))).toBe(false);
    expect(trusted(record(TRUST_AFTER_VALID))).toBe(true);
  });
});

describe("the events' and the tasks' seqs", () => {
  // Each comes from the object's reserved block (src/pool/ledger/sequence.ts): an insert that let SQLite choose
  // would take a number of that block, and the next insert through the block the same one.
  const sources = import.meta.glob(["../../src/**/*.ts", "!../../src/pool/schema/migrations/**"], {
    query: "?raw",
    import: "default",
    eager: true,
  }) as Record<string, string>;
  const inserts = Object.entries(sources).flatMap(([file, text]) =>
    [...text.matchAll(/INSERT INTO (events|tasks)\s*\(([^)]*)\)/g)].map((m) => ({
      file,
      table: m[1],
      first: m[2]!.split(",")[0]!.trim(),
    })),
  );

  it("are inserted in src/pool/ledger/events.ts and src/pool/jobs/tasks.ts alone, each insert naming its seq", () => {
    expect(inserts.map((i) => i.table).sort()).toEqual(["events", "tasks"]);
    for (const insert of inserts) {
      const file = insert.table === "events" ? "../../src/pool/ledger/events.ts" : "../../src/pool/jobs/tasks.ts";
      expect(insert).toEqual({ file, table: insert.table, first: "seq" });
    }
  });

  it("are inserted by no trigger", () => {
    const inserting = /INSERT INTO (events|tasks)\b/;
    expect([...triggersMade()].filter(([, t]) => inserting.test(t.sql)).map(([name]) => name)).toEqual([]);
    expect(schemaSql).not.toMatch(inserting);
  });
});
