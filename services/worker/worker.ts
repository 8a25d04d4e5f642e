import type { Consumer } from '#shared/message-log/message-log.js';
import { startRetention, type RetentionDeps } from './retention.js';
import { startWebhooks, type WebhooksWorkerDeps } from './webhooks.js';

/**
 * The worker role: background jobs (BullMQ workers in production, the durable one-process runner on LMDB embedded).
 * Webhook delivery, fed by the dispatcher on the `events` topic, and the hourly retention job that
 * prunes the webhook delivery log and the audit log.
 */
export async function startWorker(context: WebhooksWorkerDeps & RetentionDeps): Promise<Consumer> {
  const webhooks = await startWebhooks(context);
  let retention: Consumer;
  try {
    retention = await startRetention(context);
  } catch (error) {
    await webhooks.stop();
    throw error;
  }
  return {
    async stop() {
      await Promise.all([webhooks.stop(), retention.stop()]);
    },
  };
}
