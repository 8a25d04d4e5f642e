-- Each row of `visits` keeps the deduplication token of the insert that stored it (the enricher's
-- batch token: the hash of its visit ids), filled by ClickHouse from the insert's own setting, so
-- the enricher sends nothing more per row.
--
-- Why: an insert into `visits` commits the table's part first and then each view's part (the
-- rollups, then their daily rollups). A crash in between (chDB dies with the enricher's process),
-- or a view's write failing, leaves visits stored that a rollup never counted; the batch is
-- redelivered, and its visits already stored are left out of the insert (they would count twice),
-- so the rollup would never count them. Knowing each stored visit's token, the enricher inserts
-- those blocks again as they were, with the same token: `visits` and every view that has the block
-- drop it, a view that missed it takes it (deduplicate_blocks_in_dependent_materialized_views).
--
-- The deduplication windows grow from 1000 to 10 000 blocks: a block inserted again is dropped only
-- while its id is in the window, and on a busy cluster 1000 inserts pass within seconds.
ALTER TABLE visits ADD COLUMN IF NOT EXISTS insert_token String DEFAULT getSetting('insert_deduplication_token');

ALTER TABLE visits ADD INDEX IF NOT EXISTS insert_token_bf insert_token TYPE bloom_filter(0.01) GRANULARITY 1;

ALTER TABLE visits MODIFY SETTING non_replicated_deduplication_window = 10000;

ALTER TABLE stats_series MODIFY SETTING non_replicated_deduplication_window = 10000;

ALTER TABLE stats_series_daily MODIFY SETTING non_replicated_deduplication_window = 10000;

ALTER TABLE stats_dims MODIFY SETTING non_replicated_deduplication_window = 10000;

ALTER TABLE stats_dims_daily MODIFY SETTING non_replicated_deduplication_window = 10000;
