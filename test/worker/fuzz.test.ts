// Hostile input (SPEC §10, issue 5). A seeded generator sends thousands of
// malformed requests across every route through the Worker's fetch handler;
// each
// must be a 4xx with a JSON `detail`, none a 5xx, and the pool — every row
// of every SQLite table and every R2 object under its prefix — must be
// exactly as before. Then tables of the specific cases with exact statuses.
//
// The generator never makes a valid request by accident: every request
// carries at least one defect the spec refuses (malformed or non-object JSON,
// a wrong type in a field, a wrong content type, a body past 1 MiB, a bad
// pool name, a wrong method, an invalid artifact key, a bad query parameter,
// an unknown id). Body-less routes that change state for a real id (attempt
// heartbeat, cancel, verify) only ever get ids that are unknown or no longer
// live. So no column is excluded from the state comparison.

import { createExecutionContext, runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import app from "../../src/index";
import { MAX_JSON_DEPTH } from "../../src/protocol/json";
import { DASHBOARD_LIMIT_MAX, MAX_JSON_BODY_BYTES } from "../../src/protocol/limits";
import type { Lease } from "../../src/protocol/tasks";
import { call, claim, freshPool, json, register, registration, sha256, storedObjects, stub, upload } from "./helpers";

// ---------------------------------------------------------------------------
// Deterministic randomness

const SEED = 0x5eed_f1a5;
const REQUESTS = 4000;
// Most requests are handed to the Worker's default export (the Hono app)
// in-process, with the test environment's bindings: the same middleware,
// routing, parsing, Durable Object and R2. Every RUNTIME_SAMPLE-th goes
// through the runtime's own fetch path (`exports.default.fetch`) instead, as
// does every table case below. Not all of them: vitest-pool-workers 0.15.1
// wraps the entrypoint prototype in one more Proxy on every such call
// (cloudflare/workers-sdk#15092, fixed by #15106), so each call is slower
// than the last and a few thousand overflow the stack — in this file and in
// every file after it in the isolate.
const CHUNK = 24;
const RUNTIME_SAMPLE = 25;

class Rng {
  constructor(private state: number) {}
  /** mulberry32: small, fast, and the same sequence on every run. */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) | 0;
    let t = Math.imul(this.state ^ (this.state >>> 15), 1 | this.state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

// ---------------------------------------------------------------------------
// JSON text with values JSON.stringify cannot write (-0, 2**53+1, 1e400, NaN)

class Raw {
  constructor(readonly text: string) {}
}
const raw = (text: string) => new Raw(text);

type Body = { [key: string]: unknown };

/** JSON text of a value; a Raw is written verbatim. Iterative callers keep nesting shallow. */
function encode(value: unknown): string {
  if (value instanceof Raw) return value.text;
  if (Array.isArray(value)) return `[${value.map(encode).join(",")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}:${encode(v)}`)
      .join(",")}}`;
  }
  return JSON.stringify(value);
}

/** Sets an own property, even `__proto__`. */
function setOwn(target: Body, key: string, value: unknown) {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function setAt(body: Body, path: readonly string[], value: unknown) {
  let cursor = body;
  for (const key of path.slice(0, -1)) {
    const next = cursor[key];
    if (next === null || typeof next !== "object" || Array.isArray(next) || next instanceof Raw)
      setOwn(cursor, key, {});
    cursor = cursor[key] as Body;
  }
  setOwn(cursor, path.at(-1)!, value);
}

function deleteAt(body: Body, path: readonly string[]) {
  let cursor: unknown = body;
  for (const key of path.slice(0, -1)) cursor = (cursor as Body | undefined)?.[key];
  if (cursor !== null && typeof cursor === "object") delete (cursor as Body)[path.at(-1)!];
}

const nestedArrays = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
const nestedObjects = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

// ---------------------------------------------------------------------------
// Values that are wrong for a field of a given type (never accidentally right)

const NUMBERS_ABSURD = [raw("1e308"), raw("-0"), raw("-1"), raw("9007199254740993"), raw("1e-300"), raw("1e400")];
const NOT_STRING = [0, 1, ...NUMBERS_ABSURD, true, false, [], {}, ["x"], { s: "x" }];
const NOT_STRING_NOT_NULL = [...NOT_STRING, null];
const NOT_BOOL = [0, 1, "true", "false", "yes", "", null, [], {}, raw("-0")];
/** Wrong for an int field whatever its bounds: fractions, unsafe or infinite, other types. */
const NOT_INT = [
  "1",
  "0",
  1.5,
  raw("1e-300"),
  raw("1e308"),
  raw("9007199254740993"),
  raw("1e400"),
  raw("-1e400"),
  true,
  [],
  {},
];
const NOT_INT_MIN0 = [...NOT_INT, -1, raw("-1e0"), raw("-9007199254740993"), null];
const NOT_INT_MIN1 = [...NOT_INT_MIN0, 0, raw("-0"), raw("0e5")];
const NOT_NUMBER = ["8", "", true, [], {}, raw("1e400"), raw("-1e400")];
const NOT_STRING_LIST = ["a", 1, {}, [1], [null], [["a"]], [true], raw("1e308")];
const NOT_OBJECT = [null, [], "x", 1, true, raw("-0")];
const NOT_STRING_MAP = [{ a: 1 }, { a: null }, { a: [] }, { a: {} }, [], "x", 1, null];
const NOT_SCHEMA_VERSION = ["v1", "v1alpha2", "V1ALPHA1", "", 1, null];

type Field = { path: string[]; bad: readonly unknown[]; required?: boolean };

const REGISTER_FIELDS: Field[] = [
  { path: ["node_id"], bad: NOT_STRING_NOT_NULL, required: true },
  { path: ["kubernetes_node"], bad: NOT_STRING_NOT_NULL, required: true },
  { path: ["hostname"], bad: NOT_STRING_NOT_NULL, required: true },
  { path: ["capabilities"], bad: NOT_OBJECT, required: true },
  { path: ["capabilities", "cpu_cores"], bad: NOT_NUMBER },
  { path: ["capabilities", "memory_bytes"], bad: NOT_INT },
  {
    path: ["capabilities", "gpus"],
    bad: [
      "1",
      1,
      {},
      null,
      [1],
      [{}],
      [{ index: "0" }],
      [{ index: 1.5 }],
      [{ index: 0, name: 1 }],
      [{ index: 0, memory_total_mb: raw("1e308") }],
    ],
  },
  { path: ["capabilities", "pools"], bad: [...NOT_STRING_LIST, null] },
  { path: ["capabilities", "os"], bad: NOT_STRING_NOT_NULL },
  { path: ["capabilities", "architecture"], bad: NOT_STRING_NOT_NULL },
  { path: ["environment"], bad: ["Local", "", "moon", 1, null, true] },
  { path: ["sandbox_capable"], bad: NOT_BOOL },
  { path: ["argv_capable"], bad: NOT_BOOL },
  { path: ["module_capable"], bad: NOT_BOOL },
  { path: ["unsandboxed_argv_capable"], bad: NOT_BOOL },
  { path: ["local_datasets"], bad: [...NOT_STRING_LIST, null] },
  { path: ["pool"], bad: NOT_STRING_NOT_NULL },
  { path: ["runtime_profile"], bad: NOT_STRING_NOT_NULL },
  { path: ["labels"], bad: NOT_STRING_MAP },
  { path: ["agent_version"], bad: NOT_STRING_NOT_NULL },
  { path: ["schema_version"], bad: NOT_SCHEMA_VERSION },
];

const HEARTBEAT_FIELDS: Field[] = [
  { path: ["node_id"], bad: NOT_STRING_NOT_NULL, required: true },
  { path: ["timestamp"], bad: ["yesterday", "", "2026-13-45T99:99:99Z", "2026-11-29", 1, null, true] },
  { path: ["status"], bad: ["offline", "ONLINE", "", 1, null] },
  { path: ["pools"], bad: NOT_STRING_LIST },
  { path: ["schema_version"], bad: NOT_SCHEMA_VERSION },
];

const CLAIM_FIELDS: Field[] = [
  { path: ["node_id"], bad: NOT_STRING_NOT_NULL, required: true },
  { path: ["job_id"], bad: NOT_STRING },
];

const COMPLETE_FIELDS: Field[] = [{ path: ["output_sha256"], bad: NOT_STRING_NOT_NULL, required: true }];
const FAIL_FIELDS: Field[] = [{ path: ["reason"], bad: NOT_STRING_NOT_NULL, required: true }];
const QUARANTINE_FIELDS: Field[] = [
  { path: ["reason"], bad: ["", "   ", "\n\t", ...NOT_STRING_NOT_NULL], required: true },
];

const PART_FIELDS = (at: string[]): Field[] => [
  { path: [...at, "key"], bad: NOT_STRING_NOT_NULL, required: true },
  { path: [...at, "sha256"], bad: NOT_STRING_NOT_NULL, required: true },
  { path: [...at, "size_bytes"], bad: NOT_INT_MIN0, required: true },
];

const PARTS_FIELDS: Field[] = [
  { path: ["attempt_id"], bad: NOT_STRING_NOT_NULL, required: true },
  { path: ["step"], bad: NOT_INT_MIN0, required: true },
  { path: ["part"], bad: NOT_OBJECT, required: true },
  ...PART_FIELDS(["part"]),
];

const COMMIT_FIELDS: Field[] = [
  { path: ["attempt_id"], bad: NOT_STRING_NOT_NULL, required: true },
  { path: ["step"], bad: NOT_INT_MIN0, required: true },
  {
    path: ["expected_parts"],
    bad: [null, "x", {}, [1], [{}], [null], [{ key: 1, sha256: "a", size_bytes: 1 }]],
    required: true,
  },
  { path: ["storage_prefix"], bad: NOT_STRING_NOT_NULL, required: true },
  { path: ["world_size"], bad: NOT_INT_MIN1 },
  { path: ["framework"], bad: NOT_STRING_NOT_NULL },
  { path: ["strategy_family"], bad: NOT_STRING_NOT_NULL },
];

const JOB_FIELDS: Field[] = [
  { path: ["apiVersion"], bad: ["v1", "flashml.dev/v1", "", 1, null] },
  { path: ["kind"], bad: ["Pod", "job", "", 1, null] },
  { path: ["metadata"], bad: NOT_OBJECT, required: true },
  {
    path: ["metadata", "name"],
    bad: ["", "UPPER", "a_b", "-a", "a-", "ñ", "😀", "a".repeat(64), "a\u0000", "a\u202eb", 1, null, []],
    required: true,
  },
  { path: ["metadata", "labels"], bad: NOT_STRING_MAP },
  { path: ["spec"], bad: NOT_OBJECT, required: true },
  { path: ["spec", "execution"], bad: NOT_OBJECT },
  { path: ["spec", "execution", "backend"], bad: ["ray", "RAY", "", 1, null] },
  { path: ["spec", "execution", "environment"], bad: ["cloud", "", 1] },
  { path: ["spec", "image"], bad: NOT_OBJECT, required: true },
  { path: ["spec", "image", "repository"], bad: NOT_STRING_NOT_NULL, required: true },
  { path: ["spec", "image", "tag"], bad: ["latest", "", 1, null, raw("-0")], required: true },
  { path: ["spec", "workload"], bad: NOT_OBJECT, required: true },
  {
    path: ["spec", "workload", "type"],
    bad: [...NOT_STRING_NOT_NULL, "no-such-workload", "", "Command"],
    required: true,
  },
  { path: ["spec", "workload", "parameters"], bad: NOT_OBJECT },
  { path: ["spec", "workload", "parameters", "trials"], bad: ["x", 1, [1], null, {}, [[]]], required: true },
  { path: ["spec", "workload", "parameters", "lease_seconds"], bad: [0, -1, "60", raw("1e400"), raw("-0"), true, []] },
  { path: ["spec", "workload", "parameters", "module"], bad: ["os.system", "", 1] },
  { path: ["spec", "resources", "minimumWorkers"], bad: NOT_INT_MIN1 },
  { path: ["spec", "resources", "maximumWorkers"], bad: [...NOT_INT_MIN1, 1] },
  { path: ["spec", "resources", "cpuPerTask"], bad: [0, raw("-0"), -1, "1", true, null, raw("1e400"), raw("-1e-300")] },
  { path: ["spec", "resources", "memoryPerTask"], bad: NOT_STRING_NOT_NULL },
  { path: ["spec", "resources", "gpuPerTask"], bad: NOT_INT_MIN0 },
  { path: ["spec", "placement", "pool"], bad: ["", 1, null] },
  { path: ["spec", "placement", "architectures"], bad: [["x86"], "amd64", [1], null, ["AMD64"]] },
  { path: ["spec", "isolation", "tier"], bad: ["Sandboxed", "", 1, null] },
  { path: ["spec", "isolation", "allowFallback"], bad: NOT_BOOL },
  { path: ["spec", "retryPolicy", "maxTaskAttempts"], bad: NOT_INT_MIN1 },
  { path: ["spec", "retryPolicy", "retryWorkerLoss"], bad: NOT_BOOL },
  { path: ["spec", "artifacts", "outputPrefix"], bad: ["s3://x", "", "jobs/", 1, null] },
];

// ---------------------------------------------------------------------------
// The seeded pool

type World = {
  pool: string;
  nodes: string[];
  job: string;
  /** trial-000: leased (live), trial-001: completed, trial-002: pending. */
  tasks: { live: string; done: string; pending: string };
  leases: { live: string; dead: string; done: string };
  manifest: string;
  artifactKeys: string[];
};

const JOB_SPEC = () => ({
  apiVersion: "flashml.dev/v1alpha1",
  kind: "Job",
  metadata: { name: "fuzz-job", labels: { team: "ñ-😀" } },
  spec: {
    execution: { backend: "leases" },
    image: { repository: "ghcr.io/flashml/runner", tag: "0.4.1" },
    // An hour-long lease: nothing expires (and no sweep changes state) mid-test.
    workload: {
      type: "hyperparameter_search",
      parameters: { trials: [{ c: 0 }, { c: 1 }, { c: 2 }], lease_seconds: 3600 },
    },
  },
});

async function ok(r: Response | Promise<Response>, status = 200): Promise<Response> {
  const response = await r;
  if (response.status !== status) throw new Error(`seeding: ${response.status} ${await response.text()}`);
  return response;
}

async function seed(): Promise<World> {
  const pool = freshPool();
  const nodes = ["n1", "n2", "ñødé-😀-\u202e"];
  await register(pool, "n1");
  await register(pool, "n2", { labels: { rack: "r1" } }, 2);
  await register(pool, nodes[2]!);
  const job = (await json<{ job_id: string }>(await ok(call(pool, "POST", "/jobs", JOB_SPEC()), 201))).job_id;
  // A lease that failed (a dead id), then the live lease on the same task.
  const dead = await json<Lease>(await ok(claim(pool, "n1")));
  await ok(call(pool, "POST", `/attempts/${dead.lease_id}/fail`, { reason: "seeded failure" }));
  const live = await json<Lease>(await ok(claim(pool, "n1")));
  // A completed task: its prefix is immutable.
  const done = await json<Lease>(await ok(claim(pool, "n2")));
  const output = '{"accuracy": 0.9}';
  await ok(upload(pool, `jobs/${job}/${done.task_id}/metrics.json`, output));
  await ok(call(pool, "POST", `/attempts/${done.lease_id}/complete`, { output_sha256: await sha256(output) }));
  await ok(upload(pool, "datasets/train.csv", "a,b\n1,2\n"));
  await ok(upload(pool, `jobs/${job}/${live.task_id}/partial.bin`, new Uint8Array([0, 1, 2, 255])));
  const part = { key: "model.pt", sha256: "ab".repeat(32), size_bytes: 3 };
  const base = `/jobs/${job}/tasks/${live.task_id}/checkpoints`;
  await ok(call(pool, "POST", `${base}/parts`, { attempt_id: live.lease_id, step: 5, part }));
  const manifest = (
    await json<{ manifest_id: string }>(
      await ok(
        call(pool, "POST", `${base}/commit`, {
          attempt_id: live.lease_id,
          step: 5,
          expected_parts: [part],
          storage_prefix: `jobs/${job}/${live.task_id}/ckpt/`,
        }),
      ),
    )
  ).manifest_id;
  expect([live.task_id, done.task_id]).toEqual(["trial-000", "trial-001"]);
  return {
    pool,
    nodes,
    job,
    tasks: { live: live.task_id, done: done.task_id, pending: "trial-002" },
    leases: { live: live.lease_id, dead: dead.lease_id, done: done.lease_id },
    manifest,
    artifactKeys: ["datasets/train.csv", `jobs/${job}/trial-000/partial.bin`, `jobs/${job}/trial-001/metrics.json`],
  };
}

/** The tables every snapshot must cover (more are read if they exist). */
const TABLES = [
  "nodes",
  "jobs",
  "tasks",
  "classes",
  "leases",
  "events",
  "artifacts",
  "checkpoint_parts",
  "checkpoint_manifests",
];

/** Every row of every table of the pool, and every R2 object under its prefix. */
async function snapshot(pool: string) {
  const sql = await runInDurableObject(stub(pool), (_o, state) => {
    const names = state.storage.sql
      .exec<{ name: string }>(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' ORDER BY name",
      )
      .toArray()
      .map((t) => t.name);
    return Object.fromEntries(
      names.map((name) => [name, state.storage.sql.exec(`SELECT * FROM "${name}" ORDER BY rowid`).toArray()]),
    );
  });
  const listed = await env.ARTIFACTS.list({ prefix: `pools/${pool}/` });
  const objects = listed.objects.map((o) => ({ key: o.key, size: o.size, etag: o.etag }));
  return { sql, objects, truncated: listed.truncated };
}

// ---------------------------------------------------------------------------
// The generator

type Request_ = {
  route: string;
  defect: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: Uint8Array;
  /** For a wrong method: the Allow header the 405 must carry. */
  allow?: string;
};

const JSON_TYPES = [
  "application/json",
  "application/json; charset=utf-8",
  "Application/JSON",
  "application/vnd.flashml+json",
  null,
];
const WRONG_TYPES = [
  "text/plain",
  "text/plain;charset=UTF-8",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=xyz",
  "application/xml",
  "application/jsonl",
  "application/json5",
  "text/json",
  "json",
  "*/*",
  "application/*",
  "application/octet-stream",
  "application/javascript",
];
const MALFORMED = [
  "{",
  "}",
  "[",
  "{]",
  "nul",
  "tru",
  '"unterminated',
  "{'node_id': 'n1'}",
  '{"node_id": "n1",}',
  '{"node_id": "n1"} {"node_id": "n2"}',
  '{node_id: "n1"}',
  '{"node_id": "n1" /* comment */}',
  // A UTF-8 BOM before valid JSON is ignored (RFC 8259 allows it): only before invalid JSON here.
  '\ufeff{"node_id": ',
  '{"node_id": "a\nb"}',
  '{"node_id": "\\x41"}',
  '{"node_id": "\\u12"}',
  '{"a": 0x10}',
  '{"a": 01}',
  '{"a": +1}',
  '{"a": .5}',
  '{"a": 1.}',
  '{"a": 1e}',
  '{"a": --1}',
  "\u0000",
  "{\u0000}",
];
/** Spelled where a JSON value belongs: none of these is JSON. */
const NOT_JSON_VALUES = [
  "NaN",
  "Infinity",
  "-Infinity",
  "undefined",
  "+1",
  "01",
  ".5",
  "0x1F",
  "1e",
  "'x'",
  "None",
  "True",
  "nil",
];
const WRONG_JSON_TYPES = [
  "[]",
  "[{}]",
  '"n1"',
  '""',
  "0",
  "1e308",
  "-0",
  "-1",
  "9007199254740993",
  "1e-300",
  "null",
  "true",
  "false",
];
const HOSTILE_KEYS = [
  "",
  "ñ",
  "😀",
  "\u0000",
  "\u202eevil",
  "__proto__",
  "constructor",
  "prototype",
  "k".repeat(1000),
  "a.b",
  "../x",
];
const NOISE = [
  ...NUMBERS_ABSURD,
  "s".repeat(50_000),
  "\u0000\u202e😀",
  [],
  {},
  null,
  { nested: { deeper: [1, [2, [3]]] } },
  "ñ".repeat(1000),
];

/** Path segments a client might send in place of an id: raw (already URL-spelled). */
const HOSTILE_SEGMENTS_RAW = [
  "%00",
  "a%00b",
  "%ZZ",
  "%",
  "%ED%A0%80",
  "%FF",
  "%C0%AF",
  "..",
  ".",
  "%2e%2e",
  "%2E.",
  "a%2Fb",
  "..%2F..%2Fetc%2Fpasswd",
  "%5C..%5Cx",
  "%20",
  "%0A",
  "%3F",
  "%23",
  "%25",
];
/** Ids spelled in Unicode, percent-encoded by the generator. */
const HOSTILE_IDS = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\u202eevil",
  "😀",
  "ñødé",
  "\u200b",
  "x".repeat(5000),
  "../../x",
  "a/b",
  "a\\b",
  "ls-",
  "ls-zzzzzzzzzzzz",
  "000000000000",
];

function segment(rng: Rng, real: readonly string[] = []): string {
  const roll = rng.int(10);
  if (roll < 3 && real.length > 0) {
    // A near miss of a real id: never equal to it.
    const id = rng.pick(real);
    const miss = rng.pick([
      `${id.toUpperCase()}X`,
      `${id} `,
      `${id}%00`,
      `%20${id}`,
      id.slice(0, -1),
      `${id}0`,
      `${id}/x`,
    ]);
    return miss.includes("%") || miss.includes("/") ? miss : encodeURIComponent(miss);
  }
  if (roll < 6) return rng.pick(HOSTILE_SEGMENTS_RAW);
  return encodeURIComponent(rng.pick(HOSTILE_IDS)) || "%00";
}

const encoder = new TextEncoder();
const POOL_NAME_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const BAD_POOLS = [
  "UPPER",
  "-x",
  "x-",
  "a_b",
  "a".repeat(64),
  "%00",
  "%41",
  "%C3%B1",
  encodeURIComponent("😀"),
  "a.b",
  "a%2Fb",
  "a%20b",
  "%ZZ",
  "%ED%A0%80",
  "x%0A",
];

/** What the spec says about a key (SPEC §7), written here independently of src/protocol/keys.ts. */
function keyIsInvalid(key: string): boolean {
  return (
    key === "" ||
    !key.isWellFormed() ||
    encoder.encode(key).byteLength > 1024 ||
    key.startsWith("/") ||
    key.includes("\\") ||
    // biome-ignore lint/suspicious/noControlCharactersInRegex: keys with control characters must be refused
    /[\u0000-\u001f\u007f-\u009f]/.test(key) ||
    key.split("/").some((s) => s === "" || s === "." || s === "..")
  );
}

function safeDecode(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

/** Generates one definitely-invalid request against the seeded world. */
function generator(world: World) {
  const rng = new Rng(SEED);
  const { job, tasks, leases, manifest, nodes } = world;
  // Mostly the seeded pool; now and then the unprefixed form (the pool
  // `local`, whose state other files may share, so it is not compared) or a
  // bad pool name.
  const pathOf = (pinned: boolean) => {
    const roll = pinned ? 1 : rng.next();
    if (roll < 0.04) return { prefix: "/v1alpha1", badPool: false };
    if (roll < 0.09) return { prefix: `/pools/${rng.pick(BAD_POOLS)}/v1alpha1`, badPool: true };
    return { prefix: `/pools/${world.pool}/v1alpha1`, badPool: false };
  };

  const validBodies = {
    register: (): Body => registration(rng.pick(["n1", "n-new", "ñ-😀"]), { labels: { a: "b" } }, rng.int(3)),
    heartbeat: (): Body => ({
      node_id: rng.pick(nodes),
      status: rng.pick(["online", "draining", "terminating"]),
      pools: ["team-a"],
    }),
    claim: (): Body => ({ node_id: rng.pick(nodes), job_id: rng.pick([job, null]) }),
    complete: (): Body => ({ output_sha256: "ab".repeat(32), evidence: { wall_seconds: 1.5, exit_code: 0 } }),
    fail: (): Body => ({ reason: "out of memory" }),
    job: (): Body => JOB_SPEC(),
    parts: (): Body => ({
      attempt_id: leases.live,
      step: 6,
      part: { key: "opt.pt", sha256: "cd".repeat(32), size_bytes: 9 },
    }),
    commit: (): Body => ({
      attempt_id: leases.live,
      step: 6,
      expected_parts: [{ key: "opt.pt", sha256: "cd".repeat(32), size_bytes: 9 }],
      storage_prefix: `jobs/${job}/trial-000/ckpt/`,
      world_size: 2,
    }),
    quarantine: (): Body => ({ reason: "corrupt shard" }),
  };
  type BodyKind = keyof typeof validBodies;
  const FIELDS: Record<BodyKind, Field[]> = {
    register: REGISTER_FIELDS,
    heartbeat: HEARTBEAT_FIELDS,
    claim: CLAIM_FIELDS,
    complete: COMPLETE_FIELDS,
    fail: FAIL_FIELDS,
    job: JOB_FIELDS,
    parts: PARTS_FIELDS,
    commit: COMMIT_FIELDS,
    quarantine: QUARANTINE_FIELDS,
  };

  const taskPair = () =>
    rng.pick([
      [job, tasks.live],
      [job, tasks.done],
      [job, tasks.pending],
      [segment(rng, [job]), tasks.live],
      [job, segment(rng, Object.values(tasks))],
    ]);

  /** The JSON routes: a real or hostile path, and a body with at least one defect. */
  const jsonRoutes: { name: string; kind: BodyKind; path: () => string }[] = [
    { name: "POST /nodes/register", kind: "register", path: () => "/nodes/register" },
    {
      name: "POST /nodes/{id}/heartbeat",
      kind: "heartbeat",
      path: () => `/nodes/${rng.chance(0.6) ? encodeURIComponent(rng.pick(nodes)) : segment(rng, nodes)}/heartbeat`,
    },
    { name: "POST /leases/claim", kind: "claim", path: () => "/leases/claim" },
    {
      name: "POST /attempts/{id}/complete",
      kind: "complete",
      path: () =>
        `/attempts/${rng.chance(0.7) ? rng.pick(Object.values(leases)) : segment(rng, Object.values(leases))}/complete`,
    },
    {
      name: "POST /attempts/{id}/fail",
      kind: "fail",
      path: () =>
        `/attempts/${rng.chance(0.7) ? rng.pick(Object.values(leases)) : segment(rng, Object.values(leases))}/fail`,
    },
    { name: "POST /jobs", kind: "job", path: () => "/jobs" },
    {
      name: "POST checkpoints/parts",
      kind: "parts",
      path: () => {
        const [j, t] = taskPair();
        return `/jobs/${j}/tasks/${t}/checkpoints/parts`;
      },
    },
    {
      name: "POST checkpoints/commit",
      kind: "commit",
      path: () => {
        const [j, t] = taskPair();
        return `/jobs/${j}/tasks/${t}/checkpoints/commit`;
      },
    },
    {
      name: "POST checkpoints/{id}/quarantine",
      kind: "quarantine",
      path: () =>
        `/jobs/${job}/tasks/${rng.chance(0.7) ? tasks.live : segment(rng, [tasks.live])}/checkpoints/${rng.chance(0.7) ? manifest : segment(rng, [manifest])}/quarantine`,
    },
  ];

  const DEFECTS = [
    "malformed",
    "empty",
    "wrong JSON type",
    "wrong field",
    "missing field",
    "not-JSON value",
    "wrong content type",
    "too large",
    "deep nesting",
    "lone surrogate",
  ] as const;

  function noisy(body: Body): Body {
    const n = rng.chance(0.5) ? rng.int(3) + 1 : 0;
    for (let i = 0; i < n; i++)
      setOwn(body, rng.pick(HOSTILE_KEYS) + (rng.chance(0.5) ? "" : String(i)), rng.pick(NOISE));
    return body;
  }

  /** A body with one defect; `text` is what is sent, `contentType` null for none. */
  function defectiveBody(kind: BodyKind): { defect: string; text: string; contentType: string | null } {
    const defect = rng.pick(DEFECTS);
    const contentType = rng.pick(JSON_TYPES);
    const body = noisy(validBodies[kind]());
    switch (defect) {
      case "malformed": {
        if (rng.chance(0.5)) return { defect, text: rng.pick(MALFORMED), contentType };
        // A strict prefix of an object's text is never JSON.
        const text = encode(body);
        return { defect: "truncated", text: text.slice(0, rng.int(text.length)), contentType };
      }
      case "empty":
        return { defect, text: rng.pick(["", " ", "\n\t ", "\r\n"]), contentType };
      case "wrong JSON type":
        return { defect, text: rng.pick(WRONG_JSON_TYPES), contentType };
      case "wrong field": {
        const field = rng.pick(FIELDS[kind]);
        setAt(body, field.path, rng.pick(field.bad));
        return { defect, text: encode(body), contentType };
      }
      case "missing field": {
        const required = FIELDS[kind].filter((f) => f.required);
        deleteAt(body, rng.pick(required).path);
        return { defect, text: encode(body), contentType };
      }
      case "not-JSON value": {
        setAt(body, rng.chance(0.5) ? rng.pick(FIELDS[kind]).path : ["extra"], raw(rng.pick(NOT_JSON_VALUES)));
        return { defect, text: encode(body), contentType };
      }
      case "wrong content type":
        // The body itself may be perfectly valid: the content type alone refuses it.
        return { defect, text: encode(validBodies[kind]()), contentType: rng.pick(WRONG_TYPES) };
      case "too large": {
        const text = encode(validBodies[kind]());
        if (rng.chance(0.5))
          return { defect, text: " ".repeat(MAX_JSON_BODY_BYTES + 1 - text.length) + text, contentType };
        setOwn(body, "padding", "p".repeat(MAX_JSON_BODY_BYTES));
        return { defect, text: encode(body), contentType };
      }
      case "deep nesting": {
        const depth = rng.pick([MAX_JSON_DEPTH + 1, 1000, 10_000]);
        const nested = raw(rng.chance(0.5) ? nestedArrays(depth) : nestedObjects(depth));
        if (rng.chance(0.3)) return { defect, text: nested.text, contentType };
        // Otherwise valid: only the nesting, in a field nobody reads, refuses it.
        const valid = validBodies[kind]();
        setOwn(valid, rng.pick(["extra", "evidence", "labels_x"]), nested);
        if (kind === "job") setAt(valid, ["spec", "workload", "parameters", "trials"], [{ c: nested }]);
        return { defect, text: encode(valid), contentType };
      }
      case "lone surrogate": {
        const valid = validBodies[kind]();
        const lone = rng.pick(["\ud800", "\udfff", "a\udc00b", "\ud83d"]);
        if (rng.chance(0.5)) setOwn(valid, lone, "x");
        else setAt(valid, rng.chance(0.5) ? ["extra"] : rng.pick(FIELDS[kind]).path, lone);
        return { defect, text: encode(valid), contentType };
      }
    }
  }

  /** Body-less or query routes; only unknown or no-longer-live ids reach them. */
  const plainRoutes: { name: string; method: string; path: () => string }[] = [
    {
      name: "POST /attempts/{id}/heartbeat",
      method: "POST",
      path: () => `/attempts/${rng.pick([leases.dead, leases.done, segment(rng, Object.values(leases))])}/heartbeat`,
    },
    { name: "GET /jobs/{id}", method: "GET", path: () => `/jobs/${segment(rng, [job])}` },
    { name: "GET /jobs/{id}/tasks", method: "GET", path: () => `/jobs/${segment(rng, [job])}/tasks` },
    { name: "GET /jobs/{id}/logs", method: "GET", path: () => `/jobs/${segment(rng, [job])}/logs` },
    { name: "POST /jobs/{id}/cancel", method: "POST", path: () => `/jobs/${segment(rng, [job])}/cancel` },
    {
      name: "GET /jobs/{id}/events",
      method: "GET",
      path: () => {
        const bad = rng.pick([
          "-1",
          "abc",
          "1.5",
          "1e3",
          "",
          "%20",
          "0x10",
          "9999999999999999",
          "+1",
          "%D9%A1",
          "%00",
          "1%00",
          "%ZZ",
        ]);
        const which = rng.pick(["after", "limit", "both"]);
        const limitBad = rng.pick([bad, "0", "1001", "-0x1"]);
        const query =
          which === "after"
            ? `after=${bad}`
            : which === "limit"
              ? `limit=${limitBad}`
              : `after=${bad}&limit=${limitBad}`;
        return `/jobs/${rng.chance(0.6) ? job : segment(rng, [job])}/events?${query}`;
      },
    },
    {
      name: "GET checkpoints/latest",
      method: "GET",
      path: () => {
        if (rng.chance(0.3)) return `/jobs/${segment(rng, [job])}/tasks/${tasks.live}/checkpoints/latest`;
        const bad = rng.pick([
          "0",
          "-0",
          "-1",
          "abc",
          "1.5",
          "",
          "1e3",
          "9999999999999999",
          "%20",
          "%00",
          "1%00",
          "%ZZ",
        ]);
        return `/jobs/${job}/tasks/${rng.pick(Object.values(tasks))}/checkpoints/latest?world_size=${bad}`;
      },
    },
    {
      name: "GET checkpoints/lost-work",
      method: "GET",
      path: () => {
        const [j, t] = [job, rng.pick(Object.values(tasks))];
        if (rng.chance(0.3))
          return `/jobs/${j}/tasks/${t}/checkpoints/lost-work${rng.pick(["", "?", "?step=3", "?failed_at=3"])}`;
        if (rng.chance(0.2)) return `/jobs/${segment(rng, [job])}/tasks/${t}/checkpoints/lost-work?failed_at_step=3`;
        const bad = rng.pick(["-1", "abc", "1.5", "", "1e3", "9999999999999999", "%20", "%00", "%ZZ"]);
        return `/jobs/${j}/tasks/${t}/checkpoints/lost-work?failed_at_step=${bad}`;
      },
    },
    {
      name: "GET placement",
      method: "GET",
      path: () =>
        rng.pick([
          `/jobs/${segment(rng, [job])}/tasks/${tasks.live}/placement`,
          `/jobs/${job}/tasks/${segment(rng, Object.values(tasks))}/placement`,
        ]),
    },
    {
      name: "GET /dashboard",
      method: "GET",
      path: () =>
        `/dashboard?limit=${rng.pick(["0", "-1", "abc", "1.5", "", "%00", "%20", "1e2", String(DASHBOARD_LIMIT_MAX + 1), "99999", "%D9%A1", "%ZZ"])}`,
    },
    {
      name: "POST checkpoints/{id}/verify",
      method: "POST",
      path: () =>
        rng.pick([
          `/jobs/${job}/tasks/${segment(rng, [tasks.live])}/checkpoints/${manifest}/verify`,
          `/jobs/${segment(rng, [job])}/tasks/${tasks.live}/checkpoints/${manifest}/verify`,
          `/jobs/${job}/tasks/${rng.pick([tasks.live, tasks.done])}/checkpoints/${segment(rng, [manifest])}/verify`,
        ]),
    },
  ];

  /** Raw key paths (after /artifacts/) that stay invalid after URL normalisation. */
  function badKeyPath(): string {
    const poison = rng.pick([
      "",
      "/x",
      "x/",
      "a//b",
      "a%2F..%2Fb",
      "..%2Fetc%2Fpasswd",
      "%2e%2e%2Fx",
      "a%2F.%2Fb",
      `jobs%2F${job}%2F..%2F..%2Fdatasets%2Ftrain.csv`,
      "x/..",
      "%2E",
      "a%5Cb",
      "%5C%5Cserver%5Cshare",
      "a%00b",
      "%0A",
      "%1F",
      "%7F",
      "%C2%85",
      "%C2%9F",
      "%ED%A0%80",
      "%FF",
      "%C0%AF",
      "%",
      "%ZZ",
      "%2",
      "a".repeat(1025),
      encodeURIComponent("😀".repeat(257)),
      encodeURIComponent("é".repeat(513)),
      "%2Fabsolute",
    ]);
    const prefix = rng.chance(0.3) ? `${encodeURIComponent(rng.pick(["ñ", "😀", "\u202e", "jobs", "datasets"]))}/` : "";
    return poison === "" || poison.startsWith("/") || poison.startsWith("%2F") ? poison : prefix + poison;
  }

  function artifactRequest(): { route: string; defect: string; method: string; path: string; body?: Uint8Array } {
    const bytes = crypto.getRandomValues(new Uint8Array(rng.int(64)));
    const roll = rng.int(11);
    if (roll === 10) {
      // The route spelled so that only a decoded path reaches it, or with no key at all.
      const path = rng.pick([
        "/artifacts",
        "/%61rtifacts/datasets/new.csv",
        "/artifact%73/x",
        "/%61rtifacts",
        "/ARTIFACTS/x",
      ]);
      return { route: "PUT /artifacts/{key}", defect: "misspelled route", method: "PUT", path, body: bytes };
    }
    if (roll < 5)
      return {
        route: "PUT /artifacts/{key}",
        defect: "invalid key",
        method: "PUT",
        path: `/artifacts/${badKeyPath()}`,
        body: bytes,
      };
    if (roll < 6) {
      // A valid key under a completed task: immutable, 409.
      const leaf = encodeURIComponent(rng.pick(["metrics.json", "😀.bin", "new.txt", "ñ"]));
      return {
        route: "PUT /artifacts/{key}",
        defect: "immutable prefix",
        method: "PUT",
        path: `/artifacts/jobs/${job}/${tasks.done}/${leaf}`,
        body: bytes,
      };
    }
    if (roll < 8)
      return {
        route: "GET /artifacts/{key}",
        defect: "invalid key",
        method: "GET",
        path: `/artifacts/${badKeyPath()}`,
      };
    const absent = rng.pick([
      "datasets/train.csv.bak",
      "DATASETS/train.csv",
      "ñ/😀",
      `jobs/${job}/trial-000/nope`,
      "datasets/train.csv ",
      "x".repeat(1024),
    ]);
    return {
      route: "GET /artifacts/{key}",
      defect: "absent key",
      method: "GET",
      path: `/artifacts/${absent.split("/").map(encodeURIComponent).join("/")}`,
    };
  }

  /** Every route with the methods it serves: any other method is wrong. */
  const methodRoutes: { name: string; allowed: string[]; path: () => string; body?: BodyKind }[] = [
    { name: "/nodes/register", allowed: ["POST"], path: () => "/nodes/register", body: "register" },
    {
      name: "/nodes/{id}/heartbeat",
      allowed: ["POST"],
      path: () => `/nodes/${rng.pick(nodes.map(encodeURIComponent))}/heartbeat`,
      body: "heartbeat",
    },
    { name: "/nodes", allowed: ["GET"], path: () => "/nodes", body: "register" },
    { name: "/leases/claim", allowed: ["POST"], path: () => "/leases/claim", body: "claim" },
    { name: "/attempts/{id}/heartbeat", allowed: ["POST"], path: () => `/attempts/${leases.live}/heartbeat` },
    {
      name: "/attempts/{id}/complete",
      allowed: ["POST"],
      path: () => `/attempts/${leases.live}/complete`,
      body: "complete",
    },
    { name: "/attempts/{id}/fail", allowed: ["POST"], path: () => `/attempts/${leases.live}/fail`, body: "fail" },
    { name: "/artifacts/{key}", allowed: ["GET", "PUT"], path: () => `/artifacts/jobs/${job}/${tasks.live}/new.bin` },
    { name: "/jobs", allowed: ["GET", "POST"], path: () => "/jobs", body: "job" },
    { name: "/jobs/{id}", allowed: ["GET"], path: () => `/jobs/${job}`, body: "job" },
    { name: "/jobs/{id}/events", allowed: ["GET"], path: () => `/jobs/${job}/events` },
    { name: "/jobs/{id}/tasks", allowed: ["GET"], path: () => `/jobs/${job}/tasks` },
    { name: "/jobs/{id}/cancel", allowed: ["POST"], path: () => `/jobs/${job}/cancel` },
    { name: "/jobs/{id}/logs", allowed: ["GET"], path: () => `/jobs/${job}/logs` },
    { name: "/jobs/{id}/artifacts", allowed: ["GET"], path: () => `/jobs/${job}/artifacts` },
    {
      name: "checkpoints/parts",
      allowed: ["POST"],
      path: () => `/jobs/${job}/tasks/${tasks.live}/checkpoints/parts`,
      body: "parts",
    },
    {
      name: "checkpoints/commit",
      allowed: ["POST"],
      path: () => `/jobs/${job}/tasks/${tasks.live}/checkpoints/commit`,
      body: "commit",
    },
    { name: "checkpoints/latest", allowed: ["GET"], path: () => `/jobs/${job}/tasks/${tasks.live}/checkpoints/latest` },
    {
      name: "checkpoints/lost-work",
      allowed: ["GET"],
      path: () => `/jobs/${job}/tasks/${tasks.live}/checkpoints/lost-work?failed_at_step=9`,
    },
    {
      name: "checkpoints/{id}/verify",
      allowed: ["POST"],
      path: () => `/jobs/${job}/tasks/${tasks.live}/checkpoints/${manifest}/verify`,
    },
    {
      name: "checkpoints/{id}/quarantine",
      allowed: ["POST"],
      path: () => `/jobs/${job}/tasks/${tasks.live}/checkpoints/${manifest}/quarantine`,
      body: "quarantine",
    },
    { name: "placement", allowed: ["GET"], path: () => `/jobs/${job}/tasks/${tasks.pending}/placement` },
    { name: "/dashboard", allowed: ["GET"], path: () => "/dashboard" },
  ];
  const METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"];

  /** `pinned`: always the seeded pool (the request is invalid only there). */
  function request(
    route: string,
    defect: string,
    method: string,
    path: string,
    contentType: string | null,
    body?: Uint8Array,
    pinned = false,
  ): Request_ {
    const headers: Record<string, string> = {};
    if (contentType !== null) headers["content-type"] = contentType;
    const { prefix, badPool } = pathOf(pinned);
    return {
      route,
      defect: badPool ? `${defect} + bad pool` : defect,
      method,
      url: `http://flashedge.test${prefix}${path}`,
      headers,
      body,
    };
  }

  const routes = [
    ...jsonRoutes.map((r) => r.name),
    ...plainRoutes.map((r) => r.name),
    "PUT /artifacts/{key}",
    "GET /artifacts/{key}",
    ...methodRoutes.map((r) => `any method on ${r.name}`),
  ];

  function next(): Request_ {
    const roll = rng.int(100);
    if (roll < 55) {
      const route = rng.pick(jsonRoutes);
      const { defect, text, contentType } = defectiveBody(route.kind);
      return request(route.name, defect, "POST", route.path(), contentType, encoder.encode(text));
    }
    if (roll < 70) {
      const route = rng.pick(plainRoutes);
      // Body-less routes ignore a body: send garbage now and then.
      const body = route.method === "POST" && rng.chance(0.3) ? encoder.encode(rng.pick(MALFORMED)) : undefined;
      return request(
        route.name,
        "unknown id or bad query",
        route.method,
        route.path(),
        body ? rng.pick(WRONG_TYPES) : null,
        body,
      );
    }
    if (roll < 85) {
      const a = artifactRequest();
      return request(
        a.route,
        a.defect,
        a.method,
        a.path,
        rng.pick([null, "application/octet-stream", "text/plain"]),
        a.body,
        a.defect === "immutable prefix",
      );
    }
    if (roll < 95) {
      const route = rng.pick(methodRoutes);
      const method = rng.pick(METHODS.filter((m) => !route.allowed.includes(m)));
      // A valid body, even: the method alone refuses the request.
      const body =
        method !== "GET" && route.body && rng.chance(0.7)
          ? encoder.encode(encode(validBodies[route.body]()))
          : undefined;
      const allow = [...route.allowed, ...(route.allowed.includes("GET") ? ["HEAD"] : [])].sort().join(", ");
      return {
        ...request(
          `any method on ${route.name}`,
          "wrong method",
          method,
          route.path(),
          body ? "application/json" : null,
          body,
        ),
        allow,
      };
    }
    // A valid request in every respect but the pool's name.
    const route = rng.pick(jsonRoutes);
    const path = route.path();
    const text = encode(validBodies[route.kind]());
    const r = request(route.name, "bad pool", "POST", path, "application/json", encoder.encode(text), true);
    return { ...r, url: `http://flashedge.test/pools/${rng.pick(BAD_POOLS)}/v1alpha1${path}` };
  }
  return { next, routes };
}

/** Refuses a generated request that might be valid after all (the generator's own guard). */
function mightBeValid(world: World, r: Request_): string | null {
  const url = new URL(r.url);
  const match = /^\/pools\/([^/]*)\/v1alpha1(\/.*)$/.exec(url.pathname);
  if (match) {
    const pool = safeDecode(match[1]!) ?? match[1]!;
    if (pool !== world.pool && POOL_NAME_RE.test(pool)) return `valid pool name ${pool}`;
  }
  const rest = match ? match[2]! : url.pathname.replace(/^\/v1alpha1/, "");
  if (r.method === "PUT" && rest.startsWith("/artifacts/") && r.defect === "invalid key") {
    const key = safeDecode(rest.slice("/artifacts/".length));
    if (key !== null && !keyIsInvalid(key)) return `valid artifact key ${key}`;
  }
  if (r.method === "POST" && rest === `/attempts/${world.leases.live}/heartbeat`) return "renews the live lease";
  if (r.method === "POST" && rest === `/jobs/${world.job}/cancel`) return "cancels the job";
  if (
    r.method === "POST" &&
    rest === `/jobs/${world.job}/tasks/${world.tasks.live}/checkpoints/${world.manifest}/verify`
  )
    return "verifies the manifest";
  return null;
}

type Problem = { request: string; status: number; response: string };

function describeRequest(r: Request_): string {
  const body = r.body ? new TextDecoder().decode(r.body.subarray(0, 160)) : "";
  const url = r.url.length > 200 ? `${r.url.slice(0, 200)}…` : r.url;
  return `[${r.route} · ${r.defect}] ${r.method} ${url} ${JSON.stringify(r.headers)} ${JSON.stringify(body)}${r.body && r.body.length > 160 ? `… (${r.body.length} bytes)` : ""}`;
}

/** A clear `detail`: a non-empty string, or a non-empty list of sentences or {loc, msg, type} rows. */
function clearDetail(body: unknown): boolean {
  if (body === null || typeof body !== "object" || !("detail" in body)) return false;
  const detail = (body as { detail: unknown }).detail;
  if (typeof detail === "string") return detail.trim() !== "";
  if (!Array.isArray(detail) || detail.length === 0) return false;
  return detail.every(
    (row) =>
      (typeof row === "string" && row !== "") ||
      (row !== null &&
        typeof row === "object" &&
        Array.isArray(row.loc) &&
        typeof row.msg === "string" &&
        row.msg !== "" &&
        typeof row.type === "string"),
  );
}

async function send(r: Request_, viaRuntime: boolean): Promise<Problem | null> {
  const headers = { ...r.headers };
  // Any HTTP client sets it; an in-process Request carries none.
  if (r.body !== undefined && !viaRuntime) headers["content-length"] = String(r.body.byteLength);
  const init: RequestInit = { method: r.method, headers };
  if (r.body !== undefined) init.body = r.body;
  let response: Response;
  try {
    const request = new Request(r.url, init);
    response = viaRuntime
      ? await exports.default.fetch(request)
      : await app.fetch(request, env, createExecutionContext());
  } catch (e) {
    return { request: describeRequest(r), status: 0, response: `threw ${String(e)}` };
  }
  const text = await response.text();
  const problem = (why: string) => ({
    request: describeRequest(r),
    status: response.status,
    response: `${why}: ${text.slice(0, 300)}`,
  });
  if (response.status >= 500) return problem("server error");
  if (response.status < 400) return problem("accepted a malformed request");
  if (r.defect === "wrong method" && (response.status !== 405 || response.headers.get("allow") !== r.allow)) {
    return problem(`wanted 405 with Allow: ${r.allow}, got Allow: ${response.headers.get("allow")}`);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return problem("not JSON");
  }
  if (!response.headers.get("content-type")?.startsWith("application/json")) return problem("wrong content type");
  return clearDetail(body) ? null : problem("no clear detail");
}

describe("thousands of malformed requests", () => {
  it(`${REQUESTS} seeded malformed requests across every route: all 4xx with a detail, none 5xx, no state changed`, {
    timeout: 120_000,
  }, async () => {
    const world = await seed();
    const before = await snapshot(world.pool);
    for (const table of TABLES) expect(Object.keys(before.sql), `the snapshot reads table ${table}`).toContain(table);
    expect(before.sql.nodes).toHaveLength(3);
    expect(before.sql.leases).toHaveLength(3);
    expect(before.sql.checkpoint_manifests).toHaveLength(1);
    expect(before.objects).toHaveLength(3);

    const { next, routes } = generator(world);
    const requests: Request_[] = [];
    const guarded: string[] = [];
    while (requests.length < REQUESTS) {
      const r = next();
      const why = mightBeValid(world, r);
      if (why) guarded.push(`${why}: ${describeRequest(r)}`);
      else requests.push(r);
    }
    // A safety net, not the design: the generator never needs it.
    expect(guarded).toEqual([]);

    const problems: Problem[] = [];
    for (let i = 0; i < requests.length; i += CHUNK) {
      const answers = await Promise.all(
        requests.slice(i, i + CHUNK).map((r, j) => send(r, (i + j) % RUNTIME_SAMPLE === 0)),
      );
      for (const p of answers) if (p) problems.push(p);
    }
    expect(problems.map((p) => `${p.status} ${p.response}\n    ← ${p.request}`)).toEqual([]);

    // Coverage: every route and every kind of defect was exercised.
    const sent = new Set(requests.map((r) => r.route));
    for (const route of routes) expect(sent, route).toContain(route);
    const defects = new Set(requests.map((r) => r.defect.replace(/ \+ bad pool$/, "")));
    for (const d of [
      "malformed",
      "truncated",
      "empty",
      "wrong JSON type",
      "wrong field",
      "missing field",
      "not-JSON value",
      "wrong content type",
      "too large",
      "deep nesting",
      "lone surrogate",
      "unknown id or bad query",
      "invalid key",
      "misspelled route",
      "immutable prefix",
      "absent key",
      "wrong method",
      "bad pool",
    ]) {
      expect(defects, d).toContain(d);
    }

    const after = await snapshot(world.pool);
    expect(after).toEqual(before);
    expect(await storedObjects(world.pool)).toHaveLength(3);
  });
});

// ---------------------------------------------------------------------------
// The specific cases, with their exact answers

type Case = {
  name: string;
  method: string;
  path: string;
  body?: string | Uint8Array;
  type?: string | null;
  status: number;
  /** detail[0].type for a 422, or a substring of a string detail. */
  detail?: string;
};

const CLAIM = '{"node_id": "n1"}';
const PART = (step: string, size = "3") =>
  `{"attempt_id": "a", "step": ${step}, "part": {"key": "k", "sha256": "s", "size_bytes": ${size}}}`;
const COMMIT = (worldSize: string) =>
  `{"attempt_id": "a", "step": 1, "expected_parts": [], "storage_prefix": "p", "world_size": ${worldSize}}`;
const JOB = (parameters: string) =>
  `{"metadata": {"name": "j"}, "spec": {"execution": {"backend": "leases"}, "image": {"repository": "r", "tag": "1"}, "workload": {"type": "hyperparameter_search", "parameters": ${parameters}}}}`;
const CKPT = "/jobs/j/tasks/t/checkpoints";
const oneMiB = (text: string) => " ".repeat(MAX_JSON_BODY_BYTES - encoder.encode(text).length) + text;

const CASES: Case[] = [
  {
    name: "malformed JSON is 422 json_invalid",
    method: "POST",
    path: "/leases/claim",
    body: '{"node_id": "n1",',
    status: 422,
    detail: "json_invalid",
  },
  {
    name: "an empty body is 422 json_invalid",
    method: "POST",
    path: "/leases/claim",
    body: "",
    status: 422,
    detail: "json_invalid",
  },
  {
    name: "no body at all is 422 json_invalid",
    method: "POST",
    path: "/nodes/register",
    status: 422,
    detail: "json_invalid",
  },
  {
    name: "a UTF-8 byte order mark before the JSON is ignored (RFC 8259 §8.1)",
    method: "POST",
    path: "/leases/claim",
    body: `\ufeff${CLAIM}`,
    status: 403,
    detail: "unregistered",
  },
  {
    name: "a whitespace body is 422 json_invalid",
    method: "POST",
    path: "/jobs",
    body: " \n\t",
    status: 422,
    detail: "json_invalid",
  },
  {
    name: "an array body is 422",
    method: "POST",
    path: "/leases/claim",
    body: "[]",
    status: 422,
    detail: "model_type",
  },
  {
    name: "a string body is 422",
    method: "POST",
    path: "/leases/claim",
    body: '"n1"',
    status: 422,
    detail: "model_type",
  },
  {
    name: "a number body is 422",
    method: "POST",
    path: "/attempts/ls-000000000000/fail",
    body: "1e308",
    status: 422,
    detail: "model_type",
  },
  { name: "a null body is 422", method: "POST", path: "/jobs", body: "null", status: 422, detail: "model_type" },
  {
    name: "a true body is 422",
    method: "POST",
    path: "/nodes/n1/heartbeat",
    body: "true",
    status: 422,
    detail: "model_type",
  },
  {
    name: "NaN spelled in the JSON is 422 json_invalid",
    method: "POST",
    path: "/leases/claim",
    body: '{"node_id": NaN}',
    status: 422,
    detail: "json_invalid",
  },
  {
    name: "Infinity spelled in the JSON is 422 json_invalid",
    method: "POST",
    path: `${CKPT}/parts`,
    body: PART("Infinity"),
    status: 422,
    detail: "json_invalid",
  },
  {
    name: "a number where a string belongs is 422 string_type",
    method: "POST",
    path: "/leases/claim",
    body: '{"node_id": 1}',
    status: 422,
    detail: "string_type",
  },
  {
    name: "a string where a bool belongs is 422 bool_type",
    method: "POST",
    path: "/nodes/register",
    body: JSON.stringify(registration("n1", { sandbox_capable: "yes" })),
    status: 422,
    detail: "bool_type",
  },
  {
    name: "-1 as a step is 422",
    method: "POST",
    path: `${CKPT}/parts`,
    body: PART("-1"),
    status: 422,
    detail: "greater_than_equal",
  },
  {
    name: "-0 as a world size (≥ 1) is 422",
    method: "POST",
    path: `${CKPT}/commit`,
    body: COMMIT("-0"),
    status: 422,
    detail: "greater_than_equal",
  },
  {
    name: "2**53+1 as a step is 422",
    method: "POST",
    path: `${CKPT}/parts`,
    body: PART("9007199254740993"),
    status: 422,
  },
  { name: "1e308 as a size is 422", method: "POST", path: `${CKPT}/parts`, body: PART("1", "1e308"), status: 422 },
  {
    name: "1e-300 as a step is 422",
    method: "POST",
    path: `${CKPT}/parts`,
    body: PART("1e-300"),
    status: 422,
    detail: "int_from_float",
  },
  {
    name: "1e400 (Infinity once parsed) as cpu_cores is 422",
    method: "POST",
    path: "/nodes/register",
    body: JSON.stringify(registration("n1")).replace('"cpu_cores":8', '"cpu_cores":1e400'),
    status: 422,
    detail: "float_type",
  },
  {
    name: "1e400 as a lease length is 422",
    method: "POST",
    path: "/jobs",
    body: JOB('{"trials": [{}], "lease_seconds": 1e400}'),
    status: 422,
    detail: "lease_seconds",
  },
  {
    name: "text/plain is 415",
    method: "POST",
    path: "/leases/claim",
    body: CLAIM,
    type: "text/plain",
    status: 415,
    detail: "unsupported content type",
  },
  {
    name: "a form content type is 415",
    method: "POST",
    path: "/jobs",
    body: JOB("{}"),
    type: "application/x-www-form-urlencoded",
    status: 415,
    detail: "application/json",
  },
  {
    name: "application/jsonl is 415",
    method: "POST",
    path: "/nodes/n1/heartbeat",
    body: '{"node_id": "n1"}',
    type: "application/jsonl",
    status: 415,
  },
  {
    name: "1 MiB + 1 byte is 413",
    method: "POST",
    path: "/leases/claim",
    body: ` ${oneMiB(CLAIM)}`,
    status: 413,
    detail: "exceeds",
  },
  {
    name: "exactly 1 MiB is read (and answered on its merits)",
    method: "POST",
    path: "/leases/claim",
    body: oneMiB(CLAIM),
    status: 403,
    detail: "unregistered",
  },
  {
    name: "10,000 nested arrays are 422, not 500",
    method: "POST",
    path: "/leases/claim",
    body: nestedArrays(10_000),
    status: 422,
    detail: "json_invalid",
  },
  {
    name: "10,000 nested arrays in evidence are 422, not 500",
    method: "POST",
    path: "/attempts/ls-000000000000/complete",
    body: `{"output_sha256": "x", "evidence": ${nestedArrays(10_000)}}`,
    status: 422,
    detail: "json_invalid",
  },
  {
    name: "10,000 nested objects in job parameters are 422, not 500",
    method: "POST",
    path: "/jobs",
    body: JOB(`{"trials": [{"c": ${nestedObjects(10_000)}}]}`),
    status: 422,
    detail: "json_invalid",
  },
  {
    name: `nesting one level past ${MAX_JSON_DEPTH} is 422`,
    method: "POST",
    path: "/leases/claim",
    body: `{"node_id": "n1", "x": ${nestedArrays(MAX_JSON_DEPTH)}}`,
    status: 422,
    detail: "json_invalid",
  },
  {
    name: `nesting ${MAX_JSON_DEPTH} levels deep is accepted`,
    method: "POST",
    path: "/leases/claim",
    body: `{"node_id": "n1", "x": ${nestedArrays(MAX_JSON_DEPTH - 1)}}`,
    status: 403,
    detail: "unregistered",
  },
  {
    name: "a lone surrogate in an id is 422 string_unicode",
    method: "POST",
    path: "/nodes/register",
    body: JSON.stringify(registration("X")).replace('"X"', '"\\ud800"'),
    status: 422,
    detail: "string_unicode",
  },
  {
    name: "a lone surrogate in a key is 422 string_unicode",
    method: "POST",
    path: "/leases/claim",
    body: '{"node_id": "n1", "\\udc00": 1}',
    status: 422,
    detail: "string_unicode",
  },
  {
    name: "a huge string id is answered on its merits",
    method: "POST",
    path: "/leases/claim",
    body: JSON.stringify({ node_id: "n".repeat(1_000_000) }),
    status: 403,
    detail: "unregistered",
  },
  {
    name: "NUL in a node id path parameter is 404",
    method: "POST",
    path: "/nodes/n1%00/heartbeat",
    body: '{"node_id": "n1"}',
    status: 404,
    detail: "unknown node",
  },
  {
    name: "RTL and emoji in a node id path parameter are 404",
    method: "POST",
    path: `/nodes/${encodeURIComponent("\u202e😀")}/heartbeat`,
    body: '{"node_id": "x"}',
    status: 404,
    detail: "unknown node",
  },
  {
    name: "bad percent-encoding in a job id is 404",
    method: "GET",
    path: "/jobs/%ZZ",
    status: 404,
    detail: "unknown job",
  },
  {
    name: "percent-encoded traversal in a job id is 404",
    method: "GET",
    path: "/jobs/..%2F..%2Fnodes/tasks",
    status: 404,
    detail: "unknown job",
  },
  {
    name: "a%2F..%2Fb as an artifact key is 400",
    method: "PUT",
    path: "/artifacts/a%2F..%2Fb",
    body: new Uint8Array([1]),
    status: 400,
    detail: "'..' segment",
  },
  {
    name: "%2e%2e%2F as an artifact key is 400",
    method: "GET",
    path: "/artifacts/%2e%2e%2Fsecret",
    status: 400,
    detail: "'..' segment",
  },
  {
    name: "an encoded leading slash is 400",
    method: "PUT",
    path: "/artifacts/%2Fetc%2Fpasswd",
    body: new Uint8Array([1]),
    status: 400,
    detail: "leading",
  },
  {
    name: "an encoded backslash is 400",
    method: "PUT",
    path: "/artifacts/a%5C..%5Cb",
    body: new Uint8Array([1]),
    status: 400,
    detail: "backslash",
  },
  {
    name: "NUL in an artifact key is 400",
    method: "PUT",
    path: "/artifacts/a%00b",
    body: new Uint8Array([1]),
    status: 400,
    detail: "U+0000",
  },
  {
    name: "invalid percent-encoding in a key is 400",
    method: "GET",
    path: "/artifacts/%ZZ",
    status: 400,
    detail: "percent-encoding",
  },
  {
    name: "an encoded lone surrogate in a key is 400",
    method: "PUT",
    path: "/artifacts/%ED%A0%80",
    body: new Uint8Array([1]),
    status: 400,
    detail: "percent-encoding",
  },
  {
    name: "a key of 1025 bytes is 400",
    method: "PUT",
    path: `/artifacts/${"k".repeat(1025)}`,
    body: new Uint8Array([1]),
    status: 400,
    detail: "1024",
  },
  {
    name: "a trailing slash in a key is 400",
    method: "PUT",
    path: "/artifacts/dir/",
    body: new Uint8Array([1]),
    status: 400,
    detail: "empty segment",
  },
  {
    name: "PUT /artifacts with no key is 400, not a key made of the URL",
    method: "PUT",
    path: "/artifacts",
    body: new Uint8Array([1]),
    status: 400,
    detail: "empty",
  },
  {
    name: "an artifacts path that routes only after decoding is 400",
    method: "PUT",
    path: "/%61rtifacts/k",
    body: new Uint8Array([1]),
    status: 400,
    detail: "percent-encoding",
  },
  {
    name: "a bad events cursor is 422",
    method: "GET",
    path: "/jobs/000000000000/events?after=-1",
    status: 422,
    detail: "greater_than_equal",
  },
  {
    name: "an events limit past the maximum is 422",
    method: "GET",
    path: "/jobs/000000000000/events?limit=1001",
    status: 422,
    detail: "less_than_equal",
  },
  {
    name: "a world size of 0 is 422",
    method: "GET",
    path: `${CKPT}/latest?world_size=0`,
    status: 422,
    detail: "greater_than_equal",
  },
  {
    name: "a non-integer world size is 422",
    method: "GET",
    path: `${CKPT}/latest?world_size=1.5`,
    status: 422,
    detail: "int_parsing",
  },
  {
    name: "lost-work without failed_at_step is 422",
    method: "GET",
    path: `${CKPT}/lost-work`,
    status: 422,
    detail: "missing",
  },
  {
    name: "an empty quarantine reason is 422",
    method: "POST",
    path: `${CKPT}/ck-000000000000/quarantine`,
    body: '{"reason": "  "}',
    status: 422,
    detail: "value_error",
  },
];

async function answer(pool: string, c: Case) {
  const headers: Record<string, string> = {};
  const type = c.type === undefined ? (typeof c.body === "string" ? "application/json" : null) : c.type;
  if (type !== null) headers["content-type"] = type;
  const init: RequestInit = { method: c.method, headers };
  if (c.body !== undefined) init.body = c.body;
  return exports.default.fetch(new Request(`http://flashedge.test/pools/${pool}/v1alpha1${c.path}`, init));
}

describe("hostile input, case by case", () => {
  it.each(CASES)("$name", async (c) => {
    const pool = freshPool();
    const r = await answer(pool, c);
    const text = await r.text();
    expect(r.status, text.slice(0, 300)).toBe(c.status);
    const body = JSON.parse(text) as { detail: unknown };
    expect(clearDetail(body), text.slice(0, 300)).toBe(true);
    if (c.detail !== undefined) {
      const detail = body.detail;
      if (Array.isArray(detail))
        expect(detail.map((d: { type: string; msg: string }) => `${d.type} ${d.msg}`).join("; ")).toContain(c.detail);
      else expect(detail).toContain(c.detail);
    }
    // Nothing was stored for any of them.
    expect(await storedObjects(pool)).toEqual([]);
  });

  it("an unknown pool name is 404 with a detail naming the pool", async () => {
    for (const bad of ["UPPER", "a_b", "-x", "%00", "%C3%B1", "x".repeat(64)]) {
      const r = await exports.default.fetch(new Request(`http://flashedge.test/pools/${bad}/v1alpha1/nodes`));
      expect(r.status, bad).toBe(404);
      expect((await json<{ detail: string }>(r)).detail).toMatch(/^invalid pool name/);
    }
  });

  it("a pool named 'artifacts' stores a key under that key, not under a piece of the URL", async () => {
    const pool = "artifacts";
    const put = await call(pool, "PUT", "/artifacts/k1", new Uint8Array([7, 7]));
    expect(put.status).toBe(200);
    expect((await json(put)).object_key).toBe("k1");
    const get = await call(pool, "GET", "/artifacts/k1");
    expect(get.status).toBe(200);
    expect(new Uint8Array(await get.arrayBuffer())).toEqual(new Uint8Array([7, 7]));
  });

  it.each([
    ["DELETE", "/nodes", "GET, HEAD"],
    ["GET", "/leases/claim", "POST"],
    ["PUT", "/jobs", "GET, HEAD, POST"],
    ["PATCH", "/artifacts/x", "GET, HEAD, PUT"],
    ["POST", "/artifacts/x", "GET, HEAD, PUT"],
    ["DELETE", "/jobs/000000000000", "GET, HEAD"],
    ["GET", "/attempts/ls-000000000000/heartbeat", "POST"],
    ["OPTIONS", "/jobs/j/tasks/t/checkpoints/parts", "POST"],
    ["POST", "/jobs/j/tasks/t/checkpoints/latest", "GET, HEAD"],
  ])("%s %s is 405 with Allow: %s", async (method, path, allow) => {
    const r = await call(freshPool(), method, path);
    expect(r.status).toBe(405);
    expect(r.headers.get("allow")).toBe(allow);
    expect((await json<{ detail: string }>(r)).detail).toContain(`allowed: ${allow}`);
  });

  it("a path no method serves stays 404", async () => {
    for (const path of ["/nope", "/jobs/", "/nodes/n1", "/leases"]) {
      const r = await call(freshPool(), "GET", path);
      expect(r.status, path).toBe(404);
      expect(r.headers.get("allow")).toBeNull();
      expect(await json(r)).toEqual({ detail: "Not Found" });
    }
  });

  it("a wrong method with a valid body changes nothing", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    for (const [method, path, body] of [
      ["PUT", "/nodes/register", registration("n2")],
      ["PATCH", "/leases/claim", { node_id: "n1" }],
      ["DELETE", "/jobs", JSON.parse(JOB('{"trials": [{}]}'))],
    ] as const) {
      const r = await call(pool, method, path, body);
      expect(r.status, `${method} ${path}`).toBe(405);
    }
    expect((await json<unknown[]>(await call(pool, "GET", "/nodes"))).length).toBe(1);
    expect(await json(await call(pool, "GET", "/jobs"))).toEqual([]);
    expect((await claim(pool, "n1")).status).toBe(204);
  });
});
