// @ts-check
// What scripts/e2e-runs.mjs serves: a SNAPSHOT of the checkout taken at the
// start, which test/support/wrangler.mjs's startWrangler serves (`cwd`).
// `wrangler dev` watches its sources and reloads the Worker when one
// changes; in a checkout others are editing, a run that takes a few minutes
// would otherwise be served by several versions of the code, some of them
// half-written. --in-place serves the checkout itself, reloads and all.

import { cpSync, existsSync, mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../../test/support/wrangler.mjs";

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
