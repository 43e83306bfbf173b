// @ts-check
// The CLI's config file: the default coordinator URL and pool, and one
// token per coordinator origin, written by `flashedge login`. It holds
// secrets, so it is created with mode 0600 (its folder 0700) and a file
// that others can read is refused, as ssh refuses a readable key: a token
// other users could read is already leaked, and saying so beats using it.
// It must never print a token.

import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { CliError, EXIT } from "./errors.mjs";

/**
 * @typedef {{ url?: string, pool?: string, tokens?: Record<string, string> }} Config
 */

/** Where the config lives: $FLASHEDGE_CONFIG, else $XDG_CONFIG_HOME/flashedge/config.json, else ~/.config/…. */
export function configPath() {
  if (process.env.FLASHEDGE_CONFIG) return process.env.FLASHEDGE_CONFIG;
  const base = process.env.XDG_CONFIG_HOME || join(homedir(), ".config");
  return join(base, "flashedge", "config.json");
}

/**
 * The config, or an empty one when there is no file.
 * @param {string} path
 * @returns {Config}
 */
export function readConfig(path) {
  if (!existsSync(path)) return {};
  if (process.platform !== "win32") {
    const mode = statSync(path).mode & 0o777;
    if (mode & 0o077) {
      throw new CliError(
        `${path} is readable by others (mode ${mode.toString(8).padStart(4, "0")}); it holds tokens, so it is not used. ` +
          `Run: chmod 600 ${path}`,
        EXIT.failed,
      );
    }
  }
  /** @type {unknown} */
  let parsed;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new CliError(`${path} is not valid JSON (${error instanceof Error ? error.message : error})`, EXIT.failed);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new CliError(`${path} must hold a JSON object`, EXIT.failed);
  }
  return /** @type {Config} */ (parsed);
}

/**
 * Writes the config with mode 0600, replacing the file in one rename so a
 * reader never sees half of it, and never a moment with wider permissions.
 * @param {string} path
 * @param {Config} config
 */
export function writeConfig(path, config) {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temporary, 0o600); // the umask cannot widen it, but an existing temp file's mode would survive
  renameSync(temporary, path);
}

/**
 * The token for a coordinator: FLASHEDGE_TOKEN, else the config's token for
 * exactly this origin. A token saved for one coordinator is never sent to
 * another because a `--url` pointed elsewhere.
 * @param {Config} config
 * @param {string} url
 * @returns {string | null}
 */
export function tokenFor(config, url) {
  const fromEnv = process.env.FLASHEDGE_TOKEN;
  if (fromEnv) return fromEnv;
  return config.tokens?.[new URL(url).origin] ?? null;
}
