-- Webhooks: an owner's subscriptions to platform events, the log of every delivery attempt, and
-- the notifications the dashboard shows (a webhook disabled after failing deliveries).

CREATE TABLE webhooks (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  -- Orders lists (newest first) and keys their cursors.
  seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  owner_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  url text NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
  events text[] NOT NULL CHECK (cardinality(events) BETWEEN 1 AND 8),
  -- Only events of this subdomain; NULL: every subdomain of the owner (and events of none, such as webhook.test).
  subdomain text REFERENCES subdomains (name) ON DELETE CASCADE,
  description text CHECK (length(description) <= 500),
  -- The signing key. Kept as is: every delivery attempt signs with it.
  secret text NOT NULL CHECK (length(secret) >= 32),
  enabled boolean NOT NULL DEFAULT true,
  disabled_at timestamptz,
  disabled_reason text CHECK (length(disabled_reason) <= 500),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK (enabled = (disabled_at IS NULL))
);
CREATE INDEX webhooks_owner_seq_idx ON webhooks (owner_id, seq DESC);

-- One row per attempt. `delivery_id` is the same for every attempt of one event to one webhook.
CREATE TABLE webhook_deliveries (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  webhook_id uuid NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  delivery_id uuid NOT NULL,
  event_id uuid NOT NULL,
  event text NOT NULL,
  attempt smallint NOT NULL CHECK (attempt BETWEEN 1 AND 10),
  attempted_at timestamptz NOT NULL,
  status_code smallint,
  latency_ms integer NOT NULL CHECK (latency_ms >= 0),
  success boolean NOT NULL,
  error text CHECK (length(error) <= 1000),
  response_excerpt text CHECK (length(response_excerpt) <= 1024)
);
CREATE INDEX webhook_deliveries_webhook_seq_idx ON webhook_deliveries (webhook_id, seq DESC);

CREATE TABLE notifications (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  kind text NOT NULL,
  title text NOT NULL CHECK (length(title) <= 200),
  body text NOT NULL CHECK (length(body) <= 4000),
  data jsonb NOT NULL DEFAULT '{}',
  emailed_at timestamptz,
  read_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX notifications_user_seq_idx ON notifications (user_id, seq DESC);
