// Identifiers the coordinator mints (SPEC §3): lease ids `ls-` + 12 hex, job
// ids 12 hex, manifest ids `ck-` + 12 hex — 48 random bits each.

/** Lowercase hex of some bytes. */
export function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** 12 random lowercase hex characters. */
export function randomHex12(): string {
  return hex(crypto.getRandomValues(new Uint8Array(6)));
}
