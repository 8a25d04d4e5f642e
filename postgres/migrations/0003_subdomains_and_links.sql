-- Subdomains with their privacy policy, and links. Private by default: every stats_* switch is off.
-- Bounds here repeat the API's (shared/links/policy.ts) so that no writer can store what the API refuses.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE subdomains (
  name text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$'),
  owner_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  title text CHECK (length(title) <= 200),
  stats_public boolean NOT NULL DEFAULT false,
  stats_show_visits_list boolean NOT NULL DEFAULT false,
  stats_show_ip boolean NOT NULL DEFAULT false,
  stats_show_internal_ip boolean NOT NULL DEFAULT false,
  stats_show_geo boolean NOT NULL DEFAULT false,
  stats_show_ua boolean NOT NULL DEFAULT false,
  stats_show_referrer boolean NOT NULL DEFAULT false,
  stats_show_links boolean NOT NULL DEFAULT false,
  stats_show_owner boolean NOT NULL DEFAULT false,
  stats_publish_delay_sec integer NOT NULL DEFAULT 0 CHECK (stats_publish_delay_sec BETWEEN 0 AND 2592000),
  stats_max_items integer NOT NULL DEFAULT 50 CHECK (stats_max_items BETWEEN 1 AND 1000),
  -- Live (not deleted) links of the subdomain, kept by the statement triggers on links below: an
  -- unfiltered list answers its `total` from here instead of counting up to 100 000 rows.
  live_links bigint NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX subdomains_owner_idx ON subdomains (owner_id, name);

CREATE SEQUENCE links_version_seq;

-- `seq` orders lists (newest first) and keys their cursors; `id` is the opaque public identifier.
CREATE TABLE links (
  id text PRIMARY KEY,
  seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  owner_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  subdomain text NOT NULL REFERENCES subdomains (name) ON DELETE CASCADE,
  slug text NOT NULL CHECK (slug ~ '^[a-z0-9][a-z0-9_-]{0,63}$'),
  target_url text NOT NULL CHECK (length(target_url) BETWEEN 1 AND 2048),
  title text CHECK (length(title) <= 200),
  tags text[] NOT NULL DEFAULT '{}',
  expires_at timestamptz,
  max_visits integer CHECK (max_visits > 0),
  redirect_type smallint NOT NULL DEFAULT 302 CHECK (redirect_type IN (301, 302, 307, 308)),
  -- Taken from one sequence by every insert and change, so later changes carry higher versions (a
  -- row's changes are serialised by its lock; a slug is reused only after its delete committed):
  -- redirect caches keep the highest version they saw for a slug.
  version bigint NOT NULL DEFAULT nextval('links_version_seq'),
  client_id text CHECK (length(client_id) BETWEEN 1 AND 128),
  -- SHA-256 of the create body a client_id was first used with: a replay with another body is a conflict.
  client_body_hash text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz
);
-- A slug is unique among the live links of its subdomain; a deleted link's slug can be taken again.
CREATE UNIQUE INDEX links_subdomain_slug_live_key ON links (subdomain, slug) WHERE deleted_at IS NULL;
-- Lists filtered by `since` (created at or after).
CREATE INDEX links_owner_created_live_idx ON links (owner_id, created_at) WHERE deleted_at IS NULL;
-- The owner's list, newest first, and the same within one subdomain: keyset pages walk these.
CREATE INDEX links_owner_seq_live_idx ON links (owner_id, seq DESC) WHERE deleted_at IS NULL;
CREATE INDEX links_subdomain_seq_live_idx ON links (subdomain, seq DESC) WHERE deleted_at IS NULL;
CREATE INDEX links_tags_live_idx ON links USING gin (tags) WHERE deleted_at IS NULL;
-- `q` searches slug, title and target together: a trigram index answers substring matches.
CREATE INDEX links_search_live_idx ON links USING gin ((slug || ' ' || coalesce(title, '') || ' ' || target_url) gin_trgm_ops)
  WHERE deleted_at IS NULL;
CREATE UNIQUE INDEX links_owner_client_id_key ON links (owner_id, client_id) WHERE client_id IS NOT NULL;

-- subdomains.live_links follows every insert, soft delete, undelete and delete of links, one UPDATE
-- per statement and subdomain (transition tables), so bulk writes do not rewrite the row per link.
CREATE FUNCTION links_count_live() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE subdomains s SET live_links = s.live_links + d.n
    FROM (SELECT subdomain, count(*) AS n FROM new_rows WHERE deleted_at IS NULL GROUP BY subdomain) d
    WHERE s.name = d.subdomain;
  ELSIF TG_OP = 'UPDATE' THEN
    UPDATE subdomains s SET live_links = s.live_links + d.n
    FROM (
      SELECT subdomain, sum(n) AS n FROM (
        SELECT subdomain, 1 AS n FROM new_rows WHERE deleted_at IS NULL
        UNION ALL
        SELECT subdomain, -1 AS n FROM old_rows WHERE deleted_at IS NULL
      ) changes GROUP BY subdomain HAVING sum(n) <> 0
    ) d
    WHERE s.name = d.subdomain;
  ELSE
    UPDATE subdomains s SET live_links = s.live_links - d.n
    FROM (SELECT subdomain, count(*) AS n FROM old_rows WHERE deleted_at IS NULL GROUP BY subdomain) d
    WHERE s.name = d.subdomain;
  END IF;
  RETURN NULL;
END;
$$;
CREATE TRIGGER links_count_insert AFTER INSERT ON links REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION links_count_live();
CREATE TRIGGER links_count_update AFTER UPDATE ON links REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION links_count_live();
CREATE TRIGGER links_count_delete AFTER DELETE ON links REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION links_count_live();
