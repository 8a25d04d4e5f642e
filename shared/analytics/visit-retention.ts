const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

/**
 * The days a subdomain keeps its raw visits: its own `visits_retention_days`, at most the operator's
 * `VISITS_RETENTION_DAYS_MAX` (which may have been lowered since it was set); without one, that
 * maximum. Null: kept forever (neither is set; a maximum of 0 is none).
 */
export function retentionDaysOf(own: number | null, max: number): number | null {
  if (max === 0) return own;
  return own === null ? max : Math.min(own, max);
}

/**
 * The moment before which raw visits of a subdomain keeping them `days` days may be gone (null: kept
 * forever): `days` before the start of the hour. The retention job cuts at the same moment, so every
 * visit from it on is kept, and two answers within the hour agree.
 */
export function rawVisitsSince(days: number | null, now: number = Date.now()): Date | null {
  return days === null ? null : new Date(Math.floor(now / HOUR_MS) * HOUR_MS - days * DAY_MS);
}

/**
 * Of several subdomains' cutoffs, the one from which all of them still have every raw visit: the
 * latest (null when none of them drops any).
 */
export function latestCutoff(cutoffs: readonly (Date | null)[]): Date | null {
  let latest: Date | null = null;
  for (const cutoff of cutoffs) if (cutoff && (!latest || cutoff > latest)) latest = cutoff;
  return latest;
}
