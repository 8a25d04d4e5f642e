-- Issue 40 item 7: a subdomain's default for query forwarding. A link created without
-- `forward_query` takes its subdomain's `forward_query` at creation; a change of the default leaves
-- existing links as they are (each link keeps the value it was created or last patched with), so the
-- edge reads one flag per link and never the subdomain's.
ALTER TABLE subdomains ADD COLUMN forward_query boolean NOT NULL DEFAULT false;
