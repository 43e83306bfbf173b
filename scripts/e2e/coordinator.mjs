// @ts-check
// The coordinator for scripts/e2e-runs.mjs: `wrangler dev` started as
// test/support/wrangler.mjs starts it (127.0.0.1, its own inspector port,
// its own process group, no .dev.vars, settings as `--var NAME:VALUE`, ready
// when /healthz answers), but from a SNAPSHOT of the checkout taken at the
// start. `wrangler dev` watches its sources and reloads the Worker when one
// changes; in a checkout others are editing, a run that takes a few minutes
// would otherwise be served by several versions of the code, some of them
// half-written. `inPlace` serves the checkout itself, reloads and all.

import { spawn } from "node:child_process";
import { cpSync, createWriteStream, existsSync, mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { freePort, READY_TIMEOUT_MS, ROOT, sleep } from "../../test/support/wrangler.mjs";

/** What `wrangler dev` builds the Worker from (wrangler.toml `main`, its imports, its rules). */
const SOURCES = ["wrangler.toml", "package.json", "tsconfig.json", "worker-configuration.d.ts", "src"];

/**
 * A copy of the Worker's sources as they are now, beside the checkout's node_modules.
 * @param {string} dir  a directory to create
 * @returns {string}
 */
export function snapshot(dir) {
  mkdirSync(dir, { recursive: true });
  for (const entry of SOURCES) {
    if (existsSync(join(ROOT, entry))) cpSync(join(ROOT, entry), join(dir, entry), { recursive: true });
  }
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"), "dir");
  return dir;
}

/**
 * @typedef {object} Coordinator
 * @property {string} url
 * @property {number} pid  the leader of its process group
 * @property {string} cwd  where it serves from
 * @property {() => boolean} running
 * @property {() => Promise<void>} stop  SIGTERM the group, SIGKILL if it lingers
 * @property {() => void} killNow  SIGKILL the group, synchronously (for process.on("exit"))
 */

/**
 * Starts `wrangler dev` in `cwd` and resolves once /healthz answers 200.
 * @param {{ cwd: string, persistTo: string, log: string, vars: Record<string, string> }} o
 * @returns {Promise<Coordinator>}
 */
export async function startCoordinator({ cwd, persistTo, log, vars }) {
  const port = await freePort();
  const inspectorPort = await freePort();
  const args = [
    join(ROOT, "node_modules/wrangler/bin/wrangler.js"),
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--inspector-port",
    String(inspectorPort),
    "--persist-to",
    persistTo,
    "--show-interactive-dev-session=false",
    "--log-level",
    "warn",
    "--env-file",
    "/dev/null",
    ...Object.entries(vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
  ];
  const child = spawn(process.execPath, args, {
    cwd,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
  });
  const pid = /** @type {number} */ (child.pid);
  const file = createWriteStream(log, { flags: "a" });
  child.stdout.pipe(file);
  child.stderr.pipe(file);
  let exited = false;
  /** @type {Promise<void>} */
  const exit = new Promise((resolve) =>
    child.once("exit", () => {
      exited = true;
      resolve();
    }),
  );
  /** @param {NodeJS.Signals} signal */
  const signalGroup = (signal) => {
    try {
      process.kill(-pid, signal);
    } catch {
      // already gone
    }
  };
  /** @type {Coordinator} */
  const server = {
    url: `http://127.0.0.1:${port}`,
    pid,
    cwd,
    running: () => !exited,
    killNow: () => {
      if (!exited) signalGroup("SIGKILL");
    },
    stop: async () => {
      if (exited) return;
      signalGroup("SIGTERM");
      await Promise.race([exit, sleep(5000)]);
      if (!exited) {
        signalGroup("SIGKILL");
        await Promise.race([exit, sleep(2000)]);
      }
    },
  };
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline && !exited) {
    try {
      const r = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(2000) });
      await r.arrayBuffer();
      if (r.status === 200) return server;
    } catch {
      // not listening yet
    }
    await sleep(250);
  }
  await server.stop();
  throw new Error(
    `wrangler dev ${exited ? "exited before answering" : "did not answer"} /healthz on ${server.url} (log: ${log})`,
  );
}
