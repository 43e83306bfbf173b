// What the alarm keeps in memory between its runs (src/pool/alarm/housekeeping.ts):
// a cache of the alarm last set and two backoffs. Not state: an evicted
// object rebuilds the cache from SQL and only retries sooner.

export class AlarmClock {
  // The alarm time last set, rebuilt from SQL after eviction (undefined =
  // unknown). Only saves redundant setAlarm calls.
  armedAt: number | null | undefined;
  // The earliest lease deadline when it was set: over several shards the tick is usually the
  // alarm, and a moved deadline still sets it again, as at one shard (a lost alarm comes back).
  armedDeadline: number | null | undefined;
  // After a failed archive write, no archiving before this (a backoff, not
  // state: losing it only retries sooner).
  archiveRetryAt = 0;
  // The walk of the passports: the rowid the next page starts after, and no
  // page before forgetAt (losing both only starts the walk over sooner).
  forgetAfter = 0;
  forgetAt = 0;
}
