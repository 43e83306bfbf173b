// The placement gate of docs/protocol.md §4: may this node run this task? It is a pure
// function so that the rule lives, and is tested, in one place, and so that
// the pool object can evaluate it once per requirement class at claim time.
//
// It must never do I/O, never import anything from Cloudflare, and never
// throw, whatever the payload or node view holds. Every value it reads is
// `unknown` and is narrowed here. Information it cannot read refuses (fail
// closed). The one exception is the module gate, an availability flag where
// only an explicit `false` refuses. A refusal is data (refusals.ts), and
// its one-line reason is rendered from it only when someone asks why.

import { gpuNeedRefusal } from "./gpu";
import { jsonEqual } from "./json-values";
import { count, GATE_NAMES, type GateName, type Refusal, refusalReason, show, unreadable } from "./refusals";
import { isList, isObject, own, type Requirement, readPayload } from "./requirements";

export { jsonEqual, MAX_DEPTH } from "./json-values";
export { GATE_NAMES, type GateName } from "./refusals";
export { GATE_KEYS, requirementClass, requirementOf } from "./requirements";

/**
 * The claim-time view of a node (docs/protocol.md §4): exactly the registration fields
 * the gate reads, nothing inferred. Every field is `unknown` because the
 * gate trusts none of them; `eligible` and `gateAnswer` accept any value in
 * place of a view.
 */
export type NodeView = {
  node_id: unknown;
  sandbox_capable: unknown;
  argv_capable: unknown;
  module_capable: unknown;
  unsandboxed_argv_capable: unknown;
  local_datasets: unknown;
  capabilities: unknown;
};

/**
 * Whose word makes a node a member of a team pool (docs/protocol.md §9, gate 6): on an
 * open coordinator the node's own report, as in the reference; when tokens
 * are enforced only an operator's assignment, since membership hands the
 * node unsandboxed work meant for machines whose owners trust each other.
 */
export type Membership = "reported" | "assigned";

/**
 * The view built from a registration, its team pools as `membership`
 * decides: the reported ones left as they are, or replaced by the
 * `assigned` ones — none when no operator assigned any (fail-closed: a
 * node's report never makes it a member).
 */
export function nodeView(
  registration: NodeView,
  membership: Membership = "reported",
  assigned: readonly string[] | null = null,
): NodeView {
  const view: NodeView = {
    node_id: registration.node_id,
    sandbox_capable: registration.sandbox_capable,
    argv_capable: registration.argv_capable,
    module_capable: registration.module_capable,
    unsandboxed_argv_capable: registration.unsandboxed_argv_capable,
    local_datasets: registration.local_datasets,
    capabilities: registration.capabilities,
  };
  if (membership === "reported") return view;
  const capabilities = view.capabilities;
  const base =
    typeof capabilities === "object" && capabilities !== null && !Array.isArray(capabilities) ? capabilities : {};
  return { ...view, capabilities: { ...base, pools: [...(assigned ?? [])] } };
}

/** The gate's answer for one node, as the wire reports it: eligible, or the first refusing gate and why. */
export type GateAnswer = { eligible: true } | { eligible: false; gate: GateName; reason: string };

/**
 * Whether `node` may run a task with this `payload`: the AND of the seven
 * gates of docs/protocol.md §4. Never throws. A payload that is not a JSON object refuses
 * everywhere: it cannot be checked for argv (or anything else), so treating
 * it as "requires nothing" would fail open.
 */
export function eligible(payload: unknown, node: unknown): boolean {
  return gateFor(payload).refusal(node) === null;
}

/**
 * The gate's answer with the first refusing gate in protocol order and a one-line
 * reason that names the values involved. `eligible` is this answer's
 * `.eligible`, so the two cannot disagree.
 */
export function gateAnswer(payload: unknown, node: unknown): GateAnswer {
  const refusal = gateFor(payload).refusal(node);
  return refusal === null
    ? { eligible: true }
    : { eligible: false, gate: refusal.gate as GateName, reason: refusalReason(refusal) };
}

/** The gate for one payload, read once, to judge many nodes: the first refusal in protocol order, or null. */
export type PayloadGate = { eligible(node: unknown): boolean; refusal(node: unknown): Refusal | null };

/**
 * Reads `payload` once and keeps only the gates that require something of
 * a node: a gate that requires nothing accepts without reading the node,
 * so skipping it changes no answer, and a claim pays per node only for
 * what the task asks. Accepting allocates nothing.
 */
export function gateFor(payload: unknown): PayloadGate {
  const reading = readPayload(payload);
  if (!reading.readable) {
    const refused = reading.refusal;
    return { eligible: () => false, refusal: () => refused };
  }
  const r = reading.requirement;
  const active = CHECKS.filter(([, , requires]) => requires(r));
  const refusal = (node: unknown): Refusal | null => {
    for (const [gate, check] of active) {
      try {
        const refused = check(r, node);
        if (refused !== null) return refused;
      } catch {
        // The requirement is plain data built by readPayload, so only the node
        // view (a proxy, a throwing getter) can get here. Unreadable ⇒ refuse.
        return unreadable(gate, "the node view could not be read");
      }
    }
    return null;
  };
  return { eligible: (node) => refusal(node) === null, refusal };
}

type Check = (r: Requirement, node: unknown) => Refusal | null;
/** Whether a gate's check can refuse anything for this requirement: false only where it accepts without reading the node. */
type Requires = (r: Requirement) => boolean;

/** Each gate's check: a record over GateName, so a gate without one does not compile. */
const CHECK_OF: Readonly<Record<GateName, readonly [Check, Requires]>> = {
  argv: [checkArgv, (r) => r.argv],
  module: [checkModule, (r) => r.module],
  local_data: [checkLocalData, (r) => !r.localInputs.ok || r.localInputs.need.length > 0],
  gpu: [checkGpu, (r) => !r.gpus.ok || !r.gpuNeed.ok || r.gpus.need > 0],
  exclusion: [checkExclusion, (r) => !r.excludeNodes.ok || r.excludeNodes.need.length > 0],
  pool: [checkPool, (r) => !r.pool.ok || r.pool.need !== null],
  isolation: [
    checkIsolation,
    (r) => !r.isolation.ok || (r.isolation.need.sandboxed && !r.isolation.need.allowFallback),
  ],
};

// In GATE_NAMES (protocol) order: it decides which refusal is reported, never the answer.
const CHECKS: ReadonlyArray<readonly [GateName, Check, Requires]> = GATE_NAMES.map(
  (gate) => [gate, ...CHECK_OF[gate]] as const,
);

function checkArgv(r: Requirement, node: unknown): Refusal | null {
  if (!r.argv) return null;
  const argvCapable = field(node, "argv_capable");
  if (argvCapable === true) return null;
  // The trusted-pool path: an operator opted this host into running a team
  // pool's argv work unsandboxed. All three legs, each exactly as stated.
  const inPool = r.pool.ok && r.pool.need !== null;
  const waived = r.isolation.ok && r.isolation.need.allowFallback;
  const optIn = field(node, "unsandboxed_argv_capable");
  if (inPool && waived && optIn === true) return null;
  const closed: string[] = [];
  if (!inPool) closed.push("the task has no team pool");
  if (!waived) closed.push("isolation.allowFallback is not true");
  if (optIn !== true) closed.push(`the node has not opted in (unsandboxed_argv_capable is ${show(optIn)})`);
  return { gate: "argv", form: "argv", need: "argv", have: show(argvCapable), detail: closed.join(", ") };
}

// Fail-open on purpose, the mirror of argv: a node whose registration predates
// module_capable must keep receiving module work.
function checkModule(r: Requirement, node: unknown): Refusal | null {
  if (!r.module || field(node, "module_capable") !== false) return null;
  return { gate: "module", form: "module", need: "module", have: "false" };
}

function checkLocalData(r: Requirement, node: unknown): Refusal | null {
  if (!r.localInputs.ok) return r.localInputs.refusal;
  const need = r.localInputs.need;
  if (need.length === 0) return null;
  const offered = field(node, "local_datasets");
  // A bare string is not a list: "patients" must not advertise "patients".
  if (!isList(offered)) {
    return {
      gate: "local_data",
      form: "datasets_unlisted",
      need: count(need.length, "local dataset"),
      have: show(offered),
    };
  }
  for (const name of need) {
    let found = false;
    for (let i = 0; i < offered.length && !found; i++) found = jsonEqual(name, offered[i]);
    if (!found) return { gate: "local_data", form: "dataset_missing", need: show(name), have: "" };
  }
  return null;
}

function checkGpu(r: Requirement, node: unknown): Refusal | null {
  if (!r.gpus.ok) return r.gpus.refusal;
  if (!r.gpuNeed.ok) return r.gpuNeed.refusal;
  const need = r.gpus.need;
  if (need === 0) return null;
  const capabilities = field(node, "capabilities");
  if (!isObject(capabilities)) {
    return { gate: "gpu", form: "gpu_capabilities_unreadable", need: count(need, "GPU"), have: show(capabilities) };
  }
  // Only a list counts, and only its length: a bare 1 is not "one GPU".
  const gpus = own(capabilities, "gpus");
  if (!isList(gpus)) return { gate: "gpu", form: "gpus_unlisted", need: count(need, "GPU"), have: show(gpus) };
  if (gpus.length < need) {
    return { gate: "gpu", form: "gpus_short", need: count(need, "GPU"), have: String(gpus.length) };
  }
  return r.gpuNeed.need === null ? null : gpuNeedRefusal(r.gpuNeed.need, need, gpus);
}

function checkExclusion(r: Requirement, node: unknown): Refusal | null {
  if (!r.excludeNodes.ok) return r.excludeNodes.refusal;
  const excluded = r.excludeNodes.need;
  if (excluded.length === 0) return null;
  const nodeId = field(node, "node_id");
  // A node that cannot say who it is cannot prove it is not the excluded one.
  if (typeof nodeId !== "string" || nodeId === "") {
    return { gate: "exclusion", form: "node_id_unreadable", need: count(excluded.length, "node"), have: show(nodeId) };
  }
  if (excluded.includes(nodeId)) return { gate: "exclusion", form: "excluded", need: "", have: show(nodeId) };
  return null;
}

function checkPool(r: Requirement, node: unknown): Refusal | null {
  if (!r.pool.ok) return r.pool.refusal;
  const pool = r.pool.need;
  if (pool === null) return null;
  const capabilities = field(node, "capabilities");
  if (!isObject(capabilities)) {
    return { gate: "pool", form: "pool_capabilities_unreadable", need: show(pool), have: show(capabilities) };
  }
  const pools = own(capabilities, "pools");
  if (!isList(pools)) return { gate: "pool", form: "pools_unlisted", need: show(pool), have: show(pools) };
  // One non-name member discredits the whole list, not just that member.
  for (let i = 0; i < pools.length; i++) {
    const member = pools[i];
    if (typeof member !== "string")
      return { gate: "pool", form: "pools_malformed", need: show(pool), have: show(member) };
  }
  if (!pools.includes(pool)) return { gate: "pool", form: "not_member", need: show(pool), have: "" };
  return null;
}

function checkIsolation(r: Requirement, node: unknown): Refusal | null {
  if (!r.isolation.ok) return r.isolation.refusal;
  const { sandboxed, tier, allowFallback } = r.isolation.need;
  // The waiver is the submitter's word about their own work: it opens this
  // gate and no other.
  if (!sandboxed || allowFallback) return null;
  const capable = field(node, "sandbox_capable");
  if (capable === true) return null;
  return { gate: "isolation", form: "unsandboxed", need: show(tier), have: show(capable) };
}

// A node view that is not an object advertises nothing: every fail-closed gate
// refuses it, and the fail-open module gate lets it through, as for `{}`.
function field(node: unknown, key: string): unknown {
  return isObject(node) ? own(node, key) : undefined;
}
