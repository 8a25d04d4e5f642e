// Re-encrypts the webhook and TOTP secrets under the current SECRETS_KEY, as the api (and, for webhooks, worker) roles do at
// start, without restarting anything; then reports what is left under another key. Step 3 of a key
// rotation (docs/operations.md, "Secrets at rest and retention"): drop SECRETS_KEY_PREVIOUS once this says 0.
// Reads the same environment as the platform (DATABASE_URL, SECRETS_KEY, SECRETS_KEY_PREVIOUS, or
// DATA_DIR on the embedded stores while the platform is stopped). Exits 1 when a secret is left.
//
//   tsx scripts/reseal-secrets.ts            (in the image: node dist/scripts/reseal-secrets.js)
import { configOrExit } from './lib/cli.js';
import { createDatabase } from '#shared/db/database.js';
import { migrateDatabase } from '#shared/migrations/postgres.js';
import { createLogger } from '#shared/logger.js';
import { loadSecretBox } from '#shared/secrets/keys.js';
import { webhooksRepository } from '#shared/webhooks/webhooks.repository.js';
import { sealWebhookSecrets } from '#shared/webhooks/secrets.js';
import { totpRepository } from '#services/api/auth/totp.repository.js';
import { sealTotpSecrets } from '#services/api/auth/totp.service.js';

// The roles that hold the key: so that a missing SECRETS_KEY with DATABASE_URL is refused here too.
const config = configOrExit({ ...process.env, SERVICE_ROLES: 'api,worker' });
const log = createLogger({ logLevel: 'warn' });
const box = loadSecretBox(config.secrets, log);
const database = await createDatabase(config.database);
let left: number;
try {
  await migrateDatabase(database);
  const webhooks = webhooksRepository(database.db);
  const report = await sealWebhookSecrets({ webhooks }, box, log);
  left = await webhooks.countSecretsNotSealedWith(box.currentKeyId!);
  process.stdout.write(
    `webhook secrets: ${report.sealed} re-encrypted under key ${box.currentKeyId}; ${left} not under it` +
      (left > 0 ? ' (no configured key opens them: add the key they were sealed with to SECRETS_KEY_PREVIOUS)' : '') +
      '\n',
  );
  const totp = totpRepository(database.db);
  const totpReport = await sealTotpSecrets({ totp }, box, log);
  const totpLeft = await totp.countSecretsNotSealedWith(box.currentKeyId!);
  process.stdout.write(`TOTP secrets: ${totpReport.sealed} re-encrypted under key ${box.currentKeyId}; ${totpLeft} not under it\n`);
  left += totpLeft;
} finally {
  await database.close();
}
// Explicitly: PGlite's runtime sets process.exitCode when it closes.
process.exit(left > 0 ? 1 : 0);
