// `{name}` placeholders in command tokens and env values, filled per task
// from that task's params — the subset of Python's str.format the reference
// recipe relies on, and nothing more. `{{` and `}}` are literal braces.
//
// Refused, where the reference either raises or does something we will not
// reproduce: a positional `{}`/`{0}`, a lone `{` or `}`, a nested brace, and
// (deliberate difference) a conversion `{x!r}`, a format spec `{x:.3f}` or a
// field access `{x.y}`/`{x[0]}` — Python's mini-language cannot be matched
// byte for byte here, and an approximation would silently change argv.
// A template is parsed once; filling never throws.

import { describe, shorten } from "./parameters";

/** Linux's limit on one argv or environment string (MAX_ARG_STRLEN). */
export const MAX_FILLED_CHARS = 131_072;

type Segment = { readonly literal: string } | { readonly name: string };

export interface Template {
  readonly segments: readonly Segment[];
}

export type Parsed = { ok: true; template: Template } | { ok: false; problems: string[] };

/** Parse a template; problems are phrases to follow "command token 2 …". */
export function parseTemplate(text: string): Parsed {
  const segments: Segment[] = [];
  const problems: string[] = [];
  let literal = "";
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === "{" && text[i + 1] === "{") {
      literal += "{";
      i += 2;
    } else if (c === "}" && text[i + 1] === "}") {
      literal += "}";
      i += 2;
    } else if (c === "}") {
      problems.push(`has a lone '}' at position ${i} (write }} for a literal brace)`);
      i += 1;
    } else if (c === "{") {
      const close = text.indexOf("}", i + 1);
      const nested = text.indexOf("{", i + 1);
      if (close === -1) {
        problems.push(`has a lone '{' at position ${i} (write {{ for a literal brace)`);
        break; // nothing after an unclosed brace can be read as a placeholder
      }
      if (nested !== -1 && nested < close) {
        problems.push(`has a '{' inside the placeholder at position ${i} (nested placeholders are not supported)`);
        break;
      }
      const field = text.slice(i + 1, close);
      const refusal = refuseField(field);
      if (refusal !== undefined) problems.push(refusal);
      else {
        if (literal !== "") segments.push({ literal });
        literal = "";
        segments.push({ name: field });
      }
      i = close + 1;
    } else {
      literal += c;
      i += 1;
    }
  }
  if (problems.length > 0) return { ok: false, problems };
  if (literal !== "") segments.push({ literal });
  return { ok: true, template: { segments } };
}

function refuseField(field: string): string | undefined {
  // Python's arg_name ends at the first of . [ ! : — an empty or all-digit
  // one is positional, which a params object cannot fill.
  const argName = field.split(/[.[!:]/, 1)[0] ?? "";
  const shown = `{${shorten(field)}}`;
  if (argName === "" || /^\d+$/.test(argName)) {
    return `has a positional placeholder ${shown} (name it after a task_params key, e.g. {lr})`;
  }
  if (field.includes("!")) return `uses a conversion in ${shown}, which is not supported`;
  if (field.includes(":")) {
    return `uses a format spec in ${shown}, which is not supported (put the formatted value in task_params)`;
  }
  if (field.includes(".") || field.includes("[")) {
    return `uses field access in ${shown}, which is not supported (use a plain {name})`;
  }
  return undefined;
}

export interface FillContext {
  /** Where the template sits, e.g. "task 3: command token 2". */
  readonly where: string;
  /** Where the params come from, e.g. "task_params[3]"; undefined when no task_params were given. */
  readonly source: string | undefined;
}

export type Filled = { ok: true; text: string } | { ok: false; problems: string[] };

/**
 * Fill every placeholder from `params`. A name with no own key in params, or
 * whose value is not a string, number or boolean, is a problem — never an
 * empty string and never a repr.
 */
export function fillTemplate(
  template: Template,
  params: Readonly<Record<string, unknown>>,
  context: FillContext,
): Filled {
  const problems: string[] = [];
  let text = "";
  for (const segment of template.segments) {
    let piece: string;
    if ("literal" in segment) piece = segment.literal;
    else {
      const { name } = segment;
      const shown = shorten(name);
      if (!Object.hasOwn(params, name)) {
        problems.push(
          context.source === undefined
            ? `${context.where} references {${shown}} but no task_params were given (write {{ and }} for literal braces)`
            : `${context.where} references {${shown}} but ${context.source} has no '${shown}'`,
        );
        continue;
      }
      const rendered = renderValue(params[name]);
      if (rendered === undefined) {
        problems.push(
          `${context.where} references {${shown}} but ${context.source ?? "task_params"}.${shown} is ${describe(params[name])}; ` +
            "only a string, number or boolean can fill a placeholder",
        );
        continue;
      }
      piece = rendered;
    }
    if (problems.length > 0) continue;
    if (text.length + piece.length > MAX_FILLED_CHARS) {
      problems.push(`${context.where} is longer than ${MAX_FILLED_CHARS} characters once filled`);
      return { ok: false, problems };
    }
    text += piece;
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, text };
}

/**
 * The text a value fills a placeholder with. Strings as they are; booleans
 * as Python's str() writes them ("True"/"False"), as the reference does.
 * Numbers as JSON writes them (JavaScript's shortest round-trip form): this
 * matches Python for integers and ordinary decimals, but JSON cannot tell 1
 * from 1.0, so 1.0 fills as "1" (Python: "1.0"), and 1e-5 fills as
 * "0.00001" (Python: "1e-05"). Anything else has no agreed text form.
 */
export function renderValue(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value === "number") return Number.isFinite(value) ? String(value) : undefined;
  if (typeof value === "boolean") return value ? "True" : "False";
  return undefined;
}
