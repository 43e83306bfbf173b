// @ts-check
// The one `wrangler dev` launcher for everything on the Node side (benches,
// browser and CLI tests, the demo, the crash and soak drivers), with the one
// freePort and sleep they share. A coordinator started here listens on
// 127.0.0.1, runs in its own process group (so stopping it stops workerd
// too), gets only the settings its caller passes (a local .dev.vars is not
// read unless asked: a developer's tokens must not change a test's answers),
// and counts as ready when /healthz answers, within one timeout for all.

import { spawn } from "node:child_process";
import { createWriteStream, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** How long `wrangler dev` may take to answer /healthz: a cold start on the shared 2-core machine. */
export const READY_TIMEOUT_MS = 90_000;

/**
 * Settings for a coordinator nobody authenticates to: no tokens, no join
 * code, node identities not required.
 */
export const OPEN = Object.freeze({
  FLASHML_NODE_TOKENS: "",
  FLASHML_OPERATOR_TOKENS: "",
  FLASHML_JOIN_CODE: "",
  FLASHML_REQUIRE_NODE_AUTH: "0",
});

/**
 * What the benches measure against: open, no per-change log lines (as the
 * figures in BENCHMARKS.md were measured), and claims answered at once
 * unless a run sets a hold (bench/agents.mjs does).
 */
export const BENCH = Object.freeze({
  ...OPEN,
  FLASHML_LOG_STATE_CHANGES: "0",
  FLASHML_CLAIM_WAIT_SECONDS: "0",
});

/** @param {number} ms */
export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

/**
 * A TCP port on 127.0.0.1 that nothing listens on right now.
 * @returns {Promise<number>}
 */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      if (address === null || typeof address === "string") return reject(new Error("no TCP port"));
      server.close(() => resolve(address.port));
    });
  });
}

/**
 * Whether nothing listens on `port` at 127.0.0.1.
 * @param {number} port
 * @returns {Promise<boolean>}
 */
export function portFree(port) {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/**
 * @typedef {object} LaunchOptions
 * @property {Record<string, string>} [vars]  settings, each passed as `--var NAME:VALUE` over wrangler.toml's
 * @property {number} [port]  default: a free one
 * @property {string} [persistTo]  state directory; default a fresh one, removed on stop
 * @property {string} [log]  a file to append wrangler's output to (its tail is kept in memory either way)
 * @property {"warn" | "log" | "info" | "debug"} [logLevel]  default "warn"
 * @property {boolean} [devVars]  read the checkout's .dev.vars (default: never)
 * @property {AbortSignal} [signal]  gives up waiting for /healthz (e.g. on Ctrl-C)
 * @property {string} [cwd]  where the Worker's sources are (default: this checkout), e.g. a snapshot of them
 */

/**
 * A running `wrangler dev`.
 * @typedef {object} Wrangler
 * @property {string} url  e.g. http://127.0.0.1:8790
 * @property {number} port
 * @property {number} pid  the leader of its process group
 * @property {string} persistTo
 * @property {() => string} output  the tail of what it printed
 * @property {() => boolean} running
 * @property {() => Promise<void>} kill  SIGKILL the group, no goodbye (the crash driver's kill)
 * @property {() => Promise<void>} stop  SIGTERM, SIGKILL if it lingers, then remove a state directory made here
 */

/** Coordinators started and not yet stopped, for stopAll. */
const running = new Set(/** @type {Wrangler[]} */ ([]));

/**
 * Starts `wrangler dev` and resolves once /healthz answers 200.
 * @param {LaunchOptions} [options]
 * @returns {Promise<Wrangler>}
 */
export async function startWrangler(options = {}) {
  const port = options.port ?? (await freePort());
  // Its own inspector port too: two coordinators (or another wrangler dev on
  // this machine) must not both want the default 9229.
  const inspectorPort = await freePort();
  const madeDir = options.persistTo === undefined;
  const persistTo = options.persistTo ?? mkdtempSync(join(tmpdir(), "flashedge-dev-"));
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
    options.logLevel ?? "warn",
    // An env file given, wrangler reads no .dev.vars; /dev/null sets nothing.
    ...(options.devVars ? [] : ["--env-file", "/dev/null"]),
    ...Object.entries(options.vars ?? {}).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
  ];
  const child = spawn(process.execPath, args, {
    cwd: options.cwd ?? ROOT,
    detached: true, // its own process group: one kill stops workerd with it
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
  });
  const pid = /** @type {number} */ (child.pid);
  let tail = "";
  const file = options.log === undefined ? null : createWriteStream(options.log, { flags: "a" });
  /** @param {Buffer} d */
  const keep = (d) => {
    tail = (tail + d).slice(-8000);
    file?.write(d);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  let exited = false;
  /** @type {Promise<void>} */
  const exit = new Promise((resolve) =>
    child.once("exit", () => {
      exited = true;
      file?.end();
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

  /** @type {Wrangler} */
  const server = {
    url: `http://127.0.0.1:${port}`,
    port,
    pid,
    persistTo,
    output: () => tail,
    running: () => !exited,
    kill: async () => {
      if (exited) return;
      signalGroup("SIGKILL");
      await Promise.race([exit, sleep(5000)]);
    },
    stop: async () => {
      running.delete(server);
      if (!exited) {
        signalGroup("SIGTERM");
        await Promise.race([exit, sleep(5000)]);
        if (!exited) {
          signalGroup("SIGKILL");
          await Promise.race([exit, sleep(2000)]);
        }
      }
      if (madeDir) rmSync(persistTo, { recursive: true, force: true });
    },
  };
  running.add(server);

  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline && !exited && !options.signal?.aborted) {
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
  if (options.signal?.aborted) throw new Error("interrupted");
  throw new Error(
    exited
      ? `wrangler dev exited before answering /healthz on ${server.url}:\n${tail}`
      : `wrangler dev did not answer /healthz on ${server.url} within ${READY_TIMEOUT_MS / 1000} s:\n${tail}`,
  );
}

/** Stops every coordinator started here and not yet stopped (on error, on a signal, at the end). */
export function stopAll() {
  return Promise.all([...running].map((s) => s.stop()));
}

/** SIGKILLs every coordinator still running, synchronously: for process.on("exit"). */
export function killAllNow() {
  for (const server of running) {
    if (!server.running()) continue;
    try {
      process.kill(-server.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}
