-- Unique visitors in the series rollups (0003) become fixed-size sketches. A `uniq` state holds up
-- to 65 536 hashes, so a subdomain's busy day weighed 256 KiB and a 30-day report spent most of its
-- time merging them; `uniqCombined(12)` counts up to 256 distinct hashes exactly, then estimates
-- with a HyperLogLog of 4 096 cells (standard error about 1.6 %) in at most 3 KiB. States of one
-- function cannot be converted into the other's, so the two series tables and their views are
-- rebuilt and refilled from `visits`; the dimension rollups keep their plain counts.
--
-- index_granularity 256: a read decodes every state of the granules it touches, and a report needs
-- a few hundred rows of a table sorted by owner and scope; 8 192 states decoded for them cost more
-- than the merge itself.
--
-- A rerun after a failure starts over from the drops. The views exist before the refill, which
-- counts the visits inserted before the moment recorded right after them: a visit inserted in the
-- few milliseconds between the view's creation and that record counts twice.

DROP VIEW IF EXISTS stats_series_daily_mv;
DROP VIEW IF EXISTS stats_series_mv;
DROP TABLE IF EXISTS stats_series_daily;
DROP TABLE IF EXISTS stats_series;
DROP TABLE IF EXISTS stats_series_refill_before;

CREATE TABLE stats_series (
  owner_id String,
  scope LowCardinality(String),
  scope_id String,
  bucket DateTime('UTC'),
  kind LowCardinality(String),
  visits SimpleAggregateFunction(sum, UInt64),
  visitors AggregateFunction(uniqCombined(12), String)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(bucket)
ORDER BY (owner_id, scope, scope_id, bucket, kind)
SETTINGS index_granularity = 256, non_replicated_deduplication_window = 1000;

CREATE TABLE stats_series_daily (
  owner_id String,
  scope LowCardinality(String),
  scope_id String,
  day Date,
  kind LowCardinality(String),
  visits SimpleAggregateFunction(sum, UInt64),
  visitors AggregateFunction(uniqCombined(12), String)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (owner_id, scope, scope_id, day, kind)
SETTINGS index_granularity = 256, non_replicated_deduplication_window = 1000;

CREATE MATERIALIZED VIEW stats_series_daily_mv TO stats_series_daily AS
SELECT owner_id, scope, scope_id, toDate(bucket) AS day, kind, toUInt64(sum(visits)) AS visits, uniqCombinedMergeState(12)(visitors) AS visitors
FROM stats_series
GROUP BY owner_id, scope, scope_id, day, kind;

CREATE MATERIALIZED VIEW stats_series_mv TO stats_series AS
SELECT
  owner_id,
  tupleElement(target, 1) AS scope,
  tupleElement(target, 2) AS scope_id,
  toStartOfFifteenMinutes(ts) AS bucket,
  kind,
  toUInt64(count()) AS visits,
  uniqCombinedState(12)(visitor_hash) AS visitors
FROM visits
ARRAY JOIN if(link_id = '', [('subdomain', toString(subdomain))], [('subdomain', toString(subdomain)), ('link', link_id)]) AS target
WHERE version = 0 AND owner_id != ''
GROUP BY owner_id, scope, scope_id, bucket, kind;

-- The moment the view counts from. (0003 took it from system.tables' metadata_modification_time,
-- which chDB's default database reports as 1970: the refill would select nothing there.)
CREATE TABLE stats_series_refill_before ENGINE = Memory AS SELECT now64(3, 'UTC') AS at;

-- Visits stored before the view, once each (LIMIT 1 BY visit_id), whatever their version: a newer
-- version (a beacon's signals merged in) keeps every column counted here and replaces version 0 in
-- `visits` once their parts merge, so `version = 0` would miss those visits. The daily view folds
-- the rows into days.
INSERT INTO stats_series
SELECT
  owner_id,
  tupleElement(target, 1) AS scope,
  tupleElement(target, 2) AS scope_id,
  toStartOfFifteenMinutes(ts) AS bucket,
  kind,
  toUInt64(count()) AS visits,
  uniqCombinedState(12)(visitor_hash) AS visitors
FROM (
  SELECT owner_id, subdomain, link_id, ts, kind, visitor_hash FROM visits
  WHERE inserted_at < (SELECT at FROM stats_series_refill_before)
  LIMIT 1 BY visit_id
)
ARRAY JOIN if(link_id = '', [('subdomain', toString(subdomain))], [('subdomain', toString(subdomain)), ('link', link_id)]) AS target
WHERE owner_id != ''
GROUP BY owner_id, scope, scope_id, bucket, kind;

DROP TABLE stats_series_refill_before;
