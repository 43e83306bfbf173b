// Retention against `wrangler dev` (issue 12): with FLASHML_JOB_RETENTION_SECONDS=3
// a finished job leaves the pool's SQLite (flashedge_storage_bytes shrinks)
// and every read of it answers the same bytes, now from the R2 archive.
//
//   node scripts/retention-check.mjs
//
// Prints what it saw; exits non-zero when a read changed or storage did not shrink.
// @ts-check

import { BENCH, coordinator, ok, registration, sha256, sleep, startWrangler, stopAll } from "../test/support/index.mjs";

/** @import { JobAnswer, Lease } from "../test/support/index.mjs" */

const TASKS = 2_000;

const server = await startWrangler({ vars: { ...BENCH, FLASHML_JOB_RETENTION_SECONDS: "3" } });
let failed = false;
try {
  const api = coordinator(server.url, { pool: "retention" });
  const storage = async () => {
    const { text } = await api.send("GET", "/metrics");
    return Number(/^flashedge_storage_bytes\{[^}]*\} (\d+)/m.exec(text)?.[1]);
  };
  const fresh = await storage();

  // A job with history: one task committed with its output, the rest cancelled.
  const trials = Array.from({ length: TASKS }, () => ({}));
  /** @type {JobAnswer} */
  const job = ok(
    await api.submit({
      apiVersion: "flashml.dev/v1alpha1",
      kind: "Job",
      metadata: { name: "retention-check" },
      spec: {
        execution: { backend: "leases" },
        image: { repository: "ghcr.io/flashml/runner", tag: "0.4.1" },
        workload: { type: "hyperparameter_search", parameters: { trials } },
      },
    }),
    "POST /jobs",
  );
  ok(
    await api.register(
      registration("n1", {
        capabilities: { cpu_cores: 4, memory_bytes: 8e9, gpus: [], os: "linux", architecture: "amd64" },
      }),
    ),
    "register",
  );
  /** @type {Lease} */
  const lease = ok(await api.claim("n1"), "claim");
  const output = '{"loss": 0.25}';
  const key = `jobs/${job.job_id}/${lease.task_id}/metrics.json`;
  ok(await api.upload(key, output), "upload");
  ok(await api.complete(lease.lease_id, { output_sha256: sha256(output) }), "complete");
  ok(await api.send("POST", `/jobs/${job.job_id}/cancel`), "cancel");

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
        const r = await api.send("GET", p);
        return `${r.status} ${sha256(r.text)}`;
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
  /** @type {JobAnswer[]} */
  const listed = ok(await api.jobs(), "GET /jobs");
  console.log(`GET /jobs lists it: ${listed.some((j) => j.job_id === job.job_id)}`);
  if (!(after < full)) {
    failed = true;
    console.log("storage did not shrink");
  }
} finally {
  await stopAll();
}
process.exit(failed ? 1 : 0);
