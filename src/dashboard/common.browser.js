// @ts-check
// What the coordinator's page scripts share (the dashboard, the enrolment
// page): the page's config, elements by id, the operator's token, the status
// line. The Worker inlines this file ahead of each page's own script, in the
// same inline block (src/dashboard/assemble.ts), so the page's CSP hash
// covers it. Its one global, `pageKit`, is what the page scripts read.
//
// The token is kept in this tab only (sessionStorage, one key for both
// pages, so one sign-in serves a tab); nothing here turns data into markup.
//
// Type-checked as a browser script: `tsc --noEmit -p tsconfig.dashboard.json`.

// biome-ignore lint/correctness/noUnusedVariables: read by the page script inlined after this one.
const pageKit = (() => {
  // biome-ignore lint/suspicious/noRedundantUseStrict: the page runs this as a classic script, where strict mode is opt-in.
  "use strict";

  const TOKEN_KEY = "flashedge.dashboard.token";
  let memoryToken = "";

  /**
   * The constants the page shares with the server, from its `flashedge-config` meta tag.
   * @returns {unknown}
   */
  function readConfig() {
    const meta = document.querySelector('meta[name="flashedge-config"]');
    if (!(meta instanceof HTMLMetaElement)) throw new Error("the page has no flashedge-config");
    return JSON.parse(meta.content);
  }

  /**
   * @param {string} id
   * @returns {HTMLElement}
   */
  function $(id) {
    const node = document.getElementById(id);
    if (!node) throw new Error(`the page has no #${id}`);
    return node;
  }

  /** @returns {string} */
  function getToken() {
    try {
      return window.sessionStorage.getItem(TOKEN_KEY) || "";
    } catch {
      return memoryToken;
    }
  }

  /** @param {string} value */
  function setToken(value) {
    memoryToken = value;
    try {
      if (value) window.sessionStorage.setItem(TOKEN_KEY, value);
      else window.sessionStorage.removeItem(TOKEN_KEY);
    } catch {
      // storage disabled: the token lives in memory only
    }
    $("forget-token").hidden = !value;
  }

  /**
   * @param {unknown} err
   * @returns {string}
   */
  function messageOf(err) {
    return err instanceof Error && err.message ? err.message : String(err);
  }

  /**
   * @param {string} text
   * @param {boolean} [bad]
   */
  function setStatus(text, bad) {
    const node = $("status");
    node.textContent = text;
    node.className = bad ? "status bad" : "status";
  }

  /**
   * @param {number} n
   * @param {string} word
   */
  function plural(n, word) {
    return `${n} ${word}${n === 1 ? "" : "s"}`;
  }

  return { readConfig, $, getToken, setToken, messageOf, setStatus, plural };
})();
