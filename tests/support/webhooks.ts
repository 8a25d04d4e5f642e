import { randomUUID } from 'node:crypto';
import type { Context } from '#shared/context.js';
import { webhooksRepository, type WebhookRow } from '#shared/webhooks/webhooks.repository.js';
import { webhookSecrets } from '#shared/webhooks/secrets.js';

/**
 * Inserts a webhook straight in the store (no HTTP, no SSRF guard), its secret sealed with the
 * context's key as the API does; returns the row and the plaintext secret.
 */
export async function insertWebhook(
  context: Context,
  values: { owner_id: string; url: string; events: string[]; subdomain?: string | null; description?: string | null },
): Promise<{ row: WebhookRow; secret: string }> {
  const id = randomUUID();
  const { secret, columns } = webhookSecrets(context.secrets).issue(id);
  const row = await webhooksRepository(context.db.db).insert({ id, subdomain: null, description: null, ...values, ...columns });
  return { row, secret };
}
