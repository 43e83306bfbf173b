// Renders a pool's schema as src/pool/schema/schema.sql: every table as the CREATE
// TABLE its migration wrote, then the columns later migrations added as the
// ALTER TABLEs they were, its indexes, and last the triggers, each with the
// rule it keeps. Run on an empty database, the file makes the same
// sqlite_master again (test/worker/schema/schema.test.ts checks that too).

import { MIGRATIONS } from "../../../src/pool/schema/schema";
import { rewindSchema } from "./schema-history";

export type SchemaRow = { type: string; name: string; tbl_name: string; sql: string };

/** The pool's own tables, indexes and triggers: not SQLite's, not the platform's, not automatic indexes. */
export function schemaRows(sql: SqlStorage): SchemaRow[] {
  return sql
    .exec<SchemaRow>(
      `SELECT type, name, tbl_name, sql FROM sqlite_master
       WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\'
       ORDER BY type, name`,
    )
    .toArray();
}

/** Which migration made each object (the last to create it), and each column added after its table. */
export type Origins = {
  objects: Map<string, number>;
  columns: Map<string, Array<{ column: string; id: number; renamedBy?: number }>>;
};

const columnsOf = (sql: SqlStorage, table: string) =>
  sql
    .exec<{ name: string }>("SELECT name FROM pragma_table_info(?)", table)
    .toArray()
    .map((c) => c.name);

/**
 * Takes a pool at the current schema back to nothing and up again one
 * migration at a time, noting what each adds. Leaves the pool migrated.
 */
export function replayMigrations(sql: SqlStorage): Origins {
  rewindSchema(sql, 0);
  const objects = new Map<string, number>();
  const sqlOf = new Map<string, string>();
  const columns: Origins["columns"] = new Map();
  const tableColumns = new Map<string, string[]>();
  for (const m of MIGRATIONS) {
    sql.exec(m.up);
    const now = new Map(schemaRows(sql).map((r) => [r.name, r]));
    for (const [name, row] of now) {
      const isNew = !sqlOf.has(name);
      if (isNew || (row.type !== "table" && sqlOf.get(name) !== row.sql)) objects.set(name, m.id);
      sqlOf.set(name, row.sql);
      if (row.type !== "table") continue;
      const cols = columnsOf(sql, name);
      if (!isNew) {
        const previous = tableColumns.get(name) ?? [];
        const before = new Set(previous);
        // A column renamed (ALTER TABLE RENAME COLUMN) keeps its place and the step that added it.
        const kept = (columns.get(name) ?? []).flatMap((a) => {
          if (cols.includes(a.column)) return [a];
          const renamed = cols[previous.indexOf(a.column)];
          return renamed !== undefined && !before.has(renamed) ? [{ ...a, column: renamed, renamedBy: m.id }] : [];
        });
        const known = new Set(kept.map((a) => a.column));
        const added = cols.filter((c) => !before.has(c) && !known.has(c)).map((column) => ({ column, id: m.id }));
        if (kept.length || added.length) columns.set(name, [...kept, ...added]);
      }
      tableColumns.set(name, cols);
    }
    for (const name of [...sqlOf.keys()]) if (!now.has(name)) sqlOf.delete(name);
  }
  sql.exec("UPDATE schema_version SET version = ?", MIGRATIONS.length);
  return { objects, columns };
}

/**
 * A table's CREATE TABLE as written, without the columns ALTER TABLE added:
 * SQLite inserts each `, name def` after the last column it had, so the
 * added ones are one run from the first of them to the end of the last.
 */
function splitAdded(create: string, added: readonly string[]): { create: string; defs: string[] } {
  if (added.length === 0) return { create, defs: [] };
  const starts: number[] = [];
  for (const column of added) {
    const at = create.indexOf(`, ${column} `, starts[starts.length - 1] ?? 0);
    if (at < 0) throw new Error(`column ${column} not found in ${create}`);
    starts.push(at);
  }
  const last = starts[starts.length - 1]!;
  let end = last + 2;
  for (let depth = 0, quoted = false; end < create.length; end++) {
    const ch = create[end]!;
    if (ch === "'") quoted = !quoted;
    if (quoted) continue;
    if (ch === "(") depth++;
    else if (ch === ")" && depth > 0) depth--;
    else if (depth === 0 && (ch === "," || ch === ")" || ch === "\n" || create.startsWith("--", end))) break;
  }
  const defs = starts.map((s, i) => create.slice(s + 2, i + 1 < starts.length ? starts[i + 1] : end).trimEnd());
  return { create: create.slice(0, starts[0]) + create.slice(end), defs };
}

/** Wraps a note into `-- ` lines of at most ~96 characters. */
function commentLines(text: string): string[] {
  const lines: string[] = [];
  let line = "--";
  for (const word of text.split(/\s+/)) {
    if (line.length + word.length + 1 > 96 && line !== "--") {
      lines.push(line);
      line = "--";
    }
    line += ` ${word}`;
  }
  lines.push(line);
  return lines;
}

/** The trigger's note: what its migration says about it (undefined: none, which the test refuses). */
export function triggerNote(name: string, origins: Origins): string | undefined {
  const id = origins.objects.get(name);
  return id === undefined ? undefined : MIGRATIONS[id - 1]?.triggers?.[name];
}

/** src/pool/schema/schema.sql's text for the schema `rows`, made as `origins` says. */
export function renderSchema(rows: readonly SchemaRow[], origins: Origins): string {
  const of = (type: string) => rows.filter((r) => r.type === type);
  const made = (name: string) => {
    const id = origins.objects.get(name);
    return id === undefined ? "made by migrate() itself" : `migration ${id}`;
  };
  const out = [
    "-- The pool object's SQLite schema after every migration in src/pool/schema/schema.ts",
    `-- (1-${MIGRATIONS.length}): what a new pool starts with and what every older pool is migrated to.`,
    "-- Generated from a freshly migrated pool's sqlite_master, never edited by hand:",
    "-- test/worker/schema/schema.test.ts fails when they differ; after changing a migration,",
    "-- `npm run schema:snapshot` rewrites this file. Run on an empty database it makes",
    "-- the same schema. Columns a later migration added are the ALTER TABLEs it ran.",
    "",
  ];
  for (const table of of("table")) {
    const added = origins.columns.get(table.name) ?? [];
    const { create, defs } = splitAdded(
      table.sql,
      added.map((a) => a.column),
    );
    out.push(`-- ${table.name}: ${made(table.name)}`, `${create};`);
    defs.forEach((def, i) => {
      const { id, renamedBy } = added[i]!;
      out.push(
        `ALTER TABLE ${table.name} ADD COLUMN ${def}; -- migration ${id}${renamedBy ? `, renamed by ${renamedBy}` : ""}`,
      );
    });
    for (const index of of("index").filter((i) => i.tbl_name === table.name)) {
      out.push(`${index.sql}; -- ${made(index.name)}`);
    }
    out.push("");
  }
  out.push(
    "-- Triggers: kept in the transaction of every change, whatever code path makes it.",
    "-- Each says which rule it keeps and where that rule's TypeScript half lives.",
    "",
  );
  // Grouped by the table they watch (a stable sort keeps them by name within it).
  const byTable = (a: SchemaRow, b: SchemaRow) => (a.tbl_name < b.tbl_name ? -1 : a.tbl_name > b.tbl_name ? 1 : 0);
  for (const trigger of of("trigger").sort(byTable)) {
    out.push(`-- ${trigger.name} (${made(trigger.name)}):`);
    out.push(...commentLines(triggerNote(trigger.name, origins) ?? "(no note: say what rule it keeps)"));
    out.push(`${trigger.sql};`, "");
  }
  return `${out.join("\n").trimEnd()}\n`;
}
