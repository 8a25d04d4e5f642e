import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { createEventBus } from '#shared/events/events.js';
import { metricTotal } from '#shared/metrics.js';
import { createAccount } from '#tests/support/accounts.js';
import { closeContext, createTestContext, SERVICES_MODE } from '#tests/support/context.js';
import { waitFor } from '#tests/support/wait.js';
import { insertWebhook } from '#tests/support/webhooks.js';
import { TOPICS } from '#shared/message-log/topics.js';
import type { Consumer } from '#shared/message-log/message-log.js';
import { WEBHOOKS_VERSION_KEY } from '#shared/webhooks/delivery.js';
import { WEBHOOK_DISPATCH_GROUP, deliveryJob, startWebhooks } from './webhooks.js';
import { withRepositories } from '#tests/support/repositories.js';

// The dispatcher's backpressure, with a real local receiver that holds its answers until told: the
// event bus is in-process or Kafka, the delivery jobs in-process or BullMQ (services run).
const DEADLINE_MS = 30_000;
const HIGH_WATER = 20;

let context: Context;
let receiver: Server;
let url: string;
let worker: Consumer | undefined;
const held: ServerResponse[] = [];
const deliveryIds: string[] = [];
let open = false;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      deliveryIds.push(String(req.headers['x-svc-delivery']));
      if (open) res.writeHead(200).end('ok');
      else held.push(res);
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  context = await createTestContext({
    WEBHOOK_ALLOWLIST: '127.0.0.1',
    WEBHOOK_QUEUE_HIGH_WATER: String(HIGH_WATER),
    WEBHOOK_CONCURRENCY: '2',
    WEBHOOK_CONCURRENCY_PER_WEBHOOK: '2',
    WEBHOOK_TIMEOUT_MS: '15000',
  });
});

afterAll(async () => {
  open = true;
  for (const res of held.splice(0)) res.writeHead(200).end('ok');
  await worker?.stop();
  if (context) await closeContext(context);
  receiver?.close();
});

/** Publishes `count` visit.new events of an owner as one message, as the enricher does per batch. */
const emitFor = (ownerId: string) => (count: number) =>
  createEventBus(context).emitMany(Array.from({ length: count }, (_, i) => ({ type: 'visit.new' as const, ownerId, subdomain: 'held', data: { n: i } })));
/** Deliveries the dispatcher has enqueued (webhook_deliveries_enqueued_total). */
const dispatched = () => metricTotal(context.metrics.webhookDispatched);
/** Messages of the events topic the dispatcher has not committed. */
const lag = async () => (await context.messageLog.consumers()).find((status) => status.group === WEBHOOK_DISPATCH_GROUP && status.topic === TOPICS.events)?.lag;

describe(`the webhook dispatcher (${SERVICES_MODE ? 'Kafka and BullMQ' : 'in process'})`, () => {
  it('leaves events in the topic while WEBHOOK_QUEUE_HIGH_WATER deliveries wait, and delivers each once when there is room', async () => {
    const owner = await createAccount(context);
    await insertWebhook(context, { owner_id: owner.id, url, events: ['visit.new'] });
    await context.cache.bump(WEBHOOKS_VERSION_KEY);
    worker = await startWebhooks(withRepositories(context));
    const emit = emitFor(owner.id);
    const job = deliveryJob(context);

    // 10 deliveries: 2 held at the receiver, 8 waiting; then 15 more: 23 waiting, past the mark.
    await emit(10);
    await waitFor(async () => held.length === 2 && (await context.jobs.waiting(job)) === 8, DEADLINE_MS, { message: '2 held, 8 waiting' });
    await emit(15);
    await waitFor(async () => (await context.jobs.waiting(job)) === 23, DEADLINE_MS, { message: '23 waiting' });
    expect(await dispatched()).toBe(25);

    // Now the queue is full: 30 more events stay in the topic, not in the queue.
    await emit(30);
    await waitFor(async () => (await lag()) === 1, DEADLINE_MS, { message: 'the dispatcher lagging one message' });
    await sleep(1000);
    expect(await context.jobs.waiting(job)).toBe(23);
    expect(await dispatched()).toBe(25);
    expect(await lag()).toBe(1);
    expect(held).toHaveLength(2);

    // Room again: everything arrives, each delivery once.
    open = true;
    for (const res of held.splice(0)) res.writeHead(200).end('ok');
    await waitFor(() => deliveryIds.length >= 55, DEADLINE_MS, { message: '55 deliveries' });
    await waitFor(async () => (await lag()) === 0, DEADLINE_MS, { message: 'the dispatcher caught up' });
    await sleep(300);
    expect(deliveryIds).toHaveLength(55);
    expect(new Set(deliveryIds).size).toBe(55);
    expect(await dispatched()).toBe(55);
    expect(await context.jobs.waiting(job)).toBe(0);
  });

  it('stops while the queue is full without committing the held batch or waiting for room', async () => {
    const owner = await createAccount(context);
    open = false;
    await insertWebhook(context, { owner_id: owner.id, url, events: ['visit.new'] });
    await context.cache.bump(WEBHOOKS_VERSION_KEY);
    const emit = emitFor(owner.id);
    const job = deliveryJob(context);
    await emit(HIGH_WATER + 5);
    await waitFor(async () => (await context.jobs.waiting(job)) >= HIGH_WATER, DEADLINE_MS, { message: 'a full queue' });
    await emit(5);
    await waitFor(async () => (await lag()) === 1, DEADLINE_MS, { message: 'a held batch' });
    // Time for the dispatcher to take the batch (it waits up to 50 ms for a batch to fill) and find no room.
    await sleep(500);
    const dispatchedBefore = await dispatched();
    const stopping = performance.now();
    // The deliveries held at the receiver finish once answered; the dispatcher does not wait for room.
    const stopped = worker!.stop();
    await sleep(200);
    open = true;
    for (const res of held.splice(0)) res.writeHead(200).end('ok');
    await stopped;
    worker = undefined;
    expect(performance.now() - stopping).toBeLessThan(DEADLINE_MS);
    // The queue emptied while the processor finished, but the stopping dispatcher gave up the held
    // batch instead of enqueueing it.
    expect(await dispatched()).toBe(dispatchedBefore);
    // The held batch was not committed: a dispatcher started later takes it.
    worker = await startWebhooks(withRepositories(context));
    await waitFor(async () => (await lag()) === 0 && (await context.jobs.waiting(job)) === 0 && deliveryIds.length >= 85, DEADLINE_MS, {
      message: 'everything dispatched and sent',
    });
    await sleep(300);
    // 55 from the first test and these 30, each once.
    expect(deliveryIds).toHaveLength(85);
    expect(new Set(deliveryIds).size).toBe(85);
  });
});
