-- Staff read an account's audit trail (GET /api/v1/users/{id}/audit): the entries about it (target)
-- and those it made (actor, already indexed), newest first. Teams' trails read by target as well.
CREATE INDEX audit_log_target_created_idx ON audit_log (target, created_at DESC);
