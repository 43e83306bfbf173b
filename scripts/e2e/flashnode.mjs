// @ts-check
// The reference Python side of scripts/e2e-runs.mjs: a checkout of
// Zolli-Labs/flashml at the pinned commit, the Python that runs its agent,
// and `flashnode work` agents launched as a volunteer launches them
// (subprocess runner, a node id in FLASHNODE_STATE_DIR, a bearer token in the
// credential store keyed by the coordinator URL). Nothing of the reference is
// changed: its packages are put on PYTHONPATH, as an editable install would.
//
// Settings (environment):
//   FLASHML_REFERENCE  a checkout of the reference (holding flashnode/ and flashruntime/);
//                      default: `git archive` of FLASHML_COMMIT from FLASHML_MIRROR into a temp dir
//   FLASHML_MIRROR     default /work/.mirror/Zolli-Labs+flashml/repo
//   FLASHML_COMMIT     default d5b29dd
//   FLASHML_PYTHON     default python3 (3.10+, with pydantic>=2.7 and cryptography)
//   FLASHML_PYDEPS     extra PYTHONPATH entries (':'-separated) holding what the Python lacks:
//                      psutil and websockets (the agent), torch (fedavg_worker); default
//                      node_modules/.cache/flashml-pydeps, where installDependencies puts them

import { execFileSync, spawn, spawnSync } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const MIRROR = process.env.FLASHML_MIRROR ?? "/work/.mirror/Zolli-Labs+flashml/repo";
export const COMMIT = process.env.FLASHML_COMMIT ?? "d5b29dd";
export const PYTHON = process.env.FLASHML_PYTHON ?? "python3";
/** Where the dependencies the Python lacks are installed, once, for this checkout (never globally). */
const DEFAULT_PYDEPS = join(dirname(fileURLToPath(import.meta.url)), "../../node_modules/.cache/flashml-pydeps");

/** What the agent and the worker import beyond the stdlib, and who needs it. */
const NEEDED = [
  ["pydantic", "flashruntime (protocol models)"],
  ["cryptography", "flashnode (identity)"],
  ["psutil", "flashnode (inventory/capabilities.py, at import)"],
  ["websockets", "flashnode (declared dependency)"],
  ["torch", "flashml_workloads.fedavg_worker (build_model, training)"],
];

/**
 * The reference checkout: FLASHML_REFERENCE, or the pinned commit extracted from the mirror.
 * @param {string} scratch  a directory this run owns (removed by the caller)
 * @returns {string}
 */
export function referenceCheckout(scratch) {
  const given = process.env.FLASHML_REFERENCE;
  if (given) {
    if (!existsSync(join(given, "flashnode", "flashnode")) || !existsSync(join(given, "flashruntime", "flashruntime")))
      throw new Error(`FLASHML_REFERENCE=${given} holds no flashnode/flashnode or flashruntime/flashruntime`);
    return given;
  }
  if (!existsSync(MIRROR))
    throw new Error(`no reference: set FLASHML_REFERENCE, or FLASHML_MIRROR (${MIRROR} is absent)`);
  const dir = join(scratch, "flashml");
  mkdirSync(dir);
  const tar = execFileSync("git", ["--git-dir", MIRROR, "archive", COMMIT], { maxBuffer: 1 << 30 });
  execFileSync("tar", ["-x", "-C", dir], { input: tar });
  return dir;
}

/**
 * PYTHONPATH for the reference's packages and the extra dependencies.
 * @param {string} reference
 */
export function pythonPath(reference) {
  const extra = process.env.FLASHML_PYDEPS ?? (existsSync(DEFAULT_PYDEPS) ? DEFAULT_PYDEPS : "");
  return [join(reference, "flashnode"), join(reference, "flashruntime"), ...extra.split(":").filter(Boolean)].join(":");
}

/**
 * Null if the agent and the worker import here, else what is missing and how to get it.
 * @param {string} pypath
 * @returns {string | null}
 */
export function preflight(pypath) {
  const probe = `
import importlib, json, sys
missing = []
for name in ${JSON.stringify(NEEDED.map(([n]) => n))}:
    try:
        importlib.import_module(name)
    except Exception as e:
        missing.append([name, repr(e)])
if not missing:
    for name in ["flashnode.agent.cli", "flashnode.inventory.capabilities", "flashnode.executor.loop", "flashml_workloads.fedavg_worker"]:
        try:
            importlib.import_module(name)
        except Exception as e:
            missing.append([name, repr(e)])
print(json.dumps({"python": sys.version.split()[0], "missing": missing}))
`;
  const r = spawnSync(PYTHON, ["-c", probe], { env: { ...process.env, PYTHONPATH: pypath }, encoding: "utf8" });
  if (r.status !== 0) return `${PYTHON} could not run the import probe: ${r.error ?? r.stderr}`;
  /** @type {{ python: string, missing: [string, string][] }} */
  const out = JSON.parse(r.stdout);
  if (out.missing.length === 0) return null;
  const why = Object.fromEntries(NEEDED);
  return [
    `the reference agent cannot run with ${PYTHON} ${out.python} and PYTHONPATH=${pypath}:`,
    ...out.missing.map(([name, error]) => `  ${name}${why[name] ? ` — needed by ${why[name]}` : ""}: ${error}`),
    `Install them for this checkout (nothing is installed globally; pip's own index settings apply, a local wheel cache included):`,
    `  ${PYTHON} -m pip install --target ${DEFAULT_PYDEPS} ${PIP_PACKAGES.join(" ")}`,
    "or point FLASHML_PYDEPS at a directory holding them.",
  ].join("\n");
}

/** What the agent and the worker need beyond pydantic and cryptography, which the reference's users have. */
const PIP_PACKAGES = ["psutil", "websockets", "torch"];

/**
 * Installs what the reference lacks into this checkout's cache (FLASHML_PYDEPS unset), with pip's own
 * settings; true when it ran and succeeded.
 * @returns {boolean}
 */
export function installDependencies() {
  if (process.env.FLASHML_PYDEPS !== undefined) return false;
  const r = spawnSync(PYTHON, ["-m", "pip", "install", "--quiet", "--target", DEFAULT_PYDEPS, ...PIP_PACKAGES], {
    stdio: "inherit",
  });
  return r.status === 0;
}

/**
 * The weights fedavg_worker starts from at round 0 for `params`: the
 * reference's own callers compute them this way (scripts/fedavg_local_demo.py,
 * tests/test_fedavg_convergence.py `_initial_weights`).
 * @param {string} pypath
 * @param {{ seed: number, in_dim: number, hidden: number, out_dim: number }} params
 * @returns {Record<string, unknown>}
 */
export function initialWeights(pypath, params) {
  const code = `
import json, sys
from flashml_workloads import fedavg_worker as w
p = json.loads(sys.argv[1])
print(json.dumps(w.state_to_blob(w.build_model(p["seed"], p["in_dim"], p["hidden"], p["out_dim"]))))
`;
  const out = execFileSync(PYTHON, ["-c", code, JSON.stringify(params)], {
    env: { ...process.env, PYTHONPATH: pypath },
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  return JSON.parse(out);
}

/**
 * @typedef {object} Agent
 * @property {string} nodeId
 * @property {number} pid  the leader of its process group (the agent; its task subprocess is in it too)
 * @property {string} log  its output file
 * @property {() => boolean} running
 * @property {Promise<number | null>} exited  its exit code (null when a signal ended it)
 * @property {(signal: NodeJS.Signals) => void} signal  to its whole process group
 * @property {() => Promise<void>} stop  SIGTERM, then SIGKILL if it lingers
 */

/**
 * Starts `flashnode work --runner subprocess` as node `nodeId` with `token`.
 * @param {{ url: string, nodeId: string, token: string, dir: string, pypath: string }} o
 * @returns {Agent}
 */
export function startAgent({ url, nodeId, token, dir, pypath }) {
  const state = join(dir, "state");
  mkdirSync(state, { recursive: true });
  mkdirSync(join(dir, "work"), { recursive: true });
  // The identity the agent registers with (identity/store.py) and the token
  // `flashnode login --token` would have saved (identity/credentials.py).
  writeFileSync(join(state, "node-id"), `${nodeId}\n`);
  const credentials = join(state, "credentials.json");
  writeFileSync(credentials, JSON.stringify({ [url.replace(/\/+$/, "")]: token }), { mode: 0o600 });
  const log = join(dir, "agent.log");
  const out = createWriteStream(log, { flags: "a" }); // a restarted agent's output follows its predecessor's
  const child = spawn(
    PYTHON,
    ["-u", "-m", "flashnode.agent.cli", "work", "--coordinator", url, "--runner", "subprocess", "--log-json"],
    {
      cwd: dir,
      detached: true, // its own process group: a kill takes its task subprocess with it, as a machine's death does
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: dir,
        LANG: process.env.LANG ?? "C.UTF-8",
        PYTHONPATH: pypath,
        FLASHNODE_STATE_DIR: state,
        FLASHNODE_CREDENTIALS: credentials,
        FLASHNODE_WORKDIR: join(dir, "work"),
        FLASHNODE_MAX_CONSECUTIVE_FAILURES: "0",
      },
    },
  );
  child.stdout.pipe(out);
  child.stderr.pipe(out);
  const pid = /** @type {number} */ (child.pid);
  let done = false;
  /** @type {Promise<number | null>} */
  const exited = new Promise((resolve) =>
    child.once("exit", (code) => {
      done = true;
      resolve(code);
    }),
  );
  /** @param {NodeJS.Signals} signal */
  const signal = (signal) => {
    try {
      process.kill(-pid, signal);
    } catch {
      // already gone
    }
  };
  return {
    nodeId,
    pid,
    log,
    running: () => !done,
    exited,
    signal,
    stop: async () => {
      if (done) return;
      signal("SIGTERM");
      const timeout = new Promise((r) => setTimeout(r, 5000));
      await Promise.race([exited, timeout]);
      if (!done) {
        signal("SIGKILL");
        await Promise.race([exited, new Promise((r) => setTimeout(r, 2000))]);
      }
    },
  };
}

/**
 * The last `lines` lines of a file, or "" if it cannot be read.
 * @param {string} file
 * @param {number} lines
 */
export function tail(file, lines = 20) {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

/** A fresh scratch directory for one run. */
export function scratchDir() {
  return mkdtempSync(join(tmpdir(), "flashedge-e2e-runs-"));
}
