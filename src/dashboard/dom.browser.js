// @ts-check
// The dashboard's DOM builders and formatters (docs/protocol.md §11): what
// every panel draws with. Inlined ahead of the dashboard's other scripts
// (src/dashboard/page.ts); its one global, `domKit`, is what they read.
//
// Nothing here turns data into markup: every node id, job name, label and
// message the page draws is attacker-controlled, so a string only ever
// becomes a text node (textContent) or an attribute value (setAttribute),
// and the panels build every element through `h` (or `svg`, for a chart).
//
// Type-checked as a browser script: `tsc --noEmit -p tsconfig.dashboard.json`.

// biome-ignore lint/correctness/noUnusedVariables: read by the dashboard scripts inlined after this one.
const domKit = (() => {
  // biome-ignore lint/suspicious/noRedundantUseStrict: the page runs this as a classic script, where strict mode is opt-in.
  "use strict";

  /**
   * @typedef {import("./wire").Labels} Labels
   * @typedef {Node | string | number | null | undefined | false | Child[]} Child
   * @typedef {Record<string, string | number | boolean | null | undefined | ((event: MouseEvent) => void)>} Attrs
   */

  const { $ } = pageKit;
  const SVG_NS = "http://www.w3.org/2000/svg";

  /**
   * Builds an element. Strings become text nodes, never markup.
   * @param {string} tag
   * @param {Attrs | null} attrs
   * @param {...Child} children
   * @returns {HTMLElement}
   */
  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    if (attrs) {
      for (const [key, value] of Object.entries(attrs)) {
        if (value === null || value === undefined || value === false) continue;
        if (typeof value === "function") {
          if (key === "onclick") node.addEventListener("click", value);
        } else if (key === "class") node.className = String(value);
        else if (key === "text") node.textContent = String(value);
        else node.setAttribute(key, String(value));
      }
    }
    append(node, children);
    return node;
  }

  /**
   * Builds an SVG element, for the charts the page draws itself: every
   * attribute through setAttribute, strings as text nodes, never markup.
   * @param {string} tag
   * @param {Record<string, string | number>} attrs
   * @param {...Child} children
   * @returns {SVGElement}
   */
  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
    append(node, children);
    return node;
  }

  /**
   * @param {Node} node
   * @param {Child} child
   */
  function append(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) {
      for (const item of child) append(node, item);
      return;
    }
    node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }

  /**
   * @param {string} id
   * @param {Child} child
   */
  function replace(id, child) {
    const node = $(id);
    while (node.firstChild) node.removeChild(node.firstChild);
    append(node, child);
  }

  // ---- formatters ----------------------------------------------------------

  /** @param {string} iso */
  function when(iso) {
    const d = new Date(iso);
    return Number.isNaN(d.getTime()) ? "" : d.toLocaleTimeString([], { hour12: false });
  }

  /**
   * A time of day, with its date unless that is today: a credential outlives a day.
   * @param {string} iso
   */
  function whenDated(iso) {
    const d = new Date(iso);
    if (Number.isNaN(d.getTime()) || d.toDateString() === new Date().toDateString()) return when(iso);
    return `${d.toLocaleDateString()} ${when(iso)}`;
  }

  /** @param {number} seconds */
  function age(seconds) {
    if (seconds < 1) return "just now";
    if (seconds < 90) return `${Math.round(seconds)}s ago`;
    if (seconds < 5400) return `${Math.round(seconds / 60)}m ago`;
    return `${Math.round(seconds / 3600)}h ago`;
  }

  /** @param {number} bytes */
  function megabytes(bytes) {
    return bytes >= 1e9 ? `${Math.round(bytes / 1e8) / 10} GB` : `${Math.round(bytes / 1e5) / 10} MB`;
  }

  // ---- panel parts ---------------------------------------------------------

  /**
   * @param {number} n
   * @param {string} noun
   * @param {string} [hint]
   */
  function more(n, noun, hint) {
    return n > 0 ? h("div", { class: "more", text: `… and ${n} more ${noun}${hint ? ` (${hint})` : ""}` }) : null;
  }

  /**
   * @param {string[]} headers
   * @param {HTMLElement[]} rows
   */
  function table(headers, rows) {
    if (rows.length === 0) return null;
    return h(
      "table",
      null,
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          headers.map((t) => h("th", { text: t })),
        ),
      ),
      h("tbody", null, rows),
    );
  }

  /** @param {Labels} labels */
  function labelChips(labels) {
    return Object.entries(labels).map(([key, value]) => h("span", { class: "chip", text: `${key}=${value}` }));
  }

  return { h, svg, replace, table, more, labelChips, when, whenDated, age, megabytes };
})();
