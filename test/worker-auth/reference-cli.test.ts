// The reference CLI against a secured pool (docs/protocol.md §6, §9): `flashruntime
// submit-spec|status|events|logs|cancel --api URL`, replayed request for
// request as it sends them. It uses httpx, which takes credentials from the
// URL's userinfo, percent-decodes them and sends them as HTTP Basic; the
// pool must take the password as the token and the user name as its name.

import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import app from "../../src/index";
import { freshPool, trialsJob } from "../worker/helpers";

// An operator token with characters a URL's userinfo must percent-encode.
const TOKEN = "p@ss:w/rd%x?#";
const SETTINGS = { ...env, FLASHML_OPERATOR_TOKENS: `ops:${TOKEN},other:tok-other` };

/** What httpx does with `--api` when it carries userinfo: the URL without it, and a Basic header from it. */
function httpxRequest(api: string, method: string, path: string, body?: unknown): Request {
  const url = new URL(api);
  const user = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  url.username = "";
  url.password = "";
  const bytes = new TextEncoder().encode(`${user}:${password}`);
  const headers: Record<string, string> = {
    authorization: `Basic ${btoa(String.fromCharCode(...bytes))}`,
    accept: "*/*",
    "user-agent": "python-httpx/0.28.1",
  };
  if (body !== undefined) headers["content-type"] = "application/json";
  return new Request(`${url.origin}${url.pathname.replace(/\/$/, "")}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

function cli(api: string, method: string, path: string, body?: unknown) {
  return app.fetch(httpxRequest(api, method, path, body), SETTINGS, createExecutionContext());
}

const apiFor = (pool: string, user = "ops", password = TOKEN) =>
  `https://${encodeURIComponent(user)}:${encodeURIComponent(password)}@x/pools/${pool}`;

describe("the reference CLI on a secured pool, through a URL with credentials", () => {
  it("the URL really percent-encodes the token, and httpx's decoding gives it back", () => {
    const url = new URL(apiFor("p"));
    expect(url.password).not.toBe(TOKEN);
    expect(decodeURIComponent(url.password)).toBe(TOKEN);
  });

  it("submit-spec, status, events, logs and cancel all work, each answer shaped as the CLI reads it", async () => {
    const api = apiFor(freshPool());
    const submitted = await cli(api, "POST", "/v1alpha1/jobs", trialsJob(2));
    expect(submitted.status).toBe(201);
    const job = await submitted.json<{ job_id: string; state: string }>();
    expect(job).toMatchObject({ job_id: expect.any(String), state: "RUNNING" });

    const status = await cli(api, "GET", `/v1alpha1/jobs/${job.job_id}`);
    expect(status.status).toBe(200);
    expect(await status.json()).toMatchObject({ job_id: job.job_id, state: "RUNNING" });

    const events = await cli(api, "GET", `/v1alpha1/jobs/${job.job_id}/events`);
    expect(events.status).toBe(200);
    const ledger = await events.json<{ type: string }[]>();
    expect(ledger.map((e) => e.type)).toEqual(["JOB_ACCEPTED", "BACKEND_SELECTED", "TASK_CREATED", "TASK_CREATED"]);

    const logs = await cli(api, "GET", `/v1alpha1/jobs/${job.job_id}/logs`);
    expect(logs.status).toBe(200);
    expect(await logs.json()).toEqual({ logs: "" });

    const cancelled = await cli(api, "POST", `/v1alpha1/jobs/${job.job_id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(await cancelled.json()).toMatchObject({ job_id: job.job_id, state: "CANCELLED" });
  });

  it("status of an unknown job is the reference's 404", async () => {
    const r = await cli(apiFor(freshPool()), "GET", "/v1alpha1/jobs/000000000000");
    expect(r.status).toBe(404);
    expect(await r.json()).toEqual({ detail: "no such job: 000000000000" });
  });

  it.each<[string, string, string]>([
    ["the operator's token under another operator's name", "other", TOKEN],
    ["the operator's token under a made-up name", "admin", TOKEN],
    ["a node token under the operator's name", "ops", "tok-n1"],
    ["a wrong password", "ops", "tok-ops"],
    ["an empty password", "ops", ""],
  ])("Basic with %s is a 401 that names Basic in its challenge", async (_what, user, password) => {
    const r = await cli(apiFor(freshPool(), user, password), "POST", "/v1alpha1/jobs", trialsJob(1));
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toBe('Bearer, Basic realm="flashedge", charset="UTF-8"');
    expect(await r.json()).toEqual({ detail: "invalid or missing node token" });
  });

  it.each([
    ["base64 that does not decode", "Basic !!!!"],
    ["no colon in the decoded text", `Basic ${btoa("ops")}`],
    ["the scheme with no value", "Basic"],
  ])("a malformed Basic header (%s) is a 401, never a 500", async (_what, authorization) => {
    const r = await app.fetch(
      new Request(`http://x/pools/${freshPool()}/v1alpha1/jobs`, { headers: { authorization } }),
      SETTINGS,
      createExecutionContext(),
    );
    expect(r.status).toBe(401);
  });

  it("a node's token as Basic, under its node id, reads as that node: jobs can be read, not submitted", async () => {
    const pool = freshPool();
    const asNode = apiFor(pool, "n1", "tok-n1");
    expect((await cli(asNode, "GET", "/v1alpha1/jobs")).status).toBe(200);
    expect((await cli(asNode, "POST", "/v1alpha1/jobs", trialsJob(1))).status).toBe(403);
  });
});
