// Whether a checkpoint manifest may be written (SPEC §8), pure: the parts it
// names against the parts registered for its attempt and step. The pool
// object reads the registered parts; this judges them.

import type { CheckpointPart } from "../protocol/checkpoints";

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
