-- Webhook signing secrets are stored encrypted (AES-256-GCM, `v1:<key id>:…`). SQL cannot encrypt:
-- the api and worker roles encrypt the rows still in plaintext when they start (idempotent), so the
-- first 12 characters shown to recognise a secret are kept beside it, taken here while readable.
ALTER TABLE webhooks ADD COLUMN secret_prefix text;
UPDATE webhooks SET secret_prefix = left(secret, 12);
ALTER TABLE webhooks ALTER COLUMN secret_prefix SET NOT NULL;
ALTER TABLE webhooks ADD CONSTRAINT webhooks_secret_prefix_length CHECK (length(secret_prefix) <= 12);
COMMENT ON COLUMN webhooks.secret IS 'The signing secret, sealed with SECRETS_KEY: v1:<key id>:<iv>:<ciphertext>:<tag> (shared/secrets/secret-box.ts).';

-- Retention: the worker deletes rows older than WEBHOOK_DELIVERY_RETENTION_DAYS and
-- AUDIT_RETENTION_DAYS in batches, oldest first; these indexes find them without a scan.
CREATE INDEX webhook_deliveries_attempted_at_idx ON webhook_deliveries (attempted_at);
CREATE INDEX audit_log_created_at_idx ON audit_log (created_at);
