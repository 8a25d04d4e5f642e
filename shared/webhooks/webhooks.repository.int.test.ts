import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Context } from '../context.js';
import { createAccount } from '#tests/support/accounts.js';
import { closeContext, createTestContext, SERVICES_MODE } from '#tests/support/context.js';
import { insertWebhook } from '#tests/support/webhooks.js';
import { webhooksRepository, type DeliveryAttempt } from './webhooks.repository.js';

let context: Context;

beforeAll(async () => {
  context = await createTestContext();
});

afterAll(async () => {
  if (context) await closeContext(context);
});

describe(`the delivery log (${SERVICES_MODE ? 'PostgreSQL' : 'PGlite'})`, () => {
  it('rows written late with skipRecorded are stored once, however often written; a second attempt of the same delivery is its own row', async () => {
    const owner = await createAccount(context);
    const { row: webhook } = await insertWebhook(context, { owner_id: owner.id, url: 'https://receiver.example/hook', events: ['visit.new'] });
    const repository = webhooksRepository(context.db.db);
    const deliveryId = randomUUID();
    const attempt = (n: number, at: Date): DeliveryAttempt => ({
      webhook_id: webhook.id,
      delivery_id: deliveryId,
      event_id: randomUUID(),
      event: 'visit.new',
      attempt: n,
      attempted_at: at.toISOString(),
      status_code: 500,
      latency_ms: 3,
      success: false,
      error: 'HTTP 500',
      response_excerpt: null,
    });
    const first = attempt(1, new Date(Date.now() - 60_000));
    // A write cut after its commit: the same rows are kept and written again.
    await repository.insertAttempts([first]);
    await repository.insertAttempts([first], { skipRecorded: true });
    expect(await repository.countAttempts(webhook.id)).toBe(1);
    // The same attempt number at another time (a job run again after a crash): a row of its own.
    const again = attempt(1, new Date(Date.now() - 30_000));
    const second = attempt(2, new Date());
    await repository.insertAttempts([again, second], { skipRecorded: true });
    await repository.insertAttempts([first, again, second], { skipRecorded: true });
    expect(await repository.countAttempts(webhook.id)).toBe(3);
    // Without it, every write appends (the log of attempts written as they are made).
    await repository.insertAttempts([second]);
    expect(await repository.countAttempts(webhook.id)).toBe(4);
  });
});
