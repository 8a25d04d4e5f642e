-- The dimension rollups (0003's `stats_dims` and `stats_dims_daily`) are rebuilt and refilled from
-- `visits`. 0003 refilled them from the visits inserted before its views' metadata_modification_time,
-- which chDB's default database reports as 1970: on an embedded install the refill selected nothing,
-- and the top breakdowns missed every visit stored before 0003. 0004 rebuilt the series tables the
-- same way; this does it for the dimensions, on any install, whatever 0003 did there.
--
-- A rerun after a failure starts over from the drops. The views exist before the refill, which
-- counts the visits inserted before the moment recorded right after them: a visit inserted in the
-- few milliseconds between the view's creation and that record counts twice, and an insert into
-- `visits` that began before the view existed and ends after the refill read the table is counted
-- by neither (0004 has the same windows). Migrations run at start-up, before the enricher of the
-- process inserts; on a cluster with enrichers running elsewhere, pause them for the migration to
-- be exact.

DROP VIEW IF EXISTS stats_dims_daily_mv;
DROP VIEW IF EXISTS stats_dims_mv;
DROP TABLE IF EXISTS stats_dims_daily;
DROP TABLE IF EXISTS stats_dims;
DROP TABLE IF EXISTS stats_dims_refill_before;

CREATE TABLE stats_dims (
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

CREATE TABLE stats_dims_daily (
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

CREATE MATERIALIZED VIEW stats_dims_daily_mv TO stats_dims_daily AS
SELECT owner_id, subdomain, dim, toDate(bucket) AS day, value, toUInt64(sum(visits)) AS visits
FROM stats_dims
GROUP BY owner_id, subdomain, dim, day, value;

CREATE MATERIALIZED VIEW stats_dims_mv TO stats_dims AS
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

-- The moment the view counts from.
CREATE TABLE stats_dims_refill_before ENGINE = Memory AS SELECT now64(3, 'UTC') AS at;

-- Visits stored before the view, once each (LIMIT 1 BY visit_id), whatever their version: a newer
-- version (a beacon's signals merged in) keeps every dimension counted here and replaces version 0
-- in `visits` once their parts merge, so `version = 0` would miss those visits. The daily view folds
-- the rows into days.
INSERT INTO stats_dims
SELECT
  owner_id,
  subdomain,
  tupleElement(pair, 1) AS dim,
  toStartOfFifteenMinutes(ts) AS bucket,
  tupleElement(pair, 2) AS value,
  toUInt64(count()) AS visits
FROM (
  SELECT owner_id, subdomain, link_id, ts, kind, country, city, browser, os, device_type, referrer_host, utm_source FROM visits
  WHERE inserted_at < (SELECT at FROM stats_dims_refill_before)
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

DROP TABLE stats_dims_refill_before;
