#!/usr/bin/env node
// @ts-check
// `flashedge`: the operator's and submitter's command line for a local or
// deployed coordinator (README "The flashedge CLI"). This file holds the
// command table, the global options (--url, --pool, --json) and the exit
// codes; the commands live in jobs.mjs, runs.mjs, operators.mjs and login.mjs. It
// talks to the coordinator only over its HTTP routes, never prints a token,
// and takes none from a flag.

import { readFileSync } from "node:fs";
import { Command, CommanderError, InvalidArgumentError } from "commander";
import { configPath, readConfig, tokenFor } from "./config.mjs";
import { coordinator } from "./coordinator.mjs";
import { CliError, EXIT } from "./errors.mjs";
import * as jobCommands from "./jobs.mjs";
import { login, logout } from "./login.mjs";
import * as operatorCommands from "./operators.mjs";
import * as runCommands from "./runs.mjs";

const DEFAULT_URL = "http://127.0.0.1:8787";
const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));

/** @param {string} text */
const print = (text) => void process.stdout.write(`${text}\n`);
/** @param {string} text  a line for a person, on stderr, beside what `print` gives a script */
const note = (text) => void process.stderr.write(`${text}\n`);

/** @param {string} value */
function positiveInt(value) {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError("a whole number ≥ 1");
  return n;
}

/** @param {string} value */
function seconds(value) {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0.1 || n > 600) throw new InvalidArgumentError("seconds between 0.1 and 600");
  return n;
}

/**
 * The coordinator and pool a command talks to: --url, else the config's
 * default, else the local dev server; --pool, else the config's pool (only
 * for the config's own coordinator), else `local`.
 * @param {{ url?: string, pool?: string }} options
 */
function target(options) {
  const config = readConfig(configPath());
  const url = options.url ?? config.url ?? DEFAULT_URL;
  const sameCoordinator = config.url !== undefined && safeOrigin(config.url) === safeOrigin(url);
  const pool = options.pool ?? (sameCoordinator ? config.pool : undefined) ?? "local";
  return { url, pool, config };
}

/** @param {string} url */
function safeOrigin(url) {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/**
 * Runs a command against the target coordinator, with the global options.
 * @param {(ctx: import("./jobs.mjs").Context, ...args: any[]) => Promise<number | void>} command
 */
function against(command) {
  /** @param {unknown[]} args */
  return async (...args) => {
    const cmd = /** @type {Command} */ (args[args.length - 1]);
    const globals = cmd.optsWithGlobals();
    const { url, pool, config } = target(globals);
    let token = null;
    try {
      token = tokenFor(config, url);
    } catch {
      // an unparseable --url: coordinator() below says so
    }
    const api = coordinator({ url, pool, token });
    const context = { api, json: Boolean(globals.json), print, note, tty: Boolean(process.stdout.isTTY) };
    const code = await command(context, ...args.slice(0, -1));
    if (typeof code === "number") process.exitCode = code;
  };
}

export function program() {
  const root = new Command("flashedge")
    .description("Operate and submit to a flashedge coordinator (flashruntime v1alpha1).")
    .version(version)
    .option("--url <url>", `the coordinator (default: the config's, else ${DEFAULT_URL})`)
    .option("--pool <pool>", "the pool (default: the config's, else local)")
    .option("--json", "print the coordinator's JSON answers (lists: every page as one array)")
    .exitOverride() // before the commands, so they inherit it: usage errors exit 2, not commander's 1
    .showHelpAfterError("(flashedge help COMMAND shows its usage)")
    .addHelpText(
      "after",
      `
The token: FLASHEDGE_TOKEN, else the one \`flashedge login\` saved for that coordinator
in ${configPath()} (mode 0600).
Exit codes: 0 done, 1 the command failed (or watch, run --follow: the job or run FAILED),
2 usage error (or watch, run --follow: the job or run was CANCELLED).`,
    );

  root
    .command("login")
    .description("save a token for --url (read from stdin, or typed without echo) in the config file")
    .action(async (_options, cmd) => {
      const globals = cmd.optsWithGlobals();
      await login({ url: globals.url ?? DEFAULT_URL, pool: globals.pool, print });
    });
  root
    .command("logout")
    .description("remove the saved token for --url")
    .action(async (_options, cmd) => {
      const { url } = target(cmd.optsWithGlobals());
      await logout({ url, print });
    });

  root
    .command("submit <file>")
    .description("submit a JobSpec from a YAML or JSON file (- for stdin)")
    .action(against(jobCommands.submit));
  root
    .command("jobs")
    .description("list the pool's jobs")
    .option("--limit <n>", "at most n jobs", positiveInt)
    .action(against(jobCommands.jobs));
  root.command("status <job>").description("one job: state and task counts").action(against(jobCommands.status));
  root
    .command("watch <job>")
    .description("a progress bar of the job's tasks until it ends; exits 0 SUCCEEDED, 1 FAILED, 2 CANCELLED")
    .option("--interval <seconds>", "between polls", seconds, 1)
    .action(against(jobCommands.watch));
  root
    .command("events <job>")
    .description("the job's event ledger")
    .option("-f, --follow", "keep printing new events until the job ends")
    .option("--interval <seconds>", "between polls with --follow", seconds, 1)
    .action(against(jobCommands.events));
  root
    .command("tasks <job>")
    .description("the job's tasks: state, attempts, node, lease deadline")
    .action(against(jobCommands.tasks));
  root
    .command("why <job> <task>")
    .description("why a task is (not) running: every node's placement answer")
    .action(against(jobCommands.why));
  root.command("cancel <job>").description("cancel a job (operator)").action(against(jobCommands.cancel));

  root
    .command("run <file>")
    .description("start a hosted run (federated averaging or K-means) from a YAML or JSON file, - for stdin (operator)")
    .option("-f, --follow", "a progress bar of its rounds until it ends; exits 0 SUCCEEDED, 1 FAILED, 2 CANCELLED")
    .option("--interval <seconds>", "between polls with --follow", seconds, 1)
    .action(against(runCommands.start));
  root
    .command("runs")
    .description("list the pool's hosted runs")
    .option("--limit <n>", "at most n runs", positiveInt)
    .action(against(runCommands.runs));
  root
    .command("run-status <run>")
    .description("one run: state, live round, result and every aggregated round")
    .action(against(runCommands.status));
  root
    .command("cancel-run <run>")
    .description("cancel a run and its live round's job (operator)")
    .action(against(runCommands.cancel));

  root
    .command("nodes")
    .description("list the pool's nodes")
    .option("--limit <n>", "at most n nodes", positiveInt)
    .action(against(operatorCommands.nodes));
  root.command("codes").description("enrolment codes waiting for an operator").action(against(operatorCommands.codes));
  root
    .command("approve <code>")
    .description("approve a machine's enrolment code (operator)")
    .option("--owner <name>", "whose machine it is (default: its node id)")
    .action(against(operatorCommands.approve));
  root
    .command("deny [code]")
    .description("deny an enrolment code, or --all of them (operator)")
    .option("--all", "deny every waiting code")
    .action(against(operatorCommands.deny));
  root
    .command("revoke <node>")
    .description("revoke an enrolled node's credential (operator)")
    .action(against(operatorCommands.revoke));
  root
    .command("release <node>")
    .description("let a held-back node claim again (operator)")
    .action(against(operatorCommands.release));
  root
    .command("pools <node> [pools...]")
    .description("set the team pools a node is a member of (operator)")
    .option("--clear", "remove the node from every team pool")
    .action(against(operatorCommands.assignPools));

  return root;
}

async function main() {
  const root = program();
  try {
    await root.parseAsync(process.argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      // commander has already printed its message; help and --version are not errors.
      const fine = ["commander.helpDisplayed", "commander.version"].includes(error.code);
      process.exitCode = fine ? EXIT.ok : EXIT.usage;
      return;
    }
    if (error instanceof CliError) {
      process.stderr.write(`flashedge: ${error.message}\n`);
      process.exitCode = error.exitCode;
      return;
    }
    throw error;
  }
}

await main();
