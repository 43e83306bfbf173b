// The OpenAPI 3.1 document of the Worker, for GET /openapi.json: the routes
// describe themselves where they are served (openapi-operations.ts), and
// this builds the rest around them. Every schema is generated from zod — the request models
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
import { POOL_NAME_RE } from "./keys";
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
import { RunRecordSchema, RunRequestSchema } from "./runs";
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
    /** Why the node may no longer run a task alone (docs/protocol.md §14), until an operator releases it; null when trusted as any. */
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
  RunRequest: RunRequestSchema,
  RunRecord: RunRecordSchema,
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
      // unknown ones (docs/protocol.md §3): no client should be told to refuse them.
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
/** A request body: the input side of its model (defaults optional). */
export const request = (name: WireName) => wire("input", name);
/** An answer: the output side of its model (defaults filled). */
export const served = (name: WireName) => wire("output", name);

/** The answers every route may give, referenced by name. */
const RESPONSES: Record<string, ResponseObject> = {
  InternalError: {
    description: "Unexpected: nothing internal is shown; the request id is logged.",
    content: { "application/json": { schema: served("InternalError") } },
  },
  Misconfigured: {
    description:
      "The coordinator refuses for now, and `detail` says why: its settings cannot be trusted, or the pool refuses " +
      "every call, laid out over work it cannot reach (docs/sharding.md §11) or while its schema is upgraded a step " +
      "at a time (docs/operations.md, Upgrading; `Retry-After` then says when to ask again).",
    content: { "application/json": { schema: served("Refusal") } },
  },
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
 * The OpenAPI 3.1 document of the API, around `paths` as the routes
 * describe themselves (src/routes/openapi.ts gathers them from the app,
 * their wire models referenced as `input:Name` or `output:Name`). Request bodies are the input side of
 * their schemas (defaults optional), responses the output side (defaults
 * filled). A model used on both sides whose two forms differ is split into
 * `Name-Input` and `Name-Output`, as FastAPI names them.
 */
export function openApiDocument(paths: OpenApiDocument["paths"]): OpenApiDocument {
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
      {
        name: "runs",
        description: "Hosted runs: federated averaging and K-means driven by the coordinator, one job per round.",
      },
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
          schema: { type: "string" },
        },
        joinCode: {
          name: "X-FlashML-Join-Code",
          in: "header",
          description: "The pool's join code, required when FLASHML_JOIN_CODE is set.",
          schema: { type: "string" },
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
            "The same token as the password, with its name as the user name: the operator's name, or the node id (docs/protocol.md §9). What clients send for a URL with credentials (`https://ops:TOKEN@host/pools/p`).",
        },
      },
    },
  };
}
