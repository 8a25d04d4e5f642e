import type { Context } from '#shared/context.js';
import type { ImportRunner } from '#shared/imports/import-job.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import type { WebhookCache } from '#shared/webhooks/subscriptions.js';
import { postgresRepositories, type Repositories } from '../repositories.js';
import { startImports } from './imports.js';
import { startDomainRechecks } from './domains.js';
import { startRetention, type RetentionDeps } from './retention.js';
import { startWebhooks, type WebhooksWorkerDeps } from './webhooks.js';

/** The repositories the worker role reads and writes. */
export type WorkerRepositories = Pick<Repositories, 'webhooks' | 'users' | 'audit' | 'domains'> & Partial<Pick<Repositories, 'visits' | 'subdomains'>>;

/**
 * The worker role: background jobs (BullMQ workers in production, the durable one-process runner on LMDB embedded).
 * Webhook delivery, fed by the dispatcher on the `events` topic, and the hourly retention job that
 * prunes the webhook delivery log, the audit log and the raw visits past their subdomain's retention
 * (a worker process opens the analytics store for those), the re-verification of custom domains, and, with `runImport` (the API's import engine, which
 * the composition root hands it), the import jobs of issue 39. A composition root: the platform hands it the
 * process's repositories; run alone (tests, benches) it builds them from the context's clients.
 */
export async function startWorker(
  context: Omit<WebhooksWorkerDeps & RetentionDeps, 'repositories'> & Pick<Context, 'db'>,
  repositories: WorkerRepositories = postgresRepositories(context),
  subscriptions?: WebhookCache,
  runImport?: ImportRunner,
): Promise<Consumer> {
  const webhooks = await startWebhooks({ ...context, repositories, subscriptions });
  const started: Consumer[] = [webhooks];
  try {
    started.push(await startRetention({ ...context, repositories }));
    started.push(await startDomainRechecks({ ...context, repositories }));
    if (runImport) started.push(await startImports(context, runImport));
  } catch (error) {
    await Promise.all(started.map((consumer) => consumer.stop()));
    throw error;
  }
  return {
    async stop() {
      await Promise.all(started.map((consumer) => consumer.stop()));
    },
  };
}
