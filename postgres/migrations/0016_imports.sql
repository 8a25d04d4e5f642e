-- Imports of other shorteners' exports (issue 39) run as jobs: the file as uploaded, the import's
-- state and progress, and its per-row report. A job that is interrupted runs again from its last
-- checkpoint (`rows_read`): the rows of the report up to there are stored, the links are idempotent.
CREATE TABLE imports (
  id text PRIMARY KEY CHECK (id ~ '^imp_[A-Za-z0-9_-]{16}$'),
  -- Orders an owner's list, newest first.
  seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  owner_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  subdomain text NOT NULL REFERENCES subdomains (name) ON DELETE CASCADE,
  source text NOT NULL CHECK (length(source) BETWEEN 1 AND 32),
  dry_run boolean NOT NULL,
  status text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
  -- Why a failed import failed: {"code": <the error catalogue's>, "details": {…}}.
  error jsonb,
  -- The uploaded file; removed once the import has finished.
  file text,
  file_bytes integer NOT NULL CHECK (file_bytes >= 0),
  rows_total integer CHECK (rows_total >= 0),
  rows_read integer NOT NULL DEFAULT 0 CHECK (rows_read >= 0),
  -- Rows per status of the report so far ({"created": 3, …}).
  counts jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  finished_at timestamptz
);
CREATE INDEX imports_owner_seq_idx ON imports (owner_id, seq DESC);

-- One row per data row of the file, by its line (the header is line 1).
CREATE TABLE import_rows (
  import_id text NOT NULL REFERENCES imports (id) ON DELETE CASCADE,
  line integer NOT NULL CHECK (line >= 2),
  status text NOT NULL CHECK (length(status) <= 20),
  slug text CHECK (length(slug) <= 200),
  reason text CHECK (length(reason) <= 50),
  link_id text,
  PRIMARY KEY (import_id, line)
);
