// Hostile input, case by case (docs/protocol.md §10): malformed and non-object JSON,
// absurd numbers, wrong content types, bodies at and past 1 MiB, deep
// nesting, lone surrogates, hostile ids and artifact keys, bad query
// parameters — each with its exact status and detail, through the runtime's
// fetch path, and nothing stored for any of them. The generated version is
// fuzz.test.ts.

import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH } from "../../src/protocol/json";
import { MAX_JSON_BODY_BYTES } from "../../src/protocol/limits";
import { hasClearDetail } from "../fixtures/error-shape";
import { nestedArrays, nestedObjects } from "../fuzz/json-text";
import { freshPool, registration, storedObjects } from "./helpers";

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
const SHA = "ab".repeat(32);
const PART = (step: string, size = "3") =>
  `{"attempt_id": "a", "step": ${step}, "part": {"key": "k", "sha256": "${SHA}", "size_bytes": ${size}}}`;
const COMMIT = (worldSize: string) =>
  `{"attempt_id": "a", "step": 1, "expected_parts": [], "storage_prefix": "p", "world_size": ${worldSize}}`;
const JOB = (parameters: string) =>
  `{"metadata": {"name": "j"}, "spec": {"execution": {"backend": "leases"}, "image": {"repository": "r", "tag": "1"}, "workload": {"type": "hyperparameter_search", "parameters": ${parameters}}}}`;
const encoder = new TextEncoder();
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
    body: `{"output_sha256": "${SHA}", "evidence": ${nestedArrays(10_000)}}`,
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
    detail: "no such job",
  },
  {
    name: "percent-encoded traversal in a job id is 404",
    method: "GET",
    path: "/jobs/..%2F..%2Fnodes/tasks",
    status: 404,
    detail: "no such job",
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
    expect(hasClearDetail(body), text.slice(0, 300)).toBe(true);
    if (c.detail !== undefined) {
      const detail = body.detail;
      if (Array.isArray(detail))
        expect(detail.map((d: { type: string; msg: string }) => `${d.type} ${d.msg}`).join("; ")).toContain(c.detail);
      else expect(detail).toContain(c.detail);
    }
    // Nothing was stored for any of them.
    expect(await storedObjects(pool)).toEqual([]);
  });
});
