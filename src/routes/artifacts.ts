// Artifact routes (docs/protocol.md §7). Bytes stream from the request into a fresh,
// never-reused R2 object while their sha256 and size are computed; only then
// does the pool object bind the key to it. A refused or failed upload is
// deleted at once, and so are bytes a bind replaced: a refused upload leaves
// nothing behind and the key keeps its previous bytes. The object is recorded
// before it streams, so the pool's collection deletes whatever those deletes
// missed, and uploads that never reached a bind.

import { Hono } from "hono";
import { describeRoute } from "hono-openapi";
import { archiveOf } from "../archive/reader";
import { artifactRecord } from "../protocol/checkpoints";
import { hex } from "../protocol/ids";
import { artifactKeyProblem, jobOfKey } from "../protocol/keys";
import { count, documented, jsonBody, parameter, served, string } from "../protocol/openapi-operations";
import type { AppContext, AppEnv } from "./context";
import { viewerOf, writerOf } from "./identity";

export const artifacts = new Hono<AppEnv>()
  .put(
    "/*",
    describeRoute(
      documented({
        id: "putArtifact",
        tag: "artifacts",
        summary: "Upload an artifact's bytes under a key",
        description:
          "The bytes stream to storage and are bound to the key only once whole; a refused upload leaves the key's previous bytes. The largest artifact is FLASHML_MAX_ARTIFACT_MB (default 100) MiB.",
        parameters: [
          parameter("onBehalfOf"),
          {
            name: "Content-Length",
            in: "header",
            required: true,
            description: "The body's length in bytes.",
            schema: count,
          },
        ],
        body: "bytes",
        ok: { 200: jsonBody(served("ArtifactRecord"), "Stored and bound to the key.") },
        refusals: {
          400: "Invalid artifact key, or the body did not match its Content-Length.",
          403: "The caller holds no live lease on the task whose outputs this key is under.",
          409: "The task under this key has an accepted commit: its outputs are immutable.",
          411: "No Content-Length.",
          413: "The artifact is larger than FLASHML_MAX_ARTIFACT_MB.",
        },
      }),
    ),
    async (c) => {
      const key = artifactKey(c);
      if (typeof key !== "string") return key;
      const maxBytes = c.var.settings.maxArtifactBytes;
      const length = Number(c.req.header("content-length"));
      if (c.req.header("content-length") === undefined || !Number.isSafeInteger(length) || length < 0) {
        return c.json({ detail: "Content-Length is required for artifact uploads" }, 411);
      }
      if (length > maxBytes)
        return c.json({ detail: `artifact exceeds ${maxBytes} bytes (FLASHML_MAX_ARTIFACT_MB)` }, 413);
      return c.var.shards.key(key, async (stub) => {
        const writer = writerOf(c);
        // Checked before the body is read, so a refused writer never streams it;
        // the upload is recorded, so its bytes are collected if no bind claims them.
        const object = `pools/${c.var.pool}/objects/${crypto.randomUUID()}`;
        const before = await stub.beginUpload(key, object, writer);
        if (!before.ok) return refused(c, before);

        let stored: Awaited<ReturnType<typeof storeStreaming>>;
        try {
          stored = await storeStreaming(c.env.ARTIFACTS, object, c.req.raw.body, length);
        } catch {
          await stub.abandonUpload(object);
          await c.env.ARTIFACTS.delete(object);
          return c.json({ detail: "upload failed: the body did not match its Content-Length" }, 400);
        }
        const bound = await stub.bindArtifact(key, stored, writer);
        if (!bound.ok) {
          await c.env.ARTIFACTS.delete(object);
          return refused(c, bound);
        }
        if (bound.replaced) c.executionCtx.waitUntil(c.env.ARTIFACTS.delete(bound.replaced));
        return c.json(artifactRecord(bound.record, BUCKET));
      });
    },
  )
  .get(
    "/*",
    describeRoute(
      documented({
        id: "getArtifact",
        tag: "artifacts",
        summary: "Download an artifact's bytes",
        ok: {
          200: {
            description: "The bytes.",
            headers: {
              ETag: { description: "The stored object's etag.", schema: string },
              "X-FlashML-Sha256": { description: "The sha256 of the bytes, lowercase hex.", schema: string },
              "Content-Length": { description: "The size in bytes.", schema: count },
            },
            content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } },
          },
        },
        refusals: { 400: "Invalid artifact key.", 404: "No artifact at this key." },
      }),
    ),
    async (c) => {
      const key = artifactKey(c);
      if (typeof key !== "string") return key;
      // Another replica's output before the verdict does not exist for a node (docs/protocol.md §14).
      const resolved = await c.var.shards.key(key, async (s) => s.resolveArtifact(key, viewerOf(c)));
      // A key of an archived job names its object in the job's archive (docs/protocol.md §12).
      const row = resolved === "archived" ? await archiveOf(c, jobOfKey(key)!).artifact(key) : resolved;
      const body = row ? await c.env.ARTIFACTS.get(row.object) : null;
      if (!row || !body) return c.json({ detail: `no artifact at ${key}` }, 404);
      return new Response(body.body, {
        headers: {
          "content-type": "application/octet-stream",
          "content-length": String(row.size_bytes),
          etag: `"${row.etag}"`,
          "x-flashml-sha256": row.sha256,
        },
      });
    },
  );

/**
 * Where the raw (still percent-encoded) key sits in the request path. Read
 * from the path as sent, never from a decoded form (that would decode twice),
 * and anchored to the mount, so a pool named "artifacts" or a path that only
 * routes here after decoding (`/%61rtifacts/k`) never yields a wrong key.
 */
const RAW_KEY_RE = /^(?:\/pools\/[^/]+)?\/v1alpha1\/artifacts(?:\/(.*))?$/s;

/**
 * A committed task's outputs are immutable (409), and so is an upload that
 * outlived its grace (409); a write outside the caller's leases is 403.
 */
function refused(c: AppContext, refusal: { reason: "forbidden" | "completed" | "expired"; detail: string }): Response {
  return c.json({ detail: refusal.detail }, refusal.reason === "forbidden" ? 403 : 409);
}

/** The client key: everything after `.../v1alpha1/artifacts/`, percent-decoded, checked. */
function artifactKey(c: AppContext): string | Response {
  const match = RAW_KEY_RE.exec(new URL(c.req.url).pathname);
  if (!match)
    return c.json(
      { detail: "artifact paths are .../v1alpha1/artifacts/{key}: spell the fixed segments without percent-encoding" },
      400,
    );
  const raw = match[1] ?? "";
  let key: string;
  try {
    key = decodeURIComponent(raw);
  } catch {
    return c.json({ detail: "artifact key is not valid percent-encoding" }, 400);
  }
  const problem = artifactKeyProblem(key);
  return problem === null ? key : c.json({ detail: `invalid artifact key: ${problem}` }, 400);
}

/** The R2 bucket reported in ArtifactRecord.bucket (wrangler.toml's bucket_name). */
const BUCKET = "flashedge-artifacts";

/**
 * Streams `body` into R2 at `object` while hashing it, one chunk at a time:
 * each chunk is hashed, then handed on, and the next is read only when R2
 * has taken it, so a fast client never piles bytes up in the isolate (a
 * tee() would buffer whatever one branch reads ahead of the other). R2 needs
 * a known length, so the bytes pass through a FixedLengthStream, which also
 * errors when the body is shorter or longer than declared.
 */
async function storeStreaming(
  bucket: R2Bucket,
  object: string,
  body: ReadableStream<Uint8Array> | null,
  length: number,
) {
  const source = body ?? new Response(new Uint8Array(0)).body!;
  const digest = new crypto.DigestStream("SHA-256");
  const hashing = digest.getWriter();
  const hashed = new TransformStream<Uint8Array, Uint8Array>({
    async transform(chunk, out) {
      await hashing.write(chunk);
      out.enqueue(chunk);
    },
    async flush() {
      await hashing.close();
    },
  });
  const fixed = new FixedLengthStream(length);
  // Settle all three before judging, so no failure is left unobserved.
  const [piped, put, hash] = await Promise.allSettled([
    source.pipeThrough(hashed).pipeTo(fixed.writable),
    bucket.put(object, fixed.readable),
    digest.digest,
  ]);
  if (hash.status === "rejected" || piped.status === "rejected" || put.status === "rejected" || !put.value) {
    throw new Error("upload stream failed");
  }
  return {
    object,
    sha256: hex(new Uint8Array(hash.value)),
    size_bytes: put.value.size,
    etag: put.value.etag,
  };
}
