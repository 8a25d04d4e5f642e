import { describe, expect, it } from 'vitest';
import type { Context } from '#shared/context.js';
import { createLogger } from '#shared/logger.js';
import { createMetrics } from '#shared/metrics.js';
import { testConfig } from '#tests/support/context.js';
import { waitFor } from '#tests/support/wait.js';
import type { LogMessage, MessageLog } from '#shared/message-log/message-log.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import { createVisitProducer } from './visit-producer.js';

/** A message log stub (a broker outage cannot be staged in-process): fails while `down` is set. */
function flakyLog(kind: MessageLog['kind'] = 'lmdb') {
  const published: LogMessage[] = [];
  /** The size of each publish call that succeeded. */
  const calls: number[] = [];
  const state = { down: true, attempts: 0 };
  const log: MessageLog = {
    kind,
    async publish(_topic, messages) {
      state.attempts += 1;
      if (state.down) throw new Error('broker unreachable');
      published.push(...messages);
      calls.push(messages.length);
    },
    consume: () => Promise.reject(new Error('not used')),
    peek: () => Promise.reject(new Error('not used')),
    take: () => Promise.reject(new Error('not used')),
    positions: () => Promise.reject(new Error('not used')),
    remove: () => Promise.reject(new Error('not used')),
    consumers: async () => [],
    ping: async () => undefined,
    close: async () => undefined,
  };
  return { log, published, calls, state };
}

const visit = (n: number): RawVisit => ({
  visit_id: `0190a0b0-0000-7000-8000-${String(n).padStart(12, '0')}`,
  ts: new Date().toISOString(),
  kind: 'visit',
  expects_beacon: false,
  owner_id: 'o',
  subdomain: 's',
  link_id: 'l_x',
  slug: 'x',
  ip_public: '192.0.2.1',
  user_agent: '',
  referrer: '',
  accept_language: '',
  query: '',
});

function contextWith(messageLog: MessageLog, bufferSize: number): Context {
  const config = { ...testConfig(), visitBufferSize: bufferSize };
  return { config, log: createLogger(config), metrics: createMetrics(), messageLog } as unknown as Context;
}

describe('visit producer (with a stub message log that fails while the broker is "down")', () => {
  it('buffers visits while the log is unreachable and publishes all of them, in order, on recovery', async () => {
    const { log, published, state } = flakyLog();
    const producer = createVisitProducer(contextWith(log, 1_000));
    for (let i = 0; i < 50; i++) expect(producer.enqueue(visit(i))).toBe(true);
    await waitFor(() => state.attempts >= 2, 5_000);
    expect(published).toEqual([]);
    expect(producer.buffered()).toBe(50);
    state.down = false;
    await waitFor(() => published.length === 50, 10_000);
    expect(published.map((message) => (JSON.parse(message.value) as RawVisit).visit_id)).toEqual(Array.from({ length: 50 }, (_, i) => visit(i).visit_id));
    expect(published[0]!.key).toBe('l_x');
    expect(producer.buffered()).toBe(0);
    await producer.close();
  });

  it('settled() waits for the visits enqueued before it (not those after), and answers false at its deadline while the log is down', async () => {
    const { log, published, state } = flakyLog();
    const producer = createVisitProducer(contextWith(log, 1_000));
    for (let i = 0; i < 20; i++) producer.enqueue(visit(i));
    expect(await producer.settled(Date.now() + 150)).toBe(false);
    const settled = producer.settled(Date.now() + 10_000);
    // Enqueued after the call: settled() does not wait for these.
    state.down = false;
    for (let i = 20; i < 30; i++) producer.enqueue(visit(i));
    expect(await settled).toBe(true);
    expect(published.length).toBeGreaterThanOrEqual(20);
    expect(await producer.settled(Date.now() + 10_000)).toBe(true);
    expect(published.length).toBe(30);
    await producer.close();
  });

  // The durable one-process log acknowledges a call at its next group commit (50 ms): 1 000 a call
  // capped the edge at 20 000 visits/s. Kafka acknowledges within milliseconds, and a record batch
  // must stay under the broker's message size limit.
  for (const [kind, most] of [
    ['lmdb', 10_000],
    ['kafka', 1_000],
  ] as const) {
    it(`publishes what is buffered in calls of at most ${most} on ${kind}, in order`, async () => {
      const { log, published, calls, state } = flakyLog(kind);
      const producer = createVisitProducer(contextWith(log, 100_000));
      for (let i = 0; i < 25_000; i++) producer.enqueue(visit(i));
      await waitFor(() => state.attempts >= 1, 5_000);
      state.down = false;
      await waitFor(() => published.length === 25_000, 10_000);
      expect(Math.max(...calls)).toBe(most);
      expect(calls.length).toBe(Math.ceil(25_000 / most));
      expect(published.map((message) => (JSON.parse(message.value) as RawVisit).visit_id)).toEqual(Array.from({ length: 25_000 }, (_, i) => visit(i).visit_id));
      await producer.close();
    });
  }

  it('counts what does not fit in the buffer as dropped, never silently', async () => {
    const { log } = flakyLog();
    const context = contextWith(log, 10);
    const producer = createVisitProducer(context);
    const accepted = Array.from({ length: 15 }, (_, i) => producer.enqueue(visit(i)));
    expect(accepted.filter(Boolean)).toHaveLength(10);
    expect((await context.metrics.visitsDropped.get()).values).toEqual([{ labels: { reason: 'buffer_full', topic: 'visits.raw' }, value: 5 }]);
    await producer.close(200);
    expect((await context.metrics.visitsDropped.get()).values).toContainEqual({ labels: { reason: 'shutdown', topic: 'visits.raw' }, value: 10 });
  });
});
