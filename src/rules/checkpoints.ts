// Whether a checkpoint manifest may be written (docs/protocol.md §8), pure: the parts it
// names against the parts registered for its attempt and step. The pool
// object reads the registered parts; this judges them.

import type { CheckpointManifest, CheckpointPart } from "../protocol/checkpoints";

/**
 * Every reason the expected parts do not match the registered ones, in the
 * order the committer listed them; empty means the manifest may be written.
 * A size differing from the registered one is refused like a hash (a
 * manifest must never disagree with what was registered), and so is a key
 * listed twice (a manifest has one hash per key).
 */
export function commitProblems(
  registered: ReadonlyMap<string, CheckpointPart>,
  expected: readonly CheckpointPart[],
): string[] {
  if (expected.length === 0) return ["a checkpoint needs at least one part: expected_parts is empty"];
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const part of expected) {
    if (seen.has(part.key)) {
      problems.push(`part '${part.key}' is listed more than once`);
      continue;
    }
    seen.add(part.key);
    const found = registered.get(part.key);
    if (!found) problems.push(`part '${part.key}' was never registered for this attempt and step`);
    else if (found.sha256 !== part.sha256) {
      problems.push(`part '${part.key}' has sha256 ${part.sha256}, but ${found.sha256} was registered`);
    } else if (found.size_bytes !== part.size_bytes) {
      problems.push(`part '${part.key}' has size_bytes ${part.size_bytes}, but ${found.size_bytes} was registered`);
    }
  }
  return problems;
}

/**
 * The manifest to restore from (docs/protocol.md §8), among one task's manifests in
 * commit order: the highest step that is not invalid (at `worldSize` when
 * given); ties prefer restore_verified, then the newest. The catalog's
 * SQL picks the same for a live job; this answers for an archived one.
 */
export function latestManifest(
  manifests: readonly CheckpointManifest[],
  worldSize: number | null,
): CheckpointManifest | null {
  let best: CheckpointManifest | null = null;
  for (const m of manifests) {
    if (m.validation === "invalid" || (worldSize !== null && m.world_size !== worldSize)) continue;
    const better =
      best === null ||
      m.step > best.step ||
      (m.step === best.step && (m.validation === "restore_verified" || best.validation !== "restore_verified"));
    if (better) best = m;
  }
  return best;
}

/**
 * What a failure at `failedAtStep` loses (docs/protocol.md §8): the steps since the
 * latest valid checkpoint's, or nulls when there is none.
 */
export function lostWork(latestStep: number | null, failedAtStep: number) {
  if (latestStep === null) return { lost_steps: null, latest_step: null };
  return { lost_steps: Math.max(0, failedAtStep - latestStep), latest_step: latestStep };
}
