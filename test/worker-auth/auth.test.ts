import { createExecutionContext, runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import app from "../../src/index";
import type { Lease } from "../../src/protocol/tasks";
import { expireLeases, freshPool, registration, sha256, storedObjects, stub, trialsJob } from "../worker/helpers";

// This project's environment configures these (vitest.config.ts).
const TOKENS = { FLASHML_NODE_TOKENS: "n1:tok-n1, n2:tok-n2", FLASHML_OPERATOR_TOKENS: "ops:tok-ops" };
const OPEN: Settings = { FLASHML_NODE_TOKENS: "", FLASHML_OPERATOR_TOKENS: "" };

type Settings = Partial<
  Record<
    | "FLASHML_NODE_TOKENS"
    | "FLASHML_OPERATOR_TOKENS"
    | "FLASHML_REQUIRE_NODE_AUTH"
    | "FLASHML_JOIN_CODE"
    | "FLASHML_NODE_OWNERS",
    string
  >
>;

/**
 * A request through the real Worker. With the project's own settings it goes
 * through the runtime's fetch path; other settings are passed to the app as
 * its environment (in-process bodies cannot stream into R2, so those tests
 * send no artifact bytes).
 */
async function send(
  settings: Settings,
  pool: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: unknown,
) {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body instanceof Uint8Array || typeof body === "string") {
    init.body = body;
    // Set by any HTTP client; a Request built in-process carries none.
    (init.headers as Record<string, string>)["content-length"] = String(
      typeof body === "string" ? new TextEncoder().encode(body).length : body.length,
    );
  } else if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)["content-type"] = "application/json";
  }
  const url = path === "/healthz" ? "http://x/healthz" : `http://x/pools/${pool}/v1alpha1${path}`;
  if (settings === TOKENS) return exports.default.fetch(new Request(url, init));
  return app.fetch(new Request(url, init), { ...env, ...settings }, createExecutionContext());
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

const CALLERS = {
  "no token": {},
  "bad token": bearer("tok-wrong"),
  "the right node": bearer("tok-n1"),
  "another node": bearer("tok-n2"),
  operator: bearer("tok-ops"),
  "operator for the right node": { ...bearer("tok-ops"), "x-flashml-on-behalf-of": "n1" },
  "operator for another node": { ...bearer("tok-ops"), "x-flashml-on-behalf-of": "n2" },
  "operator with two delegation headers": { ...bearer("tok-ops"), "x-flashml-on-behalf-of": "n1, n2" },
  "operator with an empty delegation": { ...bearer("tok-ops"), "x-flashml-on-behalf-of": "" },
} as const;
type CallerName = keyof typeof CALLERS;

const JOB = {
  apiVersion: "flashml.dev/v1alpha1",
  kind: "Job",
  metadata: { name: "auth-job" },
  spec: {
    execution: { backend: "leases" },
    image: { repository: "r", tag: "1" },
    workload: { type: "hyperparameter_search", parameters: { trials: [{}] } },
  },
};

/** Submits a job as the operator, through the enforcing Worker; answers its id. */
async function submitAsOperator(pool: string, job: unknown = trialsJob(1)): Promise<string> {
  const r = await send(TOKENS, pool, "POST", "/jobs", bearer("tok-ops"), job);
  if (r.status !== 201) throw new Error(`submit: ${r.status} ${await r.text()}`);
  return ((await r.json()) as { job_id: string }).job_id;
}

/** A node's claim, through the enforcing Worker; throws unless it got a lease. */
async function claimAs(pool: string, token: string, nodeId: string): Promise<Lease> {
  const r = await send(TOKENS, pool, "POST", "/leases/claim", bearer(token), { node_id: nodeId });
  if (r.status !== 200) throw new Error(`claim: ${r.status} ${await r.text()}`);
  return (await r.json()) as Lease;
}

/** A pool where n1 and n2 are registered and n1 holds a lease on the one task of a submitted job. */
async function leasedPool() {
  const pool = freshPool();
  await send(TOKENS, pool, "POST", "/nodes/register", bearer("tok-n1"), registration("n1"));
  await send(TOKENS, pool, "POST", "/nodes/register", bearer("tok-n2"), registration("n2"));
  await submitAsOperator(pool);
  return { pool, lease: await claimAs(pool, "tok-n1", "n1") };
}

type Row = [
  string,
  (pool: string, lease: Lease, headers: Record<string, string>) => Promise<Response>,
  Record<CallerName, number>,
];
const ROWS: Row[] = [
  [
    "node heartbeat",
    (p, _l, h) => send(TOKENS, p, "POST", "/nodes/n1/heartbeat", h, { node_id: "n1" }),
    {
      "no token": 401,
      "bad token": 401,
      "the right node": 200,
      "another node": 403,
      operator: 401,
      "operator for the right node": 200,
      "operator for another node": 403,
      "operator with two delegation headers": 400,
      "operator with an empty delegation": 403,
    },
  ],
  [
    "attempt heartbeat",
    (p, l, h) => send(TOKENS, p, "POST", `/attempts/${l.lease_id}/heartbeat`, h),
    {
      "no token": 401,
      "bad token": 401,
      "the right node": 200,
      "another node": 403,
      operator: 401,
      "operator for the right node": 200,
      "operator for another node": 403,
      "operator with two delegation headers": 400,
      "operator with an empty delegation": 403,
    },
  ],
  [
    "attempt fail",
    (p, l, h) => send(TOKENS, p, "POST", `/attempts/${l.lease_id}/fail`, h, { reason: "x" }),
    {
      "no token": 401,
      "bad token": 401,
      "the right node": 200,
      "another node": 403,
      operator: 401,
      "operator for the right node": 200,
      "operator for another node": 403,
      "operator with two delegation headers": 400,
      "operator with an empty delegation": 403,
    },
  ],
  [
    "complete of an unknown lease",
    (p, _l, h) => send(TOKENS, p, "POST", "/attempts/ls-000000000000/complete", h, { output_sha256: "0".repeat(64) }),
    {
      "no token": 401,
      "bad token": 401,
      "the right node": 403,
      "another node": 403,
      operator: 401,
      "operator for the right node": 403,
      "operator for another node": 403,
      "operator with two delegation headers": 400,
      "operator with an empty delegation": 403,
    },
  ],
  [
    "artifact PUT into the held task",
    (p, l, h) => send(TOKENS, p, "PUT", `/artifacts/jobs/${l.job_id}/${l.task_id}/out.txt`, h, new Uint8Array([1])),
    {
      "no token": 401,
      "bad token": 401,
      "the right node": 200,
      "another node": 403,
      operator: 200,
      "operator for the right node": 200,
      "operator for another node": 403,
      "operator with two delegation headers": 400,
      "operator with an empty delegation": 403,
    },
  ],
  [
    "artifact PUT outside any task",
    (p, _l, h) => send(TOKENS, p, "PUT", "/artifacts/datasets/x.bin", h, new Uint8Array([1])),
    {
      "no token": 401,
      "bad token": 401,
      "the right node": 403,
      "another node": 403,
      operator: 200,
      "operator for the right node": 403,
      "operator for another node": 403,
      "operator with two delegation headers": 400,
      "operator with an empty delegation": 403,
    },
  ],
  [
    "node list",
    (p, _l, h) => send(TOKENS, p, "GET", "/nodes", h),
    {
      "no token": 401,
      "bad token": 401,
      "the right node": 200,
      "another node": 200,
      operator: 200,
      "operator for the right node": 200,
      "operator for another node": 200,
      "operator with two delegation headers": 400,
      "operator with an empty delegation": 403,
    },
  ],
  [
    "release of a held-back node (docs/protocol.md §13)",
    (p, _l, h) => send(TOKENS, p, "POST", "/nodes/n1/release", h),
    {
      "no token": 401,
      "bad token": 401,
      "the right node": 403,
      "another node": 403,
      operator: 200,
      "operator for the right node": 200,
      "operator for another node": 200,
      "operator with two delegation headers": 400,
      "operator with an empty delegation": 403,
    },
  ],
  [
    "job submission",
    (p, _l, h) => send(TOKENS, p, "POST", "/jobs", h, JOB),
    {
      "no token": 401,
      "bad token": 401,
      "the right node": 403,
      "another node": 403,
      operator: 201,
      "operator for the right node": 201,
      "operator for another node": 201,
      "operator with two delegation headers": 400,
      "operator with an empty delegation": 403,
    },
  ],
  [
    "claim",
    (p, _l, h) => send(TOKENS, p, "POST", "/leases/claim", h, { node_id: "n1" }),
    {
      "no token": 401,
      "bad token": 401,
      "the right node": 204,
      "another node": 204,
      operator: 401,
      "operator for the right node": 204,
      "operator for another node": 204,
      "operator with two delegation headers": 400,
      "operator with an empty delegation": 403,
    },
  ],
  [
    "register",
    (p, _l, h) => send(TOKENS, p, "POST", "/nodes/register", h, registration("n1")),
    {
      "no token": 401,
      "bad token": 401,
      "the right node": 200,
      "another node": 200,
      operator: 401,
      "operator for the right node": 200,
      "operator for another node": 200,
      "operator with two delegation headers": 400,
      "operator with an empty delegation": 403,
    },
  ],
];

describe("the auth matrix", () => {
  const cells = ROWS.flatMap(([route, act, expected]) =>
    (Object.keys(CALLERS) as CallerName[]).map((caller) => [route, caller, expected[caller], act] as const),
  );
  it.each(cells)("%s by %s answers %i", async (_route, caller, status, act) => {
    const { pool, lease } = await leasedPool();
    const r = await act(pool, lease, { ...CALLERS[caller] });
    expect(r.status).toBe(status);
    if (status >= 400) expect(((await r.json()) as { detail: unknown }).detail).toBeTruthy();
  });
});

describe("attack stories", () => {
  it("a node cannot fail another node's lease to steal its task", async () => {
    const { pool, lease } = await leasedPool();
    const r = await send(TOKENS, pool, "POST", `/attempts/${lease.lease_id}/fail`, bearer("tok-n2"), {
      reason: "steal",
    });
    expect(r.status).toBe(403);
    const state = await runInDurableObject(
      stub(pool),
      (_o, s) => s.storage.sql.exec<{ state: string }>("SELECT state FROM tasks").one().state,
    );
    expect(state).toBe("LEASED");
    expect((await send(TOKENS, pool, "POST", "/leases/claim", bearer("tok-n2"), { node_id: "n2" })).status).toBe(204);
  });

  it("a node cannot write into a task it does not hold", async () => {
    const { pool, lease } = await leasedPool();
    const dir = `jobs/${lease.job_id}/${lease.task_id}`;
    const r = await send(TOKENS, pool, "PUT", `/artifacts/${dir}/metrics.json`, bearer("tok-n2"), "poison");
    expect(r.status).toBe(403);
    expect(await storedObjects(pool)).toEqual([]);
    // The trailing slash matters: a sibling task sharing the prefix is not covered.
    expect((await send(TOKENS, pool, "PUT", `/artifacts/${dir}x/metrics.json`, bearer("tok-n1"), "x")).status).toBe(
      403,
    );
    // The holder itself may write there: only the other node was refused.
    expect((await send(TOKENS, pool, "PUT", `/artifacts/${dir}/metrics.json`, bearer("tok-n1"), "{}")).status).toBe(
      200,
    );
  });

  it("a slow upload that outlives its lease does not land", async () => {
    const pool = freshPool();
    await send(TOKENS, pool, "POST", "/nodes/register", bearer("tok-n1"), registration("n1"));
    await submitAsOperator(pool, trialsJob(1, { lease_seconds: 5 }));
    const lease = await claimAs(pool, "tok-n1", "n1");
    let feed!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({
      start: (c) => {
        feed = c;
      },
    });
    const put = exports.default.fetch(
      new Request(`http://x/pools/${pool}/v1alpha1/artifacts/jobs/${lease.job_id}/${lease.task_id}/metrics.json`, {
        method: "PUT",
        body,
        headers: { ...bearer("tok-n1"), "content-length": "4" },
        duplex: "half",
      } as RequestInit),
    );
    feed.enqueue(new Uint8Array([1, 2]));
    // The write check passed and the bytes are streaming: the upload is recorded (schema step 34).
    await expect
      .poll(() =>
        runInDurableObject(
          stub(pool),
          (_o, s) => s.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM uploads").one().n,
        ),
      )
      .toBe(1);
    expect(await expireLeases(pool)).toBe(true); // the lease dies mid-upload
    feed.enqueue(new Uint8Array([3, 4]));
    feed.close();
    const r = await put;
    expect(r.status).toBe(403);
    expect(await storedObjects(pool)).toEqual([]);
  });

  it("a node that registers as another is registered as itself", async () => {
    const pool = freshPool();
    await send(TOKENS, pool, "POST", "/nodes/register", bearer("tok-n2"), registration("n1"));
    const nodes = (await (await send(TOKENS, pool, "GET", "/nodes", bearer("tok-n2"))).json()) as Array<{
      node_id: string;
    }>;
    expect(nodes.map((n) => n.node_id)).toEqual(["n2"]);
  });

  it("a claim naming another node is made for the caller", async () => {
    const pool = freshPool();
    await send(TOKENS, pool, "POST", "/nodes/register", bearer("tok-n2"), registration("n2"));
    await submitAsOperator(pool);
    const r = await send(TOKENS, pool, "POST", "/leases/claim", bearer("tok-n2"), { node_id: "n1" });
    expect(((await r.json()) as Lease).node_id).toBe("n2");
  });

  it("a commit by the holder still works end to end when enforcing", async () => {
    const { pool, lease } = await leasedPool();
    await send(
      TOKENS,
      pool,
      "PUT",
      `/artifacts/jobs/${lease.job_id}/${lease.task_id}/metrics.json`,
      bearer("tok-n1"),
      "{}",
    );
    const r = await send(TOKENS, pool, "POST", `/attempts/${lease.lease_id}/complete`, bearer("tok-n1"), {
      output_sha256: await sha256("{}"),
    });
    expect(await r.json()).toEqual({ accepted: true });
  });
});

describe("configuration", () => {
  const refusing: Array<[string, Settings]> = [
    ["an empty token", { FLASHML_NODE_TOKENS: "n1:" }],
    ["an entry that is not name:token", { FLASHML_NODE_TOKENS: "n1-secret-token" }],
    ["a token listed twice", { FLASHML_NODE_TOKENS: "n1:dup-secret,n2:dup-secret" }],
    [
      "a token that is both a node and an operator token",
      { FLASHML_NODE_TOKENS: "n1:shared-secret", FLASHML_OPERATOR_TOKENS: "ops:shared-secret" },
    ],
    ["REQUIRE_NODE_AUTH=1 with no tokens", { ...OPEN, FLASHML_REQUIRE_NODE_AUTH: "1" }],
    // Owners decide which replicas are independent (docs/protocol.md §14): an unreadable list is untrustworthy configuration.
    ["an owner entry that is not node_id:owner", { ...TOKENS, FLASHML_NODE_OWNERS: "n1" }],
    ["a node given two owners", { ...TOKENS, FLASHML_NODE_OWNERS: "n1:alice, n1:bob" }],
    ["an empty owner", { ...TOKENS, FLASHML_NODE_OWNERS: "n1: , n2:bob" }],
  ];
  it.each(refusing)(
    "%s refuses every route with 503, healthz included, without naming a token",
    async (_name, settings) => {
      const pool = freshPool();
      for (const [method, path] of [
        ["GET", "/healthz"],
        ["GET", "/nodes"],
        ["POST", "/nodes/register"],
      ] as const) {
        const r = await send(
          settings,
          pool,
          method,
          path,
          bearer("dup-secret"),
          method === "POST" ? registration("n1") : undefined,
        );
        expect(r.status).toBe(503);
        const text = await r.text();
        expect(text).not.toMatch(/secret/);
        expect(text).toMatch(/FLASHML_|token/);
      }
    },
  );

  it("only operator tokens still enforces", async () => {
    const pool = freshPool();
    const onlyOperators = { ...OPEN, FLASHML_OPERATOR_TOKENS: "ops:tok-ops" };
    expect((await send(onlyOperators, pool, "GET", "/nodes")).status).toBe(401);
    expect((await send(onlyOperators, pool, "GET", "/nodes", bearer("tok-ops"))).status).toBe(200);
  });

  it("healthz needs no credential when enforcing", async () => {
    expect((await send(TOKENS, "x", "GET", "/healthz")).status).toBe(200);
  });

  it.each([
    ["empty", "Bearer "],
    ["no scheme", "tok-n1"],
    ["another scheme", "Basic dG9rLW4xOg=="],
    ["non-ASCII", "Bearer tok-n1\u00e9"],
    ["two tokens", "Bearer tok-n1 tok-n2"],
  ])("a %s Authorization header is a plain 401", async (_name, header) => {
    const r = await send(TOKENS, freshPool(), "GET", "/nodes", { authorization: header });
    expect(r.status).toBe(401);
  });

  it("the join code is required on register in open and enforcing mode alike", async () => {
    for (const settings of [
      { ...OPEN, FLASHML_JOIN_CODE: "let-me-in" },
      { ...TOKENS, FLASHML_JOIN_CODE: "let-me-in" },
    ]) {
      const pool = freshPool();
      const auth = settings.FLASHML_NODE_TOKENS ? bearer("tok-n1") : {};
      expect((await send(settings, pool, "POST", "/nodes/register", auth, registration("n1"))).status).toBe(403);
      expect(
        (
          await send(
            settings,
            pool,
            "POST",
            "/nodes/register",
            { ...auth, "x-flashml-join-code": "wrong" },
            registration("n1"),
          )
        ).status,
      ).toBe(403);
      expect(
        (
          await send(
            settings,
            pool,
            "POST",
            "/nodes/register",
            { ...auth, "x-flashml-join-code": "let-me-in" },
            registration("n1"),
          )
        ).status,
      ).toBe(200);
    }
  });
});
