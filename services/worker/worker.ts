import type { Context } from '../../shared/context.js';
import type { Consumer } from '../../shared/visit-log/visit-log.js';
import { startWebhooks } from './webhooks.js';

/**
 * The worker role: background jobs (BullMQ workers in production, the in-process runner embedded).
 * Its first job kind is webhook delivery, fed by the dispatcher on the `events` topic.
 */
export async function startWorker(context: Context): Promise<Consumer> {
  return startWebhooks(context);
}
