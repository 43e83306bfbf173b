// @ts-check
// The file a person writes a request in (a JobSpec, a run): YAML or JSON,
// `-` for stdin. It only reads and parses; what the mapping must hold is
// the coordinator's to say, and its refusal is printed as it gave it.

import { readFileSync } from "node:fs";
import YAML from "yaml";
import { CliError, EXIT } from "./errors.mjs";

/**
 * One mapping from a YAML or JSON file (`-` reads stdin). JSON is parsed as
 * JSON, so its errors name JSON's rules; anything else as YAML 1.2, which
 * refuses duplicate keys. A file that cannot be read or parsed, or holds no
 * mapping, is a usage error.
 * @param {string} file
 * @param {string} what  what the file must hold, for the message, e.g. "one JobSpec (a mapping with …)"
 * @returns {Record<string, unknown>}
 */
export function readRequestFile(file, what) {
  /** @type {string} */
  let text;
  try {
    text = readFileSync(file === "-" ? 0 : file, "utf8");
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${error instanceof Error ? error.message : error}`, EXIT.usage);
  }
  /** @type {unknown} */
  let parsed;
  try {
    parsed = file.endsWith(".json") ? JSON.parse(text) : YAML.parse(text);
  } catch (error) {
    throw new CliError(
      `${file} is not valid ${file.endsWith(".json") ? "JSON" : "YAML"}: ${error instanceof Error ? error.message : error}`,
      EXIT.usage,
    );
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new CliError(`${file} must hold ${what}`, EXIT.usage);
  }
  return /** @type {Record<string, unknown>} */ (parsed);
}
