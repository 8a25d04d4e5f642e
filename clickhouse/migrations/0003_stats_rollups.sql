-- Rollups of `visits` for the statistics endpoints (GET /api/v1/stats…): counts per quarter hour, so
-- that a subdomain's totals, time series and top breakdowns read thousands of rows, not millions.
-- Quarter hours: every time zone's offset is a multiple of 15 minutes, so hours and days in any `tz`
-- are whole sums of buckets.
--
-- Each visit is counted once, when the enricher first inserts it (version 0). Later versions of the
-- same visit (a beacon's signals merged in) are not counted again, and a batch redelivered whole is
-- dropped by its deduplication token before it reaches these views. A visit redelivered inside a
-- differently composed batch after a crash would count twice here until nothing: the visit list and
-- exports read `visits` itself, where such rows collapse by visit_id.
--
-- Series scopes: `subdomain` (scope_id = its name) and `link` (scope_id = link id). A user's figures
-- are the sum of their subdomains' rows (owner_id is the first key column).

CREATE TABLE IF NOT EXISTS stats_series (
  owner_id String,
  scope LowCardinality(String),
  scope_id String,
  bucket DateTime('UTC'),
  kind LowCardinality(String),
  visits SimpleAggregateFunction(sum, UInt64),
  visitors AggregateFunction(uniq, String)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(bucket)
ORDER BY (owner_id, scope, scope_id, bucket, kind)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE MATERIALIZED VIEW IF NOT EXISTS stats_series_mv TO stats_series AS
SELECT
  owner_id,
  tupleElement(target, 1) AS scope,
  tupleElement(target, 2) AS scope_id,
  toStartOfFifteenMinutes(ts) AS bucket,
  kind,
  toUInt64(count()) AS visits,
  uniqState(visitor_hash) AS visitors
FROM visits
ARRAY JOIN if(link_id = '', [('subdomain', toString(subdomain))], [('subdomain', toString(subdomain)), ('link', link_id)]) AS target
WHERE version = 0 AND owner_id != ''
GROUP BY owner_id, scope, scope_id, bucket, kind;

-- Top breakdowns of a subdomain's human visits (kind visit or beacon): one row per quarter hour,
-- dimension and value. `city` values are `<country>|<city>` (a city name alone is ambiguous); `link`
-- values are link ids. A link's breakdowns are read from `visits` itself, whose sort key keeps a
-- link's rows together: a second fan-out per visit would cost every insert as much again.
CREATE TABLE IF NOT EXISTS stats_dims (
  owner_id String,
  subdomain LowCardinality(String),
  dim LowCardinality(String),
  bucket DateTime('UTC'),
  value String,
  visits SimpleAggregateFunction(sum, UInt64)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(bucket)
ORDER BY (owner_id, subdomain, dim, bucket, value)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE MATERIALIZED VIEW IF NOT EXISTS stats_dims_mv TO stats_dims AS
SELECT
  owner_id,
  subdomain,
  tupleElement(pair, 1) AS dim,
  toStartOfFifteenMinutes(ts) AS bucket,
  tupleElement(pair, 2) AS value,
  toUInt64(count()) AS visits
FROM visits
ARRAY JOIN [
  ('country', toString(country)),
  ('city', if(city = '', '', concat(toString(country), '|', toString(city)))),
  ('browser', toString(browser)),
  ('os', toString(os)),
  ('device_type', toString(device_type)),
  ('referrer_host', toString(referrer_host)),
  ('utm_source', toString(utm_source)),
  ('link', link_id)
] AS pair
WHERE version = 0 AND owner_id != '' AND kind IN ('visit', 'beacon')
GROUP BY owner_id, subdomain, dim, bucket, value;

-- Daily (UTC) rollups beside the quarter-hour ones, for long ranges: a 30-day report reads 30 rows
-- per value instead of 2 880. Fed by the quarter-hour tables (views on their inserts, the backfill
-- below included), not by `visits`: each insert's few aggregated rows are folded again, nothing
-- more per visit. A report takes whole UTC days from here and the quarter hours at its edges from
-- the quarter-hour tables; a series by hour, or by day in another time zone, reads quarter hours.
CREATE TABLE IF NOT EXISTS stats_series_daily (
  owner_id String,
  scope LowCardinality(String),
  scope_id String,
  day Date,
  kind LowCardinality(String),
  visits SimpleAggregateFunction(sum, UInt64),
  visitors AggregateFunction(uniq, String)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (owner_id, scope, scope_id, day, kind)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE MATERIALIZED VIEW IF NOT EXISTS stats_series_daily_mv TO stats_series_daily AS
SELECT owner_id, scope, scope_id, toDate(bucket) AS day, kind, toUInt64(sum(visits)) AS visits, uniqMergeState(visitors) AS visitors
FROM stats_series
GROUP BY owner_id, scope, scope_id, day, kind;

CREATE TABLE IF NOT EXISTS stats_dims_daily (
  owner_id String,
  subdomain LowCardinality(String),
  dim LowCardinality(String),
  day Date,
  value String,
  visits SimpleAggregateFunction(sum, UInt64)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (owner_id, subdomain, dim, day, value)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE MATERIALIZED VIEW IF NOT EXISTS stats_dims_daily_mv TO stats_dims_daily AS
SELECT owner_id, subdomain, dim, toDate(bucket) AS day, value, toUInt64(sum(visits)) AS visits
FROM stats_dims
GROUP BY owner_id, subdomain, dim, day, value;

-- Visits stored before these views existed (once each: LIMIT 1 BY visit_id), up to the second the views
-- were created; the views count what was inserted since.

INSERT INTO stats_series
SELECT
  owner_id,
  tupleElement(target, 1) AS scope,
  tupleElement(target, 2) AS scope_id,
  toStartOfFifteenMinutes(ts) AS bucket,
  kind,
  toUInt64(count()) AS visits,
  uniqState(visitor_hash) AS visitors
FROM (
  SELECT * FROM visits
  WHERE version = 0 AND inserted_at < (SELECT min(metadata_modification_time) FROM system.tables WHERE database = currentDatabase() AND name IN ('stats_series_mv', 'stats_dims_mv'))
  LIMIT 1 BY visit_id
)
ARRAY JOIN if(link_id = '', [('subdomain', toString(subdomain))], [('subdomain', toString(subdomain)), ('link', link_id)]) AS target
WHERE owner_id != ''
GROUP BY owner_id, scope, scope_id, bucket, kind;

INSERT INTO stats_dims
SELECT
  owner_id,
  subdomain,
  tupleElement(pair, 1) AS dim,
  toStartOfFifteenMinutes(ts) AS bucket,
  tupleElement(pair, 2) AS value,
  toUInt64(count()) AS visits
FROM (
  SELECT * FROM visits
  WHERE version = 0 AND inserted_at < (SELECT min(metadata_modification_time) FROM system.tables WHERE database = currentDatabase() AND name IN ('stats_series_mv', 'stats_dims_mv'))
  LIMIT 1 BY visit_id
)
ARRAY JOIN [
  ('country', toString(country)),
  ('city', if(city = '', '', concat(toString(country), '|', toString(city)))),
  ('browser', toString(browser)),
  ('os', toString(os)),
  ('device_type', toString(device_type)),
  ('referrer_host', toString(referrer_host)),
  ('utm_source', toString(utm_source)),
  ('link', link_id)
] AS pair
WHERE owner_id != '' AND kind IN ('visit', 'beacon')
GROUP BY owner_id, subdomain, dim, bucket, value;
