// Ids that name their shard, and the hash that places a node (docs/protocol.md
// §15, docs/sharding.md §4.1-4.2), pure. At S > 1 a shard mints job, lease
// and manifest ids as 8 random hex, its index in 2 hex and a 2-hex tag
// binding the two to the pool, inside the same 12 hex as always: the Worker
// reads the shard off the id, with no lookup. An id whose tag does not
// check was minted before the pool had shards (a legacy id) and lives in
// shard 0. At S = 1 nothing is hashed and ids are today's.

const FNV32_OFFSET = 0x811c9dc5;
const FNV32_PRIME = 0x01000193;
const FNV64_OFFSET = 0xcbf29ce484222325n;
const FNV64_PRIME = 0x100000001b3n;
const MASK64 = (1n << 64n) - 1n;
const utf8 = new TextEncoder();

/** FNV-1a, 32 bits, over the UTF-8 bytes of `text`. */
export function fnv1a32(text: string): number {
  let hash = FNV32_OFFSET;
  for (const byte of utf8.encode(text)) hash = Math.imul(hash ^ byte, FNV32_PRIME) >>> 0;
  return hash;
}

/** FNV-1a, 64 bits, over the UTF-8 bytes of `text`. */
export function fnv1a64(text: string): bigint {
  let hash = FNV64_OFFSET;
  for (const byte of utf8.encode(text)) hash = ((hash ^ BigInt(byte)) * FNV64_PRIME) & MASK64;
  return hash;
}

/**
 * Lamping and Veach's jump consistent hash of `key` into [0, buckets).
 * Growing the count moves a key only into the new buckets, which is what
 * lets a node's registry shard be found again after a raise (§4.2).
 */
export function jump(key: string, buckets: number): number {
  if (!(Number.isInteger(buckets) && buckets >= 1))
    throw new RangeError(`jump needs a bucket count ≥ 1, not ${buckets}`);
  let k = fnv1a64(key);
  let b = -1;
  let j = 0;
  while (j < buckets) {
    b = j;
    k = (k * 2862933555777941757n + 1n) & MASK64;
    j = Math.floor((b + 1) * (2 ** 31 / (Number(k >> 33n) + 1)));
  }
  return b;
}

/** The shard that records where node `nodeId` lives, in a pool of `shards` (§4.2). */
export function registryShard(nodeId: string, shards: number): number {
  return jump(nodeId, shards);
}

/**
 * Where node `nodeId` may already live when its registry shard today does
 * not hold it (§4.2), newest first, each once: its registry shard in each
 * earlier layout (jump hash moved it only into shards a raise added), then
 * shard 0, which held every node of a pool's one-shard days and, before
 * homes spread, every node of any pool. A shard the layout has since
 * removed is empty and left out. `counts`: the layout's shard counts,
 * oldest first, the last one today's.
 */
export function homeCandidates(nodeId: string, counts: readonly number[]): number[] {
  const now = counts.at(-1) ?? 1;
  const found: number[] = [];
  for (const s of [...counts].reverse().slice(1)) {
    const k = jump(nodeId, s);
    if (k < now && !found.includes(k)) found.push(k);
  }
  if (!found.includes(0)) found.push(0);
  return found.filter((k) => k !== jump(nodeId, now));
}

/**
 * The tag binding a shard byte to its pool: FNV-1a-32 over pool and the
 * first 10 hex, its four bytes folded into one. (FNV's low byte alone
 * depends only on the low byte of its state, so every byte is folded in.)
 */
function tag(pool: string, first10: string): string {
  const h = fnv1a32(`${pool}:${first10}`);
  return ((h ^ (h >>> 8) ^ (h >>> 16) ^ (h >>> 24)) & 0xff).toString(16).padStart(2, "0");
}

/** 12 lowercase hex naming shard `shard` of `pool`: `random8` (8 hex), the shard, the tag. */
export function mintShardHex(pool: string, shard: number, random8: string): string {
  if (!/^[0-9a-f]{8}$/.test(random8)) throw new RangeError("mintShardHex needs 8 lowercase hex of randomness");
  if (!(Number.isInteger(shard) && shard >= 0 && shard < 256)) throw new RangeError(`no shard ${shard}`);
  const first10 = random8 + shard.toString(16).padStart(2, "0");
  return first10 + tag(pool, first10);
}

/** The shard a 12-hex id names, or null when its tag does not check for `pool` (a legacy id). */
export function shardOfHex(pool: string, hex12: string): number | null {
  if (!/^[0-9a-f]{12}$/.test(hex12)) return null;
  const first10 = hex12.slice(0, 10);
  return tag(pool, first10) === hex12.slice(10) ? Number.parseInt(hex12.slice(8, 10), 16) : null;
}

export type IdShard = { shard: number; legacy: boolean };

/**
 * Where an id with `prefix` (`""` for jobs, `ls-`, `ck-`) lives in a pool
 * of `shards`: the shard its tag names, or shard 0 for a legacy id, an id
 * naming a shard the pool does not have, and anything not shaped as one.
 * `legacy` says shard 0 was chosen for want of a tag.
 */
export function shardOfId(pool: string, id: string, prefix: string, shards: number): IdShard {
  if (shards === 1) return { shard: 0, legacy: false };
  const k = id.startsWith(prefix) ? shardOfHex(pool, id.slice(prefix.length)) : null;
  return k !== null && k < shards ? { shard: k, legacy: false } : { shard: 0, legacy: true };
}
