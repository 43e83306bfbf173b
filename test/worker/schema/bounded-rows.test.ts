// docs/protocol.md §12 "Bounded rows" and "Nothing leaks" (id collisions), through the
// Worker with real SQLite: a stored row never nears the platform's 2 MB row
// limit. Local workerd does not enforce that limit, so these tests check the
// caps themselves: a registration over 64 KiB is refused, free text is kept
// to 4 KiB with a marker, every sha256 is 64 lowercase hex characters, and
// an id already taken is drawn again rather than raising a 500.

import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { newManifestId } from "../../../src/pool/artifacts/checkpoints";
import { leaseTask } from "../../../src/pool/leases/rows";
import { MAX_JSON_BODY_BYTES, MAX_REGISTRATION_BYTES, MAX_STORED_TEXT_BYTES } from "../../../src/protocol/limits";
import { NodeRegistrationSchema } from "../../../src/protocol/nodes";
import type { Lease } from "../../../src/protocol/tasks";
import {
  call,
  claim,
  freshPool,
  json,
  register,
  registration,
  sha256,
  stub,
  submitJob,
  trialsJob,
  upload,
} from "../helpers";
import { violations } from "../invariants";

const bytes = (text: string) => new TextEncoder().encode(text).length;
const MARKER = /… \[truncated from \d+ bytes\]$/;
const SHA = "0123456789abcdef".repeat(4);

/** Malformed sha256 values: each is a 422 wherever a sha256 goes. */
const MALFORMED_SHA: Array<[string, string]> = [
  ["63 characters", SHA.slice(1)],
  ["65 characters", `${SHA}0`],
  ["uppercase hex", SHA.toUpperCase()],
  ["a non-hex character", `${SHA.slice(1)}g`],
];

type Row = Record<string, SqlStorageValue>;

function rows(pool: string, query: string, ...params: SqlStorageValue[]): Promise<Row[]> {
  return runInDurableObject(stub(pool), (_o, state) => state.storage.sql.exec<Row>(query, ...params).toArray());
}

/** Everything a refused request must leave as it was: nodes, tasks, leases, events, checkpoints. */
async function state(pool: string) {
  return {
    nodes: await rows(pool, "SELECT * FROM nodes ORDER BY node_id"),
    tasks: await rows(pool, "SELECT * FROM tasks ORDER BY seq"),
    leases: await rows(pool, "SELECT * FROM leases ORDER BY lease_id"),
    events: await rows(pool, "SELECT * FROM events ORDER BY seq"),
    parts: await rows(pool, "SELECT * FROM checkpoint_parts ORDER BY key"),
    manifests: await rows(pool, "SELECT * FROM checkpoint_manifests ORDER BY seq"),
  };
}

/** The stored message (and data) of a job's events of one type. */
async function eventsOf(pool: string, jobId: string, type: string) {
  const found = await rows(
    pool,
    "SELECT message, data FROM events WHERE job_id = ? AND type = ? ORDER BY seq",
    jobId,
    type,
  );
  return found.map((e) => ({
    message: String(e.message),
    data: JSON.parse(String(e.data)) as Record<string, unknown>,
  }));
}

/**
 * A registration body whose stored form (defaults applied, the URL's pool
 * set) is exactly `size` bytes, padded in a label.
 */
function registrationStoredAs(pool: string, nodeId: string, size: number) {
  const body = registration(nodeId, { labels: { pad: "" } });
  const stored = (b: typeof body) => JSON.stringify({ ...NodeRegistrationSchema.parse(b), pool });
  const pad = size - bytes(stored(body));
  return { ...body, labels: { pad: "x".repeat(pad) } };
}

/** A pool with one node holding a live lease on a one-task job. */
async function leased() {
  const pool = freshPool();
  await register(pool, "n1");
  const job = await submitJob(pool, trialsJob(1));
  const r = await claim(pool, "n1");
  expect(r.status).toBe(200);
  return { pool, job: job.job_id, lease: await json<Lease>(r) };
}

describe("a node registration is at most 64 KiB", () => {
  it("a registration stored as exactly 64 KiB is accepted", async () => {
    const pool = freshPool();
    const body = registrationStoredAs(pool, "n1", MAX_REGISTRATION_BYTES);
    expect((await call(pool, "POST", "/nodes/register", body)).status).toBe(200);
    const [row] = await rows(pool, "SELECT registration FROM nodes WHERE node_id = 'n1'");
    expect(bytes(String(row?.registration))).toBe(MAX_REGISTRATION_BYTES);
  });

  it("one byte more is 413 naming the limit, and nothing is stored", async () => {
    const pool = freshPool();
    const r = await call(pool, "POST", "/nodes/register", registrationStoredAs(pool, "n1", MAX_REGISTRATION_BYTES + 1));
    expect(r.status).toBe(413);
    expect((await json<{ detail: string }>(r)).detail).toContain(String(MAX_REGISTRATION_BYTES));
    expect(await state(pool)).toMatchObject({ nodes: [], events: [] });
  });

  it("a body within the limit whose defaults grow it past is 413: the registration is measured as stored", async () => {
    const pool = freshPool();
    // {"index":0} is 11 bytes sent and about 90 stored, every default spelled out.
    const gpus = Array.from({ length: 4000 }, (_, index) => ({ index }));
    const body = registration("n1", { capabilities: { gpus } });
    expect(bytes(JSON.stringify(body))).toBeLessThan(MAX_REGISTRATION_BYTES);
    const r = await call(pool, "POST", "/nodes/register", body);
    expect(r.status).toBe(413);
    expect((await json<{ detail: string }>(r)).detail).toContain(String(MAX_REGISTRATION_BYTES));
    expect((await state(pool)).nodes).toEqual([]);
  });

  it("a registration body of 1 MiB is 413 before it is parsed, and a re-registration changes nothing", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const before = await state(pool);
    const huge = registration("n1", { hostname: "h".repeat(MAX_JSON_BODY_BYTES - 1000) });
    const r = await call(pool, "POST", "/nodes/register", huge);
    expect(r.status).toBe(413);
    expect((await json<{ detail: string }>(r)).detail).toContain(String(MAX_REGISTRATION_BYTES));
    expect(await state(pool)).toEqual(before);
  });

  it("a heartbeat whose pools would grow the registration past 64 KiB is 413 and changes nothing", async () => {
    const pool = freshPool();
    await call(pool, "POST", "/nodes/register", registrationStoredAs(pool, "n1", MAX_REGISTRATION_BYTES - 100));
    const before = await state(pool);
    const pools = Array.from({ length: 20 }, (_, i) => `team-${i}`); // ~200 bytes: past the limit
    const r = await call(pool, "POST", "/nodes/n1/heartbeat", { node_id: "n1", status: "draining", pools });
    expect(r.status).toBe(413);
    expect((await json<{ detail: string }>(r)).detail).toContain(String(MAX_REGISTRATION_BYTES));
    // Not the pools, not the status, not even liveness.
    expect(await state(pool)).toEqual(before);

    const fits = await call(pool, "POST", "/nodes/n1/heartbeat", { node_id: "n1", pools: ["team-a"] });
    expect(fits.status).toBe(200);
    const [row] = await rows(pool, "SELECT registration FROM nodes WHERE node_id = 'n1'");
    const stored = JSON.parse(String(row?.registration)) as { capabilities: { pools: string[] } };
    expect(stored.capabilities.pools).toEqual(["team-a"]);
    expect(bytes(String(row?.registration))).toBeLessThanOrEqual(MAX_REGISTRATION_BYTES);
  });

  it("a heartbeat with a megabyte of pools is 413 even for a small registration", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const before = await state(pool);
    const pools = Array.from({ length: 50_000 }, (_, i) => `team-${i}`);
    const r = await call(pool, "POST", "/nodes/n1/heartbeat", { node_id: "n1", pools });
    expect(r.status).toBe(413);
    expect(await state(pool)).toEqual(before);
  });
});

describe("free text kept in storage is truncated to 4 KiB with a marker", () => {
  it("a 1 MiB fail reason is accepted; its event keeps at most 4 KiB, whole code points, and the marker", async () => {
    const { pool, job, lease } = await leased();
    // A body of exactly 1 MiB, its reason all 4-byte code points (surrogate pairs in JS).
    const envelope = bytes(JSON.stringify({ reason: "" }));
    const room = MAX_JSON_BODY_BYTES - envelope;
    const reason = "😀".repeat(Math.floor(room / 4)) + "x".repeat(room % 4);
    expect(bytes(JSON.stringify({ reason }))).toBe(MAX_JSON_BODY_BYTES);

    const r = await call(pool, "POST", `/attempts/${lease.lease_id}/fail`, { reason });
    expect(r.status).toBe(200);
    expect(await json(r)).toEqual({ status: "requeued-or-exhausted" });

    const [failed] = await eventsOf(pool, job, "TASK_ATTEMPT_FAILED");
    const message = failed!.message;
    expect(bytes(message)).toBeLessThanOrEqual(MAX_STORED_TEXT_BYTES);
    expect(bytes(message)).toBeGreaterThan(MAX_STORED_TEXT_BYTES - 4); // cut at the last whole code point
    expect(message).toMatch(MARKER);
    expect(message).toContain(`[truncated from ${bytes(`attempt 1 failed: ${reason}`)} bytes]`);
    expect(message.startsWith("attempt 1 failed: 😀😀😀")).toBe(true);
    expect(message).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
    // The wire shows what is stored, and the task went back to the queue as for any fail.
    const events = await json<Array<{ type: string; message: string }>>(await call(pool, "GET", `/jobs/${job}/events`));
    expect(events.find((e) => e.type === "TASK_ATTEMPT_FAILED")?.message).toBe(message);
    expect((await eventsOf(pool, job, "TASK_REQUEUED")).length).toBe(1);
    expect(await violations(pool)).toEqual([]);
  });

  it("a short fail reason is kept as given", async () => {
    const { pool, job, lease } = await leased();
    await call(pool, "POST", `/attempts/${lease.lease_id}/fail`, { reason: "out of memory" });
    expect((await eventsOf(pool, job, "TASK_ATTEMPT_FAILED"))[0]?.message).toBe("attempt 1 failed: out of memory");
  });

  it("a huge quarantine reason is kept to 4 KiB in the manifest and in its event", async () => {
    const pool = freshPool();
    const job = (await submitJob(pool, trialsJob(1))).job_id;
    const base = `/jobs/${job}/tasks/trial-000/checkpoints`;
    const part = { key: "model.pt", sha256: SHA, size_bytes: 3 };
    expect((await call(pool, "POST", `${base}/parts`, { attempt_id: "a1", step: 1, part })).status).toBe(200);
    const committed = await call(pool, "POST", `${base}/commit`, {
      attempt_id: "a1",
      step: 1,
      expected_parts: [part],
      storage_prefix: "ckpt/",
    });
    const { manifest_id } = await json<{ manifest_id: string }>(committed);

    const reason = `loss diverged: ${"é".repeat(400_000)}`;
    const r = await call(pool, "POST", `${base}/${manifest_id}/quarantine`, { reason });
    expect(r.status).toBe(200);
    expect(await json(r)).toMatchObject({ manifest_id, validation: "invalid" });

    const [row] = await rows(
      pool,
      "SELECT invalid_reason FROM checkpoint_manifests WHERE manifest_id = ?",
      manifest_id,
    );
    const stored = String(row?.invalid_reason);
    expect(bytes(stored)).toBeLessThanOrEqual(MAX_STORED_TEXT_BYTES);
    expect(stored).toMatch(/^loss diverged: é+… \[truncated from \d+ bytes\]$/);
    expect(stored.endsWith(`[truncated from ${bytes(reason)} bytes]`)).toBe(true);
    const [event] = await eventsOf(pool, job, "CHECKPOINT_REJECTED");
    expect(event?.data.reason).toBe(stored);
    expect(bytes(event!.message)).toBeLessThanOrEqual(MAX_STORED_TEXT_BYTES);
    expect(event!.message).toMatch(new RegExp(`^checkpoint ${manifest_id} of step 1 quarantined: loss diverged: é+…`));
    expect(event!.message).toMatch(MARKER);
  });

  it("a huge evidence image_digest is cut to 4 KiB; the commit is accepted and the other readings kept", async () => {
    const { pool, job, lease } = await leased();
    const output = '{"accuracy": 0.9}';
    expect((await upload(pool, `jobs/${job}/trial-000/metrics.json`, output)).status).toBe(200);
    const digest = `sha256:${"f".repeat(900_000)}`;
    const r = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, {
      output_sha256: await sha256(output),
      evidence: { wall_seconds: 0.5, gpu_util_percent_mean: 0, exit_code: 0, image_digest: digest },
    });
    expect(await json(r)).toEqual({ accepted: true });

    const [accepted] = await eventsOf(pool, job, "TASK_COMMIT_ACCEPTED");
    const evidence = accepted!.data.evidence as Record<string, unknown>;
    expect(evidence).toMatchObject({
      wall_seconds: 0.5,
      gpu_util_percent_mean: 0,
      cpu_percent_mean: null,
      exit_code: 0,
    });
    const kept = String(evidence.image_digest);
    expect(bytes(kept)).toBeLessThanOrEqual(MAX_STORED_TEXT_BYTES);
    expect(kept).toMatch(/^sha256:f+… \[truncated from 900007 bytes\]$/);
    expect(await violations(pool)).toEqual([]);
  });

  it("a part key of nearly 1 MiB leaves an event message of at most 4 KiB", async () => {
    const pool = freshPool();
    const job = (await submitJob(pool, trialsJob(1))).job_id;
    const key = "k".repeat(MAX_JSON_BODY_BYTES - 1000);
    const part = { key, sha256: SHA, size_bytes: 1 };
    const r = await call(pool, "POST", `/jobs/${job}/tasks/trial-000/checkpoints/parts`, {
      attempt_id: "a",
      step: 0,
      part,
    });
    expect(r.status).toBe(200);
    const [event] = await eventsOf(pool, job, "CHECKPOINT_PARTS_REGISTERED");
    expect(bytes(event!.message)).toBeLessThanOrEqual(MAX_STORED_TEXT_BYTES);
    expect(event!.message).toMatch(MARKER);
    expect(event!.data.key).toBe(key); // the key itself is an identifier, kept whole
  });

  it("a refused checkpoint commit with thousands of problems keeps the first few in its event and answers all", async () => {
    const pool = freshPool();
    const job = (await submitJob(pool, trialsJob(1))).job_id;
    const expected_parts = Array.from({ length: 2000 }, (_, i) => ({
      key: `missing-${i}`,
      sha256: SHA,
      size_bytes: 1,
    }));
    const r = await call(pool, "POST", `/jobs/${job}/tasks/trial-000/checkpoints/commit`, {
      attempt_id: "a",
      step: 0,
      expected_parts,
      storage_prefix: "p/",
    });
    expect(r.status).toBe(409);
    expect((await json<{ detail: string[] }>(r)).detail).toHaveLength(2000);
    const [event] = await eventsOf(pool, job, "CHECKPOINT_REJECTED");
    const problems = event!.data.problems as string[];
    expect(problems[0]).toBe("part 'missing-0' was never registered for this attempt and step");
    expect(problems.at(-1)).toMatch(/^… and \d+ more$/);
    expect(bytes(JSON.stringify(problems))).toBeLessThan(2 * MAX_STORED_TEXT_BYTES);
  });
});

describe("every sha256 field is exactly 64 lowercase hex characters", () => {
  it.each(MALFORMED_SHA)("a complete with an output_sha256 of %s is 422 and changes nothing", async (_what, sha) => {
    const { pool, job, lease } = await leased();
    const output = "{}";
    await upload(pool, `jobs/${job}/trial-000/metrics.json`, output);
    const before = await state(pool);
    const r = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, { output_sha256: sha });
    expect(r.status).toBe(422);
    expect((await json<{ detail: Array<{ loc: unknown[] }> }>(r)).detail.map((d) => d.loc)).toEqual([
      ["body", "output_sha256"],
    ]);
    expect(await state(pool)).toEqual(before);
    // The lease is still live: the well-formed hash of the same output is accepted.
    const ok = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, {
      output_sha256: await sha256(output),
    });
    expect(await json(ok)).toEqual({ accepted: true });
  });

  it.each(MALFORMED_SHA)(
    "a checkpoint part or manifest with a sha256 of %s is 422 and stores nothing",
    async (_what, sha) => {
      const pool = freshPool();
      const job = (await submitJob(pool, trialsJob(1))).job_id;
      const base = `/jobs/${job}/tasks/trial-000/checkpoints`;
      const before = await state(pool);
      const part = { key: "model.pt", sha256: sha, size_bytes: 3 };
      const registered = await call(pool, "POST", `${base}/parts`, { attempt_id: "a", step: 1, part });
      expect(registered.status).toBe(422);
      expect((await json<{ detail: Array<{ loc: unknown[] }> }>(registered)).detail[0]?.loc).toEqual([
        "body",
        "part",
        "sha256",
      ]);
      const committed = await call(pool, "POST", `${base}/commit`, {
        attempt_id: "a",
        step: 1,
        expected_parts: [part],
        storage_prefix: "ckpt/",
      });
      expect(committed.status).toBe(422);
      expect((await json<{ detail: Array<{ loc: unknown[] }> }>(committed)).detail[0]?.loc).toEqual([
        "body",
        "expected_parts",
        0,
        "sha256",
      ]);
      expect(await state(pool)).toEqual(before);
    },
  );
});

describe("an id collision is drawn again, never a 500", () => {
  /** A draw that answers `ids` in turn, then throws: the test's randomness. */
  function scripted(ids: string[]) {
    let i = 0;
    const draw = () => {
      const id = ids[i++];
      if (id === undefined) throw new Error("drew more ids than scripted");
      return id;
    };
    return { draw, drawn: () => i };
  }

  it("a lease id already issued in the pool is skipped, and the claim path issues a fresh one", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitJob(pool, trialsJob(3));
    const taken: string[] = [];
    for (let i = 0; i < 2; i++) taken.push((await json<Lease>(await claim(pool, "n1"))).lease_id);
    const hex = taken.map((id) => id.slice(3));

    // The claim marks its task leased under a drawn id (leaseTask), which the UPDATE refuses while a lease has it.
    // Each try here is rolled back: the task's lease row is the claim's to write.
    let drawnId = "";
    const leaseThird = (source: () => string) =>
      runInDurableObject(stub(pool), (_o, s) =>
        s.storage.transactionSync(() => {
          const { seq } = s.storage.sql.exec<{ seq: number }>("SELECT seq FROM tasks WHERE state = 'PENDING'").one();
          drawnId = leaseTask(s.storage.sql, seq, source).lease_id ?? "";
          throw new Error("rolled back");
        }),
      );
    const { draw, drawn } = scripted([...hex, "0123456789ab"]);
    await expect(leaseThird(draw)).rejects.toThrow("rolled back");
    expect(drawnId).toBe("ls-0123456789ab");
    expect(drawn()).toBe(3);
    // A source that only ever repeats a taken id is a bug, reported as one, never a UNIQUE error.
    const stuck = () => hex[0]!;
    await expect(leaseThird(stuck)).rejects.toThrow(/no unused ls-… id in 8 draws/);
    // The real claim path still issues a lease nobody has.
    const third = await json<Lease>(await claim(pool, "n1"));
    expect(taken).not.toContain(third.lease_id);
    expect(await violations(pool)).toEqual([]);
  });

  it("a manifest id already in the catalog is skipped", async () => {
    const pool = freshPool();
    const job = (await submitJob(pool, trialsJob(1))).job_id;
    const base = `/jobs/${job}/tasks/trial-000/checkpoints`;
    const part = { key: "model.pt", sha256: SHA, size_bytes: 3 };
    await call(pool, "POST", `${base}/parts`, { attempt_id: "a", step: 1, part });
    const committed = await call(pool, "POST", `${base}/commit`, {
      attempt_id: "a",
      step: 1,
      expected_parts: [part],
      storage_prefix: "ckpt/",
    });
    const { manifest_id } = await json<{ manifest_id: string }>(committed);

    const { draw, drawn } = scripted([manifest_id.slice(3), manifest_id.slice(3), "abcdefabcdef"]);
    const id = await runInDurableObject(stub(pool), (_o, s) =>
      s.storage.transactionSync(() => newManifestId(s.storage.sql, draw)),
    );
    expect(id).toBe("ck-abcdefabcdef");
    expect(drawn()).toBe(3);
    const stuck = () => manifest_id.slice(3);
    await expect(
      runInDurableObject(stub(pool), (_o, s) => s.storage.transactionSync(() => newManifestId(s.storage.sql, stuck))),
    ).rejects.toThrow(/no unused ck-… id in 8 draws/);
  });
});
