// What the bench scripts share: statistics, the machine description every
// figure carries, and the results files BENCHMARKS.md is rendered from.
// Plain Node (20+), no dependencies.

import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const RESULTS = join(ROOT, "bench", "results");

export function median(values) {
  return percentile(values, 50);
}

/** Nearest-rank percentile; null for no values. */
export function percentile(values, p) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** min, max and the spread (max − min) as a percentage of the median. */
export function spread(values) {
  const m = median(values);
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  return { min: lo, max: hi, spread_pct: m ? Math.round(((hi - lo) / m) * 1000) / 10 : null };
}

export function round(x, digits = 1) {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** The machine, as BENCHMARKS.md states it next to every figure. */
export function machine() {
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
    load_at_start: round(os.loadavg()[0], 2),
  };
}

export function today() {
  return new Date().toISOString().slice(0, 10);
}

export function writeResult(name, result) {
  mkdirSync(RESULTS, { recursive: true });
  const path = join(RESULTS, `${name}.json`);
  writeFileSync(path, `${JSON.stringify(result, null, 2)}\n`);
  return path;
}

export function readResult(name) {
  try {
    return JSON.parse(readFileSync(join(RESULTS, `${name}.json`), "utf8"));
  } catch {
    return null;
  }
}

export function stripAnsi(text) {
  // eslint-disable-next-line no-control-regex
  // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes start with ESC
  return text.replace(/\u001b\[[0-9;]*m/g, "");
}

/** `--name value` or `--name=value` from argv, else the fallback. */
export function option(name, fallback) {
  const args = process.argv.slice(2);
  for (let i = 0; i < args.length; i++) {
    if (args[i] === `--${name}`) return args[i + 1] ?? fallback;
    if (args[i].startsWith(`--${name}=`)) return args[i].slice(name.length + 3);
  }
  return fallback;
}

export function flag(name) {
  return process.argv.slice(2).includes(`--${name}`);
}
