import { afterEach, describe, expect, it, vi } from "vitest";
import type { Lease } from "../../src/protocol/tasks";
import {
  call,
  claim,
  expireLeases,
  freshPool,
  jobSpec,
  json,
  register,
  sha256,
  stub,
  submitJob,
  trialsJob,
  upload,
} from "../worker/helpers";

afterEach(() => vi.restoreAllMocks());

function captureLogs() {
  const lines: Array<Record<string, unknown>> = [];
  vi.spyOn(console, "log").mockImplementation((line: unknown) => {
    if (typeof line === "string" && line.startsWith("{")) lines.push(JSON.parse(line) as Record<string, unknown>);
  });
  return lines;
}

describe("structured logs", () => {
  it("write one JSON line per state change, with ids and no payload", async () => {
    const pool = freshPool();
    const lines = captureLogs();
    await register(pool, "n1");
    const r = await call(
      pool,
      "POST",
      "/jobs",
      jobSpec({ type: "hyperparameter_search", parameters: { trials: [{ secret: "s3cr3t-param" }, {}] } }),
    );
    const job = await json<{ job_id: string }>(r);
    const lease = await json<Lease>(await claim(pool, "n1"));
    await upload(pool, `jobs/${job.job_id}/${lease.task_id}/metrics.json`, "{}");
    await call(pool, "POST", `/attempts/${lease.lease_id}/complete`, { output_sha256: await sha256("{}") });

    const events = lines.map((l) => l.event);
    expect(events).toEqual([
      "NODE_REGISTERED",
      "JOB_ACCEPTED",
      "BACKEND_SELECTED",
      "LEASE_CLAIMED",
      "ARTIFACT_BOUND",
      "TASK_COMMIT_ACCEPTED",
    ]);
    expect(lines.find((l) => l.event === "LEASE_CLAIMED")).toMatchObject({
      level: "info",
      pool,
      job_id: job.job_id,
      task_id: lease.task_id,
      node_id: "n1",
    });
    expect(lines.find((l) => l.event === "JOB_ACCEPTED")).toMatchObject({ tasks: 2 });
    expect(JSON.stringify(lines)).not.toContain("s3cr3t-param");
  });

  it("log a lease that expires by the alarm", async () => {
    const pool = freshPool();
    await register(pool, "n1");
    // Without retryWorkerLoss the expiry uses the task's one attempt (docs/protocol.md §13).
    const retryPolicy = { maxTaskAttempts: 1, retryWorkerLoss: false };
    await submitJob(pool, trialsJob(1, { lease_seconds: 5 }, { retryPolicy }));
    const lines = captureLogs();
    expect((await claim(pool, "n1")).status).toBe(200);
    expect(await expireLeases(pool)).toBe(true);
    expect(lines.map((l) => l.event)).toEqual(["LEASE_CLAIMED", "LEASE_EXPIRED", "TASK_EXHAUSTED", "JOB_FAILED"]);
  });
});

describe("enrolment logs", () => {
  it("write a line per request, approval, denial, issue and revocation, naming the operator and no secret", async () => {
    const pool = freshPool();
    const lines = captureLogs();
    const object = stub(pool);
    const machine = { node_id: "laptop-7", hostname: "laptop-7.local", platform: "linux-x86_64" };
    const asked = await object.requestDeviceCode(machine, "203.0.113.9");
    const other = await object.requestDeviceCode({ ...machine, node_id: "laptop-8" }, null);
    if (!asked.ok || !other.ok) throw new Error("no code");
    expect(await object.decideDeviceCode(asked.userCode, "approved", "ops")).toBe("laptop-7");
    expect(await object.decideDeviceCode(other.userCode, "denied", "ops")).toBe("laptop-8");
    const issued = await object.redeemDeviceCode(asked.deviceCode);
    expect(issued?.node_id).toBe("laptop-7");
    expect(await object.revokeCredential("laptop-7", "ops")).toBe(true);

    expect(lines.map(({ event, node_id, operator }) => ({ event, node_id, operator }))).toEqual([
      { event: "ENROLMENT_REQUESTED", node_id: "laptop-7", operator: undefined },
      { event: "ENROLMENT_REQUESTED", node_id: "laptop-8", operator: undefined },
      { event: "ENROLMENT_APPROVED", node_id: "laptop-7", operator: "ops" },
      { event: "ENROLMENT_DENIED", node_id: "laptop-8", operator: "ops" },
      { event: "CREDENTIAL_ISSUED", node_id: "laptop-7", operator: undefined },
      { event: "CREDENTIAL_REVOKED", node_id: "laptop-7", operator: "ops" },
    ]);
    expect(lines.every((l) => l.pool === pool && l.level === "info")).toBe(true);
    const logged = JSON.stringify(lines);
    for (const secret of [asked.deviceCode, asked.userCode, other.userCode, issued?.token ?? "?"]) {
      expect(logged).not.toContain(secret);
    }
  });
});
