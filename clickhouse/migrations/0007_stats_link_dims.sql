-- The top breakdowns of a link's human visits whose raw rows were deleted (retention, erasure):
-- a link's breakdowns are otherwise read from `visits` itself (0003), so the job that deletes raw
-- visits first folds the rows it deletes in here, by quarter hour, and a link's report reads both.
-- Nothing feeds it on insert: the redirect path pays nothing for it. `city` values are
-- `<country>|<city>`, as in `stats_dims`.
CREATE TABLE IF NOT EXISTS stats_link_dims (
  owner_id String,
  subdomain LowCardinality(String),
  link_id String,
  dim LowCardinality(String),
  bucket DateTime('UTC'),
  value String,
  visits SimpleAggregateFunction(sum, UInt64)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(bucket)
ORDER BY (owner_id, subdomain, link_id, dim, bucket, value)
SETTINGS non_replicated_deduplication_window = 1000;
