-- The latest beacon state of each visit (consent decision and, with consent, the signals), kept to
-- merge into the visit's row whichever arrives first: the beacon consumer merges after writing
-- here, the visit enricher after inserting a visit that expects a beacon. A week is ample for that.
CREATE TABLE IF NOT EXISTS visit_beacons (
  visit_id UUID,
  received_at DateTime64(3, 'UTC'),
  consent_analytics UInt8,
  consent_lan_ip UInt8,
  ip_lan String DEFAULT '',
  timezone String DEFAULT '',
  screen String DEFAULT '',
  network String DEFAULT '',
  capabilities String DEFAULT '',
  collected UInt8 DEFAULT 0,
  version UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY visit_id
TTL toDateTime(received_at) + INTERVAL 7 DAY
SETTINGS non_replicated_deduplication_window = 1000;
