// A replica's metrics object read the way verification must read it (docs/protocol.md
// §14 "Exact comparison"): JSON.parse keeps the last of two equal keys
// (other readers keep the first) and rounds integers past 2^53, so two
// outputs that say different things to some reader would "agree". Here a
// duplicate key, a number that is not finite, or nesting deeper than
// MAX_AGREE_DEPTH makes the output invalid, and an integer a double cannot
// hold exactly is kept as a bigint. Pure: no I/O.

import { MAX_AGREE_DEPTH } from "./verification";

export type ParsedMetrics = { ok: true; value: Record<string, unknown> } | { ok: false; problem: string };

const WHITESPACE = /[ \t\n\r]*/y;
const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
// A string token: escapes are checked by JSON.parse of the token itself.
// biome-ignore lint/suspicious/noControlCharactersInRegex: JSON strings may not hold raw control characters; this refuses them.
const STRING = /"(?:[^"\\\u0000-\u001f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/y;
const LITERAL = /true|false|null/y;

class Refused extends Error {}

/** The metrics object in `text`, or why it is not one a verdict may compare. */
export function parseMetrics(text: string): ParsedMetrics {
  let at = 0;
  const match = (re: RegExp): RegExpExecArray | null => {
    re.lastIndex = at;
    const m = re.exec(text);
    if (m) at = re.lastIndex;
    return m;
  };
  const skip = () => match(WHITESPACE);
  const refuse = (problem: string): never => {
    throw new Refused(problem);
  };
  const expect = (char: string) => {
    skip();
    if (text[at] !== char) refuse(`expected '${char}' at offset ${at}`);
    at++;
  };

  const value = (depth: number): unknown => {
    if (depth > MAX_AGREE_DEPTH) refuse(`nested deeper than ${MAX_AGREE_DEPTH} levels`);
    skip();
    const char = text[at];
    if (char === "{") return object(depth);
    if (char === "[") return array(depth);
    if (char === '"') return string();
    const literal = match(LITERAL);
    if (literal) return literal[0] === "null" ? null : literal[0] === "true";
    const number = match(NUMBER);
    if (!number) return refuse(`not JSON at offset ${at}`);
    const token = number[0];
    const integer = number[1] === undefined && number[2] === undefined;
    const n = Number(token);
    if (integer && !Number.isSafeInteger(n)) return BigInt(token);
    if (!Number.isFinite(n)) refuse(`the number ${token.slice(0, 40)} is not finite`);
    return n;
  };
  const string = (): string => {
    const token = match(STRING);
    if (!token) return refuse(`malformed string at offset ${at}`);
    return JSON.parse(token[0]) as string;
  };
  const object = (depth: number): Record<string, unknown> => {
    at++; // {
    // No prototype: a "__proto__" key is a key like any other.
    const out: Record<string, unknown> = Object.create(null);
    skip();
    if (text[at] === "}") {
      at++;
      return out;
    }
    for (;;) {
      skip();
      const key = string();
      if (Object.hasOwn(out, key)) refuse(`the key ${JSON.stringify(key.slice(0, 40))} appears twice`);
      expect(":");
      out[key] = value(depth + 1);
      skip();
      if (text[at] === ",") {
        at++;
        continue;
      }
      expect("}");
      return out;
    }
  };
  const array = (depth: number): unknown[] => {
    at++; // [
    const out: unknown[] = [];
    skip();
    if (text[at] === "]") {
      at++;
      return out;
    }
    for (;;) {
      out.push(value(depth + 1));
      skip();
      if (text[at] === ",") {
        at++;
        continue;
      }
      expect("]");
      return out;
    }
  };

  try {
    skip();
    if (text[at] !== "{") return { ok: false, problem: "metrics must be one JSON object" };
    const parsed = object(0);
    skip();
    if (at !== text.length) return { ok: false, problem: `trailing text at offset ${at}` };
    return { ok: true, value: parsed };
  } catch (e) {
    if (e instanceof Refused) return { ok: false, problem: e.message };
    throw e;
  }
}
