// Nothing leaks (docs/protocol.md §12): every R2 object is either referenced by a key or
// collected. Time is moved by making a recorded object due now.

import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { COLLECT_BATCH, takeForCollection } from "../../../src/pool/artifacts/collection";
import { call, freshPool, storedObjects, stub, upload } from "../helpers";

/** The objects the pool knows no key refers to yet: uploads streaming (schema step 34) and those to collect. */
function rows(pool: string) {
  return runInDurableObject(stub(pool), (_o, state) =>
    state.storage.sql
      .exec<{ object: string; collecting: number }>(
        "SELECT object, 0 AS collecting FROM uploads UNION ALL SELECT object, collecting FROM unreferenced",
      )
      .toArray(),
  );
}

/** Every upload's grace and every collection's wait over. */
function makeDue(pool: string) {
  return runInDurableObject(stub(pool), (_o, state) => {
    state.storage.sql.exec("UPDATE uploads SET started_ms = 1");
    state.storage.sql.exec("UPDATE unreferenced SET collect_after_ms = 1");
  });
}

describe("collection of unreferenced R2 objects", () => {
  it("an upload that never reaches a bind is collected once its hour has passed", async () => {
    const pool = freshPool();
    const object = `pools/${pool}/objects/never-bound`;
    expect(await stub(pool).beginUpload("shared/data.bin", object, null)).toEqual({ ok: true });
    await env.ARTIFACTS.put(object, "half an upload");
    expect(await rows(pool)).toEqual([{ object, collecting: 0 }]);

    await runDurableObjectAlarm(stub(pool)); // not due yet: kept
    expect(await storedObjects(pool)).toEqual([object]);

    await makeDue(pool);
    await runDurableObjectAlarm(stub(pool));
    expect(await storedObjects(pool)).toEqual([]);
    expect(await rows(pool)).toEqual([]);
  });

  it("bytes a bind replaced are collected even when the Worker's own delete was lost", async () => {
    const pool = freshPool();
    expect((await upload(pool, "shared/model.bin", "v1")).status).toBe(200);
    const [first] = await storedObjects(pool);
    expect((await upload(pool, "shared/model.bin", "v2")).status).toBe(200);
    // The Worker deleted v1; put it back as if that delete had failed.
    await env.ARTIFACTS.put(first!, "v1");
    expect(await storedObjects(pool)).toHaveLength(2);

    await makeDue(pool);
    await runDurableObjectAlarm(stub(pool));
    expect(await storedObjects(pool)).toHaveLength(1);
    expect(await storedObjects(pool)).not.toContain(first);
    expect(await (await call(pool, "GET", "/artifacts/shared/model.bin")).text()).toBe("v2");
    expect(await rows(pool)).toEqual([]);
  });

  it("a bound object is never collected", async () => {
    const pool = freshPool();
    expect((await upload(pool, "shared/keep.bin", "keep")).status).toBe(200);
    expect(await rows(pool)).toEqual([]);
    await runDurableObjectAlarm(stub(pool));
    expect(await (await call(pool, "GET", "/artifacts/shared/keep.bin")).text()).toBe("keep");
  });

  it("an upload being collected can no longer be bound: 409, and the key stays as it was", async () => {
    const pool = freshPool();
    const object = `pools/${pool}/objects/too-slow`;
    await stub(pool).beginUpload("shared/slow.bin", object, null);
    // Its grace passed, and collection took it.
    await makeDue(pool);
    await runInDurableObject(stub(pool), (_o, state) =>
      state.storage.transactionSync(() => takeForCollection(state.storage.sql, Date.now())),
    );
    expect(await rows(pool)).toEqual([{ object, collecting: 1 }]);
    const bound = await stub(pool).bindArtifact(
      "shared/slow.bin",
      { object, sha256: "0".repeat(64), size_bytes: 1, etag: "e" },
      null,
    );
    expect(bound).toMatchObject({ ok: false, reason: "expired" });
    expect((await call(pool, "GET", "/artifacts/shared/slow.bin")).status).toBe(404);
  });

  it("collects in bounded batches of 100, re-arming until none is left", async () => {
    const pool = freshPool();
    for (let i = 0; i < 250; i++) {
      const object = `pools/${pool}/objects/o-${String(i).padStart(3, "0")}`;
      await stub(pool).beginUpload(`shared/f${i}`, object, null);
      await env.ARTIFACTS.put(object, "x");
    }
    await makeDue(pool);
    // One run takes one batch (and marks it, so no bind can claim those objects).
    const taken = await runInDurableObject(stub(pool), (_o, state) =>
      state.storage.transactionSync(() => takeForCollection(state.storage.sql, Date.now())),
    );
    expect(taken).toHaveLength(COLLECT_BATCH);
    expect((await rows(pool)).filter((r) => r.collecting === 1)).toHaveLength(COLLECT_BATCH);
    // Each run re-arms the alarm for the rest; runs go on until none is left.
    for (let run = 0; run < 5 && (await rows(pool)).length > 0; run++) await runDurableObjectAlarm(stub(pool));
    expect(await rows(pool)).toEqual([]);
    expect(await storedObjects(pool)).toEqual([]);
  });

  // docs/protocol.md §16: an upload's record is one row written and one deleted, in a table of its own.
  it("an upload slower than its grace but not yet collected still binds; an upload recorded before step 34 binds too", async () => {
    const pool = freshPool();
    const slow = `pools/${pool}/objects/slow-but-bound`;
    await stub(pool).beginUpload("shared/late.bin", slow, null);
    await runInDurableObject(stub(pool), (_o, state) => {
      state.storage.sql.exec("UPDATE uploads SET started_ms = 1");
      // As step 33 recorded an upload: a row of unreferenced, due in an hour.
      state.storage.sql.exec(
        "INSERT INTO unreferenced (object, collect_after_ms) VALUES (?, ?)",
        `pools/${pool}/objects/old-style`,
        Date.now() + 3_600_000,
      );
    });
    const bind = (key: string, object: string) =>
      stub(pool).bindArtifact(key, { object, sha256: "0".repeat(64), size_bytes: 1, etag: "e" }, null);
    expect(await bind("shared/late.bin", slow)).toMatchObject({ ok: true });
    expect(await bind("shared/old.bin", `pools/${pool}/objects/old-style`)).toMatchObject({ ok: true });
    expect(await rows(pool)).toEqual([]);
    // An object never recorded does not bind.
    expect(await bind("shared/forged.bin", `pools/${pool}/objects/never-recorded`)).toMatchObject({ ok: false });
  });
});
