// The enrolment page (docs/protocol.md §9, "Enrolled machines"), assembled from its files
// as the dashboard's is (src/dashboard/page.ts): page.html (the markup),
// page.css and page.browser.js (its one inline style and one inline script,
// inlined byte for byte), and the constants the script shares with the
// server, written into the page's `flashedge-config` meta tag from their one
// definition. The route serves ENROL_HTML under a CSP that admits
// ENROL_SCRIPT and ENROL_STYLE by hash, so they must be exactly the bytes
// served.
//
// The page holds constants only, never pool data: serving it needs no
// credential (the device API under it does). It must never load anything
// from another origin.

import { assemblePage } from "../dashboard/assemble";
import { POOL_NAME_RE } from "../protocol/keys";
import script from "./page.browser.js?raw";
import style from "./page.css?raw";
import markup from "./page.html?raw";
import type { EnrolConfig } from "./wire";

/** The constants the page's script shares with the server, from their one definition. */
export const ENROL_CONFIG = {
  pool_name: { source: POOL_NAME_RE.source, flags: POOL_NAME_RE.flags },
} satisfies EnrolConfig;

const page = assemblePage("the enrolment page", { markup, script, style }, ENROL_CONFIG);

/** The page's one inline script, hashed into its CSP. */
export const ENROL_SCRIPT = page.script;

/** The page's one inline style, hashed into its CSP. */
export const ENROL_STYLE = page.style;

/** The whole page: markup, the two inline blocks and the config; no data, no external origin. */
export const ENROL_HTML = page.html;
