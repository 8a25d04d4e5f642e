-- Issue 40 item 8: a subdomain's QR-code logo. An upload (PNG or JPEG) is checked and normalised
-- by the API (a PNG of at most 256 px a side) before it is stored; `digest` names the version, so
-- that a QR image cached with an older logo is never answered for the new one.
CREATE TABLE subdomain_qr_logos (
  subdomain text PRIMARY KEY REFERENCES subdomains (name) ON DELETE CASCADE,
  png bytea NOT NULL CHECK (octet_length(png) BETWEEN 1 AND 1048576),
  width integer NOT NULL CHECK (width BETWEEN 1 AND 256),
  height integer NOT NULL CHECK (height BETWEEN 1 AND 256),
  digest text NOT NULL,
  updated_by uuid REFERENCES users (id) ON DELETE SET NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
