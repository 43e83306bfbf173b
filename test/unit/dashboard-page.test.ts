// The dashboard page as a string: self-contained, and with no path from data
// to markup. The browser test (test/browser/) runs it for real.

import { describe, expect, it } from "vitest";
import { DASHBOARD_HTML, DASHBOARD_SCRIPT, DASHBOARD_STYLE } from "../../src/dashboard/page";

describe("the dashboard page", () => {
  it("its script is valid JavaScript", () => {
    // Compiles without running: a syntax error throws here.
    expect(() => new Function(DASHBOARD_SCRIPT)).not.toThrow();
  });

  it("loads nothing from another origin", () => {
    // The SVG namespace is a name createElementNS needs, never fetched; no other URL may appear.
    const urls = DASHBOARD_HTML.match(/(https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}/gi) ?? [];
    expect(urls.filter((url) => url !== "http://www.w3.org")).toEqual([]);
    expect(DASHBOARD_HTML).not.toMatch(/<(script|link|img|iframe)[^>]*\s(src|href)=["'](?!data:)/i);
    expect(DASHBOARD_STYLE).not.toMatch(/@import|url\(/i);
  });

  it("holds exactly one inline script and one inline style, and no inline handlers", () => {
    expect(DASHBOARD_HTML.match(/<script\b/g)).toHaveLength(1);
    expect(DASHBOARD_HTML.match(/<style\b/g)).toHaveLength(1);
    expect(DASHBOARD_HTML).toContain(`<script>${DASHBOARD_SCRIPT}</script>`);
    expect(DASHBOARD_HTML).toContain(`<style>${DASHBOARD_STYLE}</style>`);
    expect(DASHBOARD_HTML).not.toMatch(/\son[a-z]+=/i);
    expect(DASHBOARD_HTML).not.toMatch(/\sstyle=/i);
  });

  it("never turns data into markup", () => {
    for (const sink of [
      "innerHTML",
      "outerHTML",
      "insertAdjacentHTML",
      "document.write",
      "eval(",
      "new Function",
      'setTimeout("',
      "javascript:",
    ]) {
      expect(DASHBOARD_SCRIPT).not.toContain(sink);
    }
  });

  it("keeps the token in the tab only", () => {
    expect(DASHBOARD_SCRIPT).not.toContain("localStorage");
    expect(DASHBOARD_SCRIPT).not.toContain("document.cookie");
    expect(DASHBOARD_SCRIPT).toContain("sessionStorage");
  });
});
