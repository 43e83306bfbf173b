// The append-only event ledger of a pool. Every state change writes its
// event in the same transaction as the change, so the ledger never disagrees
// with the tables; a lease renewal only counts (docs/protocol.md §12: heartbeats cost no
// history). Never updates or deletes a row.

import type { EventType } from "../../protocol/jobs";
import type { JsonObject } from "../../protocol/json";
import { sealedTaskOf } from "./sealing";
import { eventSeqs } from "./sequence";
import { eventTally } from "./tally";

export const EVENT_SOURCE = "flashruntime.leases";

export type EventData = JsonObject;

/**
 * One ledger event of job `jobId`: its type, message and data, and, from a
 * caller holding the task's row, the task (`seq`, `replicas`) it is about.
 */
export type EventEntry = {
  jobId: string;
  type: EventType;
  message: string;
  data: EventData;
  task?: { seq: number; replicas: number };
};

/** Appends `entry` to the ledger at `now`, sealed with its task when that task is replicated, and counts it. */
export function emit(sql: SqlStorage, now: number, { jobId, type, message, data, task }: EventEntry): void {
  // An event about a replicated task is sealed with it (docs/protocol.md §14); a caller
  // holding the task's row says so, saving the lookup. Every task has a
  // TASK_CREATED: that one tells nothing, and a submission writes thousands.
  const sealed =
    task !== undefined
      ? task.replicas > 1
        ? task.seq
        : null
      : type === "TASK_CREATED"
        ? null
        : sealedTaskOf(sql, jobId, data.task_id);
  sql.exec(
    "INSERT INTO events (seq, job_id, type, ts_ms, message, data, sealed_task) VALUES (?, ?, ?, ?, ?, ?, ?)",
    eventSeqs(sql).take(sql),
    jobId,
    type,
    now,
    message,
    JSON.stringify(data),
    sealed,
  );
  eventTally(sql).add(type, 1, now);
}

/** Below a statement's bound on a value's size (2 MB in a Durable Object): rows as JSON arrays, a chunk at a time. */
const CHUNK_BYTES = 512 * 1024;

/** `rows` as JSON texts of at most about CHUNK_BYTES each (a row longer than that alone), with how many rows each holds. */
export function* chunks(rows: ReadonlyArray<readonly unknown[]>): Generator<{ json: string; rows: number }> {
  let chunk: string[] = [];
  let bytes = 0;
  for (const row of rows) {
    const text = JSON.stringify(row);
    if (chunk.length > 0 && bytes + text.length > CHUNK_BYTES) {
      yield { json: `[${chunk.join(",")}]`, rows: chunk.length };
      chunk = [];
      bytes = 0;
    }
    chunk.push(text);
    bytes += text.length + 1;
  }
  if (chunk.length > 0) yield { json: `[${chunk.join(",")}]`, rows: chunk.length };
}

export type EventRow = {
  seq: number;
  job_id: string;
  type: string;
  ts_ms: number;
  message: string;
  data: string;
};

/** The wire form of a ledger row (docs/protocol.md §3.3 Event), plus its `seq` cursor. */
export function eventRecord(row: EventRow) {
  return {
    schema_version: "v1alpha1" as const,
    seq: row.seq,
    job_id: row.job_id,
    type: row.type,
    timestamp: iso(row.ts_ms),
    source: EVENT_SOURCE,
    message: row.message,
    data: JSON.parse(row.data) as EventData,
  };
}

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}
