// Submission reservations (docs/sharding.md §7.4): a job route asks two shards
// for a slot and submits to the lighter one. A reservation makes concurrent
// submitters see each other before their jobs land, which is what keeps the
// two-choice bound under a burst. In memory only: losing one loses nothing,
// and one the route never uses lapses.

/** How long a reservation counts toward its shard's load. */
export const RESERVATION_MS = 2_000;

export class Reservations {
  readonly #held = new Map<string, { tasks: number; until: number }>();

  /** Tasks reserved and not yet submitted or lapsed at `now`. */
  reserved(now: number): number {
    let tasks = 0;
    for (const [id, r] of this.#held) {
      if (r.until <= now) this.#held.delete(id);
      else tasks += r.tasks;
    }
    return tasks;
  }

  reserve(now: number, tasks: number): string {
    const id = crypto.randomUUID();
    this.#held.set(id, { tasks, until: now + RESERVATION_MS });
    return id;
  }

  /** The job has landed (its tasks now count as pending), or went to the other shard drawn. */
  consume(id: string): void {
    this.#held.delete(id);
  }
}
