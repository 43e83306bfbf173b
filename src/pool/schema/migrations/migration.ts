// One step of the pool object's schema, as data (the shape of
// lambrospetrou/durable-utils' migrations, with its undo beside it).

export type Migration = {
  /** Its version: steps run in id order, each once; schema_version records the last applied. */
  readonly id: number;
  /** One line: what the step adds. */
  readonly description: string;
  /**
   * The SQL run once, inside the constructor's transaction. Never edited once
   * shipped: a pool created before it runs it as written, over its rows.
   */
  readonly up: string;
  /**
   * Takes the schema back to the step before, so tests can make a pool of
   * that age and check that `up` upgrades it. Never run by the pool object.
   */
  readonly down: string;
  /**
   * For each trigger `up` creates: the rule it keeps and where that rule's
   * TypeScript half lives. Rendered into src/pool/schema.sql beside it.
   */
  readonly triggers?: Readonly<Record<string, string>>;
};
