// The sizes the API promises: page sizes of the list routes and the JSON body
// limit (SPEC §6, §10, §11). The routes enforce them, the pool object pages
// by them, the dashboard page asks within them: one definition for all.

/** JSON bodies (everything but artifacts) are limited to this (SPEC §10). */
export const MAX_JSON_BODY_BYTES = 1024 * 1024;

/** Default and largest page of a job's events (`?limit=`). */
export const EVENTS_PAGE_DEFAULT = 100;
export const EVENTS_PAGE_MAX = 1000;

/** Default and largest number of entries per dashboard list (`?limit=`). */
export const DASHBOARD_LIMIT_DEFAULT = 25;
export const DASHBOARD_LIMIT_MAX = 200;

/** A Durable Object's storage limit (Cloudflare's documented 10 GB), and the share past which a pool warns. */
export const OBJECT_STORAGE_LIMIT_BYTES = 10 * 1000 ** 3;
export const STORAGE_WARNING_FRACTION = 0.8;
