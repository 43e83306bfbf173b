// Authentication rules (docs/protocol.md §9), pure: reading the token settings, deciding
// whether the coordinator is open, enforcing or refusing, and matching a
// bearer or Basic credential to a node or an operator. No I/O, no Cloudflare imports.
// A refusal never names a token.

import { enrolledTokenNode } from "./enrolment";
import { parseNodeOwners } from "./owners";
import { nameValueList } from "./setting-lists";

/** Who is calling, once the credential is resolved (docs/protocol.md §9). */
export type Caller =
  | { kind: "open" } // no tokens configured: nobody is authenticated
  | { kind: "node"; nodeId: string }
  | { kind: "operator"; name: string; onBehalfOf: string | null };

export type TokenSettings = {
  FLASHML_NODE_TOKENS?: string;
  FLASHML_OPERATOR_TOKENS?: string;
  FLASHML_REQUIRE_NODE_AUTH?: string;
  FLASHML_NODE_OWNERS?: string;
};

type Entry = { name: string; token: string };

export type AuthConfig =
  | { mode: "open"; owners: ReadonlyMap<string, string> }
  | { mode: "enforcing"; nodes: Entry[]; operators: Entry[]; owners: ReadonlyMap<string, string> }
  | { mode: "refusing"; detail: string };

export type Credential =
  | { kind: "node"; nodeId: string }
  | { kind: "operator"; name: string }
  // Shaped like an enrolled token (docs/protocol.md §9) and no configured token: the pool decides.
  | { kind: "enrolled"; nodeId: string; token: string };

/**
 * Open when no token is configured (unless REQUIRE_NODE_AUTH=1), enforcing
 * when any is. A configuration that cannot be trusted refuses everything.
 */
export function authConfig(settings: TokenSettings): AuthConfig {
  const nodes = parseEntries(settings.FLASHML_NODE_TOKENS, "FLASHML_NODE_TOKENS", "node_id:token");
  if (typeof nodes === "string") return { mode: "refusing", detail: nodes };
  const operators = parseEntries(settings.FLASHML_OPERATOR_TOKENS, "FLASHML_OPERATOR_TOKENS", "name:token");
  if (typeof operators === "string") return { mode: "refusing", detail: operators };
  // Owners decide which replicas count as independent (docs/protocol.md §14): a list that cannot be read refuses too.
  const owners = parseNodeOwners(settings.FLASHML_NODE_OWNERS);
  if (typeof owners === "string") return { mode: "refusing", detail: owners };
  const seen = new Set<string>();
  for (const { token } of nodes) {
    if (seen.has(token)) return { mode: "refusing", detail: "FLASHML_NODE_TOKENS lists the same token twice" };
    seen.add(token);
  }
  const operatorSeen = new Set<string>();
  for (const { token } of operators) {
    if (seen.has(token)) {
      return { mode: "refusing", detail: "a token is configured both as a node token and as an operator token" };
    }
    if (operatorSeen.has(token))
      return { mode: "refusing", detail: "FLASHML_OPERATOR_TOKENS lists the same token twice" };
    operatorSeen.add(token);
  }
  if (nodes.length === 0 && operators.length === 0) {
    if (settings.FLASHML_REQUIRE_NODE_AUTH === "1") {
      return {
        mode: "refusing",
        detail:
          "FLASHML_REQUIRE_NODE_AUTH=1 but no FLASHML_NODE_TOKENS or FLASHML_OPERATOR_TOKENS is configured: refusing to serve open",
      };
    }
    return { mode: "open", owners };
  }
  return { mode: "enforcing", nodes, operators, owners };
}

/** `name:token,…` → entries, or a message naming the setting (never a token). */
function parseEntries(raw: string | undefined, setting: string, shape: string): Entry[] | string {
  const list = nameValueList(raw);
  if (!Array.isArray(list)) return `${setting} entry ${list.bad} is not ${shape} (or has an empty name or token)`;
  const entries: Entry[] = [];
  for (const [i, { name, value: token }] of list.entries()) {
    if (!isTokenText(token)) return `${setting} entry ${i + 1} has a token with characters outside printable ASCII`;
    entries.push({ name, token });
  }
  return entries;
}

/**
 * The credential an `Authorization` header carries: null when absent,
 * "invalid" when present but neither a configured token nor shaped like an
 * enrolled one (or not well-formed). Every configured token is compared in
 * constant time, with no early exit. An enrolled token only names its node
 * here: the pool checks it against the node's stored hash.
 *
 * Two schemes carry a token (docs/protocol.md §9): `Bearer <token>`, and HTTP Basic
 * (RFC 7617), as clients that take credentials from a URL send them
 * (`https://ops:TOKEN@host`, httpx): the password is the token and the user
 * name must be that token's name — the operator's name, or the node id of a
 * node token or an enrolled one. A wrong name is as invalid as a wrong token.
 */
export function authenticate(
  config: { nodes: Entry[]; operators: Entry[] },
  header: string | undefined,
): Credential | null | "invalid" {
  if (header === undefined) return null;
  const presented = presentedToken(header);
  if (presented === "invalid" || !isTokenText(presented.token)) return "invalid";
  const { token, user } = presented;
  let found: Credential | "invalid" = "invalid";
  for (const e of config.nodes) if (constantTimeEqual(token, e.token)) found = { kind: "node", nodeId: e.name };
  for (const e of config.operators) if (constantTimeEqual(token, e.token)) found = { kind: "operator", name: e.name };
  if (found === "invalid") {
    const enrolled = enrolledTokenNode(token);
    if (enrolled !== null) found = { kind: "enrolled", nodeId: enrolled, token };
  }
  if (found === "invalid" || user === null) return found;
  return user === (found.kind === "operator" ? found.name : found.nodeId) ? found : "invalid";
}

/**
 * The token a header presents, and for Basic the user name that came with
 * it (null for Bearer). Scheme names are case-insensitive; Basic's
 * base64 is decoded strictly (canonical padding, no stray characters), its
 * bytes must be UTF-8, and it splits at the first colon (a token may hold
 * colons, a user name may not). Anything else is "invalid", never a throw.
 */
export function presentedToken(header: string): { token: string; user: string | null } | "invalid" {
  const bearer = /^Bearer +(\S+) *$/i.exec(header);
  if (bearer) return { token: bearer[1]!, user: null };
  const basic = /^Basic +(\S+) *$/i.exec(header)?.[1];
  if (basic === undefined) return "invalid";
  const text = strictBase64Text(basic);
  if (text === null) return "invalid";
  const colon = text.indexOf(":");
  if (colon <= 0) return "invalid";
  const user = text.slice(0, colon);
  // The name is compared, never shown; control characters are refused like any malformed credential.
  for (const ch of user) if (ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f) return "invalid";
  return { token: text.slice(colon + 1), user };
}

/** Base64 (RFC 4648 §4, padded) of UTF-8 text → the text; null for anything else. */
function strictBase64Text(encoded: string): string | null {
  if (encoded.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(encoded)) return null;
  let binary: string;
  try {
    binary = atob(encoded);
  } catch {
    return null;
  }
  // Non-canonical encodings (stray bits in the padding) decode too: refused.
  if (btoa(binary) !== encoded) return null;
  const bytes = Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return null;
  }
}

function isTokenText(s: string): boolean {
  return /^[\x21-\x7e]+$/.test(s);
}

/** Compares two ASCII strings in time that depends only on their lengths. */
export function constantTimeEqual(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < b.length; i++) diff |= (a.charCodeAt(i) || 0) ^ b.charCodeAt(i);
  return diff === 0;
}

/**
 * The delegation header for an operator (docs/protocol.md §9): the runtime joins repeated
 * headers with ", ", so a comma means two headers. Returns null when absent.
 */
export function delegation(
  value: string | null,
): { ok: true; node: string | null } | { ok: false; status: 400 | 403; detail: string } {
  if (value === null) return { ok: true, node: null };
  const values = value.split(",").length;
  if (values > 1) return { ok: false, status: 400, detail: `ambiguous X-FlashML-On-Behalf-Of: ${values} values` };
  const node = value.trim();
  if (node === "") return { ok: false, status: 403, detail: "empty X-FlashML-On-Behalf-Of" };
  return { ok: true, node };
}
