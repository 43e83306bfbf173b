// The fuzz generator's vocabulary: for each request body, the fields and the
// values that are wrong for each (never accidentally right); and the wrong
// content types, malformed texts, hostile keys, path segments, ids and pool
// names it sends. Pure data. A value added here must be wrong wherever the
// generator may put it, or the fuzz test reports an accepted request.

import { raw } from "./json-text";

// ---------------------------------------------------------------------------
// Values that are wrong for a field of a given type

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
/** Wrong for a sha256 field (docs/protocol.md §12): anything but exactly 64 lowercase hex characters. */
const NOT_SHA256 = [
  ...NOT_STRING_NOT_NULL,
  "",
  "0",
  "sha-good",
  "a".repeat(63),
  "a".repeat(65),
  "A".repeat(64),
  `${"a".repeat(63)}g`,
  `sha256:${"a".repeat(64)}`,
  `${"a".repeat(64)}\n`,
];

export type Field = { path: string[]; bad: readonly unknown[]; required?: boolean };

export const REGISTER_FIELDS: Field[] = [
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
      [{ index: 0, memory_total_mb: 1.5 }],
      [{ index: 0, memory_total_mb: "81920" }],
      [{ index: 0, compute_capability: 8.0 }],
      [{ index: 0, driver_version: 535 }],
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

export const HEARTBEAT_FIELDS: Field[] = [
  { path: ["node_id"], bad: NOT_STRING_NOT_NULL, required: true },
  { path: ["timestamp"], bad: ["yesterday", "", "2026-13-45T99:99:99Z", "2026-11-29", 1, null, true] },
  { path: ["status"], bad: ["offline", "ONLINE", "", 1, null] },
  { path: ["pools"], bad: NOT_STRING_LIST },
  { path: ["schema_version"], bad: NOT_SCHEMA_VERSION },
];

export const CLAIM_FIELDS: Field[] = [
  { path: ["node_id"], bad: NOT_STRING_NOT_NULL, required: true },
  { path: ["job_id"], bad: NOT_STRING },
];

export const COMPLETE_FIELDS: Field[] = [{ path: ["output_sha256"], bad: NOT_SHA256, required: true }];
export const FAIL_FIELDS: Field[] = [{ path: ["reason"], bad: NOT_STRING_NOT_NULL, required: true }];
export const QUARANTINE_FIELDS: Field[] = [
  { path: ["reason"], bad: ["", "   ", "\n\t", ...NOT_STRING_NOT_NULL], required: true },
];

const PART_FIELDS = (at: string[]): Field[] => [
  { path: [...at, "key"], bad: NOT_STRING_NOT_NULL, required: true },
  { path: [...at, "sha256"], bad: NOT_SHA256, required: true },
  { path: [...at, "size_bytes"], bad: NOT_INT_MIN0, required: true },
];

export const PARTS_FIELDS: Field[] = [
  { path: ["attempt_id"], bad: NOT_STRING_NOT_NULL, required: true },
  { path: ["step"], bad: NOT_INT_MIN0, required: true },
  { path: ["part"], bad: NOT_OBJECT, required: true },
  ...PART_FIELDS(["part"]),
];

export const COMMIT_FIELDS: Field[] = [
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

export const JOB_FIELDS: Field[] = [
  { path: ["apiVersion"], bad: ["v1", "flashml.dev/v1", "", 1, null] },
  { path: ["kind"], bad: ["Pod", "job", "", 1, null] },
  { path: ["metadata"], bad: NOT_OBJECT, required: true },
  {
    path: ["metadata", "name"],
    bad: ["", "UPPER", "a_b", "-a", "a-", "ñ", "😀", "a".repeat(64), "a\u0000", "a\u202eb", 1, null, []],
    required: true,
  },
  { path: ["metadata", "labels"], bad: NOT_STRING_MAP },
  // The fuzz job asks for no GPU, so even a well-formed GPU label is wrong on it (docs/protocol.md §4 gate 4).
  {
    path: ["metadata", "labels", "flashml.dev/gpu-memory-mb"],
    bad: ["", "0", "-1", "1.5", "40 GB", " 40960", "1e5", "40960", 40960, null],
  },
  {
    path: ["metadata", "labels", "flashml.dev/gpu-compute-capability"],
    bad: ["", "8", "8.0.0", "v8.0", "8,0", "8.0", 8, null],
  },
  { path: ["metadata", "labels", "flashml.dev/gpu-driver-version"], bad: ["", "535.", "r535", "535..54", "535", null] },
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
  {
    path: ["spec", "workload", "parameters", "lease_seconds"],
    bad: [0, -1, 4.9, "60", raw("1e400"), raw("-0"), true, []],
  },
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
// Content types, texts, keys, path segments and pool names

export const JSON_TYPES = [
  "application/json",
  "application/json; charset=utf-8",
  "Application/JSON",
  "application/vnd.flashml+json",
  null,
];
export const WRONG_TYPES = [
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
export const MALFORMED = [
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
export const NOT_JSON_VALUES = [
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
export const WRONG_JSON_TYPES = [
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
export const HOSTILE_KEYS = [
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
export const NOISE = [
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
export const HOSTILE_SEGMENTS_RAW = [
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
export const HOSTILE_IDS = [
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

export const BAD_POOLS = [
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
