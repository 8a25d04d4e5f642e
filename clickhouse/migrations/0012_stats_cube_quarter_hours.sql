-- Issue 41: the quarter hours of the cube (0011), for the partial days at the ends of a filtered
-- report's range. 0011 left those to `visits`, whose rows are sorted by link and then time: a slice
-- of a day touches a granule (8 192 rows) of every link of the subdomain at each end, and over 10 M
-- visits that read cost more than the cube's 30 whole days together (docs/benchmarks.md). Here the
-- rows are sorted by owner, subdomain and quarter hour, so the ends of a range are two contiguous
-- reads. A busy quarter hour has about one row per visit; the table keeps 100 days (TTL), enough
-- for the public page's longest period (90 days) and its edges. A report whose ends are older reads
-- them from `visits`, as before.
--
-- Each visit is counted once, when first inserted (version 0), as in 0011; retention and erasures
-- leave it counted. A rerun after a failure starts over from the drops; the refill has 0011's windows.

DROP VIEW IF EXISTS stats_cube_mv;
DROP TABLE IF EXISTS stats_cube;
DROP TABLE IF EXISTS stats_cube_refill_before;

CREATE TABLE stats_cube (
  owner_id LowCardinality(String),
  subdomain LowCardinality(String),
  bucket DateTime('UTC'),
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
PARTITION BY toYYYYMM(bucket)
ORDER BY (owner_id, subdomain, bucket, kind, country, browser, os, device_type, referrer_host, utm_source, utm_medium, utm_campaign, city, link_id, is_bot)
TTL bucket + INTERVAL 100 DAY
SETTINGS non_replicated_deduplication_window = 1000;

CREATE MATERIALIZED VIEW stats_cube_mv TO stats_cube AS
SELECT
  owner_id, subdomain, toStartOfFifteenMinutes(ts) AS bucket, kind, country, browser, os, device_type, referrer_host,
  utm_source, utm_medium, utm_campaign, city, link_id, is_bot,
  toUInt64(count()) AS visits,
  uniqCombinedState(12)(visitor_hash) AS visitors
FROM visits
WHERE version = 0 AND owner_id != ''
GROUP BY owner_id, subdomain, bucket, kind, country, browser, os, device_type, referrer_host, utm_source, utm_medium, utm_campaign, city, link_id, is_bot;

CREATE TABLE stats_cube_refill_before ENGINE = Memory AS SELECT now64(3, 'UTC') AS at;

-- The last 100 days of the visits stored before the view, once each (0011 says why any version, and why FINAL).
INSERT INTO stats_cube
SELECT
  owner_id, subdomain, toStartOfFifteenMinutes(ts) AS bucket, kind, country, browser, os, device_type, referrer_host,
  utm_source, utm_medium, utm_campaign, city, link_id, is_bot,
  toUInt64(count()) AS visits,
  uniqCombinedState(12)(visitor_hash) AS visitors
FROM (
  SELECT owner_id, subdomain, ts, kind, country, browser, os, device_type, referrer_host, utm_source, utm_medium, utm_campaign, city, link_id, is_bot, visitor_hash
  FROM visits FINAL
  WHERE inserted_at < (SELECT at FROM stats_cube_refill_before) AND ts >= now() - INTERVAL 100 DAY
)
WHERE owner_id != ''
GROUP BY owner_id, subdomain, bucket, kind, country, browser, os, device_type, referrer_host, utm_source, utm_medium, utm_campaign, city, link_id, is_bot
SETTINGS max_bytes_before_external_group_by = 268435456;

DROP TABLE stats_cube_refill_before;
