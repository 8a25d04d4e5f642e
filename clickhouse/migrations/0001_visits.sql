-- One row per visit (redirect, beacon-only visit, bot hit or attack attempt), written by the enricher.
-- Partitioned by month; the sort key serves per-subdomain and per-link reads in time order.
-- ReplacingMergeTree(version) removes duplicates of one visit_id (at-least-once delivery): every
-- column of the key is fixed at the edge, so a replayed or re-enriched row collapses into one,
-- the highest `version` winning (a beacon's signals arrive as a newer version of the same visit).
CREATE TABLE IF NOT EXISTS visits (
  visit_id UUID,
  ts DateTime64(3, 'UTC'),
  kind LowCardinality(String),
  owner_id String,
  subdomain LowCardinality(String),
  link_id String,
  slug String,
  ip_public String,
  ip_lan String DEFAULT '',
  country LowCardinality(String) DEFAULT '',
  region LowCardinality(String) DEFAULT '',
  city LowCardinality(String) DEFAULT '',
  latitude Nullable(Float32),
  longitude Nullable(Float32),
  asn UInt32 DEFAULT 0,
  user_agent String DEFAULT '',
  browser LowCardinality(String) DEFAULT '',
  browser_version LowCardinality(String) DEFAULT '',
  os LowCardinality(String) DEFAULT '',
  os_version LowCardinality(String) DEFAULT '',
  device_type LowCardinality(String) DEFAULT '',
  is_bot UInt8 DEFAULT 0,
  bot_name LowCardinality(String) DEFAULT '',
  is_attack UInt8 DEFAULT 0,
  attack_type LowCardinality(String) DEFAULT '',
  referrer String DEFAULT '',
  referrer_host LowCardinality(String) DEFAULT '',
  accept_language LowCardinality(String) DEFAULT '',
  query String DEFAULT '',
  utm_source LowCardinality(String) DEFAULT '',
  utm_medium LowCardinality(String) DEFAULT '',
  utm_campaign String DEFAULT '',
  utm_term String DEFAULT '',
  utm_content String DEFAULT '',
  visitor_hash String DEFAULT '',
  is_unique UInt8 DEFAULT 0,
  consent_analytics UInt8 DEFAULT 0,
  consent_lan_ip UInt8 DEFAULT 0,
  timezone LowCardinality(String) DEFAULT '',
  screen LowCardinality(String) DEFAULT '',
  network String DEFAULT '',
  capabilities String DEFAULT '',
  beacon_at Nullable(DateTime64(3, 'UTC')),
  version UInt64 DEFAULT 0,
  inserted_at DateTime64(3, 'UTC') DEFAULT now64(3),
  INDEX visit_id_bf visit_id TYPE bloom_filter(0.001) GRANULARITY 4,
  INDEX owner_bf owner_id TYPE bloom_filter(0.01) GRANULARITY 4,
  INDEX country_set country TYPE set(512) GRANULARITY 4
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(ts)
ORDER BY (subdomain, link_id, ts, visit_id)
SETTINGS index_granularity = 8192, non_replicated_deduplication_window = 1000;
