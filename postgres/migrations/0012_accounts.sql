-- Accounts people can run (issue 36): sessions get a public id (the list and DELETE
-- /api/v1/me/sessions/{id} name a session by it, never by the hash of its secret) and a last-seen
-- time; users keep the language they last signed in with (what their e-mails are written in);
-- password resets are single-use links whose secret is stored only as its SHA-256, like sessions'
-- and tokens' (256 random bits: a slow hash would add nothing but a cost per lookup).
ALTER TABLE sessions ADD COLUMN id uuid NOT NULL DEFAULT gen_random_uuid();
ALTER TABLE sessions ADD CONSTRAINT sessions_id_key UNIQUE (id);
ALTER TABLE sessions ADD COLUMN last_seen_at timestamptz;

ALTER TABLE users ADD COLUMN locale text CHECK (locale IN ('en', 'de', 'fr', 'es'));

CREATE TABLE password_resets (
  token_hash text PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  -- The staff account that issued the link (POST /api/v1/users/{id}/password-reset), or null when mailed on request.
  issued_by uuid REFERENCES users (id) ON DELETE SET NULL,
  ip inet,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX password_resets_user_idx ON password_resets (user_id);
