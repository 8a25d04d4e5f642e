-- Custom domains (issue 40 item 1): an owner attaches a domain of their own (`go.example.org`) to one
-- of their subdomains. It is served only once a DNS TXT record proves control of it
-- (`_linktrack-challenge.{domain}` holding `linktrack-verify={token}`); re-verification keeps
-- checking, and a domain whose record stays missing past the grace period is no longer served.
-- A domain belongs to one subdomain (and so to one owner) at a time: its name is the key.
CREATE TABLE custom_domains (
  domain text PRIMARY KEY CHECK (length(domain) BETWEEN 3 AND 253 AND domain = lower(domain)),
  subdomain text NOT NULL REFERENCES subdomains (name) ON DELETE CASCADE,
  token text NOT NULL,
  -- pending: never verified; verified: served; failing: served, its record missing since
  -- failing_since (served until the grace period ends); lapsed: was verified, no longer served.
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'verified', 'failing', 'lapsed')),
  verified_at timestamptz,
  failing_since timestamptz,
  checked_at timestamptz,
  check_error text,
  created_by uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX custom_domains_subdomain_idx ON custom_domains (subdomain);
CREATE INDEX custom_domains_served_idx ON custom_domains (status) WHERE status IN ('verified', 'failing');
