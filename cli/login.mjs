// @ts-check
// `flashedge login` and `logout`: a token goes into the config file, read
// from stdin or typed at a prompt that does not echo — never from a flag,
// which would leave it in the shell's history and in `ps`. It is checked
// against the coordinator before it is saved, and never printed.

import { configPath, readConfig, writeConfig } from "./config.mjs";
import { coordinator } from "./coordinator.mjs";
import { CliError, EXIT } from "./errors.mjs";

/** A line typed with echo off (a terminal), or the first line of stdin (a pipe). */
async function readToken() {
  const stdin = process.stdin;
  if (!stdin.isTTY) {
    let text = "";
    for await (const chunk of stdin) text += chunk;
    return text.split(/\r?\n/)[0]?.trim() ?? "";
  }
  process.stderr.write("token (not shown): ");
  return new Promise((resolve, reject) => {
    let value = "";
    stdin.setRawMode(true);
    stdin.setEncoding("utf8");
    stdin.resume();
    /** @param {string} chunk */
    const onData = (chunk) => {
      for (const ch of chunk) {
        if (ch === "\r" || ch === "\n") return finish(() => resolve(value.trim()));
        if (ch === "\u0003" || ch === "\u0004") return finish(() => reject(new CliError("cancelled", EXIT.failed)));
        if (ch === "\u007f" || ch === "\b") value = value.slice(0, -1);
        else value += ch;
      }
    };
    /** @param {() => void} settle */
    const finish = (settle) => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write("\n");
      settle();
    };
    stdin.on("data", onData);
  });
}

/**
 * @param {{ url: string, pool?: string, print: (text: string) => void }} options
 */
export async function login({ url, pool, print }) {
  const path = configPath();
  const config = readConfig(path);
  const token = await readToken();
  if (!token) throw new CliError("no token given (pipe it in, or type it at the prompt)", EXIT.usage);
  // Any valid token reads the node list: a wrong one is a 401 here, not later.
  const api = coordinator({ url, pool: pool ?? "local", token });
  await api.call("GET", "/nodes?limit=1");
  const origin = new URL(url).origin;
  writeConfig(path, {
    ...config,
    url,
    ...(pool ? { pool } : {}),
    tokens: { ...config.tokens, [origin]: token },
  });
  print(`saved the token for ${origin} in ${path} (mode 0600); ${url} is now the default coordinator`);
}

/**
 * @param {{ url: string, print: (text: string) => void }} options
 */
export async function logout({ url, print }) {
  const path = configPath();
  const config = readConfig(path);
  const origin = new URL(url).origin;
  if (!config.tokens?.[origin]) return print(`no token saved for ${origin}`);
  const { [origin]: _dropped, ...tokens } = config.tokens;
  writeConfig(path, { ...config, tokens });
  print(`removed the token for ${origin} from ${path}`);
}
