-- Issue 41: the owner and link ids of a visit as LowCardinality strings. As plain strings they were
-- 33 and 37 bytes a row once decompressed (334 and 316 MiB over 10 M visits), read by every
-- report of a subdomain (the owner condition) and every breakdown by link; a subdomain's rows hold
-- one owner and its links, so a dictionary per part makes each a small integer a row. Measured on
-- 10 M visits (docs/benchmarks.md): a report with two filters read in 158/173 ms (p50/p95) instead
-- of 238/258. The rewrite of both columns took 1.1 s there; on a large table it is a mutation that
-- runs part by part (reads meanwhile see either type as a String). The sort key and the owner's
-- bloom filter index keep working on the new type.
ALTER TABLE visits MODIFY COLUMN owner_id LowCardinality(String), MODIFY COLUMN link_id LowCardinality(String);
