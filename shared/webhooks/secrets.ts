import { randomBytes } from 'node:crypto';
import type { Logger } from '../logger.js';
import type { SecretBox } from '../secrets/secret-box.js';
import type { WebhookRow, WebhooksRepository } from './webhooks.repository.js';

/** Characters of a secret shown to recognise it (`whsec_` and six more). */
export const SECRET_PREFIX_LENGTH = 12;

/** What binds a sealed secret to its webhook: a value copied onto another row does not open there. */
const purposeOf = (webhookId: string) => `webhook:${webhookId}`;

/** Webhook signing secrets at rest: sealed in the row, opened only to sign a delivery. */
export function webhookSecrets(box: SecretBox) {
  return {
    /** A new secret for a webhook: the plaintext (shown once to its owner) and the columns that store it. */
    issue(webhookId: string): { secret: string; columns: Pick<WebhookRow, 'secret' | 'secret_prefix'> } {
      const secret = `whsec_${randomBytes(32).toString('base64url')}`;
      return { secret, columns: { secret: box.seal(secret, purposeOf(webhookId)), secret_prefix: secret.slice(0, SECRET_PREFIX_LENGTH) } };
    },
    /** The plaintext secret of a stored webhook; throws SecretsError (never a wrong secret) when it cannot be opened. */
    open(webhook: Pick<WebhookRow, 'id' | 'secret'>): string {
      return box.open(webhook.secret, purposeOf(webhook.id));
    },
  };
}

/** Rows read per round of sealWebhookSecrets. */
const SEAL_BATCH = 500;

/** What one pass of sealWebhookSecrets did. */
export interface SealReport {
  /** Rows now sealed with the current key (plaintext before, or sealed with a previous key). */
  sealed: number;
  /** Rows that could not be opened (a key this process lacks, or altered): left as they are. */
  failed: number;
}

/**
 * Seals with the current key every webhook secret stored otherwise: plaintext rows (from before
 * encryption at rest) and rows sealed with a previous key (a rotation). Run by the api and worker
 * roles at start; idempotent, and safe with several nodes at once and with rotations through the
 * API meanwhile: a row is replaced only if it still holds the value that was read.
 */
export async function sealWebhookSecrets({ webhooks: repository }: { webhooks: WebhooksRepository }, box: SecretBox, log: Logger): Promise<SealReport> {
  const current = box.currentKeyId;
  if (!current) return { sealed: 0, failed: 0 };
  const report: SealReport = { sealed: 0, failed: 0 };
  const unknownKeys = new Set<string>();
  let after: string | undefined;
  for (;;) {
    const rows = await repository.listSecretsNotSealedWith(current, after, SEAL_BATCH);
    if (rows.length === 0) break;
    after = rows.at(-1)!.id;
    for (const row of rows) {
      const purpose = purposeOf(row.id);
      const sealedWith = box.keyIdOf(row.secret);
      let plaintext: string;
      try {
        // Plaintext secrets are `whsec_…`; anything else not in the sealed form is damaged, not plaintext.
        if (sealedWith === undefined && row.secret.startsWith('v1:')) throw new Error('damaged sealed value');
        plaintext = sealedWith === undefined ? row.secret : box.open(row.secret, purpose);
      } catch {
        report.failed += 1;
        unknownKeys.add(sealedWith ?? 'damaged');
        continue;
      }
      if (await repository.replaceSecret(row.id, row.secret, box.seal(plaintext, purpose))) report.sealed += 1;
    }
  }
  if (report.sealed > 0) log.info({ sealed: report.sealed, key_id: current }, 'webhook secrets encrypted with the current secrets key');
  if (report.failed > 0) {
    log.error(
      { failed: report.failed, key_ids: [...unknownKeys], key_id: current },
      'webhook secrets that no configured key opens: their deliveries fail until the key they were sealed with is in SECRETS_KEY_PREVIOUS',
    );
  }
  return report;
}
