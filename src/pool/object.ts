// PoolObject: one SQLite-backed Durable Object per pool, holding all of the
// pool's state. Each RPC method is one synchronous transaction over the
// modules beside this file; nothing a later request depends on lives in an
// instance field (the object may be evicted between any two requests).

import { DurableObject } from "cloudflare:workers";
import type { CommitCheckpointRequest, RegisterPartRequest } from "../protocol/checkpoints";
import type { DeviceCodeRequest } from "../protocol/device";
import type { JobSpec } from "../protocol/jobs";
import { jobOfKey } from "../protocol/keys";
import { LIST_PAGE_MAX_BYTES } from "../protocol/limits";
import type { NodeHeartbeat, NodeRegistration } from "../protocol/nodes";
import type { TaskSpec } from "../protocol/tasks";
import { authConfig } from "../rules/auth";
import { base64url, DEVICE_CODE_TTL_MS, enrolledToken, sha256Hex, userCodeFrom } from "../rules/enrolment";
import { mayDrive } from "../rules/leases";
import { parseNodeOwners } from "../rules/owners";
import type { Membership } from "../rules/placement";
import { jobRetentionMs } from "../rules/retention";
import { retryElsewhereMs, tenantWeights } from "../rules/scheduling";
import { parseMetrics } from "../rules/strict-json";
import { ARCHIVE_BATCH_TASKS, archiveObjects, finishArchive, nextArchive, startArchive } from "./archive";
import {
  bind,
  checkWrite,
  findArtifact,
  listJobArtifacts,
  readArtifact,
  type StoredObject,
  type Writer,
} from "./artifacts";
import { commitManifest, latest, lostWork, markRestoreVerified, quarantine, registerPart } from "./checkpoints";
import { collected, nextCollection, takeForCollection, unreferenced, uploadStarted } from "./collection";
import { dashboardSummary } from "./dashboard";
import {
  approvedNode,
  type CredentialProof,
  credentialValid,
  decideCode,
  denyAllCodes,
  pendingCodes,
  redeemCode,
  requestCode,
  revokeCredential,
} from "./enrolment";
import type { EventRow } from "./events";
import { fleetSummary } from "./fleet";
import { type Answered, HeldClaims, worthWaiting } from "./held-claims";
import {
  archiveState,
  cancelJob,
  findJob,
  insertJob,
  type JobPlace,
  jobEvents,
  jobRecord,
  jobTasks,
  listJobs,
  poolTaskCounts,
} from "./jobs";
import {
  type ClaimResult,
  claim,
  commit,
  earliestDeadline,
  endLeasesOf,
  failAttempt,
  findLease,
  type NodeOwners,
  renew,
  sweep,
  type TenantWeights,
  type ValidOutput,
} from "./leases";
import { logEvent, logLine } from "./log";
import { metricsSample } from "./metrics";
import { assignPools, heartbeatNode, listNodes, nodeKnown, registerNode } from "./nodes";
import { placementReport } from "./placement-report";
import { DEFAULT_RETRY_ELSEWHERE_MS, endHoldBack } from "./scheduling";
import { migrate } from "./schema";
import { sealedPending, type Viewer } from "./sealing";
import { commitKey } from "./verification";

/** How long archiving waits after R2 refused an archive write. */
const ARCHIVE_RETRY_MS = 60 * 1000;

/** Outputs that must parse as JSON are small; larger ones fail validation unread. */
export const MAX_JSON_OUTPUT_BYTES = 1024 * 1024;

/**
 * What an enrolled node's requests call, through `act` (SPEC §9): the
 * object's node, lease, job, artifact, checkpoint and read methods. The
 * routes decide which of them a node may use, as for configured tokens.
 * Enrolment and credentials are managed with configured operator tokens,
 * never through here.
 */
const ACTION_NAMES = [
  "register",
  "heartbeatNode",
  "releaseNode",
  "listNodes",
  "claim",
  "renewLease",
  "failLease",
  "completeLease",
  "submitJob",
  "listJobs",
  "getJob",
  "jobEvents",
  "jobTasks",
  "cancelJob",
  "beginUpload",
  "abandonUpload",
  "bindArtifact",
  "resolveArtifact",
  "listJobArtifacts",
  "registerCheckpointPart",
  "commitCheckpoint",
  "latestCheckpoint",
  "checkpointLostWork",
  "verifyCheckpoint",
  "quarantineCheckpoint",
  "explainPlacement",
  "dashboard",
  "fleet",
  "metrics",
] as const;
export type Action = (typeof ACTION_NAMES)[number];
const ACTIONS: ReadonlySet<string> = new Set(ACTION_NAMES);

/** What the object's rules read from its env (see `settings`). */
type PoolSettings = {
  weights: TenantWeights;
  retryElsewhereMs: number;
  owners: NodeOwners;
  membership: Membership;
};

export class PoolObject extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  // Held claims in arrival order (src/pool/held-claims.ts): connections, not state.
  private readonly held = new HeldClaims();
  // A cache of the alarm time last set, rebuilt from SQL after eviction
  // (undefined = unknown). Only saves redundant setAlarm calls.
  private armedAt: number | null | undefined;
  // After a failed archive write, no archiving before this (a backoff, not
  // state: losing it only retries sooner).
  private archiveRetryAt = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    void ctx.blockConcurrencyWhile(async () => {
      ctx.storage.transactionSync(() => migrate(this.sql));
    });
  }

  // -- enrolled callers ----------------------------------------------------

  /**
   * Runs one of this object's actions for an enrolled node, after checking
   * its credential in the same turn as the action starts, so a revoked
   * credential's next request is refused. Two actions wait before they
   * write: a held claim (a revocation answers it, see revokeCredential) and
   * a commit that reads its output from R2 first, which finishes if the
   * revocation lands during that read. `{ ok: false }`: no such
   * credential, or not an action.
   */
  async act(
    proof: CredentialProof,
    action: Action,
    args: unknown[],
  ): Promise<{ ok: true; value: unknown } | { ok: false }> {
    if (!ACTIONS.has(action) || !credentialValid(this.sql, proof)) return { ok: false };
    const method = this[action] as (...a: unknown[]) => unknown;
    return { ok: true, value: await method.apply(this, args) };
  }

  // -- enrolment (SPEC §9 "Enrolled machines") -------------------------------

  /** A new device code for a machine asking to join; "full" / "source_full" past the pool's / the source's pending limit. */
  async requestDeviceCode(
    request: DeviceCodeRequest,
    from: string | null,
  ): Promise<
    | { ok: true; deviceCode: string; userCode: string; expiresMs: number }
    | { ok: false; reason: "full" | "source_full" }
  > {
    // A drawn user code already in the records (a day's worth) is drawn again.
    for (let draw = 0; draw < 5; draw++) {
      const userCode = userCodeFrom(crypto.getRandomValues(new Uint8Array(32)));
      if (userCode === null) continue;
      const deviceCode = base64url(crypto.getRandomValues(new Uint8Array(32)));
      const deviceCodeSha256 = await sha256Hex(deviceCode);
      const now = Date.now();
      const result = this.ctx.storage.transactionSync(() =>
        requestCode(this.sql, now, {
          deviceCodeSha256,
          userCode,
          nodeId: request.node_id,
          hostname: request.hostname,
          platform: request.platform,
          from,
        }),
      );
      if (result === "full" || result === "source_full") return { ok: false, reason: result };
      if (result === "ok") {
        if (this.logging()) logLine({ pool: this.poolName(), event: "ENROLMENT_REQUESTED", node_id: request.node_id });
        return { ok: true, deviceCode, userCode, expiresMs: now + DEVICE_CODE_TTL_MS };
      }
    }
    throw new Error("no unused user code in 5 draws");
  }

  /** The token an approved code enrols, exactly once; null for every other code alike. */
  async redeemDeviceCode(deviceCode: string): Promise<{ token: string; node_id: string } | null> {
    const deviceCodeSha256 = await sha256Hex(deviceCode);
    const nodeId = approvedNode(this.sql, Date.now(), deviceCodeSha256);
    if (nodeId === null) return null;
    const token = enrolledToken(nodeId, crypto.getRandomValues(new Uint8Array(32)));
    const tokenSha256 = await sha256Hex(token);
    // Checked again in the transaction: a concurrent redeem of the same code loses here.
    // Pools named at approval become the node's assignment here: its held claim, if any, tries again.
    const redeemed = await this.change(
      (now) => {
        const result = redeemCode(this.sql, now, deviceCodeSha256, nodeId, tokenSha256);
        if (result?.replaced) this.cutOff(now, nodeId, `the credential of ${nodeId} was replaced`);
        return result;
      },
      { wakesNode: nodeId },
    );
    if (!redeemed) return null;
    if (this.logging())
      logLine({ pool: this.poolName(), event: "CREDENTIAL_ISSUED", node_id: nodeId, replaced: redeemed.replaced });
    return { token, node_id: nodeId };
  }

  /**
   * An operator approves or denies a pending code, an approval naming the
   * machine's owner (null: the node itself) and its team pools (null: none
   * named, an earlier assignment stands); null: no such pending code.
   */
  decideDeviceCode(
    userCode: string,
    decision: "approved" | "denied",
    operator: string,
    owner: string | null = null,
    pools: string[] | null = null,
  ): string | null {
    const now = Date.now();
    const nodeId = this.ctx.storage.transactionSync(() =>
      decideCode(this.sql, now, userCode, decision, operator, owner, pools),
    );
    if (nodeId !== null && this.logging()) {
      const event = decision === "approved" ? "ENROLMENT_APPROVED" : "ENROLMENT_DENIED";
      logLine({ pool: this.poolName(), event, node_id: nodeId, operator, ...(owner === null ? {} : { owner }) });
    }
    return nodeId;
  }

  /** An operator denies every pending code at once (one source flooding the pool); the nodes they named. */
  denyAllDeviceCodes(operator: string): string[] {
    const now = Date.now();
    const nodeIds = this.ctx.storage.transactionSync(() => denyAllCodes(this.sql, now, operator));
    if (this.logging())
      for (const nodeId of nodeIds)
        logLine({ pool: this.poolName(), event: "ENROLMENT_DENIED", node_id: nodeId, operator });
    return nodeIds;
  }

  /** The codes waiting for an operator. */
  pendingDeviceCodes() {
    return pendingCodes(this.sql, Date.now());
  }

  /**
   * Revokes a node's enrolled credential: its next request is refused, and
   * its machine is cut off (`cutOff`). False: it had none.
   */
  async revokeCredential(nodeId: string, operator: string): Promise<boolean> {
    const revoked = await this.change((now) => {
      if (!revokeCredential(this.sql, now, nodeId, operator)) return false;
      this.cutOff(now, nodeId, `the credential of ${nodeId} was revoked`);
      return true;
    });
    if (revoked && this.logging())
      logLine({ pool: this.poolName(), event: "CREDENTIAL_REVOKED", node_id: nodeId, operator });
    return revoked;
  }

  /**
   * A machine that can no longer commit (SPEC §9: its credential revoked or
   * replaced): its held claims are answered with nothing now — before the
   * change wakes held claims, so the tasks given back below cannot go to
   * them — and its live leases end as expiries do, requeued as worker
   * losses. Inside the change's transaction; answering a claim is only a
   * promise resolved, no await.
   */
  private cutOff(now: number, nodeId: string, why: string): void {
    this.held.releaseNode(nodeId);
    endLeasesOf(this.sql, now, nodeId, why);
  }

  // -- nodes ---------------------------------------------------------------

  // A change to the node itself may make work eligible for it (SPEC §5): its
  // held claim gets another try, as when work appears.

  // `assignedBy`: the operator that sent a registration or heartbeat for the
  // node (delegation, SPEC §9), whose pools in it are that operator's
  // assignment; null when the node sent it itself (or nobody is authenticated).

  async register(registration: NodeRegistration, assignedBy: string | null = null): Promise<void> {
    await this.change((now) => registerNode(this.sql, now, registration, assignedBy), {
      wakesNode: registration.node_id,
    });
    if (this.logging()) logLine({ pool: this.poolName(), event: "NODE_REGISTERED", node_id: registration.node_id });
    if (assignedBy !== null) this.logAssignment(registration.node_id, registration.capabilities.pools, assignedBy);
  }

  async heartbeatNode(nodeId: string, heartbeat: NodeHeartbeat, assignedBy: string | null = null) {
    // Liveness is not a state change worth a log line every few seconds per
    // node: only a node with a held claim needs the whole change.
    if (!this.held.holds(nodeId)) {
      const now = Date.now();
      return this.ctx.storage.transactionSync(() => heartbeatNode(this.sql, now, nodeId, heartbeat, assignedBy));
    }
    return this.change((now) => heartbeatNode(this.sql, now, nodeId, heartbeat, assignedBy), { wakesNode: nodeId });
  }

  /**
   * An operator assigns a node's team pools (SPEC §9), replacing any
   * earlier assignment; its held claim gets another try at once. False:
   * the pool does not know the node.
   */
  async assignNodePools(nodeId: string, pools: string[], operator: string): Promise<boolean> {
    const assigned = await this.change(
      (now) => {
        if (!nodeKnown(this.sql, nodeId)) return false;
        assignPools(this.sql, now, nodeId, pools, operator);
        return true;
      },
      { wakesNode: nodeId },
    );
    if (assigned) this.logAssignment(nodeId, pools, operator);
    return assigned;
  }

  private logAssignment(nodeId: string, pools: readonly string[], operator: string): void {
    if (this.logging())
      logLine({
        pool: this.poolName(),
        event: "NODE_POOLS_ASSIGNED",
        node_id: nodeId,
        pools: JSON.stringify(pools),
        operator,
      });
  }

  /** Lets a held-back node claim again (SPEC §13); its waiting claim tries at once. False: unknown node. */
  releaseNode(nodeId: string) {
    return this.change(() => endHoldBack(this.sql, nodeId), { wakesClaims: true });
  }

  /** One page of GET /nodes, after the node `after` (null: the first page). */
  listNodes(after: string | null, limit: number) {
    return listNodes(this.sql, Date.now(), after, limit, LIST_PAGE_MAX_BYTES, this.settings.owners);
  }

  // -- tasks and leases ----------------------------------------------------

  /**
   * Leases a task to the node, or, when nothing it may take is pending,
   * holds the claim up to `waitMs` (SPEC §5, long-poll): it is answered the
   * moment such a task appears, in the order the claims arrived, else with
   * nothing when the wait ends — by the object's clock, and never with a
   * lease after that. Each answer is its own claim transaction, so no task
   * is handed out twice. Held claims live in memory only: a restart drops
   * them, and the Worker answers a dropped claim with 204.
   */
  async claim(nodeId: string, jobId: string | null, waitMs = 0): Promise<ClaimResult> {
    // A node that claims again has given up on its earlier claim (its client
    // timed out): answer that one now, so no lease goes to a closed connection.
    this.held.releaseNode(nodeId);
    const result = await this.change((now) => this.claimFor(now, nodeId, jobId));
    if (result.ok || !worthWaiting(result) || waitMs <= 0) return result;
    return this.held.hold(nodeId, jobId, Date.now(), waitMs);
  }

  private claimFor(now: number, nodeId: string, jobId: string | null): ClaimResult {
    return claim(
      this.sql,
      now,
      nodeId,
      jobId,
      this.settings.weights,
      Math.random,
      this.settings.retryElsewhereMs,
      this.settings.owners,
      this.settings.membership,
    );
  }

  // The lease routes below take `caller`: the node the request acts as, or
  // null in open mode. The holder is checked in the same transaction as the
  // action, so a lease route costs one round trip with tokens as without.

  async renewLease(leaseId: string, caller: string | null) {
    return this.change((now) => renew(this.sql, now, leaseId, caller));
  }

  async failLease(leaseId: string, reason: string, caller: string | null) {
    return this.change((now) => failAttempt(this.sql, now, leaseId, reason, caller));
  }

  /**
   * Validates the output, then judges the commit in one transaction. The
   * bytes are read (for JSON outputs, and a replica's metrics object) before
   * the transaction; the transaction re-checks that the key still points at
   * what was read.
   */
  async completeLease(leaseId: string, outputSha256: string, evidence: unknown, caller: string | null) {
    const lease = findLease(this.sql, leaseId);
    // Refused before any bytes are read; the transaction checks again.
    if (!mayDrive(lease?.node_id, caller)) return { status: "not_holder" as const };
    if (!lease) return { status: "unknown" as const };
    const bound = findArtifact(this.sql, commitKey(lease, lease.replica));
    let output: ValidOutput | null = null;
    if (bound && bound.sha256 === outputSha256) {
      const json = lease.output_json || lease.replica > 0 ? await this.jsonObject(bound.object, bound.size_bytes) : "";
      // A replica's metrics are compared: one a reader could read two ways is invalid output (SPEC §14).
      const comparable = json !== null && (lease.replica === 0 || parseMetrics(json).ok);
      if (comparable) output = { object: bound.object, metrics: lease.replica > 0 ? json : null };
    }
    return this.change((now) => commit(this.sql, now, leaseId, outputSha256, output, evidence, caller));
  }

  /** The object's bytes when they are one JSON object, else null. */
  private async jsonObject(object: string, size: number): Promise<string | null> {
    if (size > MAX_JSON_OUTPUT_BYTES) return null;
    const body = await this.env.ARTIFACTS.get(object);
    if (!body) return null;
    try {
      const text = await body.text();
      const value: unknown = JSON.parse(text);
      return typeof value === "object" && value !== null && !Array.isArray(value) ? text : null;
    } catch {
      return null;
    }
  }

  // -- jobs ------------------------------------------------------------------

  /**
   * Records a job and queues all its tasks in one transaction: all or
   * nothing. A job id the pool already knows is refused, writing nothing:
   * the caller mints another (SPEC §12: an id collision is retried).
   */
  submitJob(jobId: string, spec: JobSpec, tasks: TaskSpec[], pool: string, place: JobPlace) {
    return this.change((now) => {
      // The archive lives under the pool's name as the Worker routes it.
      this.sql.exec("INSERT INTO pool_name (name) SELECT ? WHERE NOT EXISTS (SELECT 1 FROM pool_name)", pool);
      if (!insertJob(this.sql, now, jobId, spec, tasks, place))
        return { ok: false as const, reason: "job_id_taken" as const };
      return { ok: true as const, job: jobRecord(this.sql, findJob(this.sql, jobId)!, pool) };
    });
  }

  // Reads take the `viewer` they are served to: a node's id sees what SPEC
  // §14 seals from nodes sealed, null (an operator) everything.

  /** One page of GET /jobs, after the job with submission number `after` (0: the first page). */
  listJobs(pool: string, after: number, limit: number, viewer: Viewer) {
    return listJobs(this.sql, pool, after, limit, LIST_PAGE_MAX_BYTES, viewer);
  }

  // Reads of a job answer "archived" once it lives in R2 only (SPEC §12):
  // the Worker then reads its archive. null is a job the pool never had.

  getJob(jobId: string, pool: string, viewer: Viewer) {
    const row = findJob(this.sql, jobId);
    const sealed = sealedPending(this.sql, viewer, "job_id").get(jobId) ?? 0;
    return row ? jobRecord(this.sql, row, pool, sealed) : this.archivedOrNull(jobId);
  }

  jobEvents(jobId: string, after: number, limit: number, viewer: Viewer) {
    return findJob(this.sql, jobId) ? jobEvents(this.sql, jobId, after, limit, viewer) : this.archivedOrNull(jobId);
  }

  jobTasks(jobId: string, viewer: Viewer) {
    return findJob(this.sql, jobId) ? jobTasks(this.sql, Date.now(), jobId, viewer) : this.archivedOrNull(jobId);
  }

  cancelJob(jobId: string, pool: string) {
    // A cancel records no event, so held claims for the job are told directly.
    return this.change(
      (now) =>
        cancelJob(this.sql, now, jobId)
          ? jobRecord(this.sql, findJob(this.sql, jobId)!, pool)
          : this.archivedOrNull(jobId),
      { wakesClaims: true },
    );
  }

  private archivedOrNull(jobId: string | null): "archived" | null {
    return jobId !== null && archiveState(this.sql, jobId) === "archived" ? "archived" : null;
  }

  // -- artifacts -----------------------------------------------------------

  /**
   * May `writer` write `key`? If so, records that bytes are about to stream
   * into `object`, so they are collected unless a bind claims them in time.
   */
  beginUpload(key: string, object: string, writer: Writer) {
    return this.change((now) => {
      const check = checkWrite(this.sql, now, key, writer);
      if (check.ok) uploadStarted(this.sql, now, object);
      return check;
    });
  }

  /** The upload into `object` failed: collect whatever reached R2. */
  abandonUpload(object: string) {
    return this.change((now) => unreferenced(this.sql, now, object));
  }

  async bindArtifact(key: string, stored: StoredObject, writer: Writer) {
    const result = await this.change((now) => bind(this.sql, now, key, stored, writer));
    if (result.ok && this.logging()) {
      const { key: bound, size_bytes, sha256 } = result.record;
      logLine({ pool: this.poolName(), event: "ARTIFACT_BOUND", key: bound, size_bytes, sha256, writer });
    }
    return result;
  }

  resolveArtifact(key: string, viewer: Viewer) {
    return readArtifact(this.sql, key, viewer) ?? this.archivedOrNull(jobOfKey(key));
  }

  /** One page of a job's artifacts after the key `after` (null: the first page). */
  listJobArtifacts(jobId: string, after: string | null, limit: number, viewer: Viewer) {
    return this.archivedOrNull(jobId) ?? listJobArtifacts(this.sql, jobId, after, limit, viewer);
  }

  // -- checkpoints -----------------------------------------------------------

  /** Records an uploaded checkpoint part; a scoped writer needs a live lease on the task. */
  registerCheckpointPart(jobId: string, taskId: string, request: RegisterPartRequest, writer: Writer) {
    return this.change((now) => registerPart(this.sql, now, jobId, taskId, request, writer));
  }

  /** Writes the manifest only if every expected part was registered with its hash (parts first, manifest last). */
  commitCheckpoint(jobId: string, taskId: string, request: CommitCheckpointRequest, writer: Writer) {
    return this.change((now) => commitManifest(this.sql, now, jobId, taskId, request, writer));
  }

  latestCheckpoint(jobId: string, taskId: string, worldSize: number | null) {
    return this.archivedOrNull(jobId) ?? latest(this.sql, jobId, taskId, worldSize);
  }

  checkpointLostWork(jobId: string, taskId: string, failedAtStep: number) {
    return this.archivedOrNull(jobId) ?? lostWork(this.sql, jobId, taskId, failedAtStep);
  }

  verifyCheckpoint(jobId: string, taskId: string, manifestId: string) {
    return this.change((now) => markRestoreVerified(this.sql, now, jobId, taskId, manifestId));
  }

  quarantineCheckpoint(jobId: string, taskId: string, manifestId: string, reason: string) {
    return this.change((now) => quarantine(this.sql, now, jobId, taskId, manifestId, reason));
  }

  // -- observability ---------------------------------------------------------

  /** Every registered node's gate answer for one task (SPEC §11): eligible, or the refusing gate. */
  explainPlacement(jobId: string, taskId: string, viewer: Viewer) {
    return placementReport(this.sql, Date.now(), jobId, taskId, viewer, this.settings.owners, this.settings.membership);
  }

  /** The dashboard's bounded summary of this pool: counts, and at most `limit` of each list. */
  dashboard(pool: string, limit: number, viewer: Viewer) {
    return dashboardSummary(this.sql, Date.now(), pool, limit, viewer, this.settings.membership);
  }

  /** GET /nodes/summary: the fleet's GPUs and the demand on them, bounded (src/pool/fleet.ts). */
  fleet(pool: string, limit: number, viewer: Viewer) {
    return fleetSummary(this.sql, Date.now(), pool, limit, this.settings.membership, viewer);
  }

  /** Counts for GET /metrics. */
  metrics(viewer: Viewer) {
    return metricsSample(this.sql, Date.now(), viewer, this.settings.membership);
  }

  // -- expiry --------------------------------------------------------------

  /** Sweeps expired leases and re-arms. Idempotent: alarms are at-least-once. */
  override async alarm(): Promise<void> {
    this.armedAt = undefined; // the alarm that just fired is no longer set
    await this.change((now) => sweep(this.sql, now));
    await this.collect();
    await this.archive();
  }

  /**
   * Archives jobs past retention to R2 (SPEC §12), oldest first, about a
   * batch of tasks per run: each job's objects are written one at a time
   * (other requests run meanwhile), then its rows deleted in one
   * transaction. A failed write leaves the job marked: the next run, armed
   * at once, writes it again. An unreadable retention setting archives nothing.
   */
  private async archive(): Promise<void> {
    const retention = jobRetentionMs(this.env.FLASHML_JOB_RETENTION_SECONDS);
    const pool = this.storedPoolName();
    if (typeof retention === "string" || pool === null || Date.now() < this.archiveRetryAt) return;
    let tasks = 0;
    while (tasks < ARCHIVE_BATCH_TASKS) {
      const jobId = this.ctx.storage.transactionSync(() => startArchive(this.sql, Date.now(), retention));
      if (jobId === null) return;
      try {
        for (const object of archiveObjects(this.sql, pool, jobId)) {
          await this.env.ARTIFACTS.put(object.key, object.body, { httpMetadata: { contentType: "application/json" } });
        }
      } catch (err) {
        console.error(
          JSON.stringify({ level: "error", pool, event: "ARCHIVE_FAILED", job_id: jobId, error: String(err) }),
        );
        this.archiveRetryAt = Date.now() + ARCHIVE_RETRY_MS;
        await this.arm();
        return;
      }
      const archived = await this.change((now) => finishArchive(this.sql, now, jobId));
      if (this.logging()) logLine({ pool, event: "JOB_ARCHIVED", job_id: jobId, tasks: archived });
      tasks += archived;
    }
  }

  /**
   * Deletes from R2 a batch of objects no key refers to (SPEC §12): whatever
   * the Worker's own deletes missed, and uploads never bound. The deletes run
   * between two transactions; an object taken here cannot be bound
   * meanwhile, and one R2 refused is tried again later.
   */
  private async collect(): Promise<void> {
    const objects = this.ctx.storage.transactionSync(() => takeForCollection(this.sql, Date.now()));
    if (objects.length === 0) return;
    const results = await Promise.allSettled(objects.map((object) => this.env.ARTIFACTS.delete(object)));
    const deleted = objects.filter((_, i) => results[i]!.status === "fulfilled");
    const refused = objects.filter((_, i) => results[i]!.status === "rejected");
    await this.change((now) => collected(this.sql, now, deleted, refused));
  }

  /**
   * Runs one state change as one synchronous transaction at one instant,
   * logs every ledger event it appended (SPEC §11: one JSON line per state
   * change), and keeps the alarm at the earliest live deadline. Every
   * mutating method goes through here, so none can forget the alarm. When
   * the change queued work or closed a job (`wakesClaims` for changes that
   * record no event), held claims get their turn before anyone else; a
   * change to one node (`wakesNode`) gives that node's held claim a turn.
   */
  private async change<T>(
    fn: (now: number) => T,
    options: { wakesClaims?: boolean; wakesNode?: string } = {},
  ): Promise<T> {
    const before = this.logging() || this.held.size > 0 ? this.lastEventSeq() : null;
    const now = Date.now();
    const result = this.ctx.storage.transactionSync(() => fn(now));
    const wakeAll = this.held.size > 0 && (options.wakesClaims || (before !== null && this.workAppeared(before)));
    const woken = wakeAll
      ? this.claimForHeld(null)
      : this.held.size > 0 && options.wakesNode !== undefined
        ? this.claimForHeld(options.wakesNode)
        : [];
    if (before !== null && this.logging()) {
      // A job's TASK_CREATED events are summarised by its JOB_ACCEPTED line (it
      // carries the count): a 10,000-task submission is one change, not 10,000.
      for (const row of this.sql.exec<EventRow>(
        "SELECT * FROM events WHERE seq > ? AND type != 'TASK_CREATED' ORDER BY seq",
        before,
      )) {
        logEvent(this.poolName(), row);
      }
    }
    await this.arm();
    for (const [held, answer] of woken) held.resolve(answer);
    return result;
  }

  /** Whether the ledger since `seq` queued work or closed a job: what a held claim waits for. */
  private workAppeared(seq: number): boolean {
    return (
      this.sql
        .exec(
          `SELECT 1 FROM events WHERE seq > ?
             AND type IN ('TASK_CREATED', 'TASK_REQUEUED', 'JOB_SUCCEEDED', 'JOB_FAILED') LIMIT 1`,
          seq,
        )
        .toArray().length > 0
    );
  }

  /**
   * Gives every held claim (only `nodeId`'s when given), oldest first,
   * another try in one transaction. Those that got a lease, will never get
   * one, or whose hold has ended are taken off the list at once (so their
   * timers cannot answer them too) and returned to be answered once the
   * change is durable and its alarm armed.
   */
  private claimForHeld(nodeId: string | null): Answered {
    const now = Date.now();
    const answered = this.ctx.storage.transactionSync(() =>
      this.held.retry(
        now,
        (held) => this.claimFor(now, held.nodeId, held.jobId),
        () => this.pendingLeft(),
        nodeId,
      ),
    );
    this.held.take(answered);
    return answered;
  }

  private pendingLeft(): boolean {
    return poolTaskCounts(this.sql).PENDING > 0;
  }

  /**
   * The settings the pool's rules read, parsed once per instance: the
   * object's env never changes while it lives, and a claim (and every held
   * claim a change retries) used to parse every token list again. The
   * Worker refuses to serve when one is unreadable; these fallbacks only
   * keep the object from throwing. Membership: whose word makes a node a
   * team pool's member (SPEC §9), an operator's unless the coordinator is
   * open; a refusing configuration serves nothing and counts as enforcing.
   */
  private settingsRead: PoolSettings | undefined;
  private get settings(): PoolSettings {
    if (this.settingsRead) return this.settingsRead;
    const weights = tenantWeights(this.env.FLASHML_TENANT_WEIGHTS);
    const window = retryElsewhereMs(this.env.FLASHML_RETRY_ELSEWHERE_SECONDS);
    const owners = parseNodeOwners(this.env.FLASHML_NODE_OWNERS);
    this.settingsRead = {
      weights: typeof weights === "string" ? new Map() : weights,
      retryElsewhereMs: typeof window === "string" ? DEFAULT_RETRY_ELSEWHERE_MS : window,
      owners: typeof owners === "string" ? new Map() : owners,
      membership: authConfig(this.env).mode === "open" ? "reported" : "assigned",
    };
    return this.settingsRead;
  }

  private lastEventSeq(): number {
    return this.sql.exec<{ seq: number | null }>("SELECT MAX(seq) AS seq FROM events").one().seq ?? 0;
  }

  private logging(): boolean {
    return this.env.FLASHML_LOG_STATE_CHANGES !== "0";
  }

  /** The pool's name as the Worker routes it, recorded by the first job; null before any job. */
  private storedPoolName(): string | null {
    return this.sql.exec<{ name: string }>("SELECT name FROM pool_name").toArray()[0]?.name ?? null;
  }

  /** The pool's name for logs (the object's id when the runtime does not know the name). */
  private poolName(): string {
    return this.ctx.id.name ?? this.ctx.id.toString();
  }

  /** Keeps the alarm at the earliest live lease deadline, collection or archiving due, or unset when none is. */
  private async arm(): Promise<void> {
    const deadline = earliestDeadline(this.sql);
    const retention = jobRetentionMs(this.env.FLASHML_JOB_RETENTION_SECONDS);
    const due = typeof retention === "string" ? null : nextArchive(this.sql, Date.now(), retention);
    const archive = due === null ? null : Math.max(due, this.archiveRetryAt);
    const times = [deadline, nextCollection(this.sql), archive].filter((t): t is number => t !== null);
    const next = times.length === 0 ? null : Math.min(...times);
    if (next === this.armedAt) return;
    // The cache is updated in the same synchronous turn as the storage call
    // is issued, so concurrent arms leave it matching the last alarm set.
    this.armedAt = next;
    if (next === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(next);
  }
}
