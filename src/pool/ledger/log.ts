// Structured logs (docs/protocol.md §11): one JSON line per state change, written after
// the transaction that made it. Never a token, a payload or artifact bytes:
// only ids, types, sizes and hashes.

import type { EventRow } from "./events";

export function logLine(fields: Record<string, string | number | boolean | null>): void {
  console.log(JSON.stringify({ level: "info", ...fields }));
}

/** A ledger event as a log line: its type, ids and scalar data. */
export function logEvent(pool: string, row: EventRow): void {
  const fields: Record<string, string | number | boolean | null> = {
    pool,
    event: row.type,
    seq: row.seq,
    job_id: row.job_id,
  };
  for (const [key, value] of Object.entries(JSON.parse(row.data) as Record<string, unknown>)) {
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") fields[key] = value;
  }
  logLine(fields);
}
