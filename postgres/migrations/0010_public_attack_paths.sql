-- Attack attempts record the path they asked for as their slug: text any visitor chooses, not a
-- link. Public visit rows carry it only when the owner opts in (issue 34); off everywhere, as
-- every policy switch is by default.
ALTER TABLE subdomains ADD COLUMN stats_show_attack_paths boolean NOT NULL DEFAULT false;
