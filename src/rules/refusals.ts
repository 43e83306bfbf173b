// Why a node may not take a task, as data (docs/protocol.md §4, §11, §14): the gate
// and the pool's replica rule return a Refusal — which rule, what the task
// needs, what the node has — and both texts a client reads render from it
// here: the one-line reason (GET …/placement, the Python agent's logs) and
// the task's side of it, by which a placement summary groups nodes. The
// reason's wording is wire text: it must stay byte for byte what it was.
// Pure: no I/O, never throws.

import type { RefusalName } from "../protocol/gates";
import { shorten } from "./text";

export { GATE_NAMES, type GateName, REFUSAL_NAMES, type RefusalName } from "../protocol/gates";

/**
 * One refusal. `need` and `have` are the task's and the node's values as
 * the reason shows them ("2 GPUs", "1"); `detail` is what a form says
 * beyond them; `note` is appended in parentheses (a team-pool refusal's
 * assignment when tokens are enforced, docs/protocol.md §9).
 */
export type Refusal = {
  gate: RefusalName;
  form: RefusalForm;
  need: string;
  have: string;
  detail?: string;
  note?: string;
};

type Sentence = {
  reason: (r: Refusal) => string;
  /**
   * The task's side alone, without the node's values, so nodes short of
   * the same thing group together. Absent: the reason is about the task
   * alone (a malformed requirement refuses every node alike) and is kept
   * as written, note included.
   */
  taskSide?: (r: Refusal) => string;
};

const SENTENCES = {
  /** A requirement or node view that cannot be read: `need` is the whole text. */
  unreadable: { reason: (r) => r.need },
  argv: {
    reason: (r) =>
      `task carries argv and node is not argv_capable (argv_capable is ${r.have}); trusted-pool path closed: ${r.detail}`,
    taskSide: () => "task runs argv, node is not argv_capable",
  },
  module: {
    reason: () => "task runs a module and node says module_capable: false",
    taskSide: () => "node is not module_capable",
  },
  datasets_unlisted: {
    reason: (r) => `task needs ${r.need}, node's local_datasets is ${r.have}, not a list`,
    taskSide: (r) => `task needs ${r.need}, node offers none`,
  },
  dataset_missing: {
    reason: (r) => `node does not offer dataset ${r.need}`,
    taskSide: (r) => `missing dataset ${r.need}`,
  },
  gpu_capabilities_unreadable: {
    reason: (r) => `task needs ${r.need}, node advertises none (capabilities is ${r.have}, not an object)`,
    taskSide: (r) => `task needs ${r.need}`,
  },
  gpus_unlisted: {
    reason: (r) => `task needs ${r.need}, node advertises none (capabilities.gpus is ${r.have}, not a list)`,
    taskSide: (r) => `task needs ${r.need}`,
  },
  gpus_short: {
    reason: (r) => `task needs ${r.need}, node advertises ${r.have}`,
    taskSide: (r) => `task needs ${r.need}`,
  },
  /** GPUs of a kind (gpu.ts): grouped as written, the node's count of such GPUs included. */
  gpus_unfit: { reason: (r) => `task needs ${r.need}, node has ${r.have}` },
  node_id_unreadable: {
    reason: (r) => `task excludes ${r.need} and node has no readable node_id (node_id is ${r.have})`,
    taskSide: () => "node has no readable node_id",
  },
  excluded: {
    reason: (r) => `task excludes node ${r.have}`,
    taskSide: () => "node excluded by the task",
  },
  pool_capabilities_unreadable: {
    reason: (r) => `task is confined to team pool ${r.need}, node's capabilities is ${r.have}, not an object`,
    taskSide: (r) => `not in team pool ${r.need}`,
  },
  pools_unlisted: {
    reason: (r) => `task is confined to team pool ${r.need}, node's capabilities.pools is ${r.have}, not a list`,
    taskSide: (r) => `not in team pool ${r.need}`,
  },
  pools_malformed: {
    reason: (r) => `node's capabilities.pools holds ${r.have}, not a pool name, so its membership cannot be trusted`,
    taskSide: () => "node's team pool list is malformed",
  },
  not_member: {
    reason: (r) => `node is not a member of team pool ${r.need}`,
    taskSide: (r) => `not in team pool ${r.need}`,
  },
  unsandboxed: {
    reason: (r) =>
      `task needs a sandboxed node (tier ${r.need}) and node is not sandbox_capable (sandbox_capable is ${r.have})`,
    taskSide: () => "task needs a sandboxed node",
  },
  /** `need`: the replicas; `have`: "holds" or "ran". */
  replica_node: {
    reason: (r) => `${r.have} ${r.need} of this task; each replica runs on a different node`,
    taskSide: () => "holds or ran a replica of this task",
  },
  /** `detail`: the owner. */
  replica_owner: {
    reason: (r) =>
      `a node of owner ${r.detail} ${r.have} ${r.need} of this task; replicas run on nodes of distinct owners`,
    taskSide: () => "a node of its owner holds or ran a replica of this task",
  },
} satisfies Record<string, Sentence>;

export type RefusalForm = keyof typeof SENTENCES;

/** The one-line reason: `gpu: task needs 2 GPUs, node advertises 1`. */
export function refusalReason(r: Refusal): string {
  return `${r.gate}: ${sentence(r)}`;
}

/** The task's side of the reason, without the gate: `task needs 2 GPUs`. */
export function taskSide(r: Refusal): string {
  const rewrite = (SENTENCES[r.form] as Sentence).taskSide;
  return rewrite === undefined ? sentence(r) : rewrite(r);
}

/** A refusal whose text is about the task or the view alone. Frozen: a read requirement shares it between nodes. */
export function unreadable(gate: RefusalName, text: string): Refusal {
  return Object.freeze({ gate, form: "unreadable", need: text, have: "" });
}

function sentence(r: Refusal): string {
  const text = (SENTENCES[r.form] as Sentence).reason(r);
  return r.note === undefined ? text : `${text} (${r.note})`;
}

/** A short, single-line rendering of any value for a reason. */
export function show(value: unknown): string {
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

/** What sort of value it is, in words: "a list", "an object", "null". */
export function kind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (value === undefined) return "undefined";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/** "1 GPU", "2 GPUs". */
export function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

// JSON.stringify escapes control characters but not U+2028/U+2029.
function oneLine(text: string): string {
  return text.replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}

function clip(text: string): string {
  return shorten(text, 57);
}
