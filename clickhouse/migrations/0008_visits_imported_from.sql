-- Visits brought in from another shortener's history (issue 39: Shlink visits, YOURLS `yourls_log`)
-- carry the source's name here (`shlink`, `yourls`); a visit this platform answered has ''. They are
-- otherwise ordinary rows of kind visit or bot, so the rollups count them and every report shows
-- them; the visit list and exports show this column, so an imported visit is never taken for a live
-- one. A column rather than a kind of its own: the rollups and breakdowns read kinds visit and
-- beacon as human visits, and an imported visit is one.
ALTER TABLE visits ADD COLUMN IF NOT EXISTS imported_from LowCardinality(String) DEFAULT '';
