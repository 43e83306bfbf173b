// The R2 operations a shard's work costs, by billing class (docs/protocol.md
// §16): class A writes (PUT, LIST), class B reads (GET, HEAD); deletes are
// free. Counted where the object makes them, and where the Worker makes
// them for a call to this object: the PUT of an upload this object admits,
// the GET of an artifact it resolves. In memory, like the row counts.

export type R2Class = "A" | "B";

export class R2Operations {
  #counts: Record<R2Class, number> = { A: 0, B: 0 };

  count(kind: R2Class, n = 1): void {
    this.#counts[kind] += n;
  }

  totals(): Record<R2Class, number> {
    return { ...this.#counts };
  }
}
