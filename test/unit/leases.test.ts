import { describe, expect, it } from "vitest";
import { isLiveLease, type LeaseAndTask, mayDrive } from "../../src/rules/leases";

const NOW = 1_000_000;
const live: LeaseAndTask = {
  lease_id: "ls-aaaaaaaaaaaa",
  status: "live",
  deadline_ms: NOW + 1,
  state: "LEASED",
  current_lease_id: "ls-aaaaaaaaaaaa",
  replica: 0,
};
const replica: LeaseAndTask = { ...live, replica: 2, current_lease_id: "ls-cccccccccccc" };

describe("isLiveLease", () => {
  it("a current, unexpired lease of a LEASED task is live", () => {
    expect(isLiveLease(live, NOW)).toBe(true);
  });

  it.each<[string, Partial<LeaseAndTask>]>([
    ["a lease at its deadline (the sweep expires deadline <= now)", { deadline_ms: NOW }],
    ["a lease past its deadline, not yet swept", { deadline_ms: NOW - 1 }],
    ["a lease superseded by a newer lease of the same task", { current_lease_id: "ls-bbbbbbbbbbbb" }],
    ["a lease of a task that has no current lease", { current_lease_id: null }],
    ["an expired lease", { status: "expired" }],
    ["a failed lease", { status: "failed" }],
    ["a completed lease", { status: "completed" }],
    ["a lease of a cancelled task", { status: "cancelled", state: "CANCELLED" }],
    ["a lease still marked live on a task no longer LEASED", { state: "PENDING" }],
    ["a lease still marked live on a COMPLETED task", { state: "COMPLETED" }],
  ])("%s is not live", (_, change) => {
    expect(isLiveLease({ ...live, ...change }, NOW)).toBe(false);
  });

  it.each<[string, Partial<LeaseAndTask>]>([
    ["while its task waits for all its replicas (LEASED)", {}],
    ["while its task wants more replicas (PENDING)", { state: "PENDING" }],
  ])("a replica's lease, one of several at once, is live %s", (_, change) => {
    expect(isLiveLease({ ...replica, ...change }, NOW)).toBe(true);
  });

  it.each<[string, Partial<LeaseAndTask>]>([
    ["at its deadline", { deadline_ms: NOW }],
    ["once its task completed on a quorum", { state: "COMPLETED" }],
    ["once its task failed without one", { state: "FAILED" }],
    ["once cancelled", { status: "cancelled", state: "CANCELLED" }],
    ["once committed", { status: "completed" }],
  ])("a replica's lease is not live %s", (_, change) => {
    expect(isLiveLease({ ...replica, ...change }, NOW)).toBe(false);
  });
});

describe("mayDrive", () => {
  it.each<[string, string | undefined, string | null, boolean]>([
    ["open mode drives any lease", "n1", null, true],
    ["open mode reaches an unknown lease (then 404/410, not 403)", undefined, null, true],
    ["the node the lease was issued to", "n1", "n1", true],
    ["another node", "n1", "n2", false],
    ["any node, for a lease id never issued", undefined, "n1", false],
    ["a node whose id differs only in case", "n1", "N1", false],
  ])("%s → %s", (_, issuedTo, caller, expected) => {
    expect(mayDrive(issuedTo, caller)).toBe(expected);
  });
});
