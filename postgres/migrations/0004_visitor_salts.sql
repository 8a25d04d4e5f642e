-- Daily salts of the visitor hash (uniques without storing who visited): a salt lives two days
-- (today's visits and late arrivals from yesterday) and is then deleted, after which no hash of
-- that day can be recomputed from an address.
CREATE TABLE visitor_salts (
  day date PRIMARY KEY,
  salt text NOT NULL CHECK (length(salt) >= 32),
  created_at timestamptz NOT NULL DEFAULT now()
);
