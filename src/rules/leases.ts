// What makes a lease live, and who may drive it (docs/protocol.md §5, §9), pure. The
// pool object looks the rows up; these decide. Every place that asks "is
// this lease live?" (renew, fail, commit, artifact and checkpoint writes, the
// task list) asks here, so the answer can never differ between them.

/** The columns of a lease and of its task that liveness depends on. */
export type LeaseAndTask = {
  lease_id: string;
  status: string; // the lease's: live, expired, failed, completed, cancelled
  deadline_ms: number;
  state: string; // the task's
  current_lease_id: string | null; // the task's latest lease
  replica: number; // 0, or the replica this lease runs (docs/protocol.md §14)
};

/**
 * A lease is live while it is its task's current lease, still marked live,
 * before its deadline, and the task is LEASED. A replica's lease is one of
 * several at once: live while marked live, before its deadline, and its
 * task open (PENDING while it wants more replicas). A lease at its deadline
 * is already dead: the sweep expires `deadline_ms <= now`.
 */
export function isLiveLease(row: LeaseAndTask, now: number): boolean {
  if (row.status !== "live" || row.deadline_ms <= now) return false;
  if (row.replica > 0) return row.state === "LEASED" || row.state === "PENDING";
  return row.state === "LEASED" && row.current_lease_id === row.lease_id;
}

/**
 * Who drives a lease: the node a request acts as, or null when nobody is
 * authenticated (open mode). Only the node a lease was issued to may drive it
 * when tokens are enforced; an id never issued is refused alike, so the
 * answer reveals nothing about which ids exist.
 */
export function mayDrive(issuedTo: string | undefined, caller: string | null): boolean {
  return caller === null || issuedTo === caller;
}
