// Retention against `wrangler dev` (issue 12): with FLASHML_JOB_RETENTION_SECONDS=3
// a finished job leaves the pool's SQLite (flashedge_storage_bytes shrinks)
// and every read of it answers the same bytes, now from the R2 archive.
//
//   node scripts/retention-check.mjs
//
// Prints what it saw; exits non-zero when a read changed or storage did not shrink.
// @ts-check

import { createHash } from "node:crypto";
import { sleep, startWrangler, stopAll } from "../bench/lib.mjs";

const TASKS = 2_000;

const server = await startWrangler({ FLASHML_JOB_RETENTION_SECONDS: "3" });
let failed = false;
try {
  const base = `${server.base}/pools/retention/v1alpha1`;
  /** @param {string} path @param {unknown} [body] */
  const post = (path, body) =>
    fetch(`${base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const storage = async () => {
    const text = await (await fetch(`${base}/metrics`)).text();
    return Number(/^flashedge_storage_bytes\{[^}]*\} (\d+)/m.exec(text)?.[1]);
  };
  const fresh = await storage();

  // A job with history: one task committed with its output, the rest cancelled.
  const trials = Array.from({ length: TASKS }, () => ({}));
  const submitted = await post("/jobs", {
    apiVersion: "flashml.dev/v1alpha1",
    kind: "Job",
    metadata: { name: "retention-check" },
    spec: {
      execution: { backend: "leases" },
      image: { repository: "ghcr.io/flashml/runner", tag: "0.4.1" },
      workload: { type: "hyperparameter_search", parameters: { trials } },
    },
  });
  const job = /** @type {{ job_id: string }} */ (await submitted.json());
  await post("/nodes/register", {
    node_id: "n1",
    kubernetes_node: "",
    hostname: "n1",
    capabilities: { cpu_cores: 4, memory_bytes: 8e9, gpus: [], os: "linux", architecture: "amd64" },
  });
  const lease = /** @type {{ lease_id: string, task_id: string }} */ (
    await (await post("/leases/claim", { node_id: "n1" })).json()
  );
  const output = '{"loss": 0.25}';
  const key = `jobs/${job.job_id}/${lease.task_id}/metrics.json`;
  await fetch(`${base}/artifacts/${key}`, { method: "PUT", body: output });
  const sha = createHash("sha256").update(output).digest("hex");
  await post(`/attempts/${lease.lease_id}/complete`, { output_sha256: sha });
  await post(`/jobs/${job.job_id}/cancel`);

  const paths = [
    `/jobs/${job.job_id}`,
    `/jobs/${job.job_id}/tasks`,
    `/jobs/${job.job_id}/events`,
    `/jobs/${job.job_id}/events?after=1000&limit=5`,
    `/jobs/${job.job_id}/logs`,
    `/jobs/${job.job_id}/artifacts`,
    `/artifacts/${key}`,
    `/jobs/${job.job_id}/tasks/${lease.task_id}/checkpoints/lost-work?failed_at_step=3`,
  ];
  const read = () =>
    Promise.all(
      paths.map(async (p) => {
        const r = await fetch(`${base}${p}`);
        return `${r.status} ${createHash("sha256")
          .update(Buffer.from(await r.arrayBuffer()))
          .digest("hex")}`;
      }),
    );
  const before = await read();
  const full = await storage();
  // Retention is 3 s; the alarm archives at finish + 3 s.
  let after = full;
  for (let i = 0; i < 40 && after >= full; i++) {
    await sleep(500);
    after = await storage();
  }
  const again = await read();
  console.log(`job ${job.job_id}: ${TASKS} tasks, one committed, the rest cancelled`);
  console.log(`storage: fresh ${fresh} B, with the job ${full} B, after retention ${after} B`);
  for (const [i, p] of paths.entries()) {
    const same = before[i] === again[i];
    if (!same) failed = true;
    console.log(`${same ? "same" : "CHANGED"}  ${before[i]}  GET ${p}`);
  }
  const listed = /** @type {{ job_id: string }[]} */ (await (await fetch(`${base}/jobs`)).json());
  console.log(`GET /jobs lists it: ${listed.some((j) => j.job_id === job.job_id)}`);
  if (!(after < full)) {
    failed = true;
    console.log("storage did not shrink");
  }
} finally {
  await stopAll();
}
process.exit(failed ? 1 : 0);
