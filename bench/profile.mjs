// Where the claim's time goes (issue 42): runs the in-object bench
// (bench/in-object.bench.test.ts) under workerd with its V8 inspector open,
// samples the CPU through the Chrome DevTools protocol while the timed
// batches run, and prints self time by function and by source file. The
// profile itself is written for DevTools (open it in Chrome's Performance
// panel) to bench/results/profile.cpuprofile (not committed); the figures to
// bench/results/profile.json, which BENCHMARKS.md section 1.1 renders.
//
//   npm run bench:profile                      depth 100,000, the by-depth test
//   (node --experimental-websocket bench/profile.mjs: Node 20 has WebSocket behind that flag)
//   options: --depth N, --test REGEX (vitest -t), --top N
// The bench prints a line when its core cycles start and end (BENCH_PROFILE):
// the samples are of those, each node's, and nothing else. The end line
// carries each statement's own time, timed around its exec call.
// @ts-check

import { execFileSync, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { machine, option, ROOT, today, writeResult } from "./lib.mjs";
import { load } from "./paired.mjs";

const DEPTH = option("depth", "100000");
const TEST = option("test", "cycles inside one pool object, by queue depth");
const TOP = Number(option("top", "40"));
const PORT = 9339;
const loadAtStart = load();

const child = spawn(
  process.execPath,
  [
    "node_modules/vitest/vitest.mjs",
    "run",
    "--config",
    "bench/vitest.bench.config.ts",
    `--inspect=${PORT}`,
    "--no-file-parallelism",
    "bench/in-object.bench.test.ts",
    "-t",
    TEST,
  ],
  {
    cwd: ROOT,
    env: { ...process.env, BENCH_DEPTHS: DEPTH, BENCH_PROFILE: "1" },
    stdio: ["ignore", "pipe", "inherit"],
    detached: true, // its own process group, so workerd goes with it
  },
);
let output = "";
child.stdout.on("data", (d) => {
  output += d;
});
const exited = new Promise((r) => child.on("exit", r));
/** @param {number} ms */
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The workerd inspector's user workers (the pool object runs in the runner's), once it listens. */
async function targets() {
  for (let i = 0; i < 600; i++) {
    try {
      const list = /** @type {{ id: string }[]} */ (await (await fetch(`http://127.0.0.1:${PORT}/json`)).json());
      const users = list.filter((t) => t.id.startsWith("core:user:"));
      if (users.length > 0) return users;
    } catch {}
    await sleep(200);
  }
  throw new Error("no inspector target");
}

const sockets = (await targets()).map((t) => new WebSocket(`ws://127.0.0.1:${PORT}/${t.id}`));
await Promise.all(sockets.map((ws) => new Promise((resolve) => ws.addEventListener("open", resolve))));
let id = 0;
/**
 * One DevTools protocol call and its result.
 * @param {WebSocket} ws @param {string} method @param {object} [params] @returns {Promise<any>}
 */
function send(ws, method, params = {}) {
  const n = ++id;
  return new Promise((resolve) => {
    /** @param {MessageEvent} event */
    const on = (event) => {
      const m = JSON.parse(String(event.data));
      if (m.id !== n) return;
      ws.removeEventListener("message", on);
      resolve(m.result);
    };
    ws.addEventListener("message", on);
    ws.send(JSON.stringify({ id: n, method, params }));
  });
}
for (const ws of sockets) {
  await send(ws, "Profiler.enable");
  await send(ws, "Profiler.setSamplingInterval", { interval: 50 });
}
/**
 * Waits for the `n`th line matching `line` that the bench prints.
 * @param {string} line @param {number} n
 */
async function printed(line, n) {
  while ((output.match(new RegExp(line, "g")) ?? []).length < n) {
    if (child.exitCode !== null) throw new Error(`the bench ended first:\n${output}`);
    await sleep(20);
  }
}
// Each node's core cycles (the CPU node's, then the GPU node's), sampled from start to stop.
/** @type {any[]} V8 CPU profiles */
const profiles = [];
let sampledMs = 0;
/** @type {Map<string, { query: string, n: number, us: number }>} */
const statements = new Map();
for (const n of [1, 2]) {
  await printed("PROFILE start", n);
  for (const ws of sockets) await send(ws, "Profiler.start");
  const t0 = Date.now();
  await printed("PROFILE stop .*\n", n);
  const line = [...output.matchAll(/PROFILE stop (.*)\n/g)][n - 1]?.[1] ?? "[]";
  for (const s of JSON.parse(line)) {
    const known = statements.get(s.query) ?? { query: s.query, n: 0, us: 0 };
    known.n += s.n;
    known.us += s.us;
    statements.set(s.query, known);
  }
  sampledMs += Date.now() - t0;
  for (const ws of sockets) profiles.push((await send(ws, "Profiler.stop")).profile);
}
for (const ws of sockets) ws.close();
if (child.pid !== undefined) process.kill(-child.pid, "SIGTERM");
await exited;

// Self time by function and by file, over every target's samples.
/** @type {Map<string, number>} */
const byFunction = new Map();
/** @type {Map<string, number>} */
const byFile = new Map();
let total = 0;
for (const p of profiles) {
  const nodes = new Map(p.nodes.map((/** @type {any} */ n) => [n.id, n]));
  const dt = new Map();
  for (let i = 0; i < p.samples.length; i++) dt.set(p.samples[i], (dt.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0));
  for (const [nodeId, us] of dt) {
    const f = nodes.get(nodeId).callFrame;
    const file = (f.url || "(native)").replace(/^.*\/(src|node_modules)\//, "$1/");
    const name = `${f.functionName || "(anonymous)"} ${file}:${f.lineNumber + 1}`;
    if (f.functionName === "(idle)" || f.functionName === "(program)") continue;
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
    byFile.set(file, (byFile.get(file) ?? 0) + us);
    total += us;
  }
}
writeFileSync(join(ROOT, "bench/results/profile.cpuprofile"), JSON.stringify(profiles[0]));
/** The `n` largest entries of `m`, largest first. @param {Map<string, number>} m @param {number} n */
const heaviest = (m, n) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n);
/** @param {Map<string, number>} m @param {number} n */
const show = (m, n) =>
  heaviest(m, n)
    .map(([k, us]) => `${((100 * us) / total).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`)
    .join("\n");
console.log(
  `CPU sampled ${(sampledMs / 1000).toFixed(1)} s of core cycles at depth ${DEPTH}: ${(total / 1000).toFixed(0)} ms busy (idle and program left out)\n`,
);
console.log(`By function (self time):\n${show(byFunction, TOP)}\n`);
console.log(`By file (self time):\n${show(byFile, 20)}\n`);
const execUs = [...statements.values()].reduce((a, s) => a + s.us, 0);
console.log(`By statement (the exec call's time; ${(execUs / 1000).toFixed(0)} ms in all):`);
for (const s of [...statements.values()].sort((a, b) => b.us - a.us).slice(0, TOP))
  console.log(
    `${((100 * s.us) / execUs).toFixed(1).padStart(5)}%  ${(s.us / s.n).toFixed(1).padStart(6)} µs × ${String(s.n).padStart(6)}  ${s.query.slice(0, 120)}`,
  );

/** @param {Map<string, number>} m @param {number} n */
const top = (m, n) => heaviest(m, n).map(([what, us]) => ({ what, share_pct: Math.round((1000 * us) / total) / 10 }));
writeResult("profile", {
  command: `npm run bench:profile -- --depth ${DEPTH}`,
  date: today(),
  machine: { ...machine(), load_at_start: loadAtStart, load_at_end: load() },
  head: execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim(),
  depth: Number(DEPTH),
  sampled_s: Math.round(sampledMs / 100) / 10,
  busy_ms: Math.round(total / 1000),
  by_file: top(byFile, 8),
  by_function: top(byFunction, 12),
  statements: [...statements.values()]
    .sort((a, b) => b.us - a.us)
    .slice(0, 12)
    .map((st) => ({
      query: st.query.slice(0, 140),
      us: Math.round(st.us / st.n),
      share_pct: Math.round((1000 * st.us) / execUs) / 10,
    })),
});
