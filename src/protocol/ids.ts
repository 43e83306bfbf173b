// Identifiers the coordinator mints (docs/protocol.md §3): lease ids `ls-` + 12 hex, job
// ids 12 hex, manifest ids `ck-` + 12 hex — 48 random bits each.

/** Lowercase hex of some bytes. */
export function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** 16 random lowercase hex characters: a claim's id, from the Worker to the pool's objects (docs/sharding.md §13.1). */
export function newClaimId(): string {
  return hex(crypto.getRandomValues(new Uint8Array(8)));
}

/** 12 random lowercase hex characters. */
export function randomHex12(): string {
  return hex(crypto.getRandomValues(new Uint8Array(6)));
}

/** Draws before giving up on finding an unused id: with 48 random bits, more than one means a broken source. */
const ID_DRAWS = 8;

/**
 * `prefix` + a fresh 12-hex id that `isTaken` does not know (docs/protocol.md §12: a
 * collision is drawn again, never a 500). Throws only when the random
 * source keeps repeating itself.
 */
export function mintId(prefix: string, isTaken: (id: string) => boolean, draw: () => string = randomHex12): string {
  for (let i = 0; i < ID_DRAWS; i++) {
    const id = `${prefix}${draw()}`;
    if (!isTaken(id)) return id;
  }
  throw new Error(`no unused ${prefix}… id in ${ID_DRAWS} draws`);
}

/** 8 random lowercase hex characters: the random part of an id that names its shard (src/rules/shard-ids.ts). */
export function randomHex8(): string {
  return hex(crypto.getRandomValues(new Uint8Array(4)));
}
