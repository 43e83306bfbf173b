// How a self-contained page of the coordinator (the dashboard, the
// enrolment page) is put together from its files: the markup, its one
// inline style (the shared base.css, then its own), its one inline script
// (the shared common.browser.js, then its own), and the constants the script
// shares with the server in a `flashedge-config` meta tag. The routes serve the
// page under a CSP that admits the script and style by hash, so they must be
// exactly the bytes inlined. Pure: strings in, strings out.

import base from "./base.css?raw";
import common from "./common.browser.js?raw";

export type Page = { html: string; script: string; style: string };

/**
 * The page `name` (for errors) from its markup, script and style (each after
 * the shared common.browser.js and base.css) and config.
 */
export function assemblePage(
  name: string,
  files: { markup: string; script: string; style: string },
  config: unknown,
): Page {
  const script = inlineBlock(name, `${common}${files.script}`, "script");
  const style = inlineBlock(name, `${base}${files.style}`, "style");
  let html = fill(
    name,
    files.markup,
    '<meta name="flashedge-config" content="">',
    `<meta name="flashedge-config" content="${attributeText(JSON.stringify(config))}">`,
  );
  html = fill(name, html, "<style></style>", `<style>${style}</style>`);
  html = fill(name, html, "<script></script>", `<script>${script}</script>`);
  return { html, script, style };
}

/**
 * Text the browser will hash as the same bytes: the HTML parser would end the
 * element at its first closing tag (and treat `<!--` in a script specially),
 * and turns CR LF into LF before hashing. A file that breaks this is a bug.
 */
function inlineBlock(name: string, text: string, element: "script" | "style"): string {
  if (text.toLowerCase().includes(`</${element}`) || text.includes("<!--") || text.includes("\r")) {
    throw new Error(`${name}'s inline ${element} cannot be inlined as is`);
  }
  return text;
}

/** Puts `content` where `marker` is in `page`; the marker must be there exactly once. */
function fill(name: string, page: string, marker: string, content: string): string {
  const parts = page.split(marker);
  if (parts.length !== 2) throw new Error(`${name}'s page.html must hold ${marker} exactly once`);
  return parts.join(content);
}

/** Text safe inside a double-quoted attribute value. */
function attributeText(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}
