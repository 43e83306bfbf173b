// What the bench scripts share: statistics, the machine description every
// figure carries, the results files BENCHMARKS.md is rendered from, running
// an in-workerd bench file, and the CPU a `wrangler dev` used. The over-HTTP
// benchmarks start `wrangler dev` through test/support (with its BENCH settings).
// Plain Node (20+), no dependencies.
// @ts-check

import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const RESULTS = join(ROOT, "bench", "results");

/** @param {readonly number[]} values */
export function median(values) {
  return percentile(values, 50);
}

/**
 * Nearest-rank percentile; null for no values.
 * @param {readonly number[]} values
 * @param {number} p
 * @returns {number | null}
 */
export function percentile(values, p) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return /** @type {number} */ (
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]
  );
}

/**
 * @typedef {{ min: number, max: number, spread_pct: number | null }} Spread
 */

/**
 * min, max and the spread (max − min) as a percentage of the median.
 * @param {readonly number[]} values
 * @returns {Spread}
 */
export function spread(values) {
  const m = median(values);
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  return { min: lo, max: hi, spread_pct: m ? Math.round(((hi - lo) / m) * 1000) / 10 : null };
}

/**
 * @param {number | null} x  null (a percentile of no values) rounds to 0, as `null * f` does
 * @param {number} [digits]
 */
export function round(x, digits = 1) {
  const f = 10 ** digits;
  return Math.round(Number(x) * f) / f;
}

/**
 * @typedef {object} Machine
 * @property {number} nproc
 * @property {string} cpu
 * @property {number} memory_gb
 * @property {string} os
 * @property {string} node
 * @property {string} wrangler
 * @property {string} vitest_pool_workers
 * @property {number} load_at_start
 * @property {number} [load_at_end]
 */

/**
 * The machine, as BENCHMARKS.md states it next to every figure.
 * @returns {Machine}
 */
export function machine() {
  /** @param {string} name */
  const pkg = (name) => JSON.parse(readFileSync(join(ROOT, "node_modules", name, "package.json"), "utf8")).version;
  let nproc = os.availableParallelism?.() ?? os.cpus().length;
  try {
    nproc = Number(execFileSync("nproc", { encoding: "utf8" }).trim());
  } catch {
    // nproc is coreutils; fall back to what Node sees.
  }
  return {
    nproc,
    cpu: os.cpus()[0]?.model ?? "unknown",
    memory_gb: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    wrangler: pkg("wrangler"),
    vitest_pool_workers: pkg("@cloudflare/vitest-pool-workers"),
    // This VM is shared with other work: the 1-minute load when the run began.
    load_at_start: round(/** @type {number} */ (os.loadavg()[0]), 2),
  };
}

export function today() {
  return new Date().toISOString().slice(0, 10);
}

/**
 * @param {string} name
 * @param {unknown} result
 */
export function writeResult(name, result) {
  mkdirSync(RESULTS, { recursive: true });
  const path = join(RESULTS, `${name}.json`);
  writeFileSync(path, `${JSON.stringify(result, null, 2)}\n`);
  return path;
}

/**
 * The parsed results file, unchecked: the reader casts it to the writer's typedef.
 * @param {string} name
 * @returns {unknown}
 */
export function readResult(name) {
  try {
    return JSON.parse(readFileSync(join(RESULTS, `${name}.json`), "utf8"));
  } catch {
    return null;
  }
}

/**
 * CPU seconds used so far by every process in a process group (Linux /proc):
 * wrangler dev runs in its own group, workerd included.
 * @param {number} pgid
 */
export function groupCpuSeconds(pgid) {
  const ticksPerSecond = 100; // USER_HZ on Linux
  let total = 0;
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) !== pgid) continue; // pgrp
      total += (Number(fields[11]) + Number(fields[12])) / ticksPerSecond; // utime + stime
    } catch {
      // the process ended meanwhile
    }
  }
  return total;
}

/** @param {string} text */
function stripAnsi(text) {
  // eslint-disable-next-line no-control-regex
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes start with ESC
  return text.replace(/\u001b\[[0-9;]*m/g, "");
}

/**
 * `--name value` or `--name=value` from argv, else the fallback.
 * @param {string} name
 * @param {string} fallback
 * @returns {string}
 */
export function option(name, fallback) {
  const args = process.argv.slice(2);
  for (const [i, arg] of args.entries()) {
    if (arg === `--${name}`) return args[i + 1] ?? fallback;
    if (arg.startsWith(`--${name}=`)) return arg.slice(name.length + 3);
  }
  return fallback;
}

/** @param {string} name */
export function flag(name) {
  return process.argv.slice(2).includes(`--${name}`);
}

/**
 * Runs one in-workerd bench file (bench/*.bench.test.ts) in its own vitest
 * process and resolves with the records it printed as `BENCH {json}` lines.
 * Rejects, with the end of its output, when it exits non-zero or prints none;
 * its whole process group is killed past `timeoutMs`.
 * @param {string} file  e.g. "bench/in-object.bench.test.ts"
 * @param {Record<string, string>} vars  environment for the bench config's bindings
 * @param {number} timeoutMs
 * @param {{ root?: string, testName?: string, config?: string }} [where]  another checkout to run it in (its own
 *   node_modules and bench config), one test of the file to run (vitest -t, a regular expression), and
 *   another vitest config than the benches'
 * @returns {Promise<any[]>}
 */
export function runBenchFile(
  file,
  vars,
  timeoutMs,
  { root = ROOT, testName, config = "bench/vitest.bench.config.ts" } = {},
) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        join(root, "node_modules/vitest/vitest.mjs"),
        "run",
        "--config",
        config,
        file,
        ...(testName === undefined ? [] : ["-t", testName]),
      ],
      {
        cwd: root,
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, ...vars, WRANGLER_SEND_METRICS: "false" },
      },
    );
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const timer = setTimeout(() => {
      try {
        process.kill(-(/** @type {number} */ (child.pid)), "SIGKILL");
      } catch {
        // already gone
      }
    }, timeoutMs);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const records = stripAnsi(out)
        .split("\n")
        .filter((line) => line.startsWith("BENCH "))
        .map((line) => JSON.parse(line.slice(6)));
      if (code !== 0 || records.length === 0) {
        reject(new Error(`bench run in ${root} failed (exit ${code ?? signal}):\n${stripAnsi(out).slice(-4000)}`));
      } else resolve(records);
    });
  });
}
