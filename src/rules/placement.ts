// The placement gate of SPEC §4: may this node run this task? It is a pure
// function so that the rule lives, and is tested, in one place, and so that
// the pool object can evaluate it once per requirement class at claim time.
//
// It must never do I/O, never import anything from Cloudflare, and never
// throw, whatever the payload or node view holds. Every value it reads is
// `unknown` and is narrowed here. Information it cannot read refuses (fail
// closed). The one exception is the module gate, an availability flag where
// only an explicit `false` refuses.

import { canonicalGpuNeed, GPU_REQUIREMENT_KEYS, type GpuNeedReading, gpuNeedRefusal, readGpuNeed } from "./gpu";
import { canonicalJson, copyJson, jsonEqual, NOT_JSON } from "./json-values";
import { shorten } from "./text";

export { jsonEqual, MAX_DEPTH } from "./json-values";

/** The payload keys the gate reads. Any other payload key never changes its answer. */
export const GATE_KEYS = [
  "argv",
  "module",
  "local_inputs",
  "gpus",
  ...GPU_REQUIREMENT_KEYS,
  "exclude_nodes",
  "pool",
  "isolation",
] as const;

export type GateName = "argv" | "module" | "local_data" | "gpu" | "exclusion" | "pool" | "isolation";

/**
 * The claim-time view of a node that the pool object builds from the node's
 * registration. Every field is `unknown` because the gate trusts none of them.
 * `eligible` and `explain` accept any value in place of a view.
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
 * The view of SPEC §4 built from a stored registration: exactly the fields
 * the gate reads, nothing inferred.
 */
export function claimView(registration: NodeView): NodeView {
  return {
    node_id: registration.node_id,
    sandbox_capable: registration.sandbox_capable,
    argv_capable: registration.argv_capable,
    module_capable: registration.module_capable,
    unsandboxed_argv_capable: registration.unsandboxed_argv_capable,
    local_datasets: registration.local_datasets,
    capabilities: registration.capabilities,
  };
}

/**
 * Whose word makes a node a member of a team pool (SPEC §9, gate 6): on an
 * open coordinator the node's own report, as in the reference; when tokens
 * are enforced only an operator's assignment, since membership hands the
 * node unsandboxed work meant for machines whose owners trust each other.
 */
export type Membership = "reported" | "assigned";

/**
 * The claim-time view with its team pools as `membership` decides: the
 * reported ones left as they are, or replaced by the `assigned` ones —
 * none when no operator assigned any (fail-closed: a node's report never
 * makes it a member).
 */
export function withMembership(view: NodeView, membership: Membership, assigned: readonly string[] | null): NodeView {
  if (membership === "reported") return view;
  const capabilities = view.capabilities;
  const base =
    typeof capabilities === "object" && capabilities !== null && !Array.isArray(capabilities) ? capabilities : {};
  return { ...view, capabilities: { ...base, pools: [...(assigned ?? [])] } };
}

export type Explanation = { eligible: true } | { eligible: false; gate: GateName; reason: string };

/**
 * Whether `node` may run a task with this `payload`: the AND of the seven
 * gates of SPEC §4. Never throws. A payload that is not a JSON object refuses
 * everywhere: it cannot be checked for argv (or anything else), so treating
 * it as "requires nothing" would fail open.
 */
export function eligible(payload: unknown, node: unknown): boolean {
  return explain(payload, node).eligible;
}

/**
 * The gate's answer with the first refusing gate in SPEC order and a one-line
 * reason that names the values involved. `eligible` is defined as this
 * function's `.eligible`, so the two cannot disagree.
 */
export function explain(payload: unknown, node: unknown): Explanation {
  return gateFor(payload).explain(node);
}

/** The gate for one payload, read once, to judge many nodes: `gateFor(p).explain(n)` is `explain(p, n)`. */
export type PayloadGate = { eligible(node: unknown): boolean; explain(node: unknown): Explanation };

const ACCEPTED: Explanation = Object.freeze({ eligible: true });

/**
 * Reads `payload` once and keeps only the gates that require something of
 * a node: a gate that requires nothing accepts without reading the node,
 * so skipping it changes no answer, and a claim pays per node only for
 * what the task asks.
 */
export function gateFor(payload: unknown): PayloadGate {
  const reading = readPayload(payload);
  if (!reading.readable) {
    const refused: Explanation = { eligible: false, gate: "argv", reason: reading.reason };
    return { eligible: () => false, explain: () => refused };
  }
  const r = reading.requirement;
  const active = CHECKS.filter(([, , requires]) => requires(r));
  const explainOn = (node: unknown): Explanation => {
    for (const [gate, check] of active) {
      let refusal: string | null;
      try {
        refusal = check(r, node);
      } catch {
        // The requirement is plain data built by readPayload, so only the node
        // view (a proxy, a throwing getter) can get here. Unreadable ⇒ refuse.
        refusal = `${gate}: the node view could not be read`;
      }
      if (refusal !== null) return { eligible: false, gate, reason: refusal };
    }
    return ACCEPTED;
  };
  return { eligible: (node) => explainOn(node).eligible, explain: explainOn };
}

/**
 * The gate-relevant part of `payload`, reduced to a canonical payload: the
 * gate gives it the same answer as `payload` on every node, also after a JSON
 * round trip (it holds only JSON values). What it keeps:
 * argv and module by presence alone; the other five only when they require
 * something (absent, null, `[]` and `0` require nothing and are dropped);
 * the GPU requirements beyond a count in canonical form (see gpu.ts);
 * local_inputs and exclude_nodes sorted and deduplicated; isolation as
 * `{allowFallback: true}` (the waiver, which opens every tier) or
 * `{tier: "sandboxed"}` or nothing. A payload that refuses everywhere
 * because it is not an object or because a requirement is malformed becomes
 * `{isolation: "unplaceable"}`, which also refuses everywhere.
 */
export function requirementOf(payload: unknown): Record<string, unknown> {
  const reading = readPayload(payload);
  if (!reading.readable) return unplaceable();
  const r = reading.requirement;
  const gpuNeed = r.gpuNeed;
  if (!r.localInputs.ok || !r.gpus.ok || !gpuNeed.ok || !r.excludeNodes.ok || !r.pool.ok || !r.isolation.ok) {
    return unplaceable();
  }
  const out: Record<string, unknown> = {};
  if (r.argv) out.argv = true;
  if (r.module) out.module = true;
  if (r.localInputs.need.length > 0) {
    const byKey = new Map(r.localInputs.need.map((value) => [canonicalJson(value), value] as const));
    out.local_inputs = [...byKey.keys()].sort().map((key) => byKey.get(key));
  }
  if (r.gpus.need > 0) out.gpus = r.gpus.need;
  if (gpuNeed.need !== null) Object.assign(out, canonicalGpuNeed(gpuNeed.need));
  if (r.excludeNodes.need.length > 0) out.exclude_nodes = [...new Set(r.excludeNodes.need)].sort();
  if (r.pool.need !== null) out.pool = r.pool.need;
  if (r.isolation.need.allowFallback) out.isolation = { allowFallback: true };
  else if (r.isolation.need.sandboxed) out.isolation = { tier: "sandboxed" };
  return out;
}

/**
 * A canonical string for the payload's requirement class: payloads with the
 * same class get the same gate answer on every node. Built from
 * `requirementOf` with object keys sorted at every depth, so key order,
 * formatting and gate-irrelevant keys never split a class.
 */
export function requirementClass(payload: unknown): string {
  return canonicalJson(requirementOf(payload));
}

type Demand<T> = { ok: true; need: T } | { ok: false; reason: string };

interface Requirement {
  argv: boolean;
  module: boolean;
  /** Plain JSON copies, in payload order; `[]` requires nothing. */
  localInputs: Demand<readonly unknown[]>;
  /** `0` requires nothing. */
  gpus: Demand<number>;
  /** Memory, compute capability, driver per GPU; null when none is asked for. */
  gpuNeed: GpuNeedReading;
  /** `[]` excludes nobody. */
  excludeNodes: Demand<readonly string[]>;
  pool: Demand<string | null>;
  isolation: Demand<Isolation>;
}

interface Isolation {
  sandboxed: boolean;
  /** As written, for the refusal reason only. */
  tier: unknown;
  allowFallback: boolean;
}

type Reading = { readable: true; requirement: Requirement } | { readable: false; reason: string };

type Check = (r: Requirement, node: unknown) => string | null;
/** Whether a gate's check can refuse anything for this requirement: false only where it accepts without reading the node. */
type Requires = (r: Requirement) => boolean;

// SPEC order: it decides which refusal `explain` reports, never the answer.
const CHECKS: ReadonlyArray<readonly [GateName, Check, Requires]> = [
  ["argv", checkArgv, (r) => r.argv],
  ["module", checkModule, (r) => r.module],
  ["local_data", checkLocalData, (r) => !r.localInputs.ok || r.localInputs.need.length > 0],
  ["gpu", checkGpu, (r) => !r.gpus.ok || !r.gpuNeed.ok || r.gpus.need > 0],
  ["exclusion", checkExclusion, (r) => !r.excludeNodes.ok || r.excludeNodes.need.length > 0],
  ["pool", checkPool, (r) => !r.pool.ok || r.pool.need !== null],
  [
    "isolation",
    checkIsolation,
    (r) => !r.isolation.ok || (r.isolation.need.sandboxed && !r.isolation.need.allowFallback),
  ],
];

// A non-object payload is named under the first gate: every gate would refuse
// it, and argv is the one whose question ("does it run a command line?")
// cannot be answered at all.
function readPayload(payload: unknown): Reading {
  try {
    if (!isObject(payload)) {
      return {
        readable: false,
        reason: `argv: the payload is ${kind(payload)}, not a JSON object, so its requirements cannot be read`,
      };
    }
    const gpus = readGpus(own(payload, "gpus"));
    const [memory, capability, driver] = GPU_REQUIREMENT_KEYS.map((key) => own(payload, key));
    return {
      readable: true,
      requirement: {
        argv: Object.hasOwn(payload, "argv"),
        module: Object.hasOwn(payload, "module"),
        localInputs: readLocalInputs(own(payload, "local_inputs")),
        gpus,
        gpuNeed: readGpuNeed(memory, capability, driver, gpus.ok ? gpus.need : 0, show),
        excludeNodes: readExcludeNodes(own(payload, "exclude_nodes")),
        pool: readPool(own(payload, "pool")),
        isolation: readIsolation(own(payload, "isolation")),
      },
    };
  } catch {
    return { readable: false, reason: "argv: the payload could not be read" };
  }
}

function readLocalInputs(value: unknown): Demand<readonly unknown[]> {
  if (value == null) return { ok: true, need: [] };
  if (!isList(value)) {
    return { ok: false, reason: `local_data: local_inputs must be a list of dataset names, got ${show(value)}` };
  }
  const need: unknown[] = [];
  for (let i = 0; i < value.length; i++) {
    const copy = copyJson(value[i], 0);
    // Such an element equals nothing a node could advertise, so the task
    // could never place: refuse it as malformed rather than as unmatched.
    if (copy === NOT_JSON) {
      return { ok: false, reason: `local_data: local_inputs[${i}] is not a JSON value any node could offer` };
    }
    need.push(copy);
  }
  return { ok: true, need };
}

function readGpus(value: unknown): Demand<number> {
  if (value == null) return { ok: true, need: 0 };
  // typeof excludes true/false, "1" and lists; Number.isInteger excludes
  // 1.5, NaN and Infinity. JSON.parse has already made 1.0 into 1.
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    return { ok: false, reason: `gpu: gpus must be a whole number of at least 0, got ${show(value)}` };
  }
  return { ok: true, need: value === 0 ? 0 : value };
}

function readExcludeNodes(value: unknown): Demand<readonly string[]> {
  if (value == null) return { ok: true, need: [] };
  // A bare string would turn membership into a substring test.
  if (!isList(value)) {
    return { ok: false, reason: `exclusion: exclude_nodes must be a list of node ids, got ${show(value)}` };
  }
  const need: string[] = [];
  for (let i = 0; i < value.length; i++) {
    const member = value[i];
    // A non-name member means the list was built wrong, and the node it meant
    // to name is exactly the one a membership test would let through.
    if (typeof member !== "string") {
      return { ok: false, reason: `exclusion: exclude_nodes[${i}] is ${show(member)}, not a node id` };
    }
    need.push(member);
  }
  return { ok: true, need };
}

function readPool(value: unknown): Demand<string | null> {
  if (value == null) return { ok: true, need: null };
  if (typeof value !== "string" || value === "") {
    return { ok: false, reason: `pool: pool must be a non-empty team pool name, got ${show(value)}` };
  }
  return { ok: true, need: value };
}

function readIsolation(value: unknown): Demand<Isolation> {
  if (value == null) return { ok: true, need: { sandboxed: false, tier: undefined, allowFallback: false } };
  if (!isObject(value)) return { ok: false, reason: `isolation: isolation must be an object, got ${show(value)}` };
  const tier = own(value, "tier");
  // Only the known non-isolated spellings run anywhere; any other tier,
  // "Sandboxed" included, is read as sandboxed rather than downgraded.
  const standard = tier == null || tier === "" || tier === "standard";
  return { ok: true, need: { sandboxed: !standard, tier, allowFallback: own(value, "allowFallback") === true } };
}

function checkArgv(r: Requirement, node: unknown): string | null {
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
  return `argv: task carries argv and node is not argv_capable (argv_capable is ${show(argvCapable)}); trusted-pool path closed: ${closed.join(", ")}`;
}

// Fail-open on purpose, the mirror of argv: a node whose registration predates
// module_capable must keep receiving module work.
function checkModule(r: Requirement, node: unknown): string | null {
  if (!r.module || field(node, "module_capable") !== false) return null;
  return "module: task runs a module and node says module_capable: false";
}

function checkLocalData(r: Requirement, node: unknown): string | null {
  if (!r.localInputs.ok) return r.localInputs.reason;
  const need = r.localInputs.need;
  if (need.length === 0) return null;
  const offered = field(node, "local_datasets");
  // A bare string is not a list: "patients" must not advertise "patients".
  if (!isList(offered)) {
    return `local_data: task needs ${count(need.length, "local dataset")}, node's local_datasets is ${show(offered)}, not a list`;
  }
  for (const name of need) {
    let found = false;
    for (let i = 0; i < offered.length && !found; i++) found = jsonEqual(name, offered[i]);
    if (!found) return `local_data: node does not offer dataset ${show(name)}`;
  }
  return null;
}

function checkGpu(r: Requirement, node: unknown): string | null {
  if (!r.gpus.ok) return r.gpus.reason;
  if (!r.gpuNeed.ok) return r.gpuNeed.reason;
  const need = r.gpus.need;
  if (need === 0) return null;
  const capabilities = field(node, "capabilities");
  if (!isObject(capabilities)) {
    return `gpu: task needs ${count(need, "GPU")}, node advertises none (capabilities is ${show(capabilities)}, not an object)`;
  }
  // Only a list counts, and only its length: a bare 1 is not "one GPU".
  const gpus = own(capabilities, "gpus");
  if (!isList(gpus)) {
    return `gpu: task needs ${count(need, "GPU")}, node advertises none (capabilities.gpus is ${show(gpus)}, not a list)`;
  }
  if (gpus.length < need) return `gpu: task needs ${count(need, "GPU")}, node advertises ${gpus.length}`;
  return r.gpuNeed.need === null ? null : gpuNeedRefusal(r.gpuNeed.need, need, gpus);
}

function checkExclusion(r: Requirement, node: unknown): string | null {
  if (!r.excludeNodes.ok) return r.excludeNodes.reason;
  const excluded = r.excludeNodes.need;
  if (excluded.length === 0) return null;
  const nodeId = field(node, "node_id");
  // A node that cannot say who it is cannot prove it is not the excluded one.
  if (typeof nodeId !== "string" || nodeId === "") {
    return `exclusion: task excludes ${count(excluded.length, "node")} and node has no readable node_id (node_id is ${show(nodeId)})`;
  }
  if (excluded.includes(nodeId)) return `exclusion: task excludes node ${show(nodeId)}`;
  return null;
}

function checkPool(r: Requirement, node: unknown): string | null {
  if (!r.pool.ok) return r.pool.reason;
  const pool = r.pool.need;
  if (pool === null) return null;
  const capabilities = field(node, "capabilities");
  if (!isObject(capabilities)) {
    return `pool: task is confined to team pool ${show(pool)}, node's capabilities is ${show(capabilities)}, not an object`;
  }
  const pools = own(capabilities, "pools");
  if (!isList(pools)) {
    return `pool: task is confined to team pool ${show(pool)}, node's capabilities.pools is ${show(pools)}, not a list`;
  }
  // One non-name member discredits the whole list, not just that member.
  for (let i = 0; i < pools.length; i++) {
    const member = pools[i];
    if (typeof member !== "string") {
      return `pool: node's capabilities.pools holds ${show(member)}, not a pool name, so its membership cannot be trusted`;
    }
  }
  if (!pools.includes(pool)) return `pool: node is not a member of team pool ${show(pool)}`;
  return null;
}

function checkIsolation(r: Requirement, node: unknown): string | null {
  if (!r.isolation.ok) return r.isolation.reason;
  const { sandboxed, tier, allowFallback } = r.isolation.need;
  // The waiver is the submitter's word about their own work: it opens this
  // gate and no other.
  if (!sandboxed || allowFallback) return null;
  const capable = field(node, "sandbox_capable");
  if (capable === true) return null;
  return `isolation: task needs a sandboxed node (tier ${show(tier)}) and node is not sandbox_capable (sandbox_capable is ${show(capable)})`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !isList(value);
}

// Array.isArray narrows to any[]; this keeps every element `unknown`.
function isList(value: unknown): value is readonly unknown[] {
  return Array.isArray(value);
}

/** An own property only: an inherited or polluted prototype key is absent. */
function own(object: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(object, key) ? object[key] : undefined;
}

// A node view that is not an object advertises nothing: every fail-closed gate
// refuses it, and the fail-open module gate lets it through, as for `{}`.
function field(node: unknown, key: string): unknown {
  return isObject(node) ? own(node, key) : undefined;
}

function unplaceable(): Record<string, unknown> {
  return { isolation: "unplaceable" };
}

/** A short, single-line rendering of any value for a reason. */
function show(value: unknown): string {
  try {
    if (value === undefined) return "absent";
    if (typeof value === "string") return `'${clip(oneLine(JSON.stringify(value).slice(1, -1)))}'`;
    if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint" || value === null) {
      return String(value);
    }
    if (typeof value === "symbol" || typeof value === "function") return `a ${typeof value}`;
    const text = JSON.stringify(value);
    return typeof text === "string" ? clip(oneLine(text)) : kind(value);
  } catch {
    return "an unreadable value";
  }
}

function kind(value: unknown): string {
  if (value === null) return "null";
  if (isList(value)) return "a list";
  if (value === undefined) return "undefined";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

// JSON.stringify escapes control characters but not U+2028/U+2029.
function oneLine(text: string): string {
  return text.replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}

function clip(text: string): string {
  return shorten(text, 57);
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}
