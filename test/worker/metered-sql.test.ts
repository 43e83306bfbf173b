// What a pool object's statements cost (docs/protocol.md §16): every
// statement goes through one counter (src/pool/metered-sql.ts), whose sums
// are the SQL cursor's own figures, triggers and index entries included,
// and GET /metrics shows them to an operator.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { MeteredSql } from "../../src/pool/metered-sql";
import { call, freshPool, register, stub } from "./helpers";

describe("the rows a pool object's statements read and write", () => {
  it("sum the cursor's own figures, each index entry and trigger write included", async () => {
    const pool = freshPool();
    await register(pool, "n1"); // an object with its schema
    const figures = await runInDurableObject(stub(pool), (_o, state) => {
      const raw = state.storage.sql;
      raw.exec(`CREATE TABLE metered_t (id INTEGER PRIMARY KEY, v TEXT);
        CREATE INDEX metered_t_v ON metered_t (v);
        CREATE TABLE metered_n (n INTEGER NOT NULL); INSERT INTO metered_n VALUES (0);
        CREATE TRIGGER metered_count AFTER INSERT ON metered_t BEGIN UPDATE metered_n SET n = n + 1; END;`);
      const metered = new MeteredSql(raw);
      const cursors = [
        metered.exec("INSERT INTO metered_t (v) VALUES (?), (?), (?)", "a", "b", "c"),
        metered.exec("UPDATE metered_t SET v = 'z' WHERE v = ?", "a"),
      ];
      const read = metered.exec<{ v: string }>("SELECT v FROM metered_t ORDER BY id");
      const rows = read.toArray();
      cursors.push(read);
      const own = cursors.reduce(
        (sum, c) => ({ rowsRead: sum.rowsRead + c.rowsRead, rowsWritten: sum.rowsWritten + c.rowsWritten }),
        { rowsRead: 0, rowsWritten: 0 },
      );
      return { rows, own, totals: metered.totals() };
    });
    expect(figures.rows).toEqual([{ v: "z" }, { v: "b" }, { v: "c" }]);
    expect(figures.totals).toEqual(figures.own);
    // Three rows, their three index entries and the trigger's three updates, then one row and its index entry moved.
    expect(figures.own.rowsWritten).toBeGreaterThanOrEqual(3 + 3 + 3 + 1);
    expect(figures.own.rowsRead).toBeGreaterThanOrEqual(3);
  });

  it("are shown to an operator by GET /metrics, and grow with the pool's work", async () => {
    const pool = freshPool();
    const rows = async () => {
      const text = await (await call(pool, "GET", "/metrics")).text();
      const value = (name: string) => Number(new RegExp(`^${name}\\{pool="${pool}"\\} (\\S+)$`, "m").exec(text)?.[1]);
      return { read: value("flashedge_sql_rows_read_total"), written: value("flashedge_sql_rows_written_total") };
    };
    const before = await rows();
    await register(pool, "n1");
    const after = await rows();
    expect(Number.isInteger(before.written)).toBe(true);
    expect(after.written).toBeGreaterThan(before.written);
    expect(after.read).toBeGreaterThan(before.read);
  });
});
