#!/usr/bin/env node
// @ts-check
// npm run crash|soak [-- --nodes N --tasks N --seconds N --kills N --max-attempts N --fail-rate F
//                        --broken N --vanishing N --shards N --raise N]
// --raise N restarts the coordinator at N shards after its first kill.
// Runs reliability/{crash,soak}.test.ts (vitest in Node, driving `wrangler dev`)
// with the sizes given as flags.

import { spawnSync } from "node:child_process";

const [which, ...args] = process.argv.slice(2);
if (which !== "crash" && which !== "soak" && which !== "runs") {
  console.error(
    "usage: reliability.mjs crash|soak|runs [--nodes N] [--tasks N] [--seconds N] [--kills N] [--max-attempts N] [--fail-rate F] [--broken N] [--vanishing N] [--shards N] [--raise N]",
  );
  process.exit(2);
}
const env = { ...process.env };
for (let i = 0; i < args.length; i += 2) {
  const flag = args[i]?.replace(/^--/, "");
  const value = args[i + 1];
  if (!flag || value === undefined || Number.isNaN(Number(value))) {
    console.error(`bad flag near '${args[i] ?? ""}': flags take a number`);
    process.exit(2);
  }
  env[`RELIABILITY_${flag.toUpperCase().replace(/-/g, "_")}`] = value;
}
const run = spawnSync(
  "npx",
  ["vitest", "run", "--config", "reliability/vitest.config.ts", `reliability/${which}.test.ts`],
  {
    stdio: "inherit",
    env,
  },
);
process.exit(run.status ?? 1);
