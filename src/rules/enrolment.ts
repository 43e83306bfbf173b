// Device-code enrolment (docs/protocol.md §9 "Enrolled machines", RFC 8628), pure: the
// codes' shapes and lifetimes, and the enrolled token, which names its node
// so the Worker knows who claims to call before the pool checks the claim.
// Randomness comes in as bytes; no I/O, no Cloudflare imports.

import { hex } from "../protocol/ids";

/** How long a code waits for an operator (RFC 8628 §3.2 `expires_in`). */
export const DEVICE_CODE_TTL_MS = 15 * 60 * 1000;
/** Seconds the agent waits between token polls (RFC 8628 §3.2 `interval`). */
export const POLL_INTERVAL_S = 5;
/** Pending codes a pool holds at once; one more is a 429 (a flood cannot fill the pool). */
export const MAX_PENDING_CODES = 100;
/**
 * Pending codes one source may hold at once; one more is a 429, so one
 * source cannot fill the pool's MAX_PENDING_CODES and lock everyone out.
 */
export const MAX_PENDING_CODES_PER_SOURCE = 5;
/** Decided and expired codes are kept this long for the record, then deleted. */
export const CODE_RECORD_MS = 24 * 60 * 60 * 1000;

/**
 * RFC 8628 §6.1's alphabet: consonants only (no vowels, so no words, no
 * 0/O or 1/I to confuse), upper case. Eight of them are 34.5 bits.
 */
const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";
const USER_CODE_LENGTH = 8;

/** `WDJB-MJHT` from eight random bytes (each mapped by rejection, so the letters are uniform). */
export function userCodeFrom(bytes: Uint8Array): string | null {
  const letters: string[] = [];
  for (const byte of bytes) {
    // 240 = 12 × 20: bytes at or above it would favour the first letters.
    if (byte >= 240) continue;
    letters.push(USER_CODE_ALPHABET[byte % USER_CODE_ALPHABET.length]!);
    if (letters.length === USER_CODE_LENGTH) break;
  }
  if (letters.length < USER_CODE_LENGTH) return null;
  return `${letters.slice(0, 4).join("")}-${letters.slice(4).join("")}`;
}

/** A typed code as stored: upper case, spaces and dashes dropped, then `XXXX-XXXX`; null when it cannot be one. */
export function normalizeUserCode(typed: string): string | null {
  const letters = typed.toUpperCase().replace(/[\s-]/g, "");
  if (letters.length !== USER_CODE_LENGTH) return null;
  for (const ch of letters) if (!USER_CODE_ALPHABET.includes(ch)) return null;
  return `${letters.slice(0, 4)}-${letters.slice(4)}`;
}

/**
 * What a code request is counted against (docs/protocol.md §9): an IPv4 address; an
 * IPv6 address's /64, since one host holds a whole /64 and could otherwise
 * rotate through it; an IPv4-mapped IPv6 address as its IPv4. Text that is
 * neither counts as itself, and an unknown address ("") is one source for
 * all such requests: never unlimited.
 */
export function codeSource(address: string | null): string {
  const text = (address ?? "").trim().toLowerCase();
  if (!text.includes(":")) return text;
  const mapped = /^::ffff:(\d{1,3}(\.\d{1,3}){3})$/.exec(text);
  if (mapped) return mapped[1]!;
  const halves = text.split("::");
  if (halves.length > 2) return text;
  const head = halves[0] ? halves[0].split(":") : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  const fill = 8 - head.length - tail.length;
  if (halves.length === 2 ? fill < 1 : fill !== 0) return text;
  const groups = [...head, ...Array<string>(halves.length === 2 ? fill : 0).fill("0"), ...tail];
  if (!groups.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return text;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ""))
    .join(":")}::/64`;
}

/** URL-safe base64 without padding. */
export function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64url(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return null;
  try {
    const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    return Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
  } catch {
    return null;
  }
}

const TOKEN_PREFIX = "fe1";

/**
 * An enrolled node's token: `fe1.<node id, base64url>.<32 random bytes,
 * base64url>`. The node id in it is only a claim: the pool accepts the
 * token when its hash is the one stored for that node.
 */
export function enrolledToken(nodeId: string, secret: Uint8Array): string {
  return `${TOKEN_PREFIX}.${base64url(new TextEncoder().encode(nodeId))}.${base64url(secret)}`;
}

/** The node an enrolled token names, or null when the text is not shaped like one. */
export function enrolledTokenNode(token: string): string | null {
  const parts = token.split(".");
  if (parts.length !== 3 || parts[0] !== TOKEN_PREFIX || parts[2]!.length < 43) return null;
  const bytes = fromBase64url(parts[1]!);
  if (bytes === null || bytes.length === 0) return null;
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return null;
  }
}

/** SHA-256 of UTF-8 text, lower-case hex: what the pool stores of a device code or a token. */
export async function sha256Hex(text: string): Promise<string> {
  return hex(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))));
}
