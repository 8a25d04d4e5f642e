-- Server-side sessions (the cookie holds a random secret; only its SHA-256 is stored) and API
-- tokens (only the SHA-256 of the token and its display prefix are stored).
CREATE TABLE sessions (
  id_hash text PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  ip inet,
  user_agent text,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz
);
CREATE INDEX sessions_user_idx ON sessions (user_id);

CREATE TABLE api_tokens (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
  prefix text NOT NULL UNIQUE,
  token_hash text NOT NULL UNIQUE,
  scopes text[] NOT NULL,
  ip_allowlist text[] NOT NULL DEFAULT '{}',
  expires_at timestamptz,
  revoked_at timestamptz,
  last_used_at timestamptz,
  last_used_ip inet,
  created_via text NOT NULL CHECK (created_via IN ('session', 'token')),
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_tokens_user_created_idx ON api_tokens (user_id, created_at DESC);
