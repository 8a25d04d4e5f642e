-- The browser beacon. `append_visit_id`: the redirect adds `lt_visit=<visit id>` to the target URL,
-- so the beacon on the target page attaches its signals to that visit.
ALTER TABLE links ADD COLUMN append_visit_id boolean NOT NULL DEFAULT false;

-- Keys the platform generates once and every node reads at start (the consent-token key when
-- TRACKER_SECRET is not set), so that nodes sharing the database agree without configuration.
CREATE TABLE platform_secrets (
  name text PRIMARY KEY,
  value text NOT NULL CHECK (length(value) >= 32),
  created_at timestamptz NOT NULL DEFAULT now()
);
