-- Teams (issue 39): accounts share work as members of a team, each with a role. A team always has
-- at least one owner: the last owner can neither leave nor be demoted, and an account that is a
-- team's last owner while others are members cannot be deleted (the API refuses; see the users
-- repository). Invitations are single-use links mailed to an address, valid 7 days, stored as the
-- SHA-256 of their secret only.
CREATE TABLE teams (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE team_members (
  team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role text NOT NULL CHECK (role IN ('owner', 'admin', 'editor', 'viewer')),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (team_id, user_id)
);
CREATE INDEX team_members_user_idx ON team_members (user_id);

CREATE TABLE team_invitations (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  email text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
  role text NOT NULL CHECK (role IN ('owner', 'admin', 'editor', 'viewer')),
  token_hash text NOT NULL UNIQUE,
  invited_by uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  accepted_at timestamptz,
  accepted_by uuid REFERENCES users (id) ON DELETE SET NULL,
  revoked_at timestamptz
);
CREATE INDEX team_invitations_team_idx ON team_invitations (team_id, created_at DESC);
-- One open invitation per address and team (an open one is neither accepted nor revoked; an expired one is replaced by the next).
CREATE UNIQUE INDEX team_invitations_open_key ON team_invitations (team_id, lower(email)) WHERE accepted_at IS NULL AND revoked_at IS NULL;

-- A subdomain can belong to a team: its owner stays its owner (its links and visits are stored under
-- that account), and the team's members reach it by their role. Deleting the team gives it back to
-- its owner alone.
ALTER TABLE subdomains ADD COLUMN team_id uuid REFERENCES teams (id) ON DELETE SET NULL;
CREATE INDEX subdomains_team_idx ON subdomains (team_id) WHERE team_id IS NOT NULL;
