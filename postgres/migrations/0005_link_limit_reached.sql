-- Set by the enricher when a link's visits reach max_visits (one enricher wins: WHERE ... IS NULL);
-- the link then stops redirecting on every node. Changing max_visits clears it.
ALTER TABLE links ADD COLUMN limit_reached_at timestamptz;
