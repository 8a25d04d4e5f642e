-- Issue 41: a daily cube of visits for filtered reports. The other rollups keep each dimension
-- apart (0003), so a report with filters (country=DE&browser=Firefox) read the raw `visits`: a busy
-- subdomain's 30 days are millions of rows, 141/157 ms p50/p95 over 10 M visits. This table keeps
-- one row per owner, subdomain, UTC day and combination of the values a report filters or breaks
-- down by, with its visits and visitor sketch; a filtered report reads its whole UTC days here and
-- only the partial days at the range's edges from `visits`. A day holds as many rows as it has
-- distinct combinations: about 24 000 for the benchmark's 200 000 visits a day; a small subdomain
-- has at most one row per visit.
--
-- Each visit is counted once, when first inserted (version 0), as in the other rollups; visits that
-- retention or an erasure later delete stay counted here, as they do there. The visitor sketch is
-- the series rollups' `uniqCombined(12)` (0004), so a filtered report's estimates agree with theirs.
-- `city` is the name alone (the report pairs it with `country`); `is_bot` is kept beside `kind`
-- because the filter names it.
--
-- A rerun after a failure starts over from the drops. The view exists before the refill, which
-- counts the visits inserted before the moment recorded right after it (0005 has the same windows:
-- a visit inserted in the milliseconds between the two counts twice). Migrations run at start-up,
-- before the enricher of the process inserts; on a cluster with enrichers running elsewhere, pause
-- them for the migration to be exact.

DROP VIEW IF EXISTS stats_cube_daily_mv;
DROP TABLE IF EXISTS stats_cube_daily;
DROP TABLE IF EXISTS stats_cube_refill_before;

CREATE TABLE stats_cube_daily (
  owner_id LowCardinality(String),
  subdomain LowCardinality(String),
  day Date,
  kind LowCardinality(String),
  country LowCardinality(String),
  browser LowCardinality(String),
  os LowCardinality(String),
  device_type LowCardinality(String),
  referrer_host LowCardinality(String),
  utm_source LowCardinality(String),
  utm_medium LowCardinality(String),
  utm_campaign String,
  city LowCardinality(String),
  link_id LowCardinality(String),
  is_bot UInt8,
  visits SimpleAggregateFunction(sum, UInt64),
  visitors AggregateFunction(uniqCombined(12), String)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (owner_id, subdomain, day, kind, country, browser, os, device_type, referrer_host, utm_source, utm_medium, utm_campaign, city, link_id, is_bot)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE MATERIALIZED VIEW stats_cube_daily_mv TO stats_cube_daily AS
SELECT
  owner_id, subdomain, toDate(ts) AS day, kind, country, browser, os, device_type, referrer_host,
  utm_source, utm_medium, utm_campaign, city, link_id, is_bot,
  toUInt64(count()) AS visits,
  uniqCombinedState(12)(visitor_hash) AS visitors
FROM visits
WHERE version = 0 AND owner_id != ''
GROUP BY owner_id, subdomain, day, kind, country, browser, os, device_type, referrer_host, utm_source, utm_medium, utm_campaign, city, link_id, is_bot;

-- The moment the view counts from.
CREATE TABLE stats_cube_refill_before ENGINE = Memory AS SELECT now64(3, 'UTC') AS at;

-- Visits stored before the view, once each, whatever their version: a newer version (a beacon's
-- signals merged in) keeps the values counted here and replaces version 0 once their parts merge, so
-- `version = 0` would miss those visits. FINAL keeps one row per visit (every column of the sort key
-- is the visit's own) by merging the parts' sorted rows as it reads, in little memory; 0005's
-- LIMIT 1 BY visit_id held every id in memory (1.9 GB more resident for 10 M visits). Groups past
-- 256 MiB spill to disk. A visit whose newest version was stored after the moment above is left to
-- nobody: none is, as nothing inserts while migrations run (see above).
INSERT INTO stats_cube_daily
SELECT
  owner_id, subdomain, toDate(ts) AS day, kind, country, browser, os, device_type, referrer_host,
  utm_source, utm_medium, utm_campaign, city, link_id, is_bot,
  toUInt64(count()) AS visits,
  uniqCombinedState(12)(visitor_hash) AS visitors
FROM (
  SELECT owner_id, subdomain, ts, kind, country, browser, os, device_type, referrer_host, utm_source, utm_medium, utm_campaign, city, link_id, is_bot, visitor_hash
  FROM visits FINAL
  WHERE inserted_at < (SELECT at FROM stats_cube_refill_before)
)
WHERE owner_id != ''
GROUP BY owner_id, subdomain, day, kind, country, browser, os, device_type, referrer_host, utm_source, utm_medium, utm_campaign, city, link_id, is_bot
SETTINGS max_bytes_before_external_group_by = 268435456;

DROP TABLE stats_cube_refill_before;
