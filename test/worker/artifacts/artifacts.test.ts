import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Lease } from "../../../src/protocol/tasks";
import {
  call,
  claim,
  freshPool,
  jobStub,
  json,
  register,
  sha256,
  storedObjects,
  submitJob,
  trialsJob,
  upload,
} from "../helpers";

describe("artifacts on R2", () => {
  it("an upload answers an ArtifactRecord and reads back byte for byte", async () => {
    const pool = freshPool();
    const bytes = new Uint8Array(300_000).map((_, i) => i % 251);
    const r = await upload(pool, "datasets/iris.bin", bytes);
    expect(r.status).toBe(200);
    const record = await json(r);
    expect(record).toMatchObject({
      schema_version: "v1alpha1",
      uri: "artifact://datasets/iris.bin",
      backend: "local",
      bucket: "flashedge-artifacts",
      object_key: "datasets/iris.bin",
      sha256: await sha256(bytes),
      size_bytes: 300_000,
    });
    expect(typeof record.etag).toBe("string");
    expect(Number.isNaN(Date.parse(record.created_at as string))).toBe(false);
    const back = await call(pool, "GET", "/artifacts/datasets/iris.bin");
    expect(back.headers.get("content-type")).toBe("application/octet-stream");
    expect(new Uint8Array(await back.arrayBuffer())).toEqual(bytes);
  });

  it("a replaced key serves the new bytes and its old object is deleted", async () => {
    const pool = freshPool();
    await upload(pool, "k", "one");
    await upload(pool, "k", "two");
    expect(await (await call(pool, "GET", "/artifacts/k")).text()).toBe("two");
    await new Promise((r) => setTimeout(r, 50));
    expect(await storedObjects(pool)).toHaveLength(1);
  });

  it("percent-encoded keys are decoded before the safety rules apply", async () => {
    const pool = freshPool();
    // (A literal "a/./b" never arrives: URL parsing removes dot segments first.)
    for (const bad of [
      "a%2F..%2Fb",
      "a%2F.%2Fb",
      "..%2Fx",
      "%2Fabs",
      "a//b",
      "a%2F%2Fb",
      "a%5Cb",
      "a%00b",
      "a%7Fb",
      "%E0%A4%A",
    ]) {
      const r = await upload(pool, bad, "x");
      expect(r.status, bad).toBe(400);
    }
    expect(await storedObjects(pool)).toEqual([]);
    expect((await upload(pool, "caf%C3%A9/r%C3%A9sum%C3%A9.txt", "x")).status).toBe(200);
    expect(await (await call(pool, "GET", "/artifacts/café/résumé.txt")).text()).toBe("x");
  });

  it("an artifact past FLASHML_MAX_ARTIFACT_MB is 413 and stores nothing", async () => {
    const pool = freshPool();
    const r = await call(pool, "PUT", "/artifacts/big.bin", new Uint8Array(100 * 1024 * 1024 + 1));
    expect(r.status).toBe(413);
    expect(await storedObjects(pool)).toEqual([]);
  });

  it("an archived job's keys refuse its last holder's uploads, and every other writer's, storing nothing", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    const { job_id: jobId } = await submitJob(pool, trialsJob(1));
    const lease = await json<Lease>(await claim(pool, "n1"));
    const dir = `jobs/${jobId}/${lease.task_id}`;
    expect((await upload(pool, `${dir}/metrics.json`, "{}")).status).toBe(200);
    const done = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, {
      output_sha256: await sha256("{}"),
    });
    expect(await json(done)).toEqual({ accepted: true });
    // Its retention passed: the alarm of the job's shard archives it.
    await runInDurableObject(jobStub(pool, jobId), (_o, state) => {
      state.storage.sql.exec("UPDATE jobs SET finished_ms = 0 WHERE job_id = ?", jobId);
    });
    // Archived once its bytes are in R2 and its rows gone, which at 4 shards may take a tick's alarm more.
    const archived = () =>
      runInDurableObject(jobStub(pool, jobId), (_o, state) =>
        state.storage.sql
          .exec("SELECT 1 FROM archived_jobs WHERE job_id = ? AND archived_ms IS NOT NULL", jobId)
          .toArray(),
      );
    for (let i = 0; i < 50 && (await archived()).length === 0; i++) {
      await runDurableObjectAlarm(jobStub(pool, jobId));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await archived()).toHaveLength(1);
    const before = await storedObjects(pool);
    // The node that held its last lease writes into the task's prefix, a new key and the accepted one.
    for (const key of [`${dir}/metrics.json`, `${dir}/extra.txt`, `jobs/${jobId}/other/metrics.json`]) {
      const r = await upload(pool, key, "poisoned");
      expect(r.status).toBe(409);
      expect(await r.text()).toContain("archived");
    }
    expect(await storedObjects(pool)).toEqual(before);
  });

  it("a PUT into a completed task's prefix is 409 and the accepted bytes are unchanged", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitJob(pool, trialsJob(1));
    const lease = await json<Lease>(await claim(pool, "n1"));
    const dir = `jobs/${lease.job_id}/${lease.task_id}`;
    expect((await upload(pool, `${dir}/metrics.json`, '{"ok": 1}')).status).toBe(200);
    const done = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, {
      output_sha256: await sha256('{"ok": 1}'),
    });
    expect(await json(done)).toEqual({ accepted: true });
    const before = await storedObjects(pool);

    const r = await upload(pool, `${dir}/metrics.json`, '{"ok": "poisoned"}');
    expect(r.status).toBe(409);
    expect((await upload(pool, `${dir}/extra.txt`, "x")).status).toBe(409);
    expect(await (await call(pool, "GET", `/artifacts/${dir}/metrics.json`)).text()).toBe('{"ok": 1}');
    // A sibling task's prefix that merely starts with the same characters is not covered.
    expect((await upload(pool, `${dir}2/metrics.json`, "{}")).status).toBe(200);
    expect(await storedObjects(pool)).toHaveLength(before.length + 1);
  });

  it("a slow upload whose task is committed mid-stream is refused at bind and leaves no object behind", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    await submitJob(pool, trialsJob(1));
    const lease = await json<Lease>(await claim(pool, "n1"));
    const dir = `jobs/${lease.job_id}/${lease.task_id}`;
    expect((await upload(pool, `${dir}/metrics.json`, "{}")).status).toBe(200);

    // Start a second upload into the task's prefix and hold its body open.
    let feed!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({
      start: (c) => {
        feed = c;
      },
    });
    const slow = exports.default.fetch(
      new Request(`http://flashedge.test/pools/${pool}/v1alpha1/artifacts/${dir}/metrics.json`, {
        method: "PUT",
        body,
        headers: { "content-length": "7" },
        duplex: "half",
      } as RequestInit),
    );
    feed.enqueue(new TextEncoder().encode('{"x"'));
    await new Promise((r) => setTimeout(r, 50));
    // Meanwhile the holder commits: the prefix becomes immutable.
    const done = await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, {
      output_sha256: await sha256("{}"),
    });
    expect(await json(done)).toEqual({ accepted: true });
    const before = await storedObjects(pool);
    feed.enqueue(new TextEncoder().encode(":1}"));
    feed.close();

    const r = await slow;
    expect(r.status).toBe(409);
    expect(await storedObjects(pool)).toEqual(before);
    expect(await (await call(pool, "GET", `/artifacts/${dir}/metrics.json`)).text()).toBe("{}");
  });

  it("a body shorter than its Content-Length is refused and stores nothing", async () => {
    const pool = freshPool();
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new Uint8Array([1, 2]));
        c.close();
      },
    });
    const r = await exports.default.fetch(
      new Request(`http://flashedge.test/pools/${pool}/v1alpha1/artifacts/short.bin`, {
        method: "PUT",
        body,
        headers: { "content-length": "10" },
        duplex: "half",
      } as RequestInit),
    );
    expect(r.status).toBe(400);
    expect(await storedObjects(pool)).toEqual([]);
    expect((await call(pool, "GET", "/artifacts/short.bin")).status).toBe(404);
  });

  it("a job's artifacts are listed sorted by key, under its prefix only", async () => {
    const pool = freshPool();
    await upload(pool, "jobs/j1/t1/b.json", "bb");
    await upload(pool, "jobs/j1/t0/a.json", "a");
    await upload(pool, "jobs/j10/t0/x.json", "x");
    await upload(pool, "jobs/j1", "not under the prefix");
    const list = await json(await call(pool, "GET", "/jobs/j1/artifacts"));
    expect(list).toEqual([
      { uri: "artifact://jobs/j1/t0/a.json", key: "jobs/j1/t0/a.json", size_bytes: 1 },
      { uri: "artifact://jobs/j1/t1/b.json", key: "jobs/j1/t1/b.json", size_bytes: 2 },
    ]);
  });

  it("a missing key is 404", async () => {
    const pool = freshPool();
    expect((await call(pool, "GET", "/artifacts/nope")).status).toBe(404);
  });
});
