-- The site origins a subdomain's tracker may run on (issue 34): canonical origins as browsers send
-- them in Origin (https://example.org). Empty: any site, as before. The ingest edge holds the
-- subdomains that list some in memory (warmed from the partial index), kept fresh by notices.
ALTER TABLE subdomains ADD COLUMN tracker_origins text[] NOT NULL DEFAULT '{}'
  CHECK (cardinality(tracker_origins) <= 50);
CREATE INDEX subdomains_tracker_origins_idx ON subdomains (name) WHERE cardinality(tracker_origins) > 0;
