// Who is calling (SPEC §9). Filled in by the auth layer; until then every
// caller is the open-mode caller: unscoped, acting as whichever node the
// request body names.

import type { Writer } from "../pool/artifacts";
import type { AppContext } from "./context";

/** The writer to authorize an artifact or checkpoint write as (null = unscoped). */
export function writerOf(_c: AppContext): { ok: true; writer: Writer } | { ok: false; response: Response } {
  return { ok: true, writer: null };
}
