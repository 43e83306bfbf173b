// A fleet of simulated agents over real HTTP, behaving as the Python agent
// does: register, claim, heartbeat, upload the output, commit — and back off
// and carry on when the coordinator is unreachable.

import { createHash } from "node:crypto";
import { Rng } from "../test/fixtures/rng";
import { sleep } from "./wrangler";

export interface FleetOptions {
  base: () => string; // the pool's base URL, e.g. http://127.0.0.1:8790/pools/p/v1alpha1
  nodes: number;
  /** Stop when this returns true (checked between claims) or at the deadline. */
  done: () => boolean;
  deadline: number;
  /** Chance that an agent fails an attempt instead of committing it. */
  failRate?: number;
}

export interface FleetStats {
  claims: number;
  commits: number;
  accepted: number;
  rejected: number;
  fails: number;
  empty: number;
  connectionErrors: number;
  serverErrors: Array<{ path: string; status: number; body: string }>;
  claimMs: number[];
  commitMs: number[];
}

export function newStats(): FleetStats {
  return {
    claims: 0,
    commits: 0,
    accepted: 0,
    rejected: 0,
    fails: 0,
    empty: 0,
    connectionErrors: 0,
    serverErrors: [],
    claimMs: [],
    commitMs: [],
  };
}

type Lease = { lease_id: string; job_id: string; task_id: string; node_id: string };

/** Runs every agent until `done()` or the deadline. */
export async function runFleet(options: FleetOptions, stats: FleetStats): Promise<void> {
  // Seeded, so a run's failure and timing choices are the same every time.
  const rng = new Rng(42);
  const agent = async (nodeId: string) => {
    const send = async (method: string, path: string, body?: string | Uint8Array, contentType = "application/json") => {
      // Retries connection failures with backoff, as the agent does; a
      // response of any status is returned to the caller.
      for (let delay = 50; ; delay = Math.min(delay * 2, 1000)) {
        if (Date.now() > options.deadline) throw new Error("deadline");
        try {
          const r = await fetch(options.base() + path, {
            method,
            body,
            headers: body === undefined ? {} : { "content-type": contentType },
          });
          const text = await r.text();
          if (r.status >= 500) stats.serverErrors.push({ path, status: r.status, body: text.slice(0, 200) });
          return { status: r.status, text };
        } catch {
          stats.connectionErrors++;
          await sleep(delay);
        }
      }
    };
    const register = () =>
      send(
        "POST",
        "/nodes/register",
        JSON.stringify({
          node_id: nodeId,
          kubernetes_node: "",
          hostname: nodeId,
          capabilities: { cpu_cores: 4, gpus: [] },
        }),
      );
    await register();
    while (!options.done() && Date.now() < options.deadline) {
      const t0 = performance.now();
      const claimed = await send("POST", "/leases/claim", JSON.stringify({ node_id: nodeId }));
      if (claimed.status === 403) {
        await register(); // e.g. after a restart on fresh state; ours persists, but be the agent
        continue;
      }
      if (claimed.status !== 200) {
        stats.empty++;
        await sleep(100 + rng.next() * 200);
        continue;
      }
      stats.claimMs.push(performance.now() - t0);
      stats.claims++;
      const lease = JSON.parse(claimed.text) as Lease;
      const hb = await send("POST", `/attempts/${lease.lease_id}/heartbeat`);
      if (hb.status === 410) continue; // lost the lease: stop work on it
      if (rng.chance(options.failRate ?? 0)) {
        await send("POST", `/attempts/${lease.lease_id}/fail`, JSON.stringify({ reason: "simulated failure" }));
        stats.fails++;
        continue;
      }
      const output = JSON.stringify({ node: nodeId, task: lease.task_id, score: rng.next() });
      const uploaded = await send(
        "PUT",
        `/artifacts/jobs/${lease.job_id}/${lease.task_id}/metrics.json`,
        output,
        "application/octet-stream",
      );
      if (uploaded.status !== 200) continue; // e.g. 409: someone else already committed it
      const c0 = performance.now();
      const sha = createHash("sha256").update(output).digest("hex");
      const committed = await send(
        "POST",
        `/attempts/${lease.lease_id}/complete`,
        JSON.stringify({ output_sha256: sha }),
      );
      stats.commitMs.push(performance.now() - c0);
      stats.commits++;
      if (committed.status === 200 && (JSON.parse(committed.text) as { accepted: boolean }).accepted) stats.accepted++;
      else stats.rejected++;
    }
  };
  await Promise.all(
    Array.from({ length: options.nodes }, (_, i) => agent(`node-${String(i).padStart(4, "0")}`).catch(() => undefined)),
  );
}

export function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! * 10) / 10;
}
