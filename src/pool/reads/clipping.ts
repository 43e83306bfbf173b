// How the dashboard and fleet views clip client-chosen strings (node ids,
// hostnames, labels, job names, tenants, dataset names): a bounded length
// and a bounded count, so no registration makes a summary large. The page
// escapes them; this module never builds markup.

import { shorten } from "../../rules/text";

/** Characters kept of a client-chosen string; entries kept of a client-chosen list. */
export const CLIP_CHARS = 200;
export const CLIP_ENTRIES = 8;

export function clip(text: string): string {
  return shorten(text, CLIP_CHARS - 1);
}

export function clipLabels(labels: { [key: string]: string } | undefined): { [key: string]: string } {
  const out: { [key: string]: string } = {};
  // Own keys only, into a fresh object: a "__proto__" label stays a label.
  for (const [key, value] of Object.entries(labels ?? {}).slice(0, CLIP_ENTRIES)) {
    Object.defineProperty(out, clip(key), {
      value: clip(String(value)),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}
