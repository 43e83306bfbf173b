// Over-HTTP benchmarks (issue 8, parts 2–4) against `wrangler dev` on
// 127.0.0.1: the whole stack a real agent talks to — Worker, RPC to the pool
// object, SQLite, local R2 — on this machine, client included.
//
//   node bench/http.mjs [--runs 3] [--nodes 1,8,32] [--cycles 900] [--expiry-samples 8]
//
// 2. N concurrent simulated nodes loop claim → attempt heartbeat → artifact
//    upload → complete, with a 1,000- and a 10,000-task queue.
// 3. Submission: the time to accept one 10,000-task job (one POST /jobs).
// 4. Failure detection: a 2 s lease nobody renews or polls; GET .../tasks
//    (which never sweeps) every 20 ms until the alarm has requeued it.
//
// Starts its own wrangler dev (fresh --persist-to directory, free port),
// stops it by its process group at the end or on error, and removes the
// directory. Every loop is bounded. Writes bench/results/http.json.

import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import { join } from "node:path";
import { machine, median, option, percentile, ROOT, round, spread, today, writeResult } from "./lib.mjs";

const RUNS = Number(option("runs", "3"));
const NODE_COUNTS = option("nodes", "1,8,32").split(",").map(Number);
const CYCLES = Number(option("cycles", "900"));
const EXPIRY_SAMPLES = Number(option("expiry-samples", "8"));
const DEPTHS = [1000, 10000];

// -- wrangler dev ------------------------------------------------------------

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function startWrangler() {
  const port = await freePort();
  const persist = mkdtempSync(join(os.tmpdir(), "flashedge-bench-"));
  const child = spawn(
    process.execPath,
    [
      join(ROOT, "node_modules/wrangler/bin/wrangler.js"),
      "dev",
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--persist-to",
      persist,
      "--show-interactive-dev-session=false",
      "--log-level",
      "warn",
      // Measured as the figures in BENCHMARKS.md were: without per-change log lines.
      "--var",
      "FLASHML_LOG_STATE_CHANGES:0",
    ],
    // Its own process group, so stopping it also stops the workerd it spawns.
    {
      cwd: ROOT,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    },
  );
  let log = "";
  child.stdout.on("data", (d) => (log = (log + d).slice(-8000)));
  child.stderr.on("data", (d) => (log = (log + d).slice(-8000)));
  let exited = false;
  const exit = new Promise((resolve) =>
    child.on("exit", () => {
      exited = true;
      resolve();
    }),
  );

  const stop = async () => {
    if (!exited) {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // already gone
      }
      await Promise.race([exit, sleep(5000)]);
      if (!exited) {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // already gone
        }
        await Promise.race([exit, sleep(2000)]);
      }
    }
    rmSync(persist, { recursive: true, force: true });
  };

  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline && !exited) {
    try {
      const r = await fetch(`${base}/healthz`);
      if (r.status === 200) return { base, pid: child.pid, stop };
    } catch {
      // not listening yet
    }
    await sleep(250);
  }
  await stop();
  throw new Error(`wrangler dev did not become healthy on ${base}:\n${log}`);
}

// -- the agent's requests ----------------------------------------------------

const sha256 = (text) => createHash("sha256").update(text).digest("hex");

function client(base) {
  const api = (pool) => `${base}/pools/${pool}/v1alpha1`;
  const expect = async (response, statuses, what) => {
    if (!statuses.includes(response.status)) {
      throw new Error(`${what}: HTTP ${response.status} ${await response.text()}`);
    }
    return response;
  };
  const postJson = (url, body) =>
    fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  return {
    async register(pool, nodeId) {
      const body = {
        node_id: nodeId,
        kubernetes_node: "",
        hostname: `${nodeId}.bench`,
        capabilities: { cpu_cores: 4 },
      };
      await (await expect(await postJson(`${api(pool)}/nodes/register`, body), [200], "register")).text();
    },
    /** Submits a hyperparameter_search job of `trials` tasks; returns its id and the request's duration. */
    async submit(pool, trials, parameters = {}) {
      const spec = {
        apiVersion: "flashml.dev/v1alpha1",
        kind: "Job",
        metadata: { name: "bench" },
        spec: {
          execution: { backend: "leases" },
          image: { repository: "r", tag: "1" },
          workload: {
            type: "hyperparameter_search",
            parameters: { trials: Array.from({ length: trials }, (_, i) => ({ C: i % 100, seed: i })), ...parameters },
          },
        },
      };
      const t0 = performance.now();
      const r = await expect(await postJson(`${api(pool)}/jobs`, spec), [201], "submit");
      const record = await r.json();
      return { jobId: record.job_id, ms: performance.now() - t0, record };
    },
    async claim(pool, nodeId) {
      const r = await expect(await postJson(`${api(pool)}/leases/claim`, { node_id: nodeId }), [200, 204], "claim");
      if (r.status !== 204) return r.json();
      await r.text();
      return null;
    },
    async heartbeat(pool, leaseId) {
      await (await expect(await postJson(`${api(pool)}/attempts/${leaseId}/heartbeat`), [200], "heartbeat")).text();
    },
    async nodeHeartbeat(pool, nodeId) {
      await (
        await expect(
          await postJson(`${api(pool)}/nodes/${nodeId}/heartbeat`, { node_id: nodeId, status: "online" }),
          [200],
          "node heartbeat",
        )
      ).text();
    },
    async upload(pool, key, text) {
      const r = await fetch(`${api(pool)}/artifacts/${key}`, { method: "PUT", body: text });
      await (await expect(r, [200], "upload")).text();
    },
    async complete(pool, leaseId, outputSha256) {
      const r = await expect(
        await postJson(`${api(pool)}/attempts/${leaseId}/complete`, { output_sha256: outputSha256 }),
        [200],
        "complete",
      );
      return r.json();
    },
    async tasks(pool, jobId) {
      return (await expect(await fetch(`${api(pool)}/jobs/${jobId}/tasks`), [200], "tasks")).json();
    },
    async healthz() {
      await (await expect(await fetch(`${base}/healthz`), [200], "healthz")).text();
    },
  };
}

// -- 2. agent loops ------------------------------------------------------------

/** N nodes share a budget of `cycles` claim → heartbeat → upload → complete loops. */
async function agentRun(api, pool, nodes, cycles) {
  const ids = Array.from({ length: nodes }, (_, i) => `node-${i}`);
  await Promise.all(ids.map((id) => api.register(pool, id)));
  let budget = cycles;
  const rtt = { claim: [], heartbeat: [], upload: [], complete: [] };
  const timed = async (name, f) => {
    const t0 = performance.now();
    const value = await f();
    rtt[name].push(performance.now() - t0);
    return value;
  };
  let accepted = 0;
  const loop = async (nodeId) => {
    while (budget > 0) {
      budget--;
      const lease = await timed("claim", () => api.claim(pool, nodeId));
      if (lease === null) throw new Error(`${nodeId} found the queue empty`);
      await timed("heartbeat", () => api.heartbeat(pool, lease.lease_id));
      const output = JSON.stringify({ accuracy: 0.9, task: lease.task_id });
      await timed("upload", () => api.upload(pool, `jobs/${lease.job_id}/${lease.task_id}/metrics.json`, output));
      const verdict = await timed("complete", () => api.complete(pool, lease.lease_id, sha256(output)));
      if (verdict.accepted !== true) throw new Error(`commit of ${lease.task_id} refused: ${JSON.stringify(verdict)}`);
      accepted++;
    }
  };
  const t0 = performance.now();
  await Promise.all(ids.map(loop));
  const seconds = (performance.now() - t0) / 1000;
  const p = (name, q) => round(percentile(rtt[name], q), 2);
  return {
    claims_per_s: round(accepted / seconds, 1),
    requests_per_s: round((4 * accepted) / seconds, 1),
    claim_ms_p50: p("claim", 50),
    claim_ms_p99: p("claim", 99),
    heartbeat_ms_p50: p("heartbeat", 50),
    upload_ms_p50: p("upload", 50),
    complete_ms_p50: p("complete", 50),
    cycles: accepted,
  };
}

// -- 4. failure detection ----------------------------------------------------

async function expirySample(api, index) {
  const pool = `expiry-${index}-${Date.now().toString(36)}`;
  await api.register(pool, "lost-node");
  const { jobId } = await api.submit(pool, 1, { lease_seconds: 2 });
  const lease = await api.claim(pool, "lost-node");
  if (lease === null) throw new Error("expiry: nothing to claim");
  const deadline = Date.parse(lease.deadline);
  const polls = [];
  const giveUp = deadline + 10_000;
  while (Date.now() < giveUp) {
    const t0 = performance.now();
    const [row] = await api.tasks(pool, jobId);
    polls.push(performance.now() - t0);
    if (row.state === "PENDING") {
      return { after_deadline_ms: Date.now() - deadline, poll_ms_p50: round(median(polls), 2), attempts: row.attempts };
    }
    await sleep(20);
  }
  return { after_deadline_ms: null, poll_ms_p50: round(median(polls), 2) };
}

// -- main --------------------------------------------------------------------

const started = Date.now();
const host = machine();
const server = await startWrangler();
const stopOnSignal = () => void server.stop().then(() => process.exit(130));
process.once("SIGINT", stopOnSignal);
process.once("SIGTERM", stopOnSignal);
console.log(`wrangler dev on ${server.base} (pid ${server.pid})`);

let result;
try {
  const api = client(server.base);
  // Warm up: the first requests compile the Worker and start objects.
  const warm = `warm-${Date.now().toString(36)}`;
  await api.submit(warm, 200);
  await agentRun(api, warm, 4, 150);

  // Baselines: the Worker alone, and the cheapest pool request.
  const baseline = { healthz: [], node_heartbeat: [] };
  await api.register(warm, "hb-node");
  for (let i = 0; i < 300; i++) {
    let t0 = performance.now();
    await api.healthz();
    baseline.healthz.push(performance.now() - t0);
    t0 = performance.now();
    await api.nodeHeartbeat(warm, "hb-node");
    baseline.node_heartbeat.push(performance.now() - t0);
  }

  // Depths alternate inside each run, so load from elsewhere on the machine
  // hits both alike.
  const agents = [];
  const submissions = [];
  for (const nodes of NODE_COUNTS) {
    const runsByDepth = new Map(DEPTHS.map((d) => [d, []]));
    for (let run = 0; run < RUNS; run++) {
      for (const depth of DEPTHS) {
        const pool = `agents-${depth}-${nodes}-${run}-${Date.now().toString(36)}`;
        const submitted = await api.submit(pool, depth);
        if (depth === 10000) submissions.push(submitted.ms);
        runsByDepth.get(depth).push(await agentRun(api, pool, nodes, Math.min(CYCLES, depth - nodes)));
      }
    }
    for (const [depth, runs] of runsByDepth) {
      const claimsPerS = runs.map((r) => r.claims_per_s);
      const row = {
        depth,
        nodes,
        cycles_per_run: runs[0].cycles,
        claims_per_s: round(median(claimsPerS), 1),
        claims_noise: spread(claimsPerS),
        requests_per_s: round(median(runs.map((r) => r.requests_per_s)), 1),
        claim_ms_p50: round(median(runs.map((r) => r.claim_ms_p50)), 2),
        claim_ms_p99: round(median(runs.map((r) => r.claim_ms_p99)), 2),
        heartbeat_ms_p50: round(median(runs.map((r) => r.heartbeat_ms_p50)), 2),
        upload_ms_p50: round(median(runs.map((r) => r.upload_ms_p50)), 2),
        complete_ms_p50: round(median(runs.map((r) => r.complete_ms_p50)), 2),
        runs,
      };
      agents.push(row);
      console.log(
        `${depth} pending, ${nodes} nodes: ${row.claims_per_s} claims/s (runs ${claimsPerS.join(", ")}), claim p50 ${row.claim_ms_p50} ms p99 ${row.claim_ms_p99} ms`,
      );
    }
  }
  agents.sort((a, b) => a.depth - b.depth || a.nodes - b.nodes);

  const expiry = [];
  for (let i = 0; i < EXPIRY_SAMPLES; i += 4) {
    const group = Array.from({ length: Math.min(4, EXPIRY_SAMPLES - i) }, (_, k) => expirySample(api, i + k));
    expiry.push(...(await Promise.all(group)));
  }
  const detected = expiry.map((s) => s.after_deadline_ms).filter((x) => x !== null);
  console.log(`expiry: requeued ${detected.join(", ")} ms after the deadline`);
  console.log(`submission of 10,000 tasks: ${submissions.map((x) => Math.round(x)).join(", ")} ms`);

  result = {
    command: `node bench/http.mjs --runs ${RUNS} --nodes ${NODE_COUNTS.join(",")} --cycles ${CYCLES} --expiry-samples ${EXPIRY_SAMPLES}`,
    date: today(),
    machine: { ...host, load_at_end: round(os.loadavg()[0], 2) },
    runs: RUNS,
    baseline_ms: {
      healthz_p50: round(median(baseline.healthz), 2),
      healthz_p99: round(percentile(baseline.healthz, 99), 2),
      node_heartbeat_p50: round(median(baseline.node_heartbeat), 2),
      node_heartbeat_p99: round(percentile(baseline.node_heartbeat, 99), 2),
    },
    agents,
    submission_10k_ms: {
      median: Math.round(median(submissions)),
      samples: submissions.map(Math.round),
      noise: spread(submissions.map(Math.round)),
    },
    expiry: {
      lease_seconds: 2,
      poll_interval_ms: 20,
      samples: expiry,
      median_ms: median(detected),
      max_ms: detected.length ? Math.max(...detected) : null,
      all_under_1s: detected.length === expiry.length && detected.every((x) => x < 1000),
    },
    wall_s: 0,
  };
} finally {
  await server.stop();
}
result.wall_s = Math.round((Date.now() - started) / 1000);
console.log(`wrote ${writeResult("http", result)}`);
