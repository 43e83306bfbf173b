// Which task states are open, once, in TypeScript and in SQL: a task in one
// may still run or commit, so its job is not done and a cancel must end it.
// Pure: no I/O.

/** The states a task can still leave: it may yet run or commit. Everything else is terminal. */
export const OPEN_TASK_STATES = ["PENDING", "LEASED"] as const;
/** The same, as SQL: `state IN ${OPEN_STATES_SQL}`. */
export const OPEN_STATES_SQL = `(${OPEN_TASK_STATES.map((s) => `'${s}'`).join(", ")})`;

/** Whether a task in `state` is open. */
export function isOpenState(state: string): boolean {
  return (OPEN_TASK_STATES as readonly string[]).includes(state);
}
