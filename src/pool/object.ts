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
import { LIST_PAGE_MAX_BYTES } from "../protocol/limits";
import type { NodeHeartbeat, NodeRegistration } from "../protocol/nodes";
import type { ReplicaItem } from "../protocol/responses";
import type { RunRequest, RunRound, RunState } from "../protocol/runs";
import type { TaskSpec } from "../protocol/tasks";
import type { Locale } from "../rules/homing";
import { upgradingMessage } from "../rules/layout";
import { noLoad } from "../rules/object-load";
import { shardCount } from "../rules/pool-shards";
import type { NodeAnswers } from "../rules/shard-merge";
import { shardOfName, shardStub } from "./address";
import { afterChange } from "./after-change";
import { alarm } from "./alarm/housekeeping";
import type { StoredObject, Writer } from "./artifacts/artifacts";
import type { ClaimResult } from "./claims/claim-result";
import { forwardHeld } from "./claims/forwarding";
import { claimOrHold } from "./claims/held-claims";
import type { ClaimIds, CredentialProof } from "./contract";
import { credentialValid } from "./enrolment/credentials";
import * as enrolment from "./enrolment/device-codes";
import * as jobs from "./jobs/calls";
import type { JobPlace } from "./jobs/jobs";
import * as leases from "./leases/calls";
import type { Viewer } from "./ledger/sealing";
import * as nodes from "./nodes/calls";
import { ABOUT_NODE, Homes, type NodeCall, PROVING, registering, whenHome } from "./nodes/homes";
import { type PeerHost, PoolPeer } from "./peer";
import { Pool } from "./pool";
import { dashboardView, liveLeasesByNode, STUCK_CLASSES_CHECKED } from "./reads/dashboard";
import { fleetView, nodeAnswers, type PendingClass, pendingClasses } from "./reads/fleet";
import { metricsSample } from "./reads/metrics";
import { placementAnswers, placementFacts, placementReport, queueElsewhere } from "./reads/placement-report";
import * as runs from "./runs/calls";
import { retellLiveRounds, tellRuns } from "./runs/tell";
import { MIGRATIONS, UPGRADE, upgrade } from "./schema/schema";
import { sessionClass } from "./session";
import { enterPool, layoutAtStart, layoutPeers, serveCall } from "./shards/layout";
import { hadOneShard, heldHereOr, type IdKind, type LegacyHome } from "./shards/legacy-ids";

export class PoolObject extends DurableObject<Env> {
  readonly #pool: Pool;

  /**
   * The context of `object`, for a test that holds the object itself
   * (runInDurableObject): a static, so no RPC caller can reach it.
   */
  static poolOf(object: PoolObject): Pool {
    return object.#pool;
  }

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#pool = new Pool(ctx, env, afterChange);
    // A start that throws resets the object, and the next call starts it again.
    ctx.blockConcurrencyWhile(() => this.#upgradeSlice()).catch(() => {});
  }

  // -- the start: the schema upgraded, then the layout (src/pool/schema/schema.ts) ----

  /** True while the schema is behind: every call is refused, and each alarm applies the next step. */
  #upgrading = false;

  /**
   * One slice of the schema's upgrade, in its own transaction: every step at
   * once, or for a large object only the next, so no event runs more than
   * one heavy step (`UPGRADE`). Once current, the rest of the start runs.
   * Until then the object refuses every call with a 503 and arms an alarm
   * now for the next slice. Runs under blockConcurrencyWhile.
   */
  async #upgradeSlice(): Promise<void> {
    const { storage } = this.ctx;
    const whole = storage.sql.databaseSize <= UPGRADE.wholeBelowBytes;
    const version = storage.transactionSync(() => upgrade(storage.sql, whole));
    if (version < MIGRATIONS.length) {
      this.#upgrading = true;
      const message = upgradingMessage(this.ctx.id.name, version, MIGRATIONS.length);
      this.#pool.gate.refusal = { message, detail: null, checkedMs: Date.now() };
      await storage.setAlarm(Date.now());
      return;
    }
    if (this.#upgrading) this.#pool.gate.refusal = undefined;
    this.#upgrading = false;
    storage.transactionSync(() => retellLiveRounds(storage.sql));
    await this.#layoutAtStart();
    // A shard of a pool of shards sends held claims on when a summary reply
    // brings work elsewhere (after the migration: its name may come from its own rows).
    if (this.#pool.shards > 1) this.#pool.summary.onChange(() => forwardHeld(this.#pool));
    // Hosted runs' Workflows hear of their live rounds again (src/pool/runs/tell.ts); a failed send is retried after the next change.
    this.ctx.waitUntil(tellRuns(this.#pool).catch(() => {}));
  }

  // -- what wraps a call: each call says so in its own body -------------------

  readonly #load = noLoad();

  /**
   * One call served (src/pool/shards/layout.ts serveCall): counted in GET
   * /metrics, and refused while the pool's layout refuses it, but for the
   * `open` layout calls (docs/sharding.md §11).
   */
  #serve<R>(run: () => R, open = false): R {
    return serveCall(this.#load, open ? null : () => this.#enter(), run);
  }

  readonly #homes = new Homes();

  /**
   * `run` once node `nodeId` is known to live on this shard: in a pool of
   * shards a node-routed call for a node that lives on another shard is
   * refused with that shard, for the Worker to call instead (src/pool/nodes/homes.ts).
   */
  #whenHome<R>(nodeId: unknown, how: NodeCall, run: () => R): R | Promise<Awaited<R>> {
    return whenHome(this.#pool, this.#homes, nodeId, how, run);
  }

  /**
   * `run` for an id this shard holds; for one it does not hold, in a pool
   * that once had one shard, shard 0's answer (src/pool/shards/legacy-ids.ts).
   */
  #heldHereOr<R>(kind: IdKind, id: unknown, run: () => R, atShard0: (shard0: PoolStub) => unknown): R {
    return heldHereOr(this.#legacyHome(), kind, id, run, atShard0);
  }

  #legacy: boolean | undefined;

  #legacyHome(): LegacyHome<PoolStub> | null {
    const { pool, shard } = shardOfName(this.#pool.name);
    if (shard === 0) return null;
    // The layout history grows only at start, before any call: read once.
    this.#legacy ??= hadOneShard(this.#pool.sql);
    if (!this.#legacy) return null;
    const { poolLocations } = this.#pool.settings;
    return { sql: this.#pool.sql, shard0: () => shardStub(this.env, poolLocations, pool, 0) as unknown as PoolStub };
  }

  #enter(): void {
    enterPool(
      this.#pool.gate,
      () => void this.ctx.blockConcurrencyWhile(() => (this.#upgrading ? this.#upgradeSlice() : this.#layoutAtStart())),
    );
  }

  async #layoutAtStart(): Promise<void> {
    const name = this.#pool.knownName;
    // Only an object from before shards, started by its alarm, knows no name:
    // its next start with one checks (until then it is the pool it always was).
    if (name === null) return;
    const { pool, shard } = shardOfName(name);
    const peers = layoutPeers(this.#pool.peers);
    await layoutAtStart(
      this.#pool.sql,
      this.#pool.gate,
      pool,
      shard,
      shardCount(this.#pool.settings.poolShards, pool),
      Date.now(),
      peers,
    );
  }

  // -- between objects (src/pool/contract.ts, src/pool/peer.ts) ---------------

  /**
   * The calls this pool's other objects make on it, and the Worker's
   * credential check: their own RpcTarget, which no route nor node session
   * offers. Called and used in one round trip (`stub.peer().deliver(...)`).
   */
  peer(): PoolPeer {
    const host: PeerHost = {
      pool: this.#pool,
      serve: (run, open) => this.#serve(run, open),
      whenHome: (nodeId, how, run) => this.#whenHome(nodeId, how, run),
    };
    return new PoolPeer(host);
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
  session(proof: CredentialProof) {
    return this.#serve(() =>
      this.#whenHome(proof?.nodeId, PROVING, () => new NodeSession(this, () => credentialValid(this.#pool.sql, proof))),
    );
  }

  // -- enrolment (docs/protocol.md §9 "Enrolled machines", src/pool/enrolment/device-codes.ts) ----

  requestDeviceCode(request: DeviceCodeRequest, from: string | null) {
    return this.#serve(() => enrolment.requestDeviceCode(this.#pool, request, from));
  }

  redeemDeviceCode(deviceCode: string, locale: Locale | null = null) {
    return this.#serve(() => enrolment.redeemDeviceCode(this.#pool, deviceCode, locale));
  }

  decideDeviceCode(
    userCode: string,
    decision: "approved" | "denied",
    operator: string,
    owner: string | null = null,
    pools: string[] | null = null,
  ) {
    return this.#serve(() => enrolment.decideDeviceCode(this.#pool, userCode, decision, operator, owner, pools));
  }

  denyAllDeviceCodes(operator: string) {
    return this.#serve(() => enrolment.denyAllDeviceCodes(this.#pool, operator));
  }

  pendingDeviceCodes() {
    return this.#serve(() => enrolment.pendingDeviceCodes(this.#pool));
  }

  revokeCredential(nodeId: string, operator: string) {
    return this.#serve(() =>
      this.#whenHome(nodeId, ABOUT_NODE, () => enrolment.revokeCredential(this.#pool, nodeId, operator)),
    );
  }

  // -- nodes (src/pool/nodes/calls.ts) ------------------------------------------

  /** `locale`: where the request came from, by which a pool spread over locations homes a new node (src/pool/nodes/homes.ts). */
  register(registration: NodeRegistration, assignedBy: string | null = null, locale: Locale | null = null) {
    return this.#serve(() =>
      this.#whenHome(registration?.node_id, registering(locale), () =>
        nodes.register(this.#pool, registration, assignedBy),
      ),
    );
  }

  heartbeatNode(nodeId: string, heartbeat: NodeHeartbeat, assignedBy: string | null = null) {
    return this.#serve(() =>
      this.#whenHome(nodeId, ABOUT_NODE, () => nodes.heartbeatNode(this.#pool, nodeId, heartbeat, assignedBy)),
    );
  }

  assignNodePools(nodeId: string, pools: string[], operator: string) {
    return this.#serve(() =>
      this.#whenHome(nodeId, ABOUT_NODE, () => nodes.assignNodePools(this.#pool, nodeId, pools, operator)),
    );
  }

  releaseNode(nodeId: string) {
    return this.#serve(() => this.#whenHome(nodeId, ABOUT_NODE, () => nodes.releaseNode(this.#pool, nodeId)));
  }

  listNodes(after: string | null, limit: number, maxBytes?: number) {
    return this.#serve(() => nodes.listNodes(this.#pool, after, limit, maxBytes));
  }

  // -- claims and leases (src/pool/claims/held-claims.ts, src/pool/leases/calls.ts) ----

  claim(nodeId: string, jobId: string | null, waitMs = 0, ids?: ClaimIds): Promise<ClaimResult> {
    return this.#serve(() =>
      this.#whenHome(nodeId, ABOUT_NODE, () => claimOrHold(this.#pool, nodeId, jobId, waitMs, ids)),
    );
  }

  renewLease(leaseId: string, caller: string | null) {
    return this.#serve(() =>
      this.#heldHereOr(
        "lease",
        leaseId,
        () => leases.renewLease(this.#pool, leaseId, caller),
        (shard0) => shard0.renewLease(leaseId, caller),
      ),
    );
  }

  failLease(leaseId: string, reason: string, caller: string | null) {
    return this.#serve(() =>
      this.#heldHereOr(
        "lease",
        leaseId,
        () => leases.failLease(this.#pool, leaseId, reason, caller),
        (shard0) => shard0.failLease(leaseId, reason, caller),
      ),
    );
  }

  completeLease(leaseId: string, outputSha256: string, evidence: unknown, caller: string | null) {
    return this.#serve(() =>
      this.#heldHereOr(
        "lease",
        leaseId,
        () => leases.completeLease(this.#pool, leaseId, outputSha256, evidence, caller),
        (shard0) => shard0.completeLease(leaseId, outputSha256, evidence, caller),
      ),
    );
  }

  // -- jobs, artifacts, checkpoints (src/pool/jobs/calls.ts) --------------------

  /** A slot for a job of `tasks` tasks, and this shard's load, for the job route's two choices (docs/sharding.md §7.4). */
  reserveSlot(tasks: number) {
    return this.#serve(() => jobs.reserveSlot(this.#pool, tasks));
  }

  /** The job route chose the other shard: the slot stops counting now, not when it lapses. */
  releaseSlot(reservation: string) {
    return this.#serve(() => {
      this.#pool.reservations.consume(reservation);
    });
  }

  submitJob(jobId: string, spec: JobSpec, tasks: TaskSpec[], pool: string, place: JobPlace, reservation?: string) {
    return this.#serve(() => {
      if (reservation !== undefined) this.#pool.reservations.consume(reservation);
      return jobs.submitJob(this.#pool, jobId, spec, tasks, pool, place);
    });
  }

  listJobs(pool: string, after: number, limit: number, viewer: Viewer, maxBytes?: number) {
    return this.#serve(() => jobs.listJobs(this.#pool, pool, after, limit, viewer, maxBytes));
  }

  getJob(jobId: string, pool: string, viewer: Viewer) {
    return this.#serve(() =>
      this.#heldHereOr(
        "job",
        jobId,
        () => jobs.getJob(this.#pool, jobId, pool, viewer),
        (shard0) => shard0.getJob(jobId, pool, viewer),
      ),
    );
  }

  jobEvents(jobId: string, after: number, limit: number, viewer: Viewer) {
    return this.#serve(() =>
      this.#heldHereOr(
        "job",
        jobId,
        () => jobs.jobEvents(this.#pool, jobId, after, limit, viewer),
        (shard0) => shard0.jobEvents(jobId, after, limit, viewer),
      ),
    );
  }

  jobTasks(jobId: string, viewer: Viewer) {
    return this.#serve(() =>
      this.#heldHereOr(
        "job",
        jobId,
        () => jobs.jobTasks(this.#pool, jobId, viewer),
        (shard0) => shard0.jobTasks(jobId, viewer),
      ),
    );
  }

  cancelJob(jobId: string, pool: string) {
    return this.#serve(() =>
      this.#heldHereOr(
        "job",
        jobId,
        () => jobs.cancelJob(this.#pool, jobId, pool),
        (shard0) => shard0.cancelJob(jobId, pool),
      ),
    );
  }

  beginUpload(key: string, object: string, writer: Writer) {
    return this.#serve(() =>
      this.#heldHereOr(
        "key",
        key,
        () => jobs.beginUpload(this.#pool, key, object, writer),
        (shard0) => shard0.beginUpload(key, object, writer),
      ),
    );
  }

  abandonUpload(object: string) {
    return this.#serve(() => jobs.abandonUpload(this.#pool, object));
  }

  bindArtifact(key: string, stored: StoredObject, writer: Writer) {
    return this.#serve(() =>
      this.#heldHereOr(
        "key",
        key,
        () => jobs.bindArtifact(this.#pool, key, stored, writer),
        (shard0) => shard0.bindArtifact(key, stored, writer),
      ),
    );
  }

  resolveArtifact(key: string, viewer: Viewer) {
    return this.#serve(() =>
      this.#heldHereOr(
        "key",
        key,
        () => jobs.resolveArtifact(this.#pool, key, viewer),
        (shard0) => shard0.resolveArtifact(key, viewer),
      ),
    );
  }

  listJobArtifacts(jobId: string, after: string | null, limit: number, viewer: Viewer) {
    return this.#serve(() =>
      this.#heldHereOr(
        "job",
        jobId,
        () => jobs.listJobArtifacts(this.#pool, jobId, after, limit, viewer),
        (shard0) => shard0.listJobArtifacts(jobId, after, limit, viewer),
      ),
    );
  }

  registerCheckpointPart(jobId: string, taskId: string, request: RegisterPartRequest, writer: Writer) {
    return this.#serve(() =>
      this.#heldHereOr(
        "job",
        jobId,
        () => jobs.registerCheckpointPart(this.#pool, jobId, taskId, request, writer),
        (shard0) => shard0.registerCheckpointPart(jobId, taskId, request, writer),
      ),
    );
  }

  commitCheckpoint(jobId: string, taskId: string, request: CommitCheckpointRequest, writer: Writer) {
    return this.#serve(() =>
      this.#heldHereOr(
        "job",
        jobId,
        () => jobs.commitCheckpoint(this.#pool, jobId, taskId, request, writer),
        (shard0) => shard0.commitCheckpoint(jobId, taskId, request, writer),
      ),
    );
  }

  latestCheckpoint(jobId: string, taskId: string, worldSize: number | null) {
    return this.#serve(() =>
      this.#heldHereOr(
        "job",
        jobId,
        () => jobs.latestCheckpoint(this.#pool, jobId, taskId, worldSize),
        (shard0) => shard0.latestCheckpoint(jobId, taskId, worldSize),
      ),
    );
  }

  checkpointLostWork(jobId: string, taskId: string, failedAtStep: number) {
    return this.#serve(() =>
      this.#heldHereOr(
        "job",
        jobId,
        () => jobs.checkpointLostWork(this.#pool, jobId, taskId, failedAtStep),
        (shard0) => shard0.checkpointLostWork(jobId, taskId, failedAtStep),
      ),
    );
  }

  verifyCheckpoint(jobId: string, taskId: string, manifestId: string) {
    return this.#serve(() =>
      this.#heldHereOr(
        "job",
        jobId,
        () => jobs.verifyCheckpoint(this.#pool, jobId, taskId, manifestId),
        (shard0) => shard0.verifyCheckpoint(jobId, taskId, manifestId),
      ),
    );
  }

  quarantineCheckpoint(jobId: string, taskId: string, manifestId: string, reason: string) {
    return this.#serve(() =>
      this.#heldHereOr(
        "job",
        jobId,
        () => jobs.quarantineCheckpoint(this.#pool, jobId, taskId, manifestId, reason),
        (shard0) => shard0.quarantineCheckpoint(jobId, taskId, manifestId, reason),
      ),
    );
  }

  // -- hosted runs (docs/protocol.md §17, src/pool/runs/calls.ts) ----------------------

  createRun(runId: string, request: RunRequest, operator: string | null, pool: string) {
    return this.#serve(() => runs.createRun(this.#pool, runId, request, operator, pool));
  }

  getRun(runId: string) {
    return this.#serve(() => runs.getRun(this.#pool, runId));
  }

  listRuns(after: number, limit: number, maxBytes = LIST_PAGE_MAX_BYTES) {
    return this.#serve(() => runs.listRuns(this.#pool, after, limit, Math.min(maxBytes, LIST_PAGE_MAX_BYTES)));
  }

  /** Ends a run as its operator asks or its Workflow concludes; its live round is cancelled unless it succeeded. */
  finishRun(
    runId: string,
    state: Exclude<RunState, "RUNNING">,
    reason: string | null,
    resultUri: string | null = null,
  ) {
    return this.#serve(() => runs.finishRun(this.#pool, runId, state, reason, resultUri));
  }

  // The run's Workflow alone (src/runs/workflow.ts): no node session offers these.

  runToDrive(runId: string) {
    return this.#serve(() => runs.runToDrive(this.#pool, runId));
  }

  submitRound(
    runId: string,
    round: number,
    quorum: number,
    jobId: string,
    spec: JobSpec,
    tasks: TaskSpec[],
    place: JobPlace,
  ) {
    return this.#serve(() => runs.submitRound(this.#pool, runId, round, quorum, jobId, spec, tasks, place));
  }

  roundState(runId: string, round: number) {
    return this.#serve(() => runs.roundState(this.#pool, runId, round));
  }

  recordRound(runId: string, round: number, result: RunRound) {
    return this.#serve(() => runs.recordRound(this.#pool, runId, round, result));
  }

  // -- observability (docs/protocol.md §11) ------------------------------------------------

  /** Every registered node's gate answer for one task: eligible, or the refusing gate. */
  explainPlacement(jobId: string, taskId: string, viewer: Viewer) {
    return this.#serve(() =>
      this.#heldHereOr(
        "job",
        jobId,
        () => {
          const { owners, membership } = this.#pool.settings;
          return placementReport(this.#pool.sql, Date.now(), jobId, taskId, viewer, owners, membership);
        },
        (shard0) => shard0.explainPlacement(jobId, taskId, viewer),
      ),
    );
  }

  /** A sharded pool's report, pass 1 at the job's shard (docs/sharding.md §10): the task's facts, sealed. */
  placementFacts(jobId: string, taskId: string, viewer: Viewer) {
    return this.#serve(() =>
      this.#heldHereOr(
        "job",
        jobId,
        () => placementFacts(this.#pool.sql, jobId, taskId, viewer),
        (shard0) => shard0.placementFacts(jobId, taskId, viewer),
      ),
    );
  }

  /**
   * Pass 2 at every shard: this shard's registered nodes' answers for a task
   * of `payload`, with its shown replicas, and for a pending one (`queued`)
   * this shard's part of its place in the claim order.
   */
  placementNodes(payload: string, shown: ReplicaItem[] | null, queued?: { priority: number; tenant: string }) {
    return this.#serve(() => {
      const { owners, membership } = this.#pool.settings;
      const answers = placementAnswers(this.#pool.sql, Date.now(), payload, shown, owners, membership);
      return queued ? { ...answers, queue: queueElsewhere(this.#pool.sql, queued.priority, queued.tenant) } : answers;
    });
  }

  /** The dashboard's bounded summary of this pool: counts, and at most `limit` of each list. */
  dashboard(pool: string, limit: number, viewer: Viewer) {
    return this.#serve(() =>
      dashboardView(this.#pool.sql, Date.now(), pool, limit, viewer, this.#pool.settings.membership),
    );
  }

  /** GET /nodes/summary: the fleet's GPUs and the demand on them, bounded. */
  fleet(pool: string, limit: number, viewer: Viewer) {
    return this.#serve(() =>
      fleetView(this.#pool.sql, Date.now(), pool, limit, this.#pool.settings.membership, viewer),
    );
  }

  /** Counts for GET /metrics. */
  metrics(viewer: Viewer) {
    return this.#serve(() => {
      const sample = metricsSample(
        this.#pool.sql,
        Date.now(),
        { ...this.#load },
        this.#pool.held.ownSize,
        viewer,
        this.#pool.settings.membership,
      );
      return { ...sample, ...this.#costs(viewer) };
    });
  }

  /**
   * What this object's work has cost (docs/protocol.md §16): an operator's
   * to read, since rows written move with whether a task is being checked.
   */
  #costs(viewer: Viewer) {
    return viewer === null ? { sql: this.#pool.sql.totals(), r2: this.#pool.r2.totals() } : {};
  }

  // A sharded pool's reads of every shard (docs/sharding.md §10): the Worker
  // asks each shard its pending classes, then each shard's nodes for
  // their answers, then each shard for its part judged by all the answers.

  /** The pending classes this shard's stuck tasks and demand judge, by their canonical key. */
  pendingClasses() {
    return this.#serve(() => pendingClasses(this.#pool.sql, STUCK_CLASSES_CHECKED));
  }

  /** What this shard's nodes say of each class: claimable, servable, how many can take it now. */
  nodeAnswers(classes: PendingClass[]) {
    return this.#serve(() => nodeAnswers(this.#pool.sql, Date.now(), this.#pool.settings.membership, classes));
  }

  /** This shard's part of the dashboard, its stuck tasks and demand judged by the pool's node answers. */
  shardDashboard(pool: string, limit: number, viewer: Viewer, answers: NodeAnswers) {
    return this.#serve(() => {
      const { membership } = this.#pool.settings;
      const part = dashboardView(this.#pool.sql, Date.now(), pool, limit, viewer, membership, answers);
      return { ...part, leasesByNode: liveLeasesByNode(this.#pool.sql) };
    });
  }

  /** This shard's part of the fleet, its demand judged by the pool's node answers. */
  shardFleet(pool: string, limit: number, viewer: Viewer, answers: NodeAnswers) {
    return this.#serve(() =>
      fleetView(this.#pool.sql, Date.now(), pool, limit, this.#pool.settings.membership, viewer, answers),
    );
  }

  /** This shard's counts for GET /metrics, its unservable demand judged by the pool's node answers. */
  shardMetrics(viewer: Viewer, answers: NodeAnswers) {
    return this.#serve(() => {
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
    });
  }

  // -- housekeeping (src/pool/alarm/housekeeping.ts) ---------------------------------

  /** Sweeps expired leases, collects, archives and re-arms. Idempotent: alarms are at-least-once. */
  override async alarm(): Promise<void> {
    if (this.#upgrading) await this.ctx.blockConcurrencyWhile(() => this.#upgradeSlice());
    if (this.#upgrading) return;
    return this.#serve(() => alarm(this.#pool));
  }
}

/**
 * The calls an enrolled node's session offers (src/pool/session.ts), each
 * named: the node's own calls and the reads and writes its routes make for
 * it. Never the object's lifecycle nor its peer surface (`peer()`, which
 * the type refuses here): a call not named here is no node's to make,
 * however it is named.
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
  "createRun",
  "getRun",
  "listRuns",
  "finishRun",
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
] as const satisfies readonly Exclude<
  keyof PoolObject,
  "peer" | "session" | "alarm" | "fetch" | "runToDrive" | "submitRound" | "roundState" | "recordRound"
>[];

/** An enrolled node's session: the NODE_CALLS, each re-checking the credential (src/pool/session.ts). */
const NodeSession = sessionClass(PoolObject.prototype, NODE_CALLS);
export type NodeSession = InstanceType<typeof NodeSession>;

/**
 * Shard 0 as a call for an id of the pool's one-shard days reaches it: the
 * same call, by the same name, whose answer is the caller's (typed loosely:
 * a call's own return type cannot depend on itself).
 */
type PoolStub = Record<ByLegacyId, (...args: unknown[]) => Promise<unknown>>;

/** The calls addressed by an id the Worker routes by (a job's, a lease's, an artifact key's). */
type ByLegacyId =
  | "renewLease"
  | "failLease"
  | "completeLease"
  | "getJob"
  | "jobEvents"
  | "jobTasks"
  | "cancelJob"
  | "beginUpload"
  | "bindArtifact"
  | "resolveArtifact"
  | "listJobArtifacts"
  | "registerCheckpointPart"
  | "commitCheckpoint"
  | "latestCheckpoint"
  | "checkpointLostWork"
  | "verifyCheckpoint"
  | "quarantineCheckpoint"
  | "explainPlacement"
  | "placementFacts";
