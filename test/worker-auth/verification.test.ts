// Verified results (docs/protocol.md §14) with tokens enforced: a replica's holder
// writes only under its own replica's prefix, so it can neither overwrite
// another replica's output nor write the task's key the quorum binds.

import { describe, expect, it } from "vitest";
import type { Lease } from "../../src/protocol/tasks";
import { freshPool, registration, sha256, trialsJob } from "../worker/helpers";
import { bearer, call } from "./helpers";

describe("a replica's writes", () => {
  it("go under its own prefix only: not another replica's, not the task's key", async () => {
    const pool = freshPool();
    const spec = trialsJob(1);
    const job = { ...spec, metadata: { ...spec.metadata, labels: { "flashml.dev/replicas": "2" } } };
    const submitted = await call(pool, "POST", "/jobs", bearer("tok-ops"), job);
    expect(submitted.status).toBe(201);
    const jobId = (await submitted.json<{ job_id: string }>()).job_id;
    const leases: Record<string, Lease> = {};
    for (const node of ["n1", "n2"]) {
      const token = `tok-${node}`;
      expect((await call(pool, "POST", "/nodes/register", bearer(token), registration(node))).status).toBe(200);
      const r = await call(pool, "POST", "/leases/claim", bearer(token), { node_id: node });
      leases[node] = await r.json<Lease>();
    }
    const task = `jobs/${jobId}/trial-000`;
    const put = (token: string, key: string, body: string) =>
      call(pool, "PUT", `/artifacts/${key}`, bearer(token), body);

    const own = await put("tok-n1", `${task}/r1/metrics.json`, '{"loss": 0.3}');
    expect(own.status).toBe(200);
    for (const key of [`${task}/r2/metrics.json`, `${task}/metrics.json`, `${task}/r1b/metrics.json`]) {
      const refused = await put("tok-n1", key, '{"loss": 0.0}');
      expect(refused.status, key).toBe(403);
      expect((await refused.json<{ detail: string }>()).detail).toBe(
        `node n1 runs a replica of this task: it writes only under '${task}/r1/'`,
      );
    }
    // The honest replica's output is untouched, so the two agree.
    expect((await put("tok-n2", `${task}/r2/metrics.json`, '{"loss": 0.3}')).status).toBe(200);
    for (const node of ["n1", "n2"]) {
      const done = await call(pool, "POST", `/attempts/${leases[node]!.lease_id}/complete`, bearer(`tok-${node}`), {
        output_sha256: await sha256('{"loss": 0.3}'),
      });
      expect(await done.json()).toEqual({ accepted: true });
    }
    const read = await call(pool, "GET", `/artifacts/${task}/metrics.json`, bearer("tok-n2"));
    expect(await read.json()).toEqual({ loss: 0.3 });
  });
});
