// A pool's storage against its object's limit (docs/protocol.md §12), pure: the object
// reports its SQLite size, this says how close to the limit that is.

import { OBJECT_STORAGE_LIMIT_BYTES, STORAGE_WARNING_FRACTION } from "../protocol/limits";

/** The storage an operator sees: bytes used, the limit, and a warning past 80% of it. */
export function storageReport(bytes: number) {
  return {
    bytes,
    limit_bytes: OBJECT_STORAGE_LIMIT_BYTES,
    warning: bytes > OBJECT_STORAGE_LIMIT_BYTES * STORAGE_WARNING_FRACTION,
  };
}
