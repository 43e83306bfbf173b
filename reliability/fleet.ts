// A fleet of simulated agents over real HTTP, behaving as the Python agent
// does (test/support's agent loop): register, claim, heartbeat, upload the
// output, commit — and back off and carry on when the coordinator is
// unreachable. Some agents misbehave on
// purpose so the pool's scheduling states occur (docs/protocol.md §13): a broken node
// fails every attempt it gets (it is held back, its tasks finish elsewhere),
// and a vanishing agent goes silent mid-lease past the lease's deadline (a
// worker loss) and then comes back.

import { Rng } from "../test/fixtures/rng";
import { coordinator, registration, runAgent, sha256, sleep } from "../test/support/index.mjs";

export interface FleetOptions {
  url: () => string; // the coordinator, e.g. http://127.0.0.1:8790
  pool: string;
  nodes: number;
  /** Stop when this returns true (checked between claims) or at the deadline. */
  done: () => boolean;
  deadline: number;
  /** Chance that an agent fails an attempt instead of committing it. */
  failRate?: number;
  /** Agents (among `nodes`) that fail every attempt they get. */
  broken?: number;
  /** Agents (among `nodes`) that vanish mid-lease once, for longer than `leaseSeconds`, then return. */
  vanishing?: number;
  leaseSeconds?: number;
}

export interface FleetStats {
  claims: number;
  commits: number;
  accepted: number;
  rejected: number;
  fails: number;
  /** Attempts failed by the broken agents. */
  brokenFails: number;
  /** Leases abandoned by a vanishing agent. */
  vanished: number;
  /** Heartbeats of an abandoned lease after its agent returned, answered 410 (the lease had moved on). */
  goneOnReturn: number;
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
    brokenFails: 0,
    vanished: 0,
    goneOnReturn: 0,
    empty: 0,
    connectionErrors: 0,
    serverErrors: [],
    claimMs: [],
    commitMs: [],
  };
}

/** Runs every agent until `done()` or the deadline. */
export async function runFleet(options: FleetOptions, stats: FleetStats): Promise<void> {
  // Seeded, so a run's failure and timing choices are the same every time.
  const rng = new Rng(42);
  const agent = (nodeId: string, kind: "healthy" | "broken" | "vanishing") => {
    let vanishes = kind === "vanishing";
    const client = coordinator(options.url(), {
      pool: options.pool,
      timeoutMs: null,
      // Retries connection failures with backoff, as the agent does; a
      // response of any status is returned to the caller.
      around: async (_method, path, call) => {
        const t0 = performance.now();
        for (let delay = 50; ; delay = Math.min(delay * 2, 1000)) {
          if (Date.now() > options.deadline) throw new Error("deadline");
          try {
            const answer = await call();
            if (answer.status >= 500)
              stats.serverErrors.push({ path, status: answer.status, body: answer.text.slice(0, 200) });
            if (path === "/leases/claim" && answer.status === 200) stats.claimMs.push(performance.now() - t0);
            return answer;
          } catch {
            stats.connectionErrors++;
            await sleep(delay);
          }
        }
      },
    });
    const register = () => client.register(registration(nodeId));
    return runAgent({
      client,
      nodeId,
      registration: registration(nodeId),
      // e.g. after a restart on fresh state; ours persists, but be the agent
      reregister: true,
      done: () => options.done() || Date.now() >= options.deadline,
      idleMs: () => {
        stats.empty++;
        return 100 + rng.next() * 200;
      },
      onLease: async (lease) => {
        stats.claims++;
        const hb = await client.heartbeat(lease.lease_id);
        if (hb.status === 410) return; // lost the lease: stop work on it
        if (vanishes) {
          // Gone without a word (a laptop lid closed) until the lease is past
          // its deadline; back, the agent finds its lease gone and carries on.
          vanishes = false;
          stats.vanished++;
          const back = Date.now() + ((options.leaseSeconds ?? 5) + 2) * 1000;
          while (Date.now() < back && !options.done()) await sleep(100);
          const stale = await client.heartbeat(lease.lease_id);
          if (stale.status === 410) stats.goneOnReturn++;
          await register();
          return;
        }
        if (kind === "broken") {
          await client.fail(lease.lease_id, "broken node");
          stats.brokenFails++;
          return;
        }
        if (rng.chance(options.failRate ?? 0)) {
          await client.fail(lease.lease_id, "simulated failure");
          stats.fails++;
          return;
        }
        const output = JSON.stringify({ node: nodeId, task: lease.task_id, score: rng.next() });
        const uploaded = await client.upload(`jobs/${lease.job_id}/${lease.task_id}/metrics.json`, output);
        if (uploaded.status !== 200) return; // e.g. 409: someone else already committed it
        const c0 = performance.now();
        const committed = await client.complete(lease.lease_id, { output_sha256: sha256(output) });
        stats.commitMs.push(performance.now() - c0);
        stats.commits++;
        if (committed.status === 200 && (JSON.parse(committed.text) as { accepted: boolean }).accepted)
          stats.accepted++;
        else stats.rejected++;
      },
    });
  };
  const broken = Math.min(options.broken ?? 0, options.nodes);
  const vanishing = Math.min(options.vanishing ?? 0, options.nodes - broken);
  await Promise.all(
    Array.from({ length: options.nodes }, (_, i) => {
      const [nodeId, kind] = fleetMember(i, broken, vanishing);
      return agent(nodeId, kind).catch(() => undefined);
    }),
  );
}

/** The i-th agent's node id and behaviour: the broken ones first, then the vanishing ones. */
export function fleetMember(
  i: number,
  broken: number,
  vanishing: number,
): [string, "healthy" | "broken" | "vanishing"] {
  const n = String(i).padStart(4, "0");
  if (i < broken) return [`broken-${n}`, "broken"];
  if (i < broken + vanishing) return [`vanish-${n}`, "vanishing"];
  return [`node-${n}`, "healthy"];
}

export function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! * 10) / 10;
}
