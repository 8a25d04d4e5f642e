-- Retention of raw visits per subdomain (issue 38): the days its owner keeps the rows of ClickHouse
-- `visits` (NULL: as long as VISITS_RETENTION_DAYS_MAX allows, forever when that is 0). The worker's
-- retention job deletes older rows; the rollups keep counting them.
ALTER TABLE subdomains ADD COLUMN visits_retention_days integer CHECK (visits_retention_days > 0);
