-- Issue 40 items 2, 3, 7: a link's redirect rules (ordered {condition, target_url}, first match
-- wins), its A/B split (2–5 weighted targets) and whether the short URL's query is forwarded to the
-- target. JSON checked by the API's schemas on write; the edge reads them with the link's redirect
-- columns (the cache and the link-change notices carry them), so no redirect reads them apart.
ALTER TABLE links ADD COLUMN rules jsonb;
ALTER TABLE links ADD COLUMN variants jsonb;
ALTER TABLE links ADD COLUMN forward_query boolean NOT NULL DEFAULT false;
