// What the verification benches share (bench/verification.bench.test.ts in
// one object, bench/verification-shards.bench.test.ts through the Worker at
// S shards): the seeded draws and the fleet, its cheaters spread through it.

/** mulberry32: small, fast and good enough for a simulation's draws. */
export function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function shuffle<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

export type Behaviour = "honest" | "always" | "sometimes" | "copycat" | "dodger" | "sleeper";
export type Adversary = "mixed" | "copycat" | "dodger" | "sleeper";

/**
 * `nodes` node ids (node-0000, …) and how each behaves: at least one
 * cheater of each kind, spread through the fleet, every `spacing`-th node,
 * alternately always and sometimes wrong for the mixed adversary.
 */
export function fleet(nodes: number, rate: number, adversary: Adversary): Map<string, Behaviour> {
  const cheaters = Math.max(2, Math.round(nodes * rate));
  const spacing = Math.floor(nodes / cheaters);
  const behaviour = new Map<string, Behaviour>();
  for (let n = 0; n < nodes; n++) {
    const c = n / spacing;
    const mixed: Behaviour = c % 2 === 0 ? "always" : "sometimes";
    const kind: Behaviour =
      !Number.isInteger(c) || c >= cheaters ? "honest" : adversary === "mixed" ? mixed : adversary;
    behaviour.set(nodeId(n), kind);
  }
  return behaviour;
}

/** The id of the fleet's n-th node; its token, where tokens are enforced, is `tok-` + its id. */
export const nodeId = (n: number) => `node-${String(n).padStart(4, "0")}`;
