/**
 * Facts of the statistics rollups (clickhouse/migrations/0003_stats_rollups.sql, rebuilt by
 * 0005_stats_dims_refill.sql) that code reading them relies on. Migrations are immutable history,
 * so these are written here once and rollups.test.ts holds them equal to what the migrations do.
 */

/** Rollup buckets are quarter hours (every time zone's offset is a multiple of 15 minutes). */
export const BUCKET_SEC = 900;

/** The breakdowns, in the order a report lists them. `link` exists for subdomains and users. */
export const DIMENSIONS = ['country', 'city', 'browser', 'os', 'device_type', 'referrer_host', 'utm_source', 'link'] as const;
export type Dimension = (typeof DIMENSIONS)[number];
