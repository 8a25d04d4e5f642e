-- User administration by staff (issue 36): an account can be disabled. While disabled_at is set,
-- its sessions and API tokens are refused (checked on the user row that authentication already
-- reads), it cannot sign in, and no reset link can be issued or used for it; its links keep
-- redirecting. Re-enabling clears it.
ALTER TABLE users ADD COLUMN disabled_at timestamptz;
