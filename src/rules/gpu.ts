// GPU requirements beyond a count (docs/protocol.md §4 gate 4): a task may ask that each
// of its GPUs has at least so much memory, at least a compute capability and
// at least a driver version. This module holds the rule, pure, for the gate
// in placement.ts to call, and the job labels that ask for it.
//
// Fail closed on both sides, and never throw: a requirement that cannot be
// read refuses everywhere; a GPU whose compared field cannot be read never
// qualifies for that requirement. Version numbers are compared as digit
// strings, never through floating point, so no value is too long to compare
// exactly ("8.10" > "8.9", "12.0" > "9.0").

/** The payload keys of the rule, in the order their requirements are checked and named. */
export const GPU_REQUIREMENT_KEYS = ["gpu_memory_mb", "gpu_compute_capability", "gpu_driver_version"] as const;
export type GpuRequirementKey = (typeof GPU_REQUIREMENT_KEYS)[number];

/** The job labels that ask for them; every recipe stamps each into the matching payload key. */
export const GPU_LABELS: Readonly<Record<GpuRequirementKey, string>> = {
  gpu_memory_mb: "flashml.dev/gpu-memory-mb",
  gpu_compute_capability: "flashml.dev/gpu-compute-capability",
  gpu_driver_version: "flashml.dev/gpu-driver-version",
};

import { type Refusal, show, unreadable } from "./refusals";

const DIGITS_RE = /^[0-9]+$/;
const CAPABILITY_RE = /^[0-9]+\.[0-9]+$/;
const DRIVER_RE = /^[0-9]+(\.[0-9]+)*$/;

/**
 * A read requirement: memory in MB, and the capability and driver as
 * canonical component lists (leading zeros dropped; the driver's trailing
 * zero components dropped too, since a missing component reads as 0).
 */
export interface GpuNeed {
  memoryMb: number | null;
  capability: readonly string[] | null;
  driver: readonly string[] | null;
}

export type GpuNeedReading = { ok: true; need: GpuNeed | null } | { ok: false; refusal: Refusal };

/**
 * The payload's GPU requirements, or null when it has none (all three
 * absent or null). `gpus` is the task's GPU count as the count gate read it;
 * a requirement with no GPU to apply to refuses everywhere rather than
 * silently meaning "no GPU".
 */
export function readGpuNeed(memory: unknown, capability: unknown, driver: unknown, gpus: number): GpuNeedReading {
  if (memory == null && capability == null && driver == null) return { ok: true, need: null };
  const need: GpuNeed = { memoryMb: null, capability: null, driver: null };
  if (memory != null) {
    // typeof excludes true and "40960"; Number.isInteger excludes 1.5, NaN, Infinity.
    if (typeof memory !== "number" || !Number.isInteger(memory) || memory < 1) {
      return malformed(`gpu_memory_mb must be a whole number of at least 1, got ${show(memory)}`);
    }
    need.memoryMb = memory;
  }
  if (capability != null) {
    const parsed = parseCapability(capability);
    if (parsed === null) {
      return malformed(`gpu_compute_capability must be a string "M.m" of digits, got ${show(capability)}`);
    }
    need.capability = parsed;
  }
  if (driver != null) {
    const parsed = parseDriver(driver);
    if (parsed === null) {
      return malformed(`gpu_driver_version must be a string of dot-separated digits, got ${show(driver)}`);
    }
    need.driver = parsed;
  }
  if (gpus < 1) {
    return malformed(`the task asks for ${describeGpuNeed(need)} but for no GPU (gpus is not ≥ 1)`);
  }
  return { ok: true, need };
}

function malformed(text: string): GpuNeedReading {
  return { ok: false, refusal: unreadable("gpu", text) };
}

/** The canonical payload fields of a need: what requirementOf keeps. */
export function canonicalGpuNeed(need: GpuNeed): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (need.memoryMb !== null) out.gpu_memory_mb = need.memoryMb;
  if (need.capability !== null) out.gpu_compute_capability = need.capability.join(".");
  if (need.driver !== null) out.gpu_driver_version = need.driver.join(".");
  return out;
}

/**
 * Why a node's GPU list cannot serve `count` GPUs of this need, or null if
 * at least `count` of them each satisfy every requirement. The reason names
 * the first unmet requirement (with those checked before it) and how many of
 * the node's GPUs meet them: `gpu: task needs 2 GPUs with ≥ 40960 MB, node
 * has 1 such of 2`.
 */
export function gpuNeedRefusal(need: GpuNeed, count: number, gpus: readonly unknown[]): Refusal | null {
  const checks = CHECKS.filter(([key]) => requires(need, key));
  let qualifying = gpus.map(() => true);
  for (let k = 0; k < checks.length; k++) {
    const [, qualifies] = checks[k]!;
    qualifying = qualifying.map((ok, i) => ok && qualifies(need, gpus[i]));
    const such = qualifying.filter(Boolean).length;
    if (such < count) {
      const named = checks.slice(0, k + 1).map(([key]) => describeOne(need, key));
      return {
        gate: "gpu",
        form: "gpus_unfit",
        need: `${count} GPU${count === 1 ? "" : "s"} with ${named.join(" and ")}`,
        have: `${such} such of ${gpus.length}`,
      };
    }
  }
  return null;
}

/** The need in words: "≥ 40960 MB and compute capability ≥ 8.0". */
export function describeGpuNeed(need: GpuNeed): string {
  return GPU_REQUIREMENT_KEYS.filter((key) => requires(need, key))
    .map((key) => describeOne(need, key))
    .join(" and ");
}

export type GpuLabels = { ok: true; fields: Record<string, unknown> } | { ok: false; problems: string[] };

/**
 * The payload fields a job's GPU labels stamp into each task: memory as a
 * number, capability and driver as written. A malformed label (an empty
 * string included), or one on a job with `gpuPerTask` 0, is a problem naming
 * it. A memory label past 2^53 is refused too: it would not survive as the
 * number it spells.
 */
export function gpuLabelFields(labels: Readonly<Record<string, string>>, gpuPerTask: number): GpuLabels {
  const fields: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const key of GPU_REQUIREMENT_KEYS) {
    const label = GPU_LABELS[key];
    if (!Object.hasOwn(labels, label)) continue;
    const raw = labels[label];
    const text = JSON.stringify(typeof raw === "string" ? raw.slice(0, 64) : raw);
    if (typeof raw !== "string" || !labelValid(key, raw)) {
      problems.push(`label '${label}' must be ${LABEL_FORMS[key]}, got ${text}`);
    } else if (gpuPerTask === 0) {
      problems.push(
        `label '${label}' asks for a kind of GPU, but spec.resources.gpuPerTask is 0: set it to at least 1`,
      );
    } else {
      fields[key] = key === "gpu_memory_mb" ? Number(raw) : raw;
    }
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, fields };
}

const LABEL_FORMS: Record<GpuRequirementKey, string> = {
  gpu_memory_mb: "a whole number of MB of at least 1, in decimal digits only",
  gpu_compute_capability: 'a compute capability "M.m" of digits, e.g. "8.0"',
  gpu_driver_version: 'a driver version of dot-separated digits, e.g. "535.54"',
};

function labelValid(key: GpuRequirementKey, raw: string): boolean {
  if (key === "gpu_memory_mb") return DIGITS_RE.test(raw) && Number(raw) >= 1 && Number.isSafeInteger(Number(raw));
  return key === "gpu_compute_capability" ? CAPABILITY_RE.test(raw) : DRIVER_RE.test(raw);
}

type Qualifies = (need: GpuNeed, gpu: unknown) => boolean;

const CHECKS: ReadonlyArray<readonly [GpuRequirementKey, Qualifies]> = [
  ["gpu_memory_mb", (need, gpu) => memoryQualifies(need.memoryMb ?? 0, ownField(gpu, "memory_total_mb"))],
  [
    "gpu_compute_capability",
    (need, gpu) => atLeast(parseCapability(ownField(gpu, "compute_capability")), need.capability ?? []),
  ],
  ["gpu_driver_version", (need, gpu) => atLeast(parseDriver(ownField(gpu, "driver_version")), need.driver ?? [])],
];

function requires(need: GpuNeed, key: GpuRequirementKey): boolean {
  if (key === "gpu_memory_mb") return need.memoryMb !== null;
  return (key === "gpu_compute_capability" ? need.capability : need.driver) !== null;
}

function describeOne(need: GpuNeed, key: GpuRequirementKey): string {
  if (key === "gpu_memory_mb") return `≥ ${need.memoryMb} MB`;
  if (key === "gpu_compute_capability") return `compute capability ≥ ${need.capability?.join(".")}`;
  return `driver ≥ ${need.driver?.join(".")}`;
}

// A null, absent or fractional memory reading says nothing about the card:
// it never qualifies, rather than being read as "enough".
function memoryQualifies(need: number, total: unknown): boolean {
  return typeof total === "number" && Number.isInteger(total) && total >= need;
}

/** "M.m" → [M, m] without leading zeros, or null. */
function parseCapability(value: unknown): string[] | null {
  if (typeof value !== "string" || !CAPABILITY_RE.test(value)) return null;
  return value.split(".").map(stripZeros);
}

/** Dot-separated digits → components without leading zeros and without trailing zero components, or null. */
function parseDriver(value: unknown): string[] | null {
  if (typeof value !== "string" || !DRIVER_RE.test(value)) return null;
  const parts = value.split(".").map(stripZeros);
  while (parts.length > 1 && parts[parts.length - 1] === "0") parts.pop();
  return parts;
}

function stripZeros(digits: string): string {
  const stripped = digits.replace(/^0+/, "");
  return stripped === "" ? "0" : stripped;
}

/** have ≥ want, component by component as integers; missing components are 0; null (unreadable) is never ≥. */
function atLeast(have: readonly string[] | null, want: readonly string[]): boolean {
  if (have === null) return false;
  for (let i = 0; i < Math.max(have.length, want.length); i++) {
    const order = compareDigits(have[i] ?? "0", want[i] ?? "0");
    if (order !== 0) return order > 0;
  }
  return true;
}

/** Two canonical digit strings compared as integers: longer is larger, else by text. */
function compareDigits(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

function ownField(value: unknown, key: string): unknown {
  return typeof value === "object" && value !== null && !Array.isArray(value) && Object.hasOwn(value, key)
    ? (value as Record<string, unknown>)[key]
    : undefined;
}
