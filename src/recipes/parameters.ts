// Reading `workload.parameters`: submitter JSON, typed `unknown` until each
// value is narrowed here. Every reader appends a problem naming the parameter
// and returns `undefined` on a wrong type — it never throws and never coerces
// ("3" is not 3, true is not 1). JSON null counts as "not given" for every
// optional parameter, as it does in the reference.

import { shorten as shortenText } from "../rules/text";

const ARTIFACT_SCHEME = "artifact://";

export type Parameters = Readonly<Record<string, unknown>>;

/** A parameter's value, or undefined when absent or null. Own keys only:
 *  `constructor` or `__proto__` must never resolve to Object.prototype. */
export function given(parameters: Parameters, name: string): unknown {
  if (!Object.hasOwn(parameters, name)) return undefined;
  const value = parameters[name];
  return value === null ? undefined : value;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function isInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value);
}

/** An `artifact://` URI naming a non-empty key. */
export function isArtifactUri(value: unknown): value is string {
  return typeof value === "string" && value.startsWith(ARTIFACT_SCHEME) && value.length > ARTIFACT_SCHEME.length;
}

/** Text from the request as a message shows it: a problem may be repeated per task. */
export function shorten(text: string): string {
  return shortenText(text, 40);
}

/** "a string", "a list", "null" — for messages about a value of the wrong type. */
export function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "an object";
  if (typeof value === "number") return `the number ${value}`;
  if (typeof value === "boolean") return `the boolean ${value}`;
  if (typeof value === "string") return `the string ${JSON.stringify(shorten(value))}`;
  return `a ${typeof value}`;
}

/** A list of strings, or undefined with a problem. `label` names the parameter. */
export function readStringList(value: unknown, label: string, problems: string[]): string[] | undefined {
  if (!Array.isArray(value)) {
    problems.push(`'${label}' must be a list of strings, got ${describe(value)}`);
    return undefined;
  }
  const wrong = value.findIndex((item) => typeof item !== "string");
  if (wrong !== -1) {
    problems.push(`'${label}[${wrong}]' must be a string, got ${describe(value[wrong])}`);
    return undefined;
  }
  return value as string[];
}

/** `inputs`: an object of name → artifact:// URI; {} when not given. */
export function readInputs(parameters: Parameters, problems: string[]): Record<string, string> | undefined {
  const value = given(parameters, "inputs");
  if (value === undefined) return {};
  if (!isPlainObject(value)) {
    problems.push(`'inputs' must be an object of name → artifact:// URI, got ${describe(value)}`);
    return undefined;
  }
  const before = problems.length;
  for (const [name, uri] of Object.entries(value)) {
    if (!isArtifactUri(uri)) problems.push(`input '${shorten(name)}' must be an artifact:// URI, got ${describe(uri)}`);
  }
  return problems.length === before ? (value as Record<string, string>) : undefined;
}

/** An integer within bounds, or undefined with a problem naming the parameter. */
export function readInteger(
  value: unknown,
  label: string,
  bounds: { readonly min: number; readonly max?: number },
  problems: string[],
): number | undefined {
  const { min, max } = bounds;
  if (isInteger(value) && value >= min && (max === undefined || value <= max)) return value;
  const range = max === undefined ? `>= ${min}` : `from ${min} to ${max}`;
  problems.push(`'${label}' must be an integer ${range}, got ${describe(value)}`);
  return undefined;
}
