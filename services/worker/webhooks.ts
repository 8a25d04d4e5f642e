import { setTimeout as sleep } from 'node:timers/promises';
import type { Context } from '#shared/context.js';
import { decodeEvents } from '#shared/events/events.js';
import { DeferJob, defineJob, type JobDefinition } from '#shared/jobs/jobs.js';
import { createNotifier } from '#shared/notifications.js';
import { TOPICS } from '#shared/message-log/topics.js';
import { dependencyPorts, unavailableDependency } from '#shared/unavailable.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import { BACKOFF_FACTOR, MAX_ATTEMPTS, WEBHOOKS_VERSION_KEY, createDeliverer, deliveryIdOf, type DeliverableEvent } from '#shared/webhooks/delivery.js';
import type { DeliveryAttempt, WebhookRow } from '#shared/webhooks/webhooks.repository.js';
import { matches, webhookCache, type WebhookCache } from '#shared/webhooks/subscriptions.js';
import type { Repositories } from '../repositories.js';

/** The consumer group of the dispatcher on the `events` topic. */
export const WEBHOOK_DISPATCH_GROUP = 'webhook-dispatch';

/** A delivery job: one event to one webhook, all its attempts. */
export interface DeliveryJob {
  webhook_id: string;
  owner_id: string;
  delivery_id: string;
  event: DeliverableEvent;
}

/** The delivery job kind with the configured policy: 5 attempts, waits base·4^(n-2) with jitter. */
export function deliveryJob({ config }: Pick<Context, 'config'>): JobDefinition<DeliveryJob> {
  const { retryBaseMs, concurrency } = config.webhooks;
  // Finished deliveries' ids deduplicate an event the dispatcher is handed again (a batch redelivered
  // seconds later); 100 000 bound what Redis keeps for a busy platform.
  return defineJob<DeliveryJob>({
    name: 'webhook.deliver',
    attempts: MAX_ATTEMPTS,
    backoffMs: retryBaseMs,
    backoffFactor: BACKOFF_FACTOR,
    concurrency,
    retainFinished: 100_000,
  });
}

/** Delivery-log rows of attempts made when the database could not take them, written later. */
export interface RecordJob {
  attempts: DeliveryAttempt[];
}

/** The job kind that writes kept delivery-log rows; it waits while the database is down, its attempts are for other failures. */
export const recordJob = defineJob<RecordJob>({
  name: 'webhook.record',
  attempts: MAX_ATTEMPTS,
  backoffMs: 1_000,
  backoffFactor: BACKOFF_FACTOR,
  concurrency: 1,
  retainFinished: 10_000,
});

/** A webhook to disable after an attempt, when the database could not do it then (the attempt is not made again for it). */
export interface DisableJob {
  webhook: Pick<WebhookRow, 'id' | 'owner_id' | 'url'>;
  reason: string;
  data: Record<string, unknown>;
}

/** The job kind that disables a webhook and notifies its owner once the database is back. */
export const disableJob = defineJob<DisableJob>({
  name: 'webhook.disable',
  attempts: MAX_ATTEMPTS,
  backoffMs: 1_000,
  backoffFactor: BACKOFF_FACTOR,
  concurrency: 1,
  retainFinished: 10_000,
});

/**
 * How long a job that needs the database waits before it looks again while the database is down:
 * a quarter of the outage so far, between these bounds, plus as much jitter at most. Up to
 * WEBHOOK_QUEUE_HIGH_WATER deliveries may be waiting: in a long outage they look every 15–30 s,
 * not every second.
 */
const DATABASE_WAIT_MS = { min: 1_000, max: 15_000 } as const;

/** Pause between two looks at the delivery queue while it is above its high-water mark. */
const QUEUE_POLL_MS = 100;
/** How long a delivery waits for a slot of its webhook before it is deferred (and its worker slot freed). */
const SLOT_WAIT_MS = 200;

/** Bounds concurrent deliveries per webhook in this process; a waiter gets the next free slot. */
function slotsPerKey(limit: number) {
  const taken = new Map<string, number>();
  const waiters = new Map<string, (() => void)[]>();
  const release = (key: string) => {
    const next = waiters.get(key)?.shift();
    if (next) return next();
    const count = (taken.get(key) ?? 1) - 1;
    if (count === 0) taken.delete(key);
    else taken.set(key, count);
    if (waiters.get(key)?.length === 0) waiters.delete(key);
  };
  return {
    /** Resolves true with a slot (release it), or false when none freed within `waitMs`. */
    acquire(key: string, waitMs: number): Promise<boolean> | boolean {
      const count = taken.get(key) ?? 0;
      if (count < limit) {
        taken.set(key, count + 1);
        return true;
      }
      return new Promise((resolve) => {
        const queue = waiters.get(key) ?? [];
        waiters.set(key, queue);
        const grant = () => {
          clearTimeout(timer);
          resolve(true);
        };
        const timer = setTimeout(() => {
          queue.splice(queue.indexOf(grant), 1);
          resolve(false);
        }, waitMs);
        queue.push(grant);
      });
    },
    release,
  };
}

/**
 * What the webhook side of the worker uses: the webhooks and users repositories and every client but
 * the stores', for the dispatcher, the deliveries and the owners' notices.
 */
export type WebhooksWorkerDeps = Pick<Context, 'cache' | 'config' | 'secrets' | 'metrics' | 'log' | 'jobs' | 'messageLog'> & {
  repositories: Pick<Repositories, 'webhooks' | 'users'>;
  /** The process's cache of webhooks (shared with its enricher); one of its own when not given. */
  subscriptions?: WebhookCache;
};

/**
 * The webhook side of the worker role:
 * - the dispatcher consumes the `events` topic and enqueues one delivery job per event and
 *   matching webhook (job id = delivery id, so an event redelivered is not delivered twice);
 * - the delivery jobs make the attempts: 2xx is success; anything else is retried with backoff;
 *   410 Gone disables the webhook at once; the fifth failure disables it and notifies the owner.
 * The enricher only publishes events (one message per owner and batch): fan-out and HTTP happen here.
 * The dispatcher enqueues only while fewer than WEBHOOK_QUEUE_HIGH_WATER deliveries are ready to
 * run: a backlog stays in the events topic, which is made to hold one, not in Redis.
 *
 * While the database is down, an attempt is not made twice for want of a row: a delivery whose
 * webhook cannot be read waits (not an attempt); an attempt made whose row cannot be written goes
 * on (its outcome decides as usual) and its row is kept in a `webhook.record` job, written with its
 * real time once the database is back; a webhook to disable then is disabled by a `webhook.disable`
 * job. Redis or the job store down as well: the delivery fails and is retried (at least once).
 */
export async function startWebhooks(context: WebhooksWorkerDeps): Promise<Consumer> {
  const { config, log, metrics, jobs, messageLog } = context;
  // One repository of webhooks for the cache, the deliverer (attempt log), the notifier and disabling.
  const { webhooks: repository, users } = context.repositories;
  const cache = context.subscriptions ?? webhookCache({ webhooks: repository, cache: context.cache });
  const deliverer = createDeliverer({
    webhooks: repository,
    secrets: context.secrets,
    config,
    metrics,
    keep: (attempts) => jobs.enqueue(recordJob, { attempts }),
  });
  const notifier = createNotifier({ webhooks: repository, users, config, log });
  const job = deliveryJob(context);
  const slots = slotsPerKey(config.webhooks.perWebhook);
  const { queueHighWater } = config.webhooks;
  const databasePorts = dependencyPorts({ database: config.database.kind === 'postgres' ? config.database.url : undefined });
  const databaseDown = (error: unknown) => unavailableDependency(error, databasePorts) === 'database';
  /** When work that needs the database first found it down, since it last answered. */
  let downSince: number | undefined;
  /** Runs work that needs the database; while it is down, the job is run again later as the same attempt. */
  const withDatabase = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      const result = await work();
      downSince = undefined;
      return result;
    } catch (error) {
      if (!databaseDown(error)) throw error;
      const now = Date.now();
      const wait = Math.min(DATABASE_WAIT_MS.max, Math.max(DATABASE_WAIT_MS.min, (now - (downSince ??= now)) / 4));
      throw new DeferJob(Math.round(wait * (1 + Math.random())));
    }
  };

  const disable = async (webhook: DisableJob['webhook'], reason: string, data: Record<string, unknown>) => {
    const disabled = await repository.disable(webhook.id, reason);
    if (!disabled) return; // another attempt disabled it first and notified
    await context.cache.bump(WEBHOOKS_VERSION_KEY);
    log.warn({ webhook_id: webhook.id, reason }, 'webhook disabled');
    await notifier.notify({
      userId: webhook.owner_id,
      kind: 'webhook.disabled',
      title: 'A webhook was disabled',
      body:
        `Your webhook ${webhook.url} was disabled: ${reason}. ` +
        'Events are not sent to it until you enable it again (POST /api/v1/webhooks/{id}/enable); its delivery log shows every attempt.',
      data: { webhook_id: webhook.id, url: webhook.url, reason, ...data },
    });
  };

  /**
   * Disables a webhook after an attempt. When that fails (the database down), a webhook.disable job
   * does it later: failing the delivery would make its attempt again.
   */
  const disableAfterAttempt = async (deliveryId: string, webhook: WebhookRow, reason: string, data: Record<string, unknown>) => {
    try {
      await disable(webhook, reason, data);
    } catch {
      await jobs.enqueue(disableJob, { webhook: { id: webhook.id, owner_id: webhook.owner_id, url: webhook.url }, reason, data }, { jobId: deliveryId });
    }
  };

  // Started before the deliveries that may enqueue their jobs, stopped after them.
  const recorder = await jobs.process(recordJob, ({ attempts }) => withDatabase(() => repository.insertAttempts(attempts, { skipRecorded: true })));
  const disabler = await jobs.process(disableJob, ({ webhook, reason, data }) => withDatabase(() => disable(webhook, reason, data)));

  const processor = await jobs.process(job, async (delivery, { attempt, final }) => {
    const webhook = await withDatabase(() => cache.get(delivery.webhook_id, delivery.owner_id));
    // Deleted, or disabled meanwhile: nothing more is sent (not an attempt).
    if (!webhook || !webhook.enabled) return;
    const slot = slots.acquire(webhook.id, SLOT_WAIT_MS);
    if (!(slot === true || (await slot))) throw new DeferJob(SLOT_WAIT_MS + Math.round(Math.random() * SLOT_WAIT_MS));
    // The slot bounds the requests to the receiver; it is freed before the attempt's log row is stored.
    const outcome = await deliverer.attempt(webhook, delivery.event, delivery.delivery_id, attempt, () => slots.release(webhook.id));
    if (outcome.success) return;
    if (outcome.status_code === 410) {
      return disableAfterAttempt(delivery.delivery_id, webhook, 'the receiver answered 410 Gone', {
        delivery_id: delivery.delivery_id,
        event: delivery.event.type,
      });
    }
    if (final) {
      return disableAfterAttempt(
        delivery.delivery_id,
        webhook,
        `${MAX_ATTEMPTS} attempts of delivery ${delivery.delivery_id} (${delivery.event.type}) failed; the last: ${outcome.error}`,
        { delivery_id: delivery.delivery_id, event: delivery.event.type },
      );
    }
    throw new Error(`webhook delivery attempt ${attempt} failed: ${outcome.error}`);
  });

  const consumer = await messageLog.consume({
    groupId: WEBHOOK_DISPATCH_GROUP,
    topic: TOPICS.events,
    maxBatch: 500,
    maxWaitMs: 50,
    handler: async (messages, batch) => {
      // A message carries one owner's events and is keyed by the owner: messages of owners without
      // an enabled webhook are not decoded at all (every visit of every owner raises visit.new, and
      // parsing them was a tenth of the one-process platform's event loop under load).
      const withWebhooks = await cache.enabledOf([...new Set(messages.map((message) => message.key))]);
      const events = messages.filter((message) => (withWebhooks.get(message.key)?.length ?? 0) > 0).flatMap(decodeEvents);
      if (events.length === 0) return;
      // An owner's events travel under its key: their owners were looked up with the keys.
      const owners = [...new Set(events.map((event) => event.owner_id))];
      const subscribed = owners.every((owner) => withWebhooks.has(owner)) ? withWebhooks : await cache.enabledOf(owners);
      const queued: { data: DeliveryJob; jobId: string }[] = [];
      for (const event of events) {
        for (const webhook of subscribed.get(event.owner_id) ?? []) {
          if (!matches(webhook, event)) continue;
          const deliveryId = deliveryIdOf(webhook.id, event.id);
          queued.push({
            jobId: deliveryId,
            data: {
              webhook_id: webhook.id,
              owner_id: webhook.owner_id,
              delivery_id: deliveryId,
              event: { id: event.id, type: event.type, occurred_at: event.occurred_at, subdomain: event.subdomain, data: event.data },
            },
          });
        }
      }
      if (queued.length === 0) return;
      // Room first: while the workers have WEBHOOK_QUEUE_HIGH_WATER deliveries waiting, the events
      // stay in the topic (this batch is not committed), heartbeating the group meanwhile.
      while ((await jobs.waiting(job)) >= queueHighWater) {
        if (batch.stopping()) throw new Error('stopping while the delivery queue is full: the batch is left for redelivery');
        await batch.heartbeat();
        await sleep(QUEUE_POLL_MS);
      }
      // Enqueued before the batch is committed: a failure redelivers it, and the job ids dedupe.
      await jobs.enqueueMany(job, queued);
      for (const entry of queued) metrics.webhookDispatched.inc({ event: entry.data.event.type });
    },
  });

  return {
    /** Stops the dispatcher, then the deliveries: those running finish and are logged; queued ones stay queued. */
    async stop() {
      await consumer.stop();
      await processor.stop();
      await Promise.all([recorder.stop(), disabler.stop()]);
      notifier.close();
    },
  };
}
