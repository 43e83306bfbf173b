// The schema reads in one place: src/pool/schema/schema.sql is what the migrations
// make, each migration's `down` undoes exactly its `up`, and every trigger
// says which rule it keeps.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MIGRATIONS, migrate } from "../../../src/pool/schema/schema";
import { freshPool, stub } from "../helpers";
import { rewindSchema } from "./schema-history";
import {
  type Origins,
  renderSchema,
  replayMigrations,
  type SchemaRow,
  schemaRows,
  triggerNote,
} from "./schema-snapshot";

const REGENERATE = "src/pool/schema/schema.sql differs from a freshly migrated pool: run `npm run schema:snapshot`";

/** A new pool's schema as its constructor made it, and what replaying the migrations one by one says of it. */
async function freshSchema(): Promise<{ rows: SchemaRow[]; replayed: SchemaRow[]; origins: Origins }> {
  return runInDurableObject(stub(freshPool()), (_o, state) => {
    const sql = state.storage.sql;
    const rows = schemaRows(sql);
    const origins = replayMigrations(sql);
    return { rows, replayed: schemaRows(sql), origins };
  });
}

describe("the pool's schema", () => {
  it("has migrations numbered 1, 2, … in order, the versions pools record", () => {
    expect(MIGRATIONS.map((m) => m.id)).toEqual(MIGRATIONS.map((_m, i) => i + 1));
    for (const m of MIGRATIONS) expect(m.description, `migration ${m.id}`).toMatch(/\S/);
  });

  it("is src/pool/schema/schema.sql, table for table, index for index, trigger for trigger", async () => {
    const { rows, replayed, origins } = await freshSchema();
    expect(replayed).toEqual(rows);
    await expect(renderSchema(rows, origins)).toMatchFileSnapshot("../../../src/pool/schema/schema.sql", REGENERATE);
  });

  it("src/pool/schema/schema.sql, run on an empty database, makes the same schema", async () => {
    const { rows, origins } = await freshSchema();
    const again = await runInDurableObject(stub(freshPool()), (_o, state) => {
      const sql = state.storage.sql;
      rewindSchema(sql, 0);
      sql.exec("DROP TABLE schema_version");
      sql.exec(renderSchema(rows, origins));
      return schemaRows(sql);
    });
    expect(again).toEqual(rows);
  });

  it("every migration's down takes the schema back to exactly what the step before made", async () => {
    const failures = await runInDurableObject(stub(freshPool()), (_o, state) => {
      const sql = state.storage.sql;
      rewindSchema(sql, 0);
      const after: SchemaRow[][] = [schemaRows(sql)];
      for (const m of MIGRATIONS) {
        sql.exec(m.up);
        after.push(schemaRows(sql));
      }
      const wrong: number[] = [];
      for (const m of [...MIGRATIONS].reverse()) {
        sql.exec(m.down);
        if (JSON.stringify(schemaRows(sql)) !== JSON.stringify(after[m.id - 1])) wrong.push(m.id);
      }
      return wrong;
    });
    expect(failures, "migrations whose down does not undo their up").toEqual([]);
  });

  it("an old pool, migrated, has the schema of a new one, from every version", async () => {
    const { rows } = await freshSchema();
    const differ = await runInDurableObject(stub(freshPool()), (_o, state) => {
      const sql = state.storage.sql;
      const wrong: number[] = [];
      for (let version = MIGRATIONS.length - 1; version >= 0; version--) {
        rewindSchema(sql, version);
        state.storage.transactionSync(() => migrate(sql));
        if (JSON.stringify(schemaRows(sql)) !== JSON.stringify(rows)) wrong.push(version);
      }
      return wrong;
    });
    expect(differ, "versions that migrate to another schema").toEqual([]);
  });

  it("every trigger says which rule it keeps and where its TypeScript half lives", async () => {
    const { rows, origins } = await freshSchema();
    const triggers = rows.filter((r) => r.type === "trigger").map((r) => r.name);
    expect(triggers.length).toBeGreaterThan(0);
    const missing = triggers.filter((name) => !/src\/(pool|rules)\/\S+\.ts/.test(triggerNote(name, origins) ?? ""));
    expect(missing, "triggers whose migration has no note naming the rule and its TypeScript file").toEqual([]);
  });
});
