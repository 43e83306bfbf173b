// Starts `wrangler dev` on loopback with persisted state, for the drivers
// that test the coordinator as a real process: crash (SIGKILL and restart on
// the same state) and soak. Everything it starts it can stop.

import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));

export interface Coordinator {
  url: string;
  pid: number;
  /** SIGKILL the whole process group (wrangler and its workerd), no goodbye. */
  kill(): Promise<void>;
  /** SIGTERM, then SIGKILL if it lingers. */
  stop(): Promise<void>;
}

export async function startCoordinator(options: {
  port: number;
  persistTo: string;
  log: string;
}): Promise<Coordinator> {
  const log = createWriteStream(options.log, { flags: "a" });
  const child: ChildProcess = spawn(
    "npx",
    [
      "wrangler",
      "dev",
      "--ip",
      "127.0.0.1",
      "--port",
      String(options.port),
      "--persist-to",
      options.persistTo,
      "--show-interactive-dev-session=false",
    ],
    {
      cwd: ROOT,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    },
  );
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  const url = `http://127.0.0.1:${options.port}`;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const signal = async (sig: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, sig); // the group: wrangler and the workerd it spawned
    } catch {
      return; // already gone
    }
    await Promise.race([exited, sleep(5000)]);
  };
  const coordinator: Coordinator = {
    url,
    pid: child.pid!,
    kill: () => signal("SIGKILL"),
    stop: async () => {
      await signal("SIGTERM");
      await signal("SIGKILL");
    },
  };
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return coordinator;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null) break;
    await sleep(200);
  }
  await coordinator.stop();
  throw new Error(`wrangler dev did not become healthy on ${url} (see ${options.log})`);
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A TCP port on 127.0.0.1 that nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
