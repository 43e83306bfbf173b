// @ts-check
// The CLI's exit codes and the one error it throws for an expected failure:
// a message for a person, and the code the process exits with. Anything
// else that escapes is a bug and is printed with its stack.

/** Exit codes, as the README lists them. `watch` adds its job's outcome: 0, 1 (FAILED), 2 (CANCELLED). */
export const EXIT = /** @type {const} */ ({ ok: 0, failed: 1, usage: 2 });

export class CliError extends Error {
  /**
   * @param {string} message
   * @param {number} [exitCode]
   */
  constructor(message, exitCode = EXIT.failed) {
    super(message);
    this.name = "CliError";
    this.exitCode = exitCode;
  }
}
