// The R2 archive of a job past retention (docs/protocol.md §12), pure: where its objects
// live, what they hold, and how a read finds the page that answers it. The
// pool object writes the archive; the Worker reads it. Every object is
// immutable once written, and written again byte for byte if an archiving
// run is repeated.
//
// pools/{pool}/archive/jobs/{job_id}/
//   job.json            the index, written last: an archive without it is unfinished
//   events/{n}.json     the ledger (wire Events), in seq order
//   tasks/{n}.json      GET .../tasks answers, with each task's stored fields
//   leases/{n}.json     every lease issued for the job
//   artifacts/{n}.json  keys under jobs/{job_id}/ and the R2 objects they name
//   checkpoints/{n}.json manifests (wire form) in commit order, with their task
//   checkpoint_parts/{n}.json registered parts

import type { CheckpointManifest } from "./checkpoints";
import type { JsonObject } from "./json";
import { EVENTS_STREAM_PAGE } from "./limits";

export const ARCHIVE_FORMAT = "flashedge-archive/1";

/** Rows per page object: a page is a few hundred KiB, and an events page is exactly an events-stream page. */
export const ARCHIVE_PAGE_ROWS = EVENTS_STREAM_PAGE;

/** The archive's sections: one directory of pages each. */
export const ARCHIVE_SECTIONS = ["events", "tasks", "leases", "artifacts", "checkpoints", "checkpoint_parts"] as const;
export type ArchiveSection = (typeof ARCHIVE_SECTIONS)[number];

/** One page of a section: its sort keys' range and row count. */
export type PageRange = { first: string | number; last: string | number; count: number };

export type ArchiveIndex = {
  format: typeof ARCHIVE_FORMAT;
  job_id: string;
  archived_at: string;
  /** The GET /jobs/{id} answer, as it was. */
  job: JsonObject;
  pages: Record<ArchiveSection, PageRange[]>;
};

/** A task as GET .../tasks answers it, and what else was stored about it. */
export type ArchivedTask = [answer: JsonObject, stored: JsonObject];
export type ArchivedArtifact = {
  key: string;
  object: string;
  sha256: string;
  size_bytes: number;
  etag: string;
  created_ms: number;
};
export type ArchivedManifest = [taskId: string, manifest: CheckpointManifest];

export function archivePrefix(pool: string, jobId: string): string {
  return `pools/${pool}/archive/jobs/${jobId}/`;
}

export function archiveIndexKey(pool: string, jobId: string): string {
  return `${archivePrefix(pool, jobId)}job.json`;
}

export function archivePageKey(pool: string, jobId: string, section: ArchiveSection, page: number): string {
  return `${archivePrefix(pool, jobId)}${section}/${String(page).padStart(6, "0")}.json`;
}

/**
 * Orders sort keys as SQLite's BINARY collation does (UTF-8 bytes, i.e. code
 * points), which is the order the pages were written in; numbers numerically.
 */
export function compareKeys(a: string | number, b: string | number): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  const x = String(a);
  const y = String(b);
  let i = 0;
  let j = 0;
  while (i < x.length && j < y.length) {
    const cx = x.codePointAt(i)!;
    const cy = y.codePointAt(j)!;
    if (cx !== cy) return cx - cy;
    i += cx > 0xffff ? 2 : 1;
    j += cy > 0xffff ? 2 : 1;
  }
  return x.length - i - (y.length - j);
}

/** The numbers of the pages that may hold rows with sort key `key`. */
export function pagesHolding(pages: readonly PageRange[], key: string | number): number[] {
  const out: number[] = [];
  pages.forEach((page, n) => {
    if (compareKeys(page.first, key) <= 0 && compareKeys(key, page.last) <= 0) out.push(n);
  });
  return out;
}

/** The number of the first page holding a row after `key` (an events or artifacts cursor), or -1. */
export function firstPageAfter(pages: readonly PageRange[], key: string | number): number {
  return pages.findIndex((page) => compareKeys(page.last, key) > 0);
}
