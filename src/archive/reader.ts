// The reader of an archived job (docs/protocol.md §12): answers its reads from its R2
// archive exactly as the pool answered them before. The pool object says
// "archived"; the jobs, artifacts and checkpoints routes then read here.
// Each read fetches only the pages it needs; it writes nothing.

import {
  ARCHIVE_FORMAT,
  type ArchivedArtifact,
  type ArchivedManifest,
  type ArchivedTask,
  type ArchiveIndex,
  type ArchiveSection,
  archiveIndexKey,
  archivePageKey,
  firstPageAfter,
  pagesHolding,
} from "../protocol/archive";
import { artifactListEntry, type CheckpointManifest } from "../protocol/checkpoints";
import type { JsonObject } from "../protocol/json";
import type { AppContext } from "../routes/context";

/** The archive of `jobId` in the request's pool: where its reads go once the pool has archived it. */
export function archiveOf(c: AppContext, jobId: string): JobArchive {
  return new JobArchive(c.env.ARTIFACTS, c.var.pool, jobId);
}

type EventItem = JsonObject & { seq: number };

export class JobArchive {
  private indexRead: Promise<ArchiveIndex> | undefined;

  constructor(
    private readonly bucket: R2Bucket,
    private readonly pool: string,
    readonly jobId: string,
  ) {}

  /** The job record, as GET /jobs/{id} answered it. */
  async job(): Promise<JsonObject> {
    return (await this.index()).job;
  }

  /** Every task, as GET .../tasks answered them. */
  async tasks(): Promise<JsonObject[]> {
    const rows = await this.section<ArchivedTask>("tasks");
    return rows.map(([answer]) => answer);
  }

  /** The events after `after`, at most `limit`, as GET .../events answered them. */
  async events(after: number, limit: number): Promise<EventItem[]> {
    const pages = (await this.index()).pages.events;
    const out: EventItem[] = [];
    for (let n = firstPageAfter(pages, after); n >= 0 && n < pages.length && out.length < limit; n++) {
      for (const event of await this.page<EventItem>("events", n)) {
        if (event.seq > after && out.length < limit) out.push(event);
      }
    }
    return out;
  }

  /**
   * One page of `[{uri, key, size_bytes}]` of the job's artifacts, sorted by
   * key, after the key `after`: at most `limit`, read an archive page at a
   * time; `next` continues it, null on the last page.
   */
  async artifacts(after: string | null, limit: number): Promise<{ items: JsonObject[]; next: string | null }> {
    const pages = (await this.index()).pages.artifacts;
    const rows: ArchivedArtifact[] = [];
    const start = after === null ? 0 : firstPageAfter(pages, after);
    for (let n = start; n >= 0 && n < pages.length; n++) {
      for (const row of await this.page<ArchivedArtifact>("artifacts", n)) {
        if (after !== null && row.key <= after) continue;
        if (rows.length === limit) return { items: rows.map(artifactListEntry), next: rows[limit - 1]!.key };
        rows.push(row);
      }
    }
    return { items: rows.map(artifactListEntry), next: null };
  }

  /** The stored object behind an artifact key of the job, or null. */
  async artifact(key: string): Promise<ArchivedArtifact | null> {
    for (const n of pagesHolding((await this.index()).pages.artifacts, key)) {
      const found = (await this.page<ArchivedArtifact>("artifacts", n)).find((r) => r.key === key);
      if (found) return found;
    }
    return null;
  }

  /** A task's checkpoint manifests in commit order, or null when the job had no such task. */
  async manifests(taskId: string): Promise<CheckpointManifest[] | null> {
    const index = await this.index();
    let known = false;
    for (const n of pagesHolding(index.pages.tasks, taskId)) {
      if ((await this.page<ArchivedTask>("tasks", n)).some(([answer]) => answer.task_id === taskId)) known = true;
    }
    if (!known) return null;
    const out: CheckpointManifest[] = [];
    for (const n of pagesHolding(index.pages.checkpoints, taskId)) {
      for (const [task, manifest] of await this.page<ArchivedManifest>("checkpoints", n)) {
        if (task === taskId) out.push(manifest);
      }
    }
    return out;
  }

  private index(): Promise<ArchiveIndex> {
    this.indexRead ??= this.read<ArchiveIndex>(archiveIndexKey(this.pool, this.jobId)).then((index) => {
      if (index.format !== ARCHIVE_FORMAT) throw new Error(`archive of job ${this.jobId} has format ${index.format}`);
      return index;
    });
    return this.indexRead;
  }

  private async section<T>(section: ArchiveSection): Promise<T[]> {
    const pages = (await this.index()).pages[section];
    const all = await Promise.all(pages.map((_, n) => this.page<T>(section, n)));
    return all.flat();
  }

  private page<T>(section: ArchiveSection, n: number): Promise<T[]> {
    return this.read<T[]>(archivePageKey(this.pool, this.jobId, section, n));
  }

  /** An archive object; missing means the bucket lost part of a pool's history, which no request can mend. */
  private async read<T>(key: string): Promise<T> {
    const object = await this.bucket.get(key);
    if (!object) throw new Error(`archive object ${key} is missing from R2`);
    return (await object.json()) as T;
  }
}
