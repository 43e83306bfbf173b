// PoolObject: one SQLite-backed Durable Object per pool, holding all of the
// pool's state. This class is its RPC surface and nothing else: each method
// delegates to the module beside it that holds the concept (held claims,
// housekeeping, enrolment, node, lease and job calls), and each state change
// is one synchronous transaction (`Pool.change`, src/pool/pool.ts). Nothing
// a later request depends on lives in an instance field: the object may be
// evicted between any two requests.

import { DurableObject } from "cloudflare:workers";
import type { CommitCheckpointRequest, RegisterPartRequest } from "../protocol/checkpoints";
import type { DeviceCodeRequest } from "../protocol/device";
import type { JobSpec } from "../protocol/jobs";
import type { NodeHeartbeat, NodeRegistration } from "../protocol/nodes";
import type { ReplicaItem } from "../protocol/responses";
import type { TaskSpec } from "../protocol/tasks";
import type { Locale } from "../rules/homing";
import { noLoad } from "../rules/object-load";
import { shardCount } from "../rules/pool-shards";
import type { NodeAnswers } from "../rules/shard-merge";
import { shardOfName, shardStub } from "./address";
import type { StoredObject, Writer } from "./artifacts";
import { dashboardSummary, liveLeasesByNode, STUCK_CLASSES_CHECKED } from "./dashboard";
import { type CredentialProof, credentialValid, enrolledAmong, type IssuedCredential } from "./enrolment";
import * as enrolment from "./enrolment-flows";
import { exchangeNow, joinSummary } from "./exchange";
import { fleetSummary, nodeAnswers, type PendingClass, pendingClasses } from "./fleet";
import {
  type ClaimTicket,
  claimForwarded,
  claimsForwarded,
  type ForwardedClaimResult,
  passportChanged,
} from "./forwarded-claims";
import { forwardHeld } from "./forwarding";
import { claimOrHold, cutOffHere } from "./held-claims";
import { guardHomes, Homes, holdsNode, homedFor, whereIs } from "./homes";
import { alarm } from "./housekeeping";
import * as jobs from "./job-calls";
import type { JobPlace } from "./jobs";
import { emptiness, enterPool, guardCalls, layout, layoutAtStart, shardPeers } from "./layout";
import * as leases from "./lease-calls";
import type { ClaimResult } from "./leases";
import { forwardLegacyIds, hadOneShard } from "./legacy-ids";
import { metricsSample } from "./metrics";
import * as nodes from "./node-calls";
import { deliver, type OutcomeMessage } from "./outcomes";
import type { Passport } from "./passports";
import { placementAnswers, placementFacts, placementReport, queueElsewhere } from "./placement-report";
import { Pool } from "./pool";
import { reserveSlot } from "./reservations";
import { migrate } from "./schema";
import type { Viewer } from "./sealing";
import { sessionClass } from "./session";

export class PoolObject extends DurableObject<Env> {
  readonly #pool: Pool;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#pool = new Pool(ctx, env);
    void ctx.blockConcurrencyWhile(async () => {
      ctx.storage.transactionSync(() => migrate(ctx.storage.sql));
      await this.#layoutAtStart();
      // A shard of a pool of shards counts its grants for the summary, and
      // sends held claims on when a reply brings work elsewhere (after the
      // migration: its name may come from its own rows).
      if (this.#pool.shards > 1) {
        joinSummary(this.#pool);
        this.#pool.summary.onChange(() => forwardHeld(this.#pool));
      }
    });
  }

  // An id this shard does not hold, in a pool that once had one shard, is
  // shard 0's (src/pool/legacy-ids.ts). Installed first, so the layout
  // check below runs before it.
  static {
    forwardLegacyIds(PoolObject.prototype, (object: PoolObject) => object.#legacyHome());
  }

  #legacy: boolean | undefined;

  #legacyHome() {
    const { pool, shard } = shardOfName(this.#pool.name);
    if (shard === 0) return null;
    // The layout history grows only at start, before any call: read once.
    this.#legacy ??= hadOneShard(this.#pool.sql);
    if (!this.#legacy) return null;
    const { poolLocations } = this.#pool.settings;
    return {
      sql: this.#pool.sql,
      shard0: () =>
        shardStub(this.env, poolLocations, pool, 0) as unknown as Record<string, (...args: unknown[]) => unknown>,
    };
  }

  // A node-routed call for a node that lives on another shard is refused with
  // that shard, for the Worker to call instead (src/pool/homes.ts). Installed
  // before the layout check, so that check still runs first.
  static {
    guardHomes(PoolObject.prototype, (object: PoolObject) => ({ pool: object.#pool, homes: object.#homes }));
  }

  readonly #homes = new Homes();

  // Every call but the two layout calls first passes the layout check: a pool
  // its layout refuses refuses them all (docs/sharding.md §11, src/pool/layout.ts).
  // Each call is counted there too, in memory (src/rules/object-load.ts): GET /metrics reports it.
  static {
    guardCalls(
      PoolObject.prototype,
      ["layout", "emptiness"],
      (object: PoolObject) => object.#enter(),
      (object: PoolObject) => object.#load,
    );
  }

  readonly #load = noLoad();

  #enter(): void {
    enterPool(this.#pool.sql, () => void this.ctx.blockConcurrencyWhile(() => this.#layoutAtStart()));
  }

  async #layoutAtStart(): Promise<void> {
    const name = this.#pool.knownName;
    // Only an object from before shards, started by its alarm, knows no name:
    // its next start with one checks (until then it is the pool it always was).
    if (name === null) return;
    const { pool, shard } = shardOfName(name);
    const { poolShards, poolLocations } = this.#pool.settings;
    const peers = shardPeers(this.env, poolLocations, pool);
    await layoutAtStart(this.#pool.sql, pool, shard, shardCount(poolShards, pool), Date.now(), peers);
  }

  // -- layout (docs/sharding.md §11, src/pool/layout.ts): shard to shard ------

  /** Shard 0's history of shard counts, and its refusal while it refuses. */
  layout() {
    return layout(this.#pool.sql);
  }

  /** What this shard holds, asked by shard 0 before a lower removes it. */
  emptiness() {
    return emptiness(this.#pool.sql, shardOfName(this.#pool.name).shard);
  }

  // -- enrolled callers (docs/protocol.md §9) ---------------------------------------------

  /**
   * An enrolled node's session: every call below, each checking `proof` in
   * the same turn as it starts (src/pool/session.ts). Called and used in
   * one round trip (`stub.session(proof).claim(...)`). Two calls wait
   * before they write: a held claim (a revocation answers it, see
   * revokeCredential) and a commit that reads its output from R2 first,
   * which finishes if the revocation lands during that read.
   */
  session(proof: CredentialProof): NodeSession {
    return new NodeSession(this, () => credentialValid(this.#pool.sql, proof));
  }

  /**
   * Whether this shard, the node's home, holds `proof` as a valid
   * credential: what another shard, which holds no credentials, asks before
   * it serves the node (docs/sharding.md §8.4 "vouch").
   */
  vouch(proof: CredentialProof): boolean {
    return credentialValid(this.#pool.sql, proof);
  }

  // -- enrolment (docs/protocol.md §9 "Enrolled machines", src/pool/enrolment-flows.ts) ----

  requestDeviceCode(request: DeviceCodeRequest, from: string | null) {
    return enrolment.requestDeviceCode(this.#pool, request, from);
  }

  redeemDeviceCode(deviceCode: string, locale: Locale | null = null) {
    return enrolment.redeemDeviceCode(this.#pool, deviceCode, locale);
  }

  decideDeviceCode(
    userCode: string,
    decision: "approved" | "denied",
    operator: string,
    owner: string | null = null,
    pools: string[] | null = null,
  ) {
    return enrolment.decideDeviceCode(this.#pool, userCode, decision, operator, owner, pools);
  }

  denyAllDeviceCodes(operator: string) {
    return enrolment.denyAllDeviceCodes(this.#pool, operator);
  }

  pendingDeviceCodes() {
    return enrolment.pendingDeviceCodes(this.#pool);
  }

  revokeCredential(nodeId: string, operator: string) {
    return enrolment.revokeCredential(this.#pool, nodeId, operator);
  }

  // -- nodes (src/pool/node-calls.ts) ------------------------------------------

  /** `locale`: where the request came from, by which a pool spread over locations homes a new node (src/pool/homes.ts). */
  register(registration: NodeRegistration, assignedBy: string | null = null, _locale: Locale | null = null) {
    return nodes.register(this.#pool, registration, assignedBy);
  }

  heartbeatNode(nodeId: string, heartbeat: NodeHeartbeat, assignedBy: string | null = null) {
    return nodes.heartbeatNode(this.#pool, nodeId, heartbeat, assignedBy);
  }

  assignNodePools(nodeId: string, pools: string[], operator: string) {
    return nodes.assignNodePools(this.#pool, nodeId, pools, operator);
  }

  releaseNode(nodeId: string) {
    return nodes.releaseNode(this.#pool, nodeId);
  }

  listNodes(after: string | null, limit: number, maxBytes?: number) {
    return nodes.listNodes(this.#pool, after, limit, maxBytes);
  }

  // -- claims and leases (src/pool/held-claims.ts, src/pool/lease-calls.ts) ----

  claim(nodeId: string, jobId: string | null, waitMs = 0): Promise<ClaimResult> {
    return claimOrHold(this.#pool, nodeId, jobId, waitMs);
  }

  renewLease(leaseId: string, caller: string | null) {
    return leases.renewLease(this.#pool, leaseId, caller);
  }

  failLease(leaseId: string, reason: string, caller: string | null) {
    return leases.failLease(this.#pool, leaseId, reason, caller);
  }

  completeLease(leaseId: string, outputSha256: string, evidence: unknown, caller: string | null) {
    return leases.completeLease(this.#pool, leaseId, outputSha256, evidence, caller);
  }

  // -- shard to shard (docs/sharding.md §5.1, §8.2): no route calls these, no session offers them

  /** Whether node `nodeId` lives here (src/pool/homes.ts): asked by a shard that does not hold it. */
  holdsNode(nodeId: string): boolean {
    return holdsNode(this.#pool.sql, nodeId);
  }

  /** Where this shard knows node `nodeId` lives, itself or by its pointer (src/pool/homes.ts); null: it does not know. */
  whereIs(nodeId: string): number | null {
    return whereIs(this.#pool.sql, this.#pool.shard, nodeId);
  }

  /** The nodes held here whose registry shard is `registry`, pulled by it as pointers (src/pool/homes.ts). */
  homedFor(registry: number): string[] {
    return homedFor(this.#pool, registry);
  }

  /** A credential shard 0 issued, installed here at the node's home (src/pool/enrolment-flows.ts). */
  installCredential(nodeId: string, credential: IssuedCredential, _locale: Locale | null = null) {
    return enrolment.installCredential(this.#pool, nodeId, credential);
  }

  /** Those of `nodeIds` enrolled here, asked by shard 0 as it lists pending codes (src/pool/enrolment-flows.ts). */
  enrolledAmong(nodeIds: string[]): string[] {
    return enrolledAmong(this.#pool.sql, nodeIds);
  }

  /** A claim the node's home forwarded here, with the node's passport (src/pool/forwarded-claims.ts). */
  claimForwarded(ticket: ClaimTicket): Promise<ForwardedClaimResult> {
    return claimForwarded(this.#pool, ticket);
  }

  /** A home's held claims forwarded here at once, served in the order given (src/pool/forwarded-claims.ts). */
  claimsForwarded(tickets: ClaimTicket[]): Promise<ForwardedClaimResult[]> {
    return claimsForwarded(this.#pool, tickets);
  }

  /** At a shard other than the node's home: its credential was revoked or replaced there (src/pool/held-claims.ts). */
  cutOffHere(nodeId: string, why: string, passport: Passport | null = null): Promise<void> {
    return cutOffHere(this.#pool, nodeId, why, passport);
  }

  /** The home changed a node whose claim it forwarded here (src/pool/sent-passports.ts): its new passport. */
  passportChanged(passport: Passport): Promise<void> {
    return passportChanged(this.#pool, passport);
  }

  /** Answers a claim of `nodeId` held here for its home with nothing: the node claimed again there. */
  releaseForwarded(nodeId: string): void {
    this.#pool.held.releaseNode(nodeId);
  }

  /** At a node's home: outcomes of its leases on shard `from`, each applied once (src/pool/outcomes.ts). */
  deliver(from: number, batch: OutcomeMessage[], digestVersion?: number) {
    return deliver(this.#pool, from, batch, digestVersion);
  }

  // -- jobs, artifacts, checkpoints (src/pool/job-calls.ts) --------------------

  /** A slot for a job of `tasks` tasks, and this shard's load, for the job route's two choices (docs/sharding.md §7.4). */
  reserveSlot(tasks: number) {
    return reserveSlot(this.#pool, tasks);
  }

  /** The job route chose the other shard: the slot stops counting now, not when it lapses. */
  releaseSlot(reservation: string) {
    this.#pool.reservations.consume(reservation);
  }

  submitJob(jobId: string, spec: JobSpec, tasks: TaskSpec[], pool: string, place: JobPlace, reservation?: string) {
    if (reservation !== undefined) this.#pool.reservations.consume(reservation);
    return jobs.submitJob(this.#pool, jobId, spec, tasks, pool, place);
  }

  listJobs(pool: string, after: number, limit: number, viewer: Viewer, maxBytes?: number) {
    return jobs.listJobs(this.#pool, pool, after, limit, viewer, maxBytes);
  }

  getJob(jobId: string, pool: string, viewer: Viewer) {
    return jobs.getJob(this.#pool, jobId, pool, viewer);
  }

  jobEvents(jobId: string, after: number, limit: number, viewer: Viewer) {
    return jobs.jobEvents(this.#pool, jobId, after, limit, viewer);
  }

  jobTasks(jobId: string, viewer: Viewer) {
    return jobs.jobTasks(this.#pool, jobId, viewer);
  }

  cancelJob(jobId: string, pool: string) {
    return jobs.cancelJob(this.#pool, jobId, pool);
  }

  beginUpload(key: string, object: string, writer: Writer) {
    return jobs.beginUpload(this.#pool, key, object, writer);
  }

  abandonUpload(object: string) {
    return jobs.abandonUpload(this.#pool, object);
  }

  bindArtifact(key: string, stored: StoredObject, writer: Writer) {
    return jobs.bindArtifact(this.#pool, key, stored, writer);
  }

  resolveArtifact(key: string, viewer: Viewer) {
    return jobs.resolveArtifact(this.#pool, key, viewer);
  }

  listJobArtifacts(jobId: string, after: string | null, limit: number, viewer: Viewer) {
    return jobs.listJobArtifacts(this.#pool, jobId, after, limit, viewer);
  }

  registerCheckpointPart(jobId: string, taskId: string, request: RegisterPartRequest, writer: Writer) {
    return jobs.registerCheckpointPart(this.#pool, jobId, taskId, request, writer);
  }

  commitCheckpoint(jobId: string, taskId: string, request: CommitCheckpointRequest, writer: Writer) {
    return jobs.commitCheckpoint(this.#pool, jobId, taskId, request, writer);
  }

  latestCheckpoint(jobId: string, taskId: string, worldSize: number | null) {
    return jobs.latestCheckpoint(this.#pool, jobId, taskId, worldSize);
  }

  checkpointLostWork(jobId: string, taskId: string, failedAtStep: number) {
    return jobs.checkpointLostWork(this.#pool, jobId, taskId, failedAtStep);
  }

  verifyCheckpoint(jobId: string, taskId: string, manifestId: string) {
    return jobs.verifyCheckpoint(this.#pool, jobId, taskId, manifestId);
  }

  quarantineCheckpoint(jobId: string, taskId: string, manifestId: string, reason: string) {
    return jobs.quarantineCheckpoint(this.#pool, jobId, taskId, manifestId, reason);
  }

  // -- observability (docs/protocol.md §11) ------------------------------------------------

  /** Every registered node's gate answer for one task: eligible, or the refusing gate. */
  explainPlacement(jobId: string, taskId: string, viewer: Viewer) {
    const { owners, membership } = this.#pool.settings;
    return placementReport(this.#pool.sql, Date.now(), jobId, taskId, viewer, owners, membership);
  }

  /** A sharded pool's report, pass 1 at the job's shard (docs/sharding.md §10): the task's facts, sealed. */
  placementFacts(jobId: string, taskId: string, viewer: Viewer) {
    return placementFacts(this.#pool.sql, jobId, taskId, viewer);
  }

  /**
   * Pass 2 at every shard: this shard's registered nodes' answers for a task
   * of `payload`, with its shown replicas, and for a pending one (`queued`)
   * this shard's part of its place in the claim order.
   */
  placementNodes(payload: string, shown: ReplicaItem[] | null, queued?: { priority: number; tenant: string }) {
    const { owners, membership } = this.#pool.settings;
    const answers = placementAnswers(this.#pool.sql, Date.now(), payload, shown, owners, membership);
    return queued ? { ...answers, queue: queueElsewhere(this.#pool.sql, queued.priority, queued.tenant) } : answers;
  }

  /** The dashboard's bounded summary of this pool: counts, and at most `limit` of each list. */
  dashboard(pool: string, limit: number, viewer: Viewer) {
    return dashboardSummary(this.#pool.sql, Date.now(), pool, limit, viewer, this.#pool.settings.membership);
  }

  /** GET /nodes/summary: the fleet's GPUs and the demand on them, bounded. */
  fleet(pool: string, limit: number, viewer: Viewer) {
    return fleetSummary(this.#pool.sql, Date.now(), pool, limit, this.#pool.settings.membership, viewer);
  }

  /** Counts for GET /metrics. */
  metrics(viewer: Viewer) {
    const sample = metricsSample(
      this.#pool.sql,
      Date.now(),
      { ...this.#load },
      this.#pool.held.ownSize,
      viewer,
      this.#pool.settings.membership,
    );
    return { ...sample, ...this.#costs(viewer) };
  }

  /**
   * What this object's work has cost (docs/protocol.md §16): an operator's
   * to read, since rows written move with whether a task is being checked.
   */
  #costs(viewer: Viewer) {
    return viewer === null ? { sql: this.#pool.sql.totals() } : {};
  }

  // A sharded pool's reads of every shard (docs/sharding.md §10): the Worker
  // asks each shard its pending classes, then each shard's nodes for
  // their answers, then each shard for its part judged by all the answers.

  /** The pending classes this shard's stuck tasks and demand judge, by their canonical key. */
  pendingClasses() {
    return pendingClasses(this.#pool.sql, STUCK_CLASSES_CHECKED);
  }

  /** What this shard's nodes say of each class: claimable, servable, how many can take it now. */
  nodeAnswers(classes: PendingClass[]) {
    return nodeAnswers(this.#pool.sql, Date.now(), this.#pool.settings.membership, classes);
  }

  /** This shard's part of the dashboard, its stuck tasks and demand judged by the pool's node answers. */
  shardDashboard(pool: string, limit: number, viewer: Viewer, answers: NodeAnswers) {
    const { membership } = this.#pool.settings;
    const part = dashboardSummary(this.#pool.sql, Date.now(), pool, limit, viewer, membership, answers);
    return { ...part, leasesByNode: liveLeasesByNode(this.#pool.sql) };
  }

  /** This shard's part of the fleet, its demand judged by the pool's node answers. */
  shardFleet(pool: string, limit: number, viewer: Viewer, answers: NodeAnswers) {
    return fleetSummary(this.#pool.sql, Date.now(), pool, limit, this.#pool.settings.membership, viewer, answers);
  }

  /** This shard's counts for GET /metrics, its unservable demand judged by the pool's node answers. */
  shardMetrics(viewer: Viewer, answers: NodeAnswers) {
    const { membership } = this.#pool.settings;
    const now = Date.now();
    const sample = metricsSample(
      this.#pool.sql,
      now,
      { ...this.#load },
      this.#pool.held.ownSize,
      viewer,
      membership,
      answers,
    );
    const outboxRows = this.#pool.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM outbox").one().n;
    const links = {
      summaryAgeMs: this.#pool.summary.age(now),
      forwardedClaims: this.#pool.forwardedClaims,
      outboxRows,
    };
    return { ...sample, links, ...this.#costs(viewer) };
  }

  // -- the pool summary (docs/sharding.md §6.2, src/pool/exchange.ts) ----------

  /** Σ's poke: work appeared elsewhere and this shard holds claims, so exchange now. */
  async summaryChanged(): Promise<void> {
    await exchangeNow(this.#pool);
  }

  // -- housekeeping (src/pool/housekeeping.ts) ---------------------------------

  /** Sweeps expired leases, collects, archives and re-arms. Idempotent: alarms are at-least-once. */
  override alarm(): Promise<void> {
    return alarm(this.#pool);
  }
}

/**
 * The calls an enrolled node's session offers (src/pool/session.ts), each
 * named: the node's own calls and the reads and writes its routes make for
 * it. Never the object's lifecycle nor a call between objects: a call not
 * named here is no node's to make, however it is named.
 */
export const NODE_CALLS = [
  "requestDeviceCode",
  "redeemDeviceCode",
  "decideDeviceCode",
  "denyAllDeviceCodes",
  "pendingDeviceCodes",
  "revokeCredential",
  "register",
  "heartbeatNode",
  "assignNodePools",
  "releaseNode",
  "listNodes",
  "claim",
  "renewLease",
  "failLease",
  "completeLease",
  "reserveSlot",
  "releaseSlot",
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
  "placementFacts",
  "placementNodes",
  "dashboard",
  "fleet",
  "metrics",
  "pendingClasses",
  "nodeAnswers",
  "shardDashboard",
  "shardFleet",
  "shardMetrics",
] as const satisfies readonly (keyof PoolObject)[];

/** An enrolled node's session: the NODE_CALLS, each re-checking the credential (src/pool/session.ts). */
const NodeSession = sessionClass(PoolObject.prototype, NODE_CALLS);
export type NodeSession = InstanceType<typeof NodeSession>;
