// The pool object's lease calls (docs/protocol.md §5, §14): renew, fail and commit, each
// one change. They take `caller`: the node the request acts as, or null in
// open mode. The holder is checked in the same transaction as the action,
// so a lease route costs one round trip with tokens as without. A commit
// reads its output from R2 first, then judges in one transaction.

import { mayDrive } from "../../rules/leases";
import { parseMetrics } from "../../rules/strict-json";
import { findArtifact } from "../artifacts/artifacts";
import type { Pool } from "../pool";
import { afterNewWork } from "../shards/exchange";
import { commitKey } from "../verification/verification";
import { commit, failAttempt, findLease, renew, type ValidOutput } from "./leases";

/** Outputs that must parse as JSON are small; larger ones fail validation unread. */
const MAX_JSON_OUTPUT_BYTES = 1024 * 1024;

export function renewLease(pool: Pool, leaseId: string, caller: string | null) {
  return pool.change((now) => renew(pool.sql, now, leaseId, caller));
}

export async function failLease(pool: Pool, leaseId: string, reason: string, caller: string | null) {
  const failed = await pool.change((now) => failAttempt(pool.sql, now, leaseId, reason, caller));
  // A requeued task may be work Σ does not know of here: a claim at another shard after this answer sees it.
  if (failed.ok && pool.shards > 1) await afterNewWork(pool);
  return failed;
}

/**
 * Validates the output, then judges the commit in one transaction. The
 * bytes are read (for JSON outputs, and a replica's metrics object) before
 * the transaction; the transaction re-checks that the key still points at
 * what was read.
 */
export async function completeLease(
  pool: Pool,
  leaseId: string,
  outputSha256: string,
  evidence: unknown,
  caller: string | null,
) {
  const lease = findLease(pool.sql, leaseId);
  // Refused before any bytes are read; the transaction checks again.
  if (!mayDrive(lease?.node_id, caller)) return { status: "not_holder" as const };
  if (!lease) return { status: "unknown" as const };
  const bound = findArtifact(pool.sql, commitKey(lease, lease.replica));
  let output: ValidOutput | null = null;
  if (bound && bound.sha256 === outputSha256) {
    const json = lease.output_json || lease.replica > 0 ? await jsonObject(pool, bound.object, bound.size_bytes) : "";
    // A replica's metrics are compared: one a reader could read two ways is invalid output (docs/protocol.md §14).
    const comparable = json !== null && (lease.replica === 0 || parseMetrics(json).ok);
    if (comparable) output = { object: bound.object, metrics: lease.replica > 0 ? json : null };
  }
  const judged = await pool.change((now) => commit(pool.sql, now, leaseId, outputSha256, output, evidence, caller));
  // A rejected output requeues its task, a replica's verdict may issue another: work Σ may not know of here.
  if (pool.shards > 1) await afterNewWork(pool);
  return judged;
}

/** The object's bytes when they are one JSON object, else null. */
async function jsonObject(pool: Pool, object: string, size: number): Promise<string | null> {
  if (size > MAX_JSON_OUTPUT_BYTES) return null;
  pool.r2.count("B");
  const body = await pool.env.ARTIFACTS.get(object);
  if (!body) return null;
  try {
    const text = await body.text();
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? text : null;
  } catch {
    return null;
  }
}
