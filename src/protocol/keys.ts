// Names a client can put in a URL: artifact keys (docs/protocol.md §7) and pool names
// (docs/protocol.md §2). Pure predicates, no I/O. A key that passes here is safe to use
// as a relative path under the pool's R2 prefix; nothing here may ever
// "repair" a bad key (strip a slash, normalise a dot) — a bad key is refused.

/** A DNS-1123 label: lowercase alphanumerics and '-', 1–63 chars, alphanumeric at both ends. */
export const DNS_1123_LABEL_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** Pool names are DNS-1123 labels (docs/protocol.md §2). */
export const POOL_NAME_RE = DNS_1123_LABEL_RE;

/** Whether `s` is a valid pool name. JS `$` never matches before a trailing newline, so "abc\n" is refused. */
export function isPoolName(s: unknown): s is string {
  return typeof s === "string" && POOL_NAME_RE.test(s);
}

/** The 404 detail for a path naming an invalid pool (docs/protocol.md §2). */
export function invalidPoolDetail(pool: string): string {
  return `invalid pool name '${pool}': use lowercase letters, digits and '-' (at most 63)`;
}

/** Longest artifact key, in UTF-8 bytes (docs/protocol.md §7). */
export const MAX_ARTIFACT_KEY_BYTES = 1024;

const encoder = new TextEncoder();

/**
 * Why `key` is not an acceptable artifact key, as one human-readable line,
 * or null when it is. The key is taken after percent-decoding. Rules
 * (docs/protocol.md §7): not empty; at most 1024 UTF-8 bytes; no leading "/"; no "." or
 * ".." segment; no empty segment (so no "//" and no trailing "/"); no
 * backslash; no control characters (C0, DEL and C1). A string that is not
 * well-formed Unicode (a lone surrogate) is refused too: it has no UTF-8
 * form to store it under.
 */
export function artifactKeyProblem(key: string): string | null {
  if (key.length === 0) return "artifact key is empty";
  if (!key.isWellFormed()) return "artifact key is not well-formed Unicode (it contains a lone surrogate)";
  const bytes = encoder.encode(key).byteLength;
  if (bytes > MAX_ARTIFACT_KEY_BYTES) {
    return `artifact key is ${bytes} bytes long; the limit is ${MAX_ARTIFACT_KEY_BYTES} bytes`;
  }
  for (let i = 0; i < key.length; i++) {
    const code = key.charCodeAt(i);
    if (code <= 0x1f || (code >= 0x7f && code <= 0x9f)) {
      const hex = code.toString(16).toUpperCase().padStart(4, "0");
      return `artifact key contains the control character U+${hex} at position ${i}`;
    }
  }
  if (key.includes("\\")) return "artifact key contains a backslash; use '/' to separate segments";
  if (key.startsWith("/")) return "artifact key must be a relative path, without a leading '/'";
  for (const segment of key.split("/")) {
    if (segment === "") return "artifact key has an empty segment ('//' or a trailing '/')";
    if (segment === "." || segment === "..") return `artifact key has a '${segment}' segment`;
  }
  return null;
}

/**
 * The (job, task) whose output prefix `jobs/{job}/{task}/` holds this key, or
 * null for a key outside every task's prefix. The prefix ends in a slash, so
 * `jobs/j/t` itself and `jobs/j/t-other/x` are not inside `jobs/j/t/`.
 */
export function taskOfKey(key: string): { jobId: string; taskId: string } | null {
  const parts = key.split("/");
  if (parts.length < 4 || parts[0] !== "jobs") return null;
  return { jobId: parts[1]!, taskId: parts[2]! };
}

/** Where replica `replica` of a task writes its outputs (docs/protocol.md §14): inside the task's own prefix. */
export function replicaPrefix(jobId: string, taskId: string, replica: number): string {
  return `jobs/${jobId}/${taskId}/r${replica}/`;
}

/**
 * The keys under `jobs/{jobId}/`, as a range: every such key sorts in
 * [prefix, prefix with its "/" bumped to "0"), so a range scan finds them.
 */
export function jobKeyRange(jobId: string): [from: string, before: string] {
  return [`jobs/${jobId}/`, `jobs/${jobId}0`];
}

/** The job a key under `jobs/{job_id}/` belongs to, or null. */
export function jobOfKey(key: string): string | null {
  const match = /^jobs\/([^/]+)\//.exec(key);
  return match ? match[1]! : null;
}
