// What the enrolment page's script (page.browser.js) reads, as the script sees
// it: its config, and the JSON of the device-code API it calls (docs/protocol.md §9,
// "Enrolled machines"). Types only, with no imports, so `tsc -p
// tsconfig.dashboard.json` checks the browser script against them without
// pulling the Worker's modules into a DOM program.
//
// They must never drift from the server: page.ts fills EnrolConfig from the
// protocol's own constants (`satisfies`), and test/types/wire.ts checks at
// compile time that every field named here is one the response schemas in
// src/protocol/responses.ts send, with exactly their type.

/** The constants the page shares with the server, in the page's `flashedge-config` meta tag. */
export type EnrolConfig = {
  /** The pool-name rule (POOL_NAME_RE), as a RegExp's source and flags. */
  pool_name: { source: string; flags: string };
};

/** One machine waiting for an operator, as `GET …/device/pending` lists it. */
export type PendingEnrolment = {
  /** The code the machine shows, as the server spells it (e.g. `WDJB-MJHT`). */
  user_code: string;
  node_id: string;
  hostname: string;
  platform: string;
  /** ISO-8601. */
  requested_at: string;
  /** The address the request came from, when the server knows it. */
  requested_from: string | null;
  /** ISO-8601. */
  expires_at: string;
};

/** `POST …/device/approve` → 200. */
export type Approved = { approved: true; node_id: string };

/** `POST …/device/deny` → 200. */
export type Denied = { denied: true };
