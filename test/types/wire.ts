// Compile-time only (run by `npm run typecheck`, never by vitest): the
// browser scripts' view of the JSON (src/dashboard/wire.d.ts,
// src/enrol/wire.d.ts) against the types inferred from the response schemas
// in src/protocol. The server may send more fields than a script reads, but
// every field a script reads must exist with exactly the server's type, so
// either side drifting fails the build.

import type {
  FleetSummary as PageFleetSummary,
  PlacementReport as PagePlacementReport,
  RunRecord as PageRunRecord,
  Summary,
} from "../../src/dashboard/wire";
import type { Approved, Denied, PendingEnrolment as PagePendingEnrolment } from "../../src/enrol/wire";
import type { DashboardSummary } from "../../src/protocol/dashboard";
import type {
  EnrolmentDecided,
  EnrolmentsDenied,
  FleetSummary,
  PendingEnrolment,
  PlacementReport,
} from "../../src/protocol/responses";
import type { RunRecord } from "../../src/protocol/runs";

/**
 * The server's type `S` seen through the fields the script's type `W`
 * names, recursively; a nullable field by its value, other unions (a node's
 * placement) whole.
 */
type View<S, W> = unknown extends W
  ? S
  : null extends W
    ? null extends S
      ? View<NonNullable<S>, NonNullable<W>> | null
      : S
    : [W] extends [readonly (infer WI)[]]
      ? S extends readonly (infer SI)[]
        ? View<SI, WI>[]
        : S
      : IsUnion<W> extends true
        ? S
        : W extends object
          ? S extends object
            ? { [K in keyof W]: K extends keyof S ? View<S[K], W[K]> : never }
            : S
          : S;
type IsUnion<T, U = T> = T extends unknown ? ([U] extends [T] ? false : true) : never;
/** Mutual assignability: what the script reads is exactly what the server sends. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** The script's type is a view of the server's: the server fits it, and its fields are the server's, exactly. */
type Reads<S, W> = [S] extends [W] ? Same<View<S, W>, W> : false;

const checks: [
  Reads<DashboardSummary, Summary>,
  Reads<PlacementReport, PagePlacementReport>,
  Reads<FleetSummary, PageFleetSummary>,
  Reads<PendingEnrolment, PagePendingEnrolment>,
  Reads<EnrolmentDecided & { approved: true }, Approved>,
  Reads<EnrolmentsDenied, Denied>,
  Reads<RunRecord, PageRunRecord>,
] = [true, true, true, true, true, true, true];
export default checks;
