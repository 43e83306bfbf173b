// Demand no one can serve (issue 26): what a pending requirement class asks
// for, in words, and the one line the dashboard shows for it. Pure: the pool
// object counts (src/pool/reads/fleet.ts), this says it.
//
// It reads canonical requirements (`requirementOf` in requirements.ts), which
// hold only well-formed values; anything else it cannot read is named as
// "a requirement no node can meet", never guessed at.

import { describeGpuNeed, readGpuNeed } from "./gpu";

/**
 * A canonical requirement in words: "2 GPUs with ≥ 40960 MB", "team pool
 * 'lab', a sandboxed node", "nothing in particular" for one that requires nothing. A
 * module task's class is not named for its module: that gate is fail-open,
 * so nearly every node takes it and the words would be noise.
 */
export function describeRequirement(requirement: unknown): string {
  if (typeof requirement !== "object" || requirement === null || Array.isArray(requirement)) {
    return "a requirement no node can meet";
  }
  const r = requirement as Record<string, unknown>;
  if (r.isolation === "unplaceable") return "a malformed requirement no node can meet";
  const parts: string[] = [];
  if (typeof r.gpus === "number") {
    const need = readGpuNeed(r.gpu_memory_mb, r.gpu_compute_capability, r.gpu_driver_version, r.gpus);
    const kind = need.ok && need.need !== null ? ` with ${describeGpuNeed(need.need)}` : "";
    parts.push(`${plural(r.gpus, "GPU")}${kind}`);
  }
  if (Array.isArray(r.local_inputs)) parts.push(`${plural(r.local_inputs.length, "local dataset")}`);
  if (typeof r.pool === "string") parts.push(`team pool ${quote(r.pool)}`);
  if (r.argv === true) parts.push("a command line");
  if (typeof r.isolation === "object" && r.isolation !== null && !Array.isArray(r.isolation)) {
    if ((r.isolation as Record<string, unknown>).tier === "sandboxed") parts.push("a sandboxed node");
  }
  if (Array.isArray(r.exclude_nodes)) parts.push(`none of ${plural(r.exclude_nodes.length, "excluded node")}`);
  return parts.length > 0 ? parts.join(", ") : "nothing in particular";
}

export type ClassDemand = {
  pending: number;
  needs: string;
  /** Online, accepting nodes the gate lets take the class's tasks. */
  online_nodes_able: number;
  /** Whether any registered node (online or not) could; false flags the class. */
  servable: boolean;
  /** Whether every registered node was checked, so "no node" is the whole fleet's answer. */
  every_node_checked: boolean;
};

/**
 * The dashboard's line for a pending class: "18 tasks need 2 GPUs with ≥
 * 40960 MB; no node has that", or how many online nodes could take them.
 */
export function demandSentence(d: ClassDemand): string {
  const head = `${plural(d.pending, "task")} ${d.pending === 1 ? "needs" : "need"} ${d.needs}`;
  if (!d.servable) {
    return d.every_node_checked ? `${head}; no node has that` : `${head}; none of the nodes checked has that`;
  }
  if (d.online_nodes_able === 0) return `${head}; no online node can take them now`;
  return `${head}; ${plural(d.online_nodes_able, "online node")} can take them`;
}

function plural(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

function quote(text: string): string {
  return `'${text.length > 60 ? `${text.slice(0, 59)}…` : text}'`;
}
