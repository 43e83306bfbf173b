// What a task's payload requires of a node (docs/protocol.md §4), read once: the input
// of the gate in placement.ts, and the canonical requirement class that
// groups payloads the gate answers alike. Pure: no I/O, never throws.
//
// Every value is `unknown` and narrowed here. A requirement that cannot be
// read refuses everywhere (fail closed): it is kept as a refusal to report.

import { canonicalGpuNeed, GPU_REQUIREMENT_KEYS, type GpuNeedReading, readGpuNeed } from "./gpu";
import { canonicalJson, copyJson, NOT_JSON } from "./json-values";
import { kind, type Refusal, show, unreadable } from "./refusals";

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

/** A requirement as read: what it needs, or why it cannot be read. */
export type Demand<T> = { ok: true; need: T } | { ok: false; refusal: Refusal };

export interface Requirement {
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

export interface Isolation {
  sandboxed: boolean;
  /** As written, for the refusal reason only. */
  tier: unknown;
  allowFallback: boolean;
}

export type Reading = { readable: true; requirement: Requirement } | { readable: false; refusal: Refusal };

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

// A non-object payload is named under the first gate: every gate would refuse
// it, and argv is the one whose question ("does it run a command line?")
// cannot be answered at all.
export function readPayload(payload: unknown): Reading {
  try {
    if (!isObject(payload)) {
      const text = `the payload is ${kind(payload)}, not a JSON object, so its requirements cannot be read`;
      return { readable: false, refusal: unreadable("argv", text) };
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
        gpuNeed: readGpuNeed(memory, capability, driver, gpus.ok ? gpus.need : 0),
        excludeNodes: readExcludeNodes(own(payload, "exclude_nodes")),
        pool: readPool(own(payload, "pool")),
        isolation: readIsolation(own(payload, "isolation")),
      },
    };
  } catch {
    return { readable: false, refusal: unreadable("argv", "the payload could not be read") };
  }
}

function readLocalInputs(value: unknown): Demand<readonly unknown[]> {
  if (value == null) return { ok: true, need: [] };
  if (!isList(value))
    return malformed("local_data", `local_inputs must be a list of dataset names, got ${show(value)}`);
  const need: unknown[] = [];
  for (let i = 0; i < value.length; i++) {
    const copy = copyJson(value[i], 0);
    // Such an element equals nothing a node could advertise, so the task
    // could never place: refuse it as malformed rather than as unmatched.
    if (copy === NOT_JSON)
      return malformed("local_data", `local_inputs[${i}] is not a JSON value any node could offer`);
    need.push(copy);
  }
  return { ok: true, need };
}

function readGpus(value: unknown): Demand<number> {
  if (value == null) return { ok: true, need: 0 };
  // typeof excludes true/false, "1" and lists; Number.isInteger excludes
  // 1.5, NaN and Infinity. JSON.parse has already made 1.0 into 1.
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) {
    return malformed("gpu", `gpus must be a whole number of at least 0, got ${show(value)}`);
  }
  return { ok: true, need: value === 0 ? 0 : value };
}

function readExcludeNodes(value: unknown): Demand<readonly string[]> {
  if (value == null) return { ok: true, need: [] };
  // A bare string would turn membership into a substring test.
  if (!isList(value)) return malformed("exclusion", `exclude_nodes must be a list of node ids, got ${show(value)}`);
  const need: string[] = [];
  for (let i = 0; i < value.length; i++) {
    const member = value[i];
    // A non-name member means the list was built wrong, and the node it meant
    // to name is exactly the one a membership test would let through.
    if (typeof member !== "string") {
      return malformed("exclusion", `exclude_nodes[${i}] is ${show(member)}, not a node id`);
    }
    need.push(member);
  }
  return { ok: true, need };
}

function readPool(value: unknown): Demand<string | null> {
  if (value == null) return { ok: true, need: null };
  if (typeof value !== "string" || value === "") {
    return malformed("pool", `pool must be a non-empty team pool name, got ${show(value)}`);
  }
  return { ok: true, need: value };
}

function readIsolation(value: unknown): Demand<Isolation> {
  if (value == null) return { ok: true, need: { sandboxed: false, tier: undefined, allowFallback: false } };
  if (!isObject(value)) return malformed("isolation", `isolation must be an object, got ${show(value)}`);
  const tier = own(value, "tier");
  // Only the known non-isolated spellings run anywhere; any other tier,
  // "Sandboxed" included, is read as sandboxed rather than downgraded.
  const standard = tier == null || tier === "" || tier === "standard";
  return { ok: true, need: { sandboxed: !standard, tier, allowFallback: own(value, "allowFallback") === true } };
}

function malformed<T>(gate: Refusal["gate"], text: string): Demand<T> {
  return { ok: false, refusal: unreadable(gate, text) };
}

function unplaceable(): Record<string, unknown> {
  return { isolation: "unplaceable" };
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !isList(value);
}

// Array.isArray narrows to any[]; this keeps every element `unknown`.
export function isList(value: unknown): value is readonly unknown[] {
  return Array.isArray(value);
}

/** An own property only: an inherited or polluted prototype key is absent. */
export function own(object: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(object, key) ? object[key] : undefined;
}
