// The OpenAPI 3.1 description of every route the Worker serves, for
// GET /openapi.json. Every schema is generated from zod — the request models
// and the answers (responses.ts, dashboard.ts) — through zod's own
// `z.toJSONSchema`: its draft 2020-12 output is OpenAPI 3.1's native schema
// dialect, so no converter sits between the schemas and the document, and
// the two never drift apart. Pure: it describes the routes and decides
// nothing; no I/O.

import { z } from "zod";
import {
  ArtifactRecordSchema,
  CheckpointManifestSchema,
  CheckpointPartSchema,
  CheckpointValidationSchema,
  CommitCheckpointRequestSchema,
  QuarantineCheckpointRequestSchema,
  RegisterPartRequestSchema,
} from "./checkpoints";
import { DashboardSummarySchema, StuckTasksSchema } from "./dashboard";
import {
  ApproveRequestSchema,
  DenyRequestSchema,
  DeviceCodeRequestSchema,
  DeviceTokenRequestSchema,
  UserCodeRequestSchema,
} from "./device";
import { EventSchema, EventTypeSchema, JobRecordSchema, JobSpecSchema, JobStateSchema } from "./jobs";
import { MAX_ARTIFACT_KEY_BYTES, POOL_NAME_RE } from "./keys";
import {
  DASHBOARD_LIMIT_DEFAULT,
  DASHBOARD_LIMIT_MAX,
  EVENTS_PAGE_DEFAULT,
  EVENTS_PAGE_MAX,
  LIST_PAGE_DEFAULT,
  LIST_PAGE_MAX,
  LIST_PAGE_MAX_BYTES,
  MAX_JSON_BODY_BYTES,
  MAX_REGISTRATION_BYTES,
} from "./limits";
import {
  GpuInfoSchema,
  NodeCapabilitiesSchema,
  NodeHeartbeatSchema,
  NodePoolsRequestSchema,
  NodeRegistrationSchema,
  NodeStatusSchema,
} from "./nodes";
import { IsoDateTimeSchema, int, SCHEMA_VERSION } from "./primitives";
import {
  AttemptFailedSchema,
  AuthorizationPendingSchema,
  CheckpointRejectedSchema,
  CommitOutcomeSchema,
  CredentialRevokedSchema,
  DemandSchema,
  DeviceCodeSchema,
  EnrolledTokenSchema,
  EnrolmentDecidedSchema,
  EnrolmentsDeniedSchema,
  FleetSummarySchema,
  GpuGroupSchema,
  HTTPValidationErrorSchema,
  InternalErrorSchema,
  JobArtifactSchema,
  JobLogsSchema,
  LostWorkSchema,
  NodePlacementSchema,
  NodePoolsAssignedSchema,
  NodeRegisteredSchema,
  NodeReleasedSchema,
  PartRegisteredSchema,
  PendingEnrolmentSchema,
  PlacementReportSchema,
  RefusalSchema,
  ReplicaReportSchema,
  StatusOkSchema,
  TaskCountsSchema,
  TaskRowSchema,
  ValidationErrorSchema,
} from "./responses";
import {
  ClaimRequestSchema,
  CompleteRequestSchema,
  ExecutionEvidenceSchema,
  FailRequestSchema,
  LeaseSchema,
  TaskStateSchema,
} from "./tasks";

export type SchemaObject = { [keyword: string]: unknown };
export type Reference = { $ref: string };
export type ParameterObject = {
  name: string;
  in: "path" | "query" | "header";
  required?: boolean;
  description: string;
  schema: SchemaObject;
};
export type ResponseObject = {
  description: string;
  headers?: Record<string, { description: string; schema: SchemaObject }>;
  content?: Record<string, { schema: SchemaObject }>;
};
export type Operation = {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  security?: Record<string, string[]>[];
  parameters?: (ParameterObject | Reference)[];
  requestBody?: { required: boolean; content: Record<string, { schema: SchemaObject }> };
  responses: Record<string, ResponseObject | Reference>;
};
export type Method = "get" | "put" | "post" | "delete";
export type OpenApiDocument = {
  openapi: "3.1.0";
  info: { title: string; version: string; description: string };
  tags: { name: string; description: string }[];
  security: Record<string, string[]>[];
  paths: Record<string, Partial<Record<Method, Operation>>>;
  components: {
    schemas: Record<string, SchemaObject>;
    parameters: Record<string, ParameterObject>;
    responses: Record<string, ResponseObject>;
    securitySchemes: Record<string, SchemaObject>;
  };
};

// -- the wire models, as served ------------------------------------------------

/**
 * The wire models by component name. Where a route serves more than its
 * model (a job's task counts, an event's ledger cursor, a node's liveness),
 * the served form extends the model here, so the document says what the
 * bytes hold.
 */
const WIRE = {
  GpuInfo: GpuInfoSchema,
  NodeCapabilities: NodeCapabilitiesSchema,
  NodeRegistration: NodeRegistrationSchema,
  NodeHeartbeat: NodeHeartbeatSchema,
  NodeStatus: NodeStatusSchema,
  DeviceCodeRequest: DeviceCodeRequestSchema,
  DeviceTokenRequest: DeviceTokenRequestSchema,
  UserCodeRequest: UserCodeRequestSchema,
  DenyRequest: DenyRequestSchema,
  ApproveRequest: ApproveRequestSchema,
  NodePoolsRequest: NodePoolsRequestSchema,
  RegisteredNode: NodeRegistrationSchema.extend({
    status: NodeStatusSchema,
    online: z.boolean(),
    last_heartbeat_age_s: z.number().min(0),
    accepted_tasks: int().min(0),
    consecutive_failures: int().min(0),
    held_until: IsoDateTimeSchema.nullable(),
    valid_results: int().min(0),
    invalid_results: int().min(0),
    /** Why the node may no longer run a task alone (SPEC §14), until an operator releases it; null when trusted as any. */
    distrusted: z.string().nullable(),
    owner: z.string().describe("Whose machine it is: replicas of one task run on nodes of distinct owners."),
  }),
  TaskState: TaskStateSchema,
  TaskCounts: TaskCountsSchema,
  ClaimRequest: ClaimRequestSchema,
  Lease: LeaseSchema,
  ExecutionEvidence: ExecutionEvidenceSchema,
  CompleteRequest: CompleteRequestSchema,
  FailRequest: FailRequestSchema,
  JobSpec: JobSpecSchema,
  JobState: JobStateSchema,
  JobRecord: JobRecordSchema.extend({ task_counts: TaskCountsSchema }),
  EventType: EventTypeSchema,
  Event: EventSchema.extend({ seq: int().min(1) }),
  ArtifactRecord: ArtifactRecordSchema,
  CheckpointPart: CheckpointPartSchema,
  CheckpointValidation: CheckpointValidationSchema,
  // The object before its transform: the transform only fills
  // compatible_world_sizes, which the output side marks required below.
  CheckpointManifest: CheckpointManifestSchema.in,
  RegisterPartRequest: RegisterPartRequestSchema,
  CommitCheckpointRequest: CommitCheckpointRequestSchema,
  QuarantineCheckpointRequest: QuarantineCheckpointRequestSchema,
  // What the routes answer beyond the models (responses.ts, dashboard.ts).
  Refusal: RefusalSchema,
  ValidationError: ValidationErrorSchema,
  HTTPValidationError: HTTPValidationErrorSchema,
  CheckpointRejected: CheckpointRejectedSchema,
  InternalError: InternalErrorSchema,
  StatusOk: StatusOkSchema,
  NodeRegistered: NodeRegisteredSchema,
  DeviceCode: DeviceCodeSchema,
  AuthorizationPending: AuthorizationPendingSchema,
  EnrolledToken: EnrolledTokenSchema,
  PendingEnrolment: PendingEnrolmentSchema,
  EnrolmentDecided: EnrolmentDecidedSchema,
  EnrolmentsDenied: EnrolmentsDeniedSchema,
  CredentialRevoked: CredentialRevokedSchema,
  NodePoolsAssigned: NodePoolsAssignedSchema,
  NodeReleased: NodeReleasedSchema,
  CommitOutcome: CommitOutcomeSchema,
  AttemptFailed: AttemptFailedSchema,
  TaskRow: TaskRowSchema,
  JobArtifact: JobArtifactSchema,
  JobLogs: JobLogsSchema,
  PartRegistered: PartRegisteredSchema,
  LostWork: LostWorkSchema,
  NodePlacement: NodePlacementSchema,
  ReplicaReport: ReplicaReportSchema,
  PlacementReport: PlacementReportSchema,
  GpuGroup: GpuGroupSchema,
  Demand: DemandSchema,
  FleetSummary: FleetSummarySchema,
  DashboardSummary: DashboardSummarySchema,
  StuckTasks: StuckTasksSchema,
} satisfies Record<string, z.ZodType>;
type WireName = keyof typeof WIRE;

type Side = "input" | "output";

/** Every wire model as JSON Schema, for one side; `$ref`s read `side:Name` until named. */
function wireSchemas(io: Side): Record<string, SchemaObject> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(WIRE)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, {
    target: "draft-2020-12",
    io,
    unrepresentable: "throw",
    uri: (id) => `${io}:${id}`,
    override: ({ zodSchema, jsonSchema }) => {
      // Responses may gain fields within v1alpha1, as requests may carry
      // unknown ones (SPEC §3): no client should be told to refuse them.
      if (jsonSchema.additionalProperties === false) delete jsonSchema.additionalProperties;
      if (zodSchema === CheckpointManifestSchema.in && io === "output") {
        jsonSchema.required = [...(jsonSchema.required ?? []), "compatible_world_sizes"];
      }
      if (zodSchema === CompleteRequestSchema.shape.evidence) {
        jsonSchema.$ref = `${io}:ExecutionEvidence`;
        jsonSchema.description = "Never a reason to refuse a commit: a block that does not fit is recorded as absent.";
      }
    },
  });
  const out: Record<string, SchemaObject> = {};
  for (const [id, { $schema: _dialect, $id: _id, ...schema }] of Object.entries(schemas)) out[id] = schema;
  return out;
}

function wire(side: Side, name: WireName): Reference {
  return { $ref: `${side}:${name}` };
}
const request = (name: WireName) => wire("input", name);
const served = (name: WireName) => wire("output", name);

const string = { type: "string" };
const count = { type: "integer", minimum: 0 };
const list = (items: SchemaObject) => ({ type: "array", items });

// -- routes ------------------------------------------------------------------------

type Refusals = Partial<
  Record<400 | 401 | 403 | 404 | 409 | 410 | 411 | 413 | 422 | 429 | 503, string | ResponseObject>
>;

type Route = {
  method: Method;
  /** Under `/v1alpha1` (served for the pool `local` and under `/pools/{pool}`), unless `root`. */
  path: string;
  root?: true;
  id: string;
  tag: string;
  summary: string;
  description?: string;
  parameters?: (ParameterObject | Reference)[];
  /** A JSON body (refused with 413/415/422 as every JSON body is), or raw bytes. */
  body?: Reference | "bytes";
  ok: Record<string, ResponseObject>;
  refusals?: Refusals;
};

const jsonBody = (schema: SchemaObject, description: string): ResponseObject => ({
  description,
  content: { "application/json": { schema } },
});
const refusal = (description: string) => jsonBody(served("Refusal"), description);
const validation = (description = "The request does not fit its schema: one `{loc, msg, type}` per problem.") =>
  jsonBody(served("HTTPValidationError"), description);
const parameter = (name: string): Reference => ({ $ref: `#/components/parameters/${name}` });
const query = (name: string, description: string, schema: SchemaObject, required = false): ParameterObject => ({
  name,
  in: "query",
  required,
  description,
  schema,
});

/** What the dashboard and enrolment page routes answer. */
const HTML_PAGE: ResponseObject = {
  description: "A self-contained HTML page.",
  content: { "text/html": { schema: string } },
};
const OPERATOR_ONLY = "When tokens are configured, an operator token is required.";
const NOT_AN_OPERATOR = "A node token: an operator token is required for this route.";
const NO_NODE_IDENTITY = "An operator credential that names no node in X-FlashML-On-Behalf-Of.";
const checkpointsOf = "/jobs/{job_id}/tasks/{task_id}/checkpoints";
const OPEN_POOL = "The coordinator is open (no tokens configured): there is nothing to enrol.";
const MISCONFIGURED = "The coordinator's settings cannot be trusted: it refuses every request.";

// GET /jobs and GET /nodes (SPEC §12): the body is the plain list, a Link header continues it.
const PAGED = `One page of the list: \`limit\` rows, fewer once the body passes ${LIST_PAGE_MAX_BYTES} bytes. When more rows exist, a \`Link: <URL>; rel="next"\` header (RFC 8288) gives the URL of the next page; the last page has none.`;
const pageParameters = [
  query("limit", "Rows per page.", { type: "integer", minimum: 1, maximum: LIST_PAGE_MAX, default: LIST_PAGE_DEFAULT }),
  query(
    "cursor",
    'Where the previous page ended: opaque, taken from its `Link: rel="next"` URL. None for the first page.',
    { type: "string" },
  ),
];
const pageOf = (item: Reference, description: string): ResponseObject => ({
  ...jsonBody(list(item), description),
  headers: {
    Link: {
      description:
        'The next page, `<URL>; rel="next"` (the URL carries `cursor` and `limit`); absent on the last page.',
      schema: string,
    },
  },
});
const badPage = validation(
  `\`limit\` is not an integer in [1, ${LIST_PAGE_MAX}], or \`cursor\` is not one this coordinator handed out.`,
);
const noCheckpointWriter = "The caller holds no live lease on this task.";

const ROUTES: Route[] = [
  {
    method: "get",
    path: "/healthz",
    root: true,
    id: "health",
    tag: "service",
    summary: "Liveness: the Worker serves and its settings are sound",
    ok: { 200: jsonBody(served("StatusOk"), "Serving.") },
  },
  {
    method: "get",
    path: "/openapi.json",
    root: true,
    id: "openApiDocument",
    tag: "service",
    summary: "This document",
    ok: { 200: jsonBody({ type: "object" }, "The OpenAPI 3.1 description of the API.") },
  },
  {
    method: "get",
    path: "/",
    root: true,
    id: "dashboardPage",
    tag: "observability",
    summary: "The dashboard page of the pool `local`",
    ok: { 200: HTML_PAGE },
  },
  {
    method: "get",
    path: "/pools/{pool}/",
    root: true,
    id: "poolDashboardPage",
    tag: "observability",
    summary: "The dashboard page of a pool",
    parameters: [parameter("pool")],
    ok: { 200: HTML_PAGE },
    refusals: { 404: "The pool name is invalid." },
  },
  {
    method: "get",
    path: "/pools/{pool}",
    root: true,
    id: "poolDashboardPageNoSlash",
    tag: "observability",
    summary: "The dashboard page of a pool (without the trailing slash)",
    parameters: [parameter("pool")],
    ok: { 200: HTML_PAGE },
    refusals: { 404: "The pool name is invalid." },
  },
  {
    method: "get",
    path: "/enrol",
    root: true,
    id: "enrolPage",
    tag: "enrolment",
    summary: "The page where an operator approves or denies a machine's code, for the pool `local`",
    description: "`?code=` prefills the code. The page holds no data; the device API it calls needs an operator token.",
    ok: { 200: HTML_PAGE },
  },
  {
    method: "get",
    path: "/pools/{pool}/enrol",
    root: true,
    id: "poolEnrolPage",
    tag: "enrolment",
    summary: "The page where an operator approves or denies a machine's code (`verification_uri`)",
    description: "`?code=` prefills the code. The page holds no data; the device API it calls needs an operator token.",
    parameters: [parameter("pool")],
    ok: { 200: HTML_PAGE },
    refusals: { 404: "The pool name is invalid." },
  },
  {
    method: "post",
    path: "/nodes/register",
    id: "registerNode",
    tag: "nodes",
    summary: "Register a node (or update its registration)",
    description:
      "The URL's pool replaces the body's `pool`; when tokens are configured, the caller's node identity replaces `node_id`.",
    parameters: [parameter("joinCode"), parameter("onBehalfOf")],
    body: request("NodeRegistration"),
    ok: { 200: jsonBody(served("NodeRegistered"), "Registered.") },
    refusals: {
      401: NO_NODE_IDENTITY,
      403: "The join code is missing or wrong (FLASHML_JOIN_CODE is set).",
      413: `The registration, as sent or as stored with its defaults, is larger than ${MAX_REGISTRATION_BYTES} bytes.`,
    },
  },
  {
    method: "post",
    path: "/nodes/{node_id}/heartbeat",
    id: "heartbeatNode",
    tag: "nodes",
    summary: "Say a node is alive, and whether it accepts work",
    parameters: [parameter("onBehalfOf")],
    body: request("NodeHeartbeat"),
    ok: { 200: jsonBody(served("StatusOk"), "Recorded.") },
    refusals: {
      401: NO_NODE_IDENTITY,
      403: "A node may only heartbeat itself.",
      404: "Unknown node: register first.",
      413: `The \`pools\` would make the node's stored registration larger than ${MAX_REGISTRATION_BYTES} bytes; nothing is recorded.`,
    },
  },
  {
    method: "post",
    path: "/nodes/{node_id}/release",
    id: "releaseNode",
    tag: "nodes",
    summary: "Let a held-back node claim again before its back-off ends",
    description: `A node whose last attempts all failed is held back from claiming (SPEC §13); this clears its run of failures. ${OPERATOR_ONLY}`,
    ok: { 200: jsonBody(served("NodeReleased"), "Released: the node's next claim is served.") },
    refusals: { 403: NOT_AN_OPERATOR, 404: "Unknown node." },
  },
  {
    method: "put",
    path: "/nodes/{node_id}/pools",
    id: "assignNodePools",
    tag: "nodes",
    summary: "Assign a node's team pools",
    description: `When tokens are enforced, a node is a member of the team pools an operator assigned (here, at the approval of its enrolment, or by registering or heartbeating for it with X-FlashML-On-Behalf-Of), never of those it reports for itself (SPEC §9, gate 6). The list replaces any earlier assignment (empty: no team pool) and survives the node's registrations and heartbeats; a claim the node holds open tries again at once. The placement report and the dashboard name who assigned it. ${OPERATOR_ONLY}`,
    body: request("NodePoolsRequest"),
    ok: { 200: jsonBody(served("NodePoolsAssigned"), "Assigned.") },
    refusals: {
      400: "The coordinator is open: the pools a node reports make it a member, so there is nothing to assign.",
      403: NOT_AN_OPERATOR,
      404: "Unknown node: neither registered nor enrolled.",
      422: validation("`pools` is not a list of 1–128-character names, or holds more than 64."),
    },
  },
  {
    method: "delete",
    path: "/nodes/{node_id}/credential",
    id: "revokeCredential",
    tag: "enrolment",
    summary: "Revoke an enrolled node's credential",
    description: `The node's next request is a 401 (SPEC §9); a claim it holds open is answered 204 at once, and its live leases end at once (requeued as worker losses). ${OPERATOR_ONLY}`,
    ok: { 200: jsonBody(served("CredentialRevoked"), "Revoked.") },
    refusals: { 400: OPEN_POOL, 403: NOT_AN_OPERATOR, 404: "The node has no enrolled credential." },
  },
  {
    method: "post",
    path: "/device/code",
    id: "requestDeviceCode",
    tag: "enrolment",
    summary: "A machine asks to join: a short code for an operator to approve (RFC 8628)",
    description:
      "No credential. The device code is the machine's secret; the user code is what a person types on `verification_uri`. Codes expire after 15 minutes. A pool holds at most 100 pending codes, and at most 5 from one address (an IPv6 address counts by its /64).",
    body: request("DeviceCodeRequest"),
    ok: { 200: jsonBody(served("DeviceCode"), "The codes, the page to approve them on, and how often to poll.") },
    refusals: {
      400: OPEN_POOL,
      429: "Too many codes are waiting for an operator, in the pool or from this address (Retry-After: 60).",
    },
  },
  {
    method: "post",
    path: "/device/token",
    id: "redeemDeviceCode",
    tag: "enrolment",
    summary: "Poll for the credential of an approved code",
    description:
      "No credential. 200 exactly once after approval; every other code (unknown, waiting, denied, expired, redeemed) gets the same 400 `authorization_pending`.",
    body: request("DeviceTokenRequest"),
    ok: { 200: jsonBody(served("EnrolledToken"), "The node's token: send it as `Authorization: Bearer`.") },
    refusals: {
      400: jsonBody(
        { anyOf: [served("AuthorizationPending"), served("Refusal")] },
        "`authorization_pending`: poll again after `interval` seconds. Or `{detail}`: the coordinator is open.",
      ),
    },
  },
  {
    method: "get",
    path: "/device/pending",
    id: "pendingDeviceCodes",
    tag: "enrolment",
    summary: "The codes waiting for an operator",
    description: OPERATOR_ONLY,
    ok: { 200: jsonBody(list(served("PendingEnrolment")), "Oldest first.") },
    refusals: { 400: OPEN_POOL, 403: NOT_AN_OPERATOR },
  },
  {
    method: "post",
    path: "/device/approve",
    id: "approveDeviceCode",
    tag: "enrolment",
    summary: "Approve a pending code: its machine may redeem it for a node credential",
    description: `${OPERATOR_ONLY} \`owner\` (optional, 1–128 characters) names whose machine it is: replicas of one task run on nodes of distinct owners; absent, the machine is its own owner. An empty or longer owner is a 422. \`pools\` (optional, at most 64 names of 1–128 characters) are the team pools the machine is assigned when it redeems the code, by the approving operator (SPEC §9); absent, none are named and an earlier assignment stands.`,
    body: request("ApproveRequest"),
    ok: { 200: jsonBody(served("EnrolmentDecided"), "Approved.") },
    refusals: {
      400: OPEN_POOL,
      403: NOT_AN_OPERATOR,
      404: "No pending code with this user code.",
      422: validation(
        "`owner` is empty or longer than 128 characters, or `pools` is not a list of 1–128-character names.",
      ),
    },
  },
  {
    method: "post",
    path: "/device/deny",
    id: "denyDeviceCode",
    tag: "enrolment",
    summary: "Deny a pending code, or every pending code at once: it never yields a credential",
    description: `Exactly one of \`user_code\` or \`"all": true\` (anything else is a 422). \`{"all": true}\` denies every pending code at once, for a pool flooded with requests. ${OPERATOR_ONLY}`,
    body: request("DenyRequest"),
    ok: {
      200: jsonBody(
        { anyOf: [served("EnrolmentDecided"), served("EnrolmentsDenied")] },
        "Denied: the code's node, or how many codes `all` denied (0 when none was pending).",
      ),
    },
    refusals: { 400: OPEN_POOL, 403: NOT_AN_OPERATOR, 404: "No pending code with this user code." },
  },
  {
    method: "get",
    path: "/nodes",
    id: "listNodes",
    tag: "nodes",
    summary: "The pool's nodes, with liveness and accepted-task counts",
    description: PAGED,
    parameters: pageParameters,
    ok: { 200: pageOf(served("RegisteredNode"), "A page of the registered nodes, sorted by node_id.") },
    refusals: { 422: badPage },
  },
  {
    method: "get",
    path: "/nodes/summary",
    id: "fleetSummary",
    tag: "nodes",
    summary: "The fleet's GPUs by model, memory and compute capability, and the demand on them",
    description:
      "Beside `GET /nodes`, whose body stays the plain list: the registered nodes' GPUs grouped (at most `limit` groups, most GPUs first) and the pending requirement classes with who could take them, flagging demand no registered node can serve. The dashboard summary carries the same two fields.",
    parameters: [
      query("limit", "GPU groups at most.", {
        type: "integer",
        minimum: 1,
        maximum: DASHBOARD_LIMIT_MAX,
        default: DASHBOARD_LIMIT_DEFAULT,
      }),
    ],
    ok: { 200: jsonBody(served("FleetSummary"), "The GPU groups and the demand.") },
    refusals: { 422: validation(`\`limit\` is not an integer in [1, ${DASHBOARD_LIMIT_MAX}].`) },
  },
  {
    method: "post",
    path: "/leases/claim",
    id: "claimLease",
    tag: "leases",
    summary: "Claim a lease on the next task this node may take",
    description:
      "200 with a Lease, or 204 when nothing is claimable for this node. With nothing to take the claim is held (long-poll, FLASHML_CLAIM_WAIT_SECONDS, 12.5 s by default, at most 13 s) and answered the moment a task this node may take is queued; 204 when the hold ends.",
    parameters: [parameter("onBehalfOf")],
    body: request("ClaimRequest"),
    ok: {
      200: jsonBody(served("Lease"), "A new lease: run the task, heartbeat the attempt, then complete or fail it."),
      204: { description: "Nothing claimable for this node now; an empty body." },
    },
    refusals: { 401: NO_NODE_IDENTITY, 403: "Unregistered node: register first." },
  },
  {
    method: "post",
    path: "/attempts/{lease_id}/heartbeat",
    id: "renewLease",
    tag: "attempts",
    summary: "Renew a live lease",
    parameters: [parameter("onBehalfOf")],
    ok: { 200: jsonBody(served("Lease"), "The renewed lease, with its new deadline.") },
    refusals: {
      401: NO_NODE_IDENTITY,
      403: "The lease was not issued to the caller (also for an id never issued).",
      410: "The lease is not live (expired, superseded, cancelled or unknown): stop working on it.",
    },
  },
  {
    method: "post",
    path: "/attempts/{lease_id}/complete",
    id: "completeAttempt",
    tag: "attempts",
    summary: "Commit an attempt's output by its sha256",
    description:
      "The output at the task's commit key must exist with this sha256. Exactly one commit per task is ever accepted; every other is answered `accepted: false`.",
    parameters: [parameter("onBehalfOf")],
    body: request("CompleteRequest"),
    ok: {
      200: jsonBody(served("CommitOutcome"), "Whether the commit was accepted (`detail` when validation failed)."),
    },
    refusals: {
      401: NO_NODE_IDENTITY,
      403: "The lease was not issued to the caller.",
      404: "Unknown lease.",
    },
  },
  {
    method: "post",
    path: "/attempts/{lease_id}/fail",
    id: "failAttempt",
    tag: "attempts",
    summary: "Give up an attempt: the task is requeued while attempts remain",
    parameters: [parameter("onBehalfOf")],
    body: request("FailRequest"),
    ok: { 200: jsonBody(served("AttemptFailed"), "The attempt failed; the task was requeued or exhausted.") },
    refusals: {
      401: NO_NODE_IDENTITY,
      403: "The lease was not issued to the caller.",
      410: "The lease is not live.",
    },
  },
  {
    method: "put",
    path: "/artifacts/{key}",
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
  },
  {
    method: "get",
    path: "/artifacts/{key}",
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
  },
  {
    method: "post",
    path: `${checkpointsOf}/parts`,
    id: "registerCheckpointPart",
    tag: "checkpoints",
    summary: "Register one uploaded part of a checkpoint",
    parameters: [parameter("onBehalfOf")],
    body: request("RegisterPartRequest"),
    ok: { 200: jsonBody(served("PartRegistered"), "Registered (a re-registered key replaces the previous one).") },
    refusals: { 403: noCheckpointWriter, 404: "Unknown task." },
  },
  {
    method: "post",
    path: `${checkpointsOf}/commit`,
    id: "commitCheckpoint",
    tag: "checkpoints",
    summary: "Commit a checkpoint manifest over registered parts",
    parameters: [parameter("onBehalfOf")],
    body: request("CommitCheckpointRequest"),
    ok: { 200: jsonBody(served("CheckpointManifest"), "The committed manifest.") },
    refusals: {
      403: noCheckpointWriter,
      404: "Unknown task.",
      409: jsonBody(
        served("CheckpointRejected"),
        "Refused, with every problem: no parts, a part never registered, a hash different from the registered one.",
      ),
    },
  },
  {
    method: "get",
    path: `${checkpointsOf}/latest`,
    id: "latestCheckpoint",
    tag: "checkpoints",
    summary: "The newest valid checkpoint of a task",
    parameters: [
      query("world_size", "Only manifests compatible with this world size.", { type: "integer", minimum: 1 }),
    ],
    ok: { 200: jsonBody(served("CheckpointManifest"), "The newest valid manifest.") },
    refusals: { 404: "Unknown task, or no valid checkpoint.", 422: validation("`world_size` is not an integer ≥ 1.") },
  },
  {
    method: "get",
    path: `${checkpointsOf}/lost-work`,
    id: "checkpointLostWork",
    tag: "checkpoints",
    summary: "How many steps a failure at a step loses, given the latest checkpoint",
    parameters: [query("failed_at_step", "The step the attempt failed at.", { type: "integer", minimum: 0 }, true)],
    ok: { 200: jsonBody(served("LostWork"), "Steps lost, or both null when there is no checkpoint.") },
    refusals: { 404: "Unknown task.", 422: validation("`failed_at_step` is missing or not an integer ≥ 0.") },
  },
  {
    method: "post",
    path: `${checkpointsOf}/{manifest_id}/verify`,
    id: "verifyCheckpoint",
    tag: "checkpoints",
    summary: "Mark a checkpoint restore-verified",
    description: OPERATOR_ONLY,
    ok: { 200: jsonBody(served("CheckpointManifest"), "The manifest, restore_verified.") },
    refusals: {
      403: NOT_AN_OPERATOR,
      404: "Unknown task or manifest.",
      409: "The manifest is quarantined: it can never be restore-verified.",
    },
  },
  {
    method: "post",
    path: `${checkpointsOf}/{manifest_id}/quarantine`,
    id: "quarantineCheckpoint",
    tag: "checkpoints",
    summary: "Quarantine a checkpoint: it is never restored",
    description: OPERATOR_ONLY,
    body: request("QuarantineCheckpointRequest"),
    ok: { 200: jsonBody(served("CheckpointManifest"), "The manifest, invalid.") },
    refusals: { 403: NOT_AN_OPERATOR, 404: "Unknown task or manifest." },
  },
  {
    method: "get",
    path: "/jobs/{job_id}/tasks/{task_id}/placement",
    id: "explainPlacement",
    tag: "observability",
    summary: "Why a task is (not) running: every node's gate answer",
    ok: { 200: jsonBody(served("PlacementReport"), "Every registered node, eligible or refused by a gate.") },
    refusals: { 404: "Unknown job, or unknown task in the job." },
  },
  {
    method: "get",
    path: "/dashboard",
    id: "dashboardSummary",
    tag: "observability",
    summary: "The pool's bounded summary the dashboard page polls",
    parameters: [
      query("limit", "Entries per list.", {
        type: "integer",
        minimum: 1,
        maximum: DASHBOARD_LIMIT_MAX,
        default: DASHBOARD_LIMIT_DEFAULT,
      }),
    ],
    ok: { 200: jsonBody(served("DashboardSummary"), "Counts, and at most `limit` entries of each list.") },
    refusals: { 422: validation(`\`limit\` is not an integer in [1, ${DASHBOARD_LIMIT_MAX}].`) },
  },
  {
    method: "get",
    path: "/metrics",
    id: "metrics",
    tag: "observability",
    summary: "The pool's counters for Prometheus",
    ok: {
      200: {
        description: "The Prometheus text exposition format, version 0.0.4.",
        content: { "text/plain": { schema: string } },
      },
    },
  },
  {
    method: "post",
    path: "/jobs",
    id: "submitJob",
    tag: "jobs",
    summary: "Submit a job: it expands into tasks, all queued or none",
    description: `Only \`spec.execution.backend: leases\` is served. ${OPERATOR_ONLY}`,
    body: request("JobSpec"),
    ok: { 201: jsonBody(served("JobRecord"), "Accepted: every task is queued.") },
    refusals: {
      403: NOT_AN_OPERATOR,
      422: jsonBody(
        { anyOf: [served("HTTPValidationError"), served("Refusal")] },
        "The spec does not fit its schema or names another backend (a `{loc, msg, type}` list), or cannot be expanded into tasks (one message listing every problem).",
      ),
      503: "Every fresh job id tried was already used in the pool: nothing was queued, submit again.",
    },
  },
  {
    method: "get",
    path: "/jobs",
    id: "listJobs",
    tag: "jobs",
    summary: "The pool's jobs",
    description: PAGED,
    parameters: pageParameters,
    ok: { 200: pageOf(served("JobRecord"), "A page of the jobs, oldest first.") },
    refusals: { 422: badPage },
  },
  {
    method: "get",
    path: "/jobs/{job_id}",
    id: "getJob",
    tag: "jobs",
    summary: "One job, its state derived from its tasks",
    ok: { 200: jsonBody(served("JobRecord"), "The job.") },
    refusals: { 404: "Unknown job." },
  },
  {
    method: "get",
    path: "/jobs/{job_id}/events",
    id: "listJobEvents",
    tag: "jobs",
    summary: "A job's event ledger, in order, paged by each event's `seq`",
    description:
      "With neither `after` nor `limit`, the whole ledger as one JSON array, streamed (as the reference CLI reads it). With either, one page: `after` defaults to 0 and `limit` to " +
      `${EVENTS_PAGE_DEFAULT}; the next page is \`after\` = the last event's \`seq\`.`,
    parameters: [
      query("after", "Only events with a greater `seq`. Given alone, pages by the default `limit`.", {
        type: "integer",
        minimum: 0,
        default: 0,
      }),
      query(
        "limit",
        `Events per page: ${EVENTS_PAGE_DEFAULT} when only \`after\` is given; every event when neither is.`,
        { type: "integer", minimum: 1, maximum: EVENTS_PAGE_MAX },
      ),
    ],
    ok: { 200: jsonBody(list(served("Event")), "The page of events, or with no query every event.") },
    refusals: {
      404: "Unknown job.",
      422: validation(`\`after\` or \`limit\` is not an integer in range (limit ≤ ${EVENTS_PAGE_MAX}).`),
    },
  },
  {
    method: "get",
    path: "/jobs/{job_id}/tasks",
    id: "listJobTasks",
    tag: "jobs",
    summary: "A job's tasks: state, attempts, node and live deadline",
    ok: { 200: jsonBody(list(served("TaskRow")), "One row per task, sorted by task_id.") },
    refusals: { 404: "Unknown job." },
  },
  {
    method: "post",
    path: "/jobs/{job_id}/cancel",
    id: "cancelJob",
    tag: "jobs",
    summary: "Cancel a job (idempotent): its live leases die",
    description: OPERATOR_ONLY,
    ok: { 200: jsonBody(served("JobRecord"), "The job, cancelled.") },
    refusals: { 403: NOT_AN_OPERATOR, 404: "Unknown job." },
  },
  {
    method: "get",
    path: "/jobs/{job_id}/logs",
    id: "getJobLogs",
    tag: "jobs",
    summary: "A job's backend log (always empty: lease jobs have none)",
    ok: { 200: jsonBody(served("JobLogs"), "The log.") },
    refusals: { 404: "Unknown job." },
  },
  {
    method: "get",
    path: "/jobs/{job_id}/artifacts",
    id: "listJobArtifacts",
    tag: "jobs",
    summary: "The artifacts under `jobs/{job_id}/`",
    description: `${PAGED} To a node, another replica's outputs before the task's verdict are left out (a page may then hold fewer than \`limit\`).`,
    parameters: pageParameters,
    ok: { 200: pageOf(served("JobArtifact"), "A page of the artifacts, sorted by key; empty for an unknown job.") },
    refusals: { 422: badPage },
  },
];

const PATH_PARAMETERS: Record<string, string> = {
  node_id: "The node.",
  lease_id: "The lease (`ls-` and 12 lowercase hex digits).",
  job_id: "The job.",
  task_id: "The task.",
  manifest_id: "The checkpoint manifest (`ck-` and 12 lowercase hex digits).",
  key: `The artifact key: a relative path, '/' sent as is or percent-encoded; at most ${MAX_ARTIFACT_KEY_BYTES} bytes, no '.', '..' or empty segment, no backslash or control character.`,
};

const JSON_BODY_REFUSALS = {
  400: "The request body could not be read.",
  413: `The JSON body is larger than ${MAX_JSON_BODY_BYTES} bytes.`,
  415: "The content type is not JSON.",
};

/** Adds a refusal for `status`, or adds its cause to the one already there. */
function addRefusal(responses: Operation["responses"], status: number, description: string): void {
  const existing = responses[status];
  responses[status] =
    existing === undefined
      ? refusal(description)
      : "$ref" in existing
        ? existing
        : { ...existing, description: `${existing.description} ${description}` };
}

/** The operation for `route`; `pooled` for its `/pools/{pool}/v1alpha1` form. */
function operation(route: Route, pooled: boolean): Operation {
  const responses: Operation["responses"] = { ...route.ok };
  for (const [status, answer] of Object.entries(route.refusals ?? {})) {
    responses[status] = typeof answer === "string" ? refusal(answer) : answer;
  }
  if (route.body !== undefined && route.body !== "bytes") {
    for (const [status, description] of Object.entries(JSON_BODY_REFUSALS)) addRefusal(responses, +status, description);
    responses[422] ??= validation();
  }
  if (!route.root) {
    addRefusal(responses, 400, "An operator sent more than one X-FlashML-On-Behalf-Of value.");
    addRefusal(
      responses,
      401,
      "Tokens are configured and no valid token was sent (as Bearer, or as HTTP Basic with its name as the user name).",
    );
    addRefusal(responses, 403, "An operator sent an empty X-FlashML-On-Behalf-Of.");
  }
  if (pooled) addRefusal(responses, 404, "The pool name is invalid.");
  responses[500] = { $ref: "#/components/responses/InternalError" };
  if (responses[503] === undefined) responses[503] = { $ref: "#/components/responses/Misconfigured" };
  else addRefusal(responses, 503, `Or, for every route: ${MISCONFIGURED.toLowerCase()}`);

  const pathNames = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!).filter((name) => name !== "pool");
  const parameters: (ParameterObject | Reference)[] = [
    ...(pooled ? [parameter("pool")] : []),
    ...pathNames.map((name) => ({
      name,
      in: "path" as const,
      required: true,
      description: PATH_PARAMETERS[name] ?? name,
      schema: string,
    })),
    ...(route.parameters ?? []),
  ];
  const content: Record<string, { schema: SchemaObject }> | undefined =
    route.body === "bytes"
      ? { "application/octet-stream": { schema: { type: "string", format: "binary" } } }
      : route.body && { "application/json": { schema: route.body } };
  return {
    operationId: pooled ? `${route.id}InPool` : route.id,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: [route.tag],
    ...(route.root ? { security: [] } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(content ? { requestBody: { required: true, content } } : {}),
    responses: Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b))),
  };
}

/** The answers every route may give, referenced by name. */
const RESPONSES = {
  InternalError: jsonBody(served("InternalError"), "Unexpected: nothing internal is shown; the request id is logged."),
  Misconfigured: refusal(MISCONFIGURED),
};

// -- the document ---------------------------------------------------------------------

const SIDE_REF = /^(input|output):(\w+)$/;

/** A deep copy of `value` with every `$ref` passed through `rename`. */
function mapRefs<T>(value: T, rename: (ref: string) => string): T {
  if (Array.isArray(value)) return value.map((item) => mapRefs(item, rename)) as T;
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, k === "$ref" && typeof v === "string" ? rename(v) : mapRefs(v, rename)]),
  ) as T;
}

function sideRefs(value: unknown): [Side, string][] {
  const found: [Side, string][] = [];
  mapRefs(value, (ref) => {
    const match = SIDE_REF.exec(ref);
    if (match) found.push([match[1] as Side, match[2]!]);
    return ref;
  });
  return found;
}

/**
 * The OpenAPI 3.1 document of the API. Request bodies are the input side of
 * their schemas (defaults optional), responses the output side (defaults
 * filled). A model used on both sides whose two forms differ is split into
 * `Name-Input` and `Name-Output`, as FastAPI names them.
 */
export function openApiDocument(): OpenApiDocument {
  const paths: OpenApiDocument["paths"] = {};
  for (const route of ROUTES) {
    const forms: [string, boolean][] = route.root
      ? [[route.path, false]]
      : [
          [`/v1alpha1${route.path}`, false],
          [`/pools/{pool}/v1alpha1${route.path}`, true],
        ];
    for (const [path, pooled] of forms) {
      const item = paths[path] ?? {};
      item[route.method] = operation(route, pooled);
      paths[path] = item;
    }
  }

  const generated: Record<Side, Record<string, SchemaObject>> = {
    input: wireSchemas("input"),
    output: wireSchemas("output"),
  };
  const schemaOf = (side: Side, id: string): SchemaObject => {
    const schema = generated[side][id];
    if (!schema) throw new Error(`no wire model ${id}`);
    return schema;
  };

  // Which models each side uses: the routes' refs, and theirs.
  const used: Record<Side, Set<string>> = { input: new Set(), output: new Set() };
  const pending = sideRefs([paths, RESPONSES]);
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [side, id] = next;
    if (used[side].has(id)) continue;
    used[side].add(id);
    pending.push(...sideRefs(schemaOf(side, id)));
  }

  // A model differs between sides if its own schema does or a model it refers to does.
  const differs = new Map<string, boolean>();
  const differ = (id: string): boolean => {
    const known = differs.get(id);
    if (known !== undefined) return known;
    differs.set(id, false);
    const [input, output] = [schemaOf("input", id), schemaOf("output", id)];
    const bare = (schema: SchemaObject) => JSON.stringify(mapRefs(schema, (ref) => ref.replace(SIDE_REF, "$2")));
    const result =
      bare(input) !== bare(output) || [...sideRefs(input), ...sideRefs(output)].some(([, other]) => differ(other));
    differs.set(id, result);
    return result;
  };
  const nameOf = (side: Side, id: string): string =>
    used.input.has(id) && used.output.has(id) && differ(id) ? `${id}-${side === "input" ? "Input" : "Output"}` : id;
  const rename = (ref: string): string => {
    const match = SIDE_REF.exec(ref);
    return match ? `#/components/schemas/${nameOf(match[1] as Side, match[2]!)}` : ref;
  };

  const schemas: Record<string, SchemaObject> = {};
  for (const side of ["input", "output"] as const) {
    for (const id of used[side]) schemas[nameOf(side, id)] = mapRefs(schemaOf(side, id), rename);
  }

  return {
    openapi: "3.1.0",
    info: {
      title: "flashedge",
      version: SCHEMA_VERSION,
      description:
        'The flashruntime v1alpha1 lease coordinator. Every pool route is served as `/v1alpha1/...` (the pool `local`) and as `/pools/{pool}/v1alpha1/...`. Errors are `{"detail": ...}`: a sentence for a refusal, a `{loc, msg, type}` list for a request that does not fit its schema (422). A path served under other methods answers 405 with an Allow header.',
    },
    tags: [
      { name: "nodes", description: "Registration and liveness of worker machines." },
      { name: "enrolment", description: "Machines joining with a code (RFC 8628 device authorization)." },
      { name: "leases", description: "Claiming work." },
      { name: "attempts", description: "Renewing, committing and failing a lease." },
      { name: "artifacts", description: "Task inputs and outputs, by key." },
      { name: "checkpoints", description: "A task's checkpoint catalog." },
      { name: "jobs", description: "Submission, state, events and outputs of jobs." },
      { name: "observability", description: "Dashboard, metrics and placement explanations." },
      { name: "service", description: "The Worker itself." },
    ],
    // Open mode (no tokens configured) needs no credential; enforcing mode a
    // token, as Bearer or as HTTP Basic's password (a URL's credentials).
    security: [{}, { bearer: [] }, { basic: [] }],
    paths: mapRefs(paths, rename),
    components: {
      schemas: Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b))),
      parameters: {
        pool: {
          name: "pool",
          in: "path",
          required: true,
          description: "The pool: lowercase letters, digits and '-', at most 63.",
          schema: { type: "string", pattern: POOL_NAME_RE.source },
        },
        onBehalfOf: {
          name: "X-FlashML-On-Behalf-Of",
          in: "header",
          description:
            "An operator acting as a node names it here (exactly one value). Ignored for every other caller.",
          schema: string,
        },
        joinCode: {
          name: "X-FlashML-Join-Code",
          in: "header",
          description: "The pool's join code, required when FLASHML_JOIN_CODE is set.",
          schema: string,
        },
      },
      responses: mapRefs(RESPONSES, rename),
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          description: "A node or operator token. Needed only when tokens are configured.",
        },
        basic: {
          type: "http",
          scheme: "basic",
          description:
            "The same token as the password, with its name as the user name: the operator's name, or the node id (SPEC §9). What clients send for a URL with credentials (`https://ops:TOKEN@host/pools/p`).",
        },
      },
    },
  };
}
