// The sizes the API promises: page sizes of the list routes, the JSON body
// limit and the bounds on stored rows (docs/protocol.md §6, §10, §11, §12). The routes
// enforce them, the pool object pages by them, the dashboard page asks within
// them: one definition for all.

/** JSON bodies (everything but artifacts) are limited to this (docs/protocol.md §10). */
export const MAX_JSON_BODY_BYTES = 1024 * 1024;

/**
 * A node registration, as sent and as stored (defaults applied, after a
 * heartbeat's `pools`), is at most this: a stored row never nears the
 * platform's 2 MB row limit (docs/protocol.md §12, "Bounded rows").
 */
export const MAX_REGISTRATION_BYTES = 64 * 1024;

/**
 * Free text kept in storage (fail and quarantine reasons, evidence) is
 * truncated to this, its truncation marker included (docs/protocol.md §12).
 */
export const MAX_STORED_TEXT_BYTES = 4 * 1024;

/** Default and largest page of a job's events (`?limit=`). */
export const EVENTS_PAGE_DEFAULT = 100;
export const EVENTS_PAGE_MAX = 1000;

/** Events per call the events route pulls from the pool while it streams a whole ledger (no query). */
export const EVENTS_STREAM_PAGE = 1000;

/**
 * Default and largest page of GET /jobs and GET /nodes (`?limit=`), and the
 * body size past which a page ends early, its Link continuing it (docs/protocol.md §12).
 */
export const LIST_PAGE_DEFAULT = 100;
export const LIST_PAGE_MAX = 1000;
export const LIST_PAGE_MAX_BYTES = 4 * 1024 * 1024;

/** Default and largest number of entries per dashboard list (`?limit=`). */
export const DASHBOARD_LIMIT_DEFAULT = 25;
export const DASHBOARD_LIMIT_MAX = 200;

/** A Durable Object's storage limit (Cloudflare's documented 10 GB), and the share past which a pool warns. */
export const OBJECT_STORAGE_LIMIT_BYTES = 10 * 1000 ** 3;
export const STORAGE_WARNING_FRACTION = 0.8;

/**
 * The shortest lease a task may ask for, in seconds (docs/protocol.md §5, §12 "Nothing
 * leaks"). A lease must outlive at least one heartbeat round trip of an agent
 * that renews every third of its lease: at 5 s a renewal has over 3 s to
 * arrive. Shorter, one slow request lets it expire under a healthy node, and
 * its task is requeued again and again until its attempts run out.
 */
export const MIN_LEASE_SECONDS = 5;

/**
 * The longest owner name of a node (docs/protocol.md §14 "Independent replicas"): named
 * at an enrolment's approval or in FLASHML_NODE_OWNERS, shown on the
 * dashboard and in placement reports.
 */
export const MAX_OWNER_LENGTH = 128;

/** An operator's team-pool assignment (docs/protocol.md §9): at most this many pools, each at most this many characters. */
export const MAX_ASSIGNED_POOLS = 64;
export const MAX_POOL_NAME_LENGTH = 128;
