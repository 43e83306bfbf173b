// The fuzz generator (docs/protocol.md §10, issue 5): from a seeded Rng and the ids of a
// seeded pool, an endless stream of requests that are each definitely
// invalid — malformed or non-object JSON, a wrong type in a field, a wrong
// content type, a body past 1 MiB, a bad pool name, a wrong method, an
// invalid artifact key, a bad query parameter, an unknown id. Body-less
// routes that change state for a real id (attempt heartbeat, cancel, verify)
// only ever get ids that are unknown or no longer live.
//
// It must never make a valid request by accident: the fuzz test compares
// every row of the pool before and after, with no column excluded.
// `mightBeValid` is its own guard. Pure: no Cloudflare imports, no clock,
// no randomness but the Rng it is given.

import { MAX_JSON_DEPTH } from "../../src/protocol/json";
import { DASHBOARD_LIMIT_MAX, MAX_JSON_BODY_BYTES } from "../../src/protocol/limits";
import { registration } from "../fixtures/registration";
import type { Rng } from "../fixtures/rng";
import { type Body, deleteAt, encode, nestedArrays, nestedObjects, raw, setAt, setOwn } from "./json-text";
import {
  BAD_POOLS,
  CLAIM_FIELDS,
  COMMIT_FIELDS,
  COMPLETE_FIELDS,
  FAIL_FIELDS,
  type Field,
  HEARTBEAT_FIELDS,
  HOSTILE_IDS,
  HOSTILE_KEYS,
  HOSTILE_SEGMENTS_RAW,
  JOB_FIELDS,
  JSON_TYPES,
  MALFORMED,
  NOISE,
  NOT_JSON_VALUES,
  PARTS_FIELDS,
  QUARANTINE_FIELDS,
  REGISTER_FIELDS,
  WRONG_JSON_TYPES,
  WRONG_TYPES,
} from "./values";

/** The ids of the seeded pool the generator aims at (the fuzz test builds it). */
export type World = {
  pool: string;
  nodes: string[];
  job: string;
  /** trial-000: leased (live), trial-001: completed, trial-002: pending. */
  tasks: { live: string; done: string; pending: string };
  leases: { live: string; dead: string; done: string };
  manifest: string;
  artifactKeys: string[];
};

/** One generated request, with the route and defect it was made for. */
export type FuzzRequest = {
  route: string;
  defect: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: Uint8Array;
  /** For a wrong method: the Allow header the 405 must carry. */
  allow?: string;
};

/** The seeded pool's job: hour-long leases, so nothing expires (and no sweep changes state) mid-test. */
export const fuzzJobSpec = () => ({
  apiVersion: "flashml.dev/v1alpha1",
  kind: "Job",
  metadata: { name: "fuzz-job", labels: { team: "ñ-😀" } },
  spec: {
    execution: { backend: "leases" },
    image: { repository: "ghcr.io/flashml/runner", tag: "0.4.1" },
    workload: {
      type: "hyperparameter_search",
      parameters: { trials: [{ c: 0 }, { c: 1 }, { c: 2 }], lease_seconds: 3600 },
    },
  },
});

function segment(rng: Rng, real: readonly string[] = []): string {
  const roll = rng.below(10);
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

/** What the spec says about a key (docs/protocol.md §7), written here independently of src/protocol/keys.ts. */
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
export function generator(world: World, rng: Rng) {
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
    register: (): Body => registration(rng.pick(["n1", "n-new", "ñ-😀"]), { labels: { a: "b" } }, rng.below(3)),
    heartbeat: (): Body => ({
      node_id: rng.pick(nodes),
      status: rng.pick(["online", "draining", "terminating"]),
      pools: ["team-a"],
    }),
    claim: (): Body => ({ node_id: rng.pick(nodes), job_id: rng.pick([job, null]) }),
    complete: (): Body => ({ output_sha256: "ab".repeat(32), evidence: { wall_seconds: 1.5, exit_code: 0 } }),
    fail: (): Body => ({ reason: "out of memory" }),
    job: (): Body => fuzzJobSpec(),
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
    const n = rng.chance(0.5) ? rng.below(3) + 1 : 0;
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
        return { defect: "truncated", text: text.slice(0, rng.below(text.length)), contentType };
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
    const bytes = rng.bytes(rng.below(64));
    const roll = rng.below(11);
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
  ): FuzzRequest {
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

  function next(): FuzzRequest {
    const roll = rng.below(100);
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
export function mightBeValid(world: World, r: FuzzRequest): string | null {
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

/** One line naming the request: route, defect, method, URL, headers and the start of the body. */
export function describeRequest(r: FuzzRequest): string {
  const body = r.body ? new TextDecoder().decode(r.body.subarray(0, 160)) : "";
  const url = r.url.length > 200 ? `${r.url.slice(0, 200)}…` : r.url;
  return `[${r.route} · ${r.defect}] ${r.method} ${url} ${JSON.stringify(r.headers)} ${JSON.stringify(body)}${r.body && r.body.length > 160 ? `… (${r.body.length} bytes)` : ""}`;
}
