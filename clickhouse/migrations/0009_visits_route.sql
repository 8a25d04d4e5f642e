-- Issue 40 items 2 and 3: which redirect rule sent the visit on (its index in the link's rules) and
-- which A/B variant it got (its index in the link's variants); -1 when none did (the link's own
-- target). The owner's statistics break visits and unique visitors down by them.
ALTER TABLE visits ADD COLUMN IF NOT EXISTS matched_rule Int8 DEFAULT -1;
ALTER TABLE visits ADD COLUMN IF NOT EXISTS variant Int8 DEFAULT -1;
