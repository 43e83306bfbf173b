// The dashboard and placement explanations when authentication is enforced
// (this project's tokens: vitest.config.ts). The page holds no data and needs
// no credential; every read it makes does.

import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DASHBOARD_HTML } from "../../src/dashboard/page";
import type { DashboardSummary } from "../../src/protocol/dashboard";
import { trialsJob } from "../fixtures/jobspec";
import { freshPool, submitJob } from "../worker/helpers";

function get(path: string, token?: string) {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  return exports.default.fetch(new Request(`http://flashedge.test${path}`, { headers }));
}

describe("dashboard and placement under enforced authentication", () => {
  it.each(["/", "/pools/team-a/"])("the page %s is served without a credential", async (path) => {
    const r = await get(path);
    expect(r.status).toBe(200);
    expect(await r.text()).toBe(DASHBOARD_HTML);
  });

  it.each([
    ["the dashboard summary", "/dashboard"],
    ["a placement explanation", "/jobs/{job}/tasks/trial-000/placement"],
  ])("%s needs a valid credential: 401 without, 200 with a node or operator token", async (_what, path) => {
    const pool = freshPool();
    const job = await submitJob(pool, trialsJob(1), { authorization: "Bearer tok-ops" });
    const url = `/pools/${pool}/v1alpha1${path.replace("{job}", job.job_id)}`;
    for (const token of [undefined, "tok-wrong"]) {
      const r = await get(url, token);
      expect(r.status).toBe(401);
      expect(r.headers.get("www-authenticate")).toBe("Bearer");
      expect(await r.json()).toEqual({ detail: "invalid or missing node token" });
    }
    for (const token of ["tok-n1", "tok-ops"]) expect((await get(url, token)).status).toBe(200);
  });

  it("shows the submitting operator as a job's tenant, whatever its tenant label says", async () => {
    const pool = freshPool();
    const spec = trialsJob(1);
    const job = await submitJob(
      pool,
      { ...spec, metadata: { ...spec.metadata, labels: { "flashml.dev/tenant": "team-a" } } },
      { authorization: "Bearer tok-ops" },
    );
    const r = await get(`/pools/${pool}/v1alpha1/dashboard`, "tok-ops");
    const summary = (await r.json()) as DashboardSummary;
    expect(summary.jobs.items).toEqual([expect.objectContaining({ job_id: job.job_id, tenant: "ops", priority: 0 })]);
  });
});
