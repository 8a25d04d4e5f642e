-- Issue 40, protected links. fallback_url: where an expired link, or one at its visit limit, sends
-- its visitors instead of answering 410 (NULL: the 410 stays).
ALTER TABLE links ADD COLUMN fallback_url text;
-- password_hash: the scrypt hash (shared/password.ts, `scrypt$N$r$p$salt$hash`) of the password the
-- edge asks before redirecting; NULL: no password. The password itself is never stored.
ALTER TABLE links ADD COLUMN password_hash text;
