-- Issue 40, protected links. fallback_url: where an expired link, or one at its visit limit, sends
-- its visitors instead of answering 410 (NULL: the 410 stays).
ALTER TABLE links ADD COLUMN fallback_url text;
