-- Two-factor sign-in by TOTP (RFC 6238, issue 36). The shared secret must be read back to check a
-- code, so it is stored sealed with the platform's secrets key (AES-256-GCM, as webhook secrets;
-- bound to its user); recovery codes are only ever compared, so only their SHA-256 is kept (80
-- random bits each, salted with the user id). `last_step` is the last time-step a code was accepted
-- for: a code is never accepted twice, nor one of an earlier step.
CREATE TABLE user_totp (
  user_id uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
  secret text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  -- Null while the enrolment waits for its first code (POST /api/v1/me/totp/confirm).
  enabled_at timestamptz,
  last_step bigint
);

CREATE TABLE totp_recovery_codes (
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  code_hash text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  used_at timestamptz,
  PRIMARY KEY (user_id, code_hash)
);

-- The second step of a sign-in: a password was right for an account with TOTP. Single-use, short
-- lived, its secret stored as its SHA-256 only (256 random bits, as sessions').
CREATE TABLE login_challenges (
  id_hash text PRIMARY KEY,
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX login_challenges_user_idx ON login_challenges (user_id);

-- Platform-wide settings staff change through the API (GET/PATCH /api/v1/settings/security).
CREATE TABLE platform_settings (
  name text PRIMARY KEY,
  value jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  updated_by uuid REFERENCES users (id) ON DELETE SET NULL
);
