// The dashboard page (docs/protocol.md §11), assembled from its files: page.html (the
// markup), page.css (its one inline style), its browser scripts (its one
// inline script: the files below concatenated in order, each inlined byte for
// byte), and the constants the script shares with the server, written into
// the page's `flashedge-config` meta tag from their one definition. The route
// serves DASHBOARD_HTML under a CSP that admits DASHBOARD_SCRIPT and
// DASHBOARD_STYLE by hash, so they must be exactly the bytes served.
//
// The page holds constants only, never pool data: serving it needs no
// credential. It must never load anything from another origin.

import { POOL_NAME_RE } from "../protocol/keys";
import { DASHBOARD_LIMIT_DEFAULT } from "../protocol/limits";
import { TASK_STATES } from "../protocol/tasks";
import api from "./api.browser.js?raw";
import { assemblePage } from "./assemble";
import dom from "./dom.browser.js?raw";
import fleet from "./fleet.browser.js?raw";
import main from "./page.browser.js?raw";
import style from "./page.css?raw";
import markup from "./page.html?raw";
import placement from "./placement.browser.js?raw";
import runs from "./runs.browser.js?raw";
import type { PageConfig } from "./wire";
import work from "./work.browser.js?raw";

/** The constants the page's script shares with the server, from their one definition. */
export const DASHBOARD_CONFIG = {
  pool_name: { source: POOL_NAME_RE.source, flags: POOL_NAME_RE.flags },
  page_size: DASHBOARD_LIMIT_DEFAULT,
  task_states: TASK_STATES,
  // A job's progress bar: finished work first, then running; pending is the empty track.
  progress_states: ["COMPLETED", "FAILED", "LEASED", "CANCELLED"],
} satisfies PageConfig;

/**
 * The dashboard's browser scripts, in the order the one inline script runs
 * them (after the shared common.browser.js, which assemblePage prepends):
 * each file's namespace (`domKit`, `apiKit`, …) is read only by the files
 * after it, and page.browser.js, the poll loop and wiring, runs last.
 */
const SCRIPTS = [dom, api, placement, work, fleet, runs, main];

const page = assemblePage("the dashboard", { markup, script: SCRIPTS.join(""), style }, DASHBOARD_CONFIG);

/** The page's one inline script, hashed into its CSP. */
export const DASHBOARD_SCRIPT = page.script;

/** The page's one inline style, hashed into its CSP. */
export const DASHBOARD_STYLE = page.style;

/** The whole page: markup, the two inline blocks and the config; no data, no external origin. */
export const DASHBOARD_HTML = page.html;
