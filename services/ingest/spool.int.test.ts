import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { testConfig } from '#tests/support/context.js';
import { rawVisit } from '#tests/support/visits.js';
import { waitFor } from '#tests/support/wait.js';
import { createVisitProducer } from './visit-producer.js';
import type { RawVisit } from '#shared/visits/raw-visit.js';
import { createLogger } from '#shared/logger.js';
import { createMetrics, type Metrics } from '#shared/metrics.js';
import { createDurableLog } from '#shared/message-log/lmdb.js';
import { REDELIVERED_HEADER, type LogMessage, type MessageLog } from '#shared/message-log/message-log.js';
import { createSpool, type Spool } from '#shared/message-log/spool.js';
import { TOPICS, type Topic } from '#shared/message-log/topics.js';

// The spool of an ingest node (with Kafka). Kafka cannot be stopped and started at will inside a
// test file: the target the spool forwards to is a durable log (the one-process mode's) standing for
// Kafka, behind a switch that makes its publish refuse, as kafkajs does while the broker is down.
// tests/faults.int.test.ts runs the same against a real broker stopped for 60 s.

const log = createLogger({ logLevel: 'silent' });
const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'linktrack-spool-'));
  dirs.push(dir);
  return dir;
};
const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
});
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A durable log standing for Kafka: `down` makes its publish refuse; `sends` records every publish call it took. */
function standInKafka(metrics: Metrics) {
  const real = createDurableLog({ dir: tempDir(), commitDelayMs: 5 }, log, metrics);
  open.push(real);
  const state = { down: false, sends: [] as LogMessage[][], afterAck: undefined as (() => Promise<void>) | undefined };
  const target: MessageLog = {
    ...real,
    async publish(topic, messages) {
      if (state.down) throw new Error('KafkaJSConnectionError: Connection error: connect ECONNREFUSED (the stand-in switched off)');
      await real.publish(topic, messages);
      state.sends.push(messages);
      const after = state.afterAck;
      state.afterAck = undefined;
      await after?.();
    },
  };
  return { target, real, state };
}

/** Every message of the topic the target holds, in order (read by a group of its own). */
async function received(target: MessageLog, topic: Topic = TOPICS.visitsRaw): Promise<LogMessage[]> {
  const page = await target.peek({ topic, groupId: 'test-reader', limit: 100_000 });
  return page.messages;
}

const messages = (from: number, count: number): LogMessage[] =>
  Array.from({ length: count }, (_, i) => ({ key: `link-${(from + i) % 7}`, value: JSON.stringify({ n: from + i }) }));

async function openSpool(dir: string, target: MessageLog, metrics: Metrics, maxBytes = 10_000_000): Promise<Spool> {
  const spool = await createSpool({ dir, maxBytes, commitDelayMs: 5, retryDelayMs: 100 }, target, log, metrics);
  open.push(spool);
  return spool;
}

describe('the spool of an ingest node (a durable log standing for Kafka)', { timeout: 60_000 }, () => {
  it('keeps every message on disk while Kafka refuses them, says how many and how old, and forwards them all once, in order, after a restart', async () => {
    const metrics = createMetrics();
    const { target, state } = standInKafka(metrics);
    const dir = tempDir();
    state.down = true;
    let spool = await openSpool(dir, target, metrics);
    for (let call = 0; call < 5; call++) await spool.publish(TOPICS.visitsRaw, messages(call * 100, 100));
    await waitFor(() => spool.status()[0]!.last_error !== null, 10_000, { message: 'the forwarder refused' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const [visits, beacons] = spool.status();
    expect(visits).toMatchObject({ topic: TOPICS.visitsRaw, messages: 500 });
    expect(visits!.bytes).toBeGreaterThan(500 * 20);
    expect(visits!.oldest_age_s).toBeGreaterThan(0);
    expect(visits!.last_error).toContain('ECONNREFUSED');
    expect(beacons).toMatchObject({ topic: TOPICS.trackerRaw, messages: 0, bytes: 0, oldest_age_s: 0, last_error: null });
    const scraped = await metrics.registry.metrics();
    expect(scraped).toContain('visit_spool_messages{topic="visits.raw"} 500');
    expect(scraped).toMatch(/visit_spool_oldest_age_seconds\{topic="visits\.raw"\} 0\.[1-9]/);
    expect(await received(target)).toEqual([]);

    // The process stops (the spool closes with Kafka still away); the next start finds the 500 and forwards them once Kafka takes them.
    await spool.close();
    spool = await openSpool(dir, target, metrics);
    expect(spool.status()[0]).toMatchObject({ messages: 500 });
    state.down = false;
    await waitFor(async () => (await received(target)).length >= 500, 20_000, { message: 'the 500 forwarded' });
    await waitFor(() => spool.status()[0]!.messages === 0, 10_000, { message: 'the spool emptied' });
    const forwarded = await received(target);
    expect(forwarded.map((message) => JSON.parse(message.value).n)).toEqual(Array.from({ length: 500 }, (_, i) => i));
    expect(spool.status()[0]).toMatchObject({ messages: 0, bytes: 0, oldest_age_s: 0, last_error: null });
    expect(await spool.drain(Date.now() + 1_000)).toBe(true);
  });

  it('a restart after a clean forward sends nothing again', async () => {
    const metrics = createMetrics();
    const { target } = standInKafka(metrics);
    const dir = tempDir();
    let spool = await openSpool(dir, target, metrics);
    await spool.publish(TOPICS.visitsRaw, messages(0, 50));
    await waitFor(() => spool.status()[0]!.messages === 0, 10_000, { message: 'forwarded' });
    await spool.close();
    spool = await openSpool(dir, target, metrics);
    await spool.publish(TOPICS.visitsRaw, messages(50, 50));
    await waitFor(async () => (await received(target)).length >= 100, 10_000, { message: 'the second 50 forwarded' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await received(target)).map((message) => JSON.parse(message.value).n)).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });

  it('a batch Kafka acknowledged but the spool did not commit is sent again with lt-redelivered: 1, in one batch with what came after', async () => {
    const metrics = createMetrics();
    const { target, state } = standInKafka(metrics);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    // The first send is acknowledged, then fails before the local commit (as a forwarder killed there, or a send some partitions took).
    state.afterAck = async () => {
      await released;
      throw new Error('the forwarder died after the ack (injected)');
    };
    const spool = await openSpool(tempDir(), target, metrics);
    await spool.publish(TOPICS.visitsRaw, messages(0, 10));
    await waitFor(() => state.sends.length === 1, 10_000, { message: 'the first send' });
    await spool.publish(TOPICS.visitsRaw, messages(10, 3));
    release();
    await waitFor(() => spool.status()[0]!.messages === 0, 10_000, { message: 'forwarded again' });
    expect(state.sends.map((batch) => batch.length)).toEqual([10, 13]);
    expect(state.sends[0]!.every((message) => message.headers === undefined)).toBe(true);
    expect(state.sends[1]!.every((message) => message.headers?.[REDELIVERED_HEADER] === '1')).toBe(true);
  });

  it('past VISIT_SPOOL_MAX_BYTES the edge drops whole batches, counted in visits_dropped_total{reason="spool_full"}: spooled + dropped = accepted', async () => {
    const metrics = createMetrics();
    const { target, state } = standInKafka(metrics);
    state.down = true;
    const maxBytes = 65_536;
    const spool = await openSpool(tempDir(), target, metrics, maxBytes);
    const config = testConfig();
    const producer = createVisitProducer({ messageLog: target, spool, config, metrics, log });
    let accepted = 0;
    // About 0.3 KB a visit: 65 536 bytes hold about two hundred. Sent in rounds, each one batch.
    for (let round = 0; round < 10; round++) {
      for (let i = 0; i < 60; i++) if (producer.enqueue(rawVisit('spool', { n: round * 60 + i }) as unknown as RawVisit)) accepted++;
      await waitFor(() => producer.buffered() === 0, 10_000, { message: 'the round taken' });
    }
    const dropped = (await metrics.visitsDropped.get()).values
      .filter((value) => value.labels.reason === 'spool_full')
      .reduce((sum, { value }) => sum + value, 0);
    const [visits] = spool.status();
    expect(accepted).toBe(600);
    expect(dropped).toBeGreaterThan(0);
    expect(dropped % 60).toBe(0);
    expect(visits!.bytes).toBeLessThanOrEqual(maxBytes);
    expect(visits!.messages + dropped).toBe(600);
    // Kafka back: what the spool kept is forwarded, and room is made again.
    state.down = false;
    await waitFor(() => spool.status()[0]!.messages === 0, 10_000, { message: 'forwarded' });
    expect((await received(target)).length).toBe(600 - dropped);
    await producer.close(1_000);
  });

  it('beacons (tracker.raw) are spooled and forwarded like visits', async () => {
    const metrics = createMetrics();
    const { target } = standInKafka(metrics);
    const spool = await openSpool(tempDir(), target, metrics);
    await spool.publish(TOPICS.trackerRaw, messages(0, 5));
    await waitFor(async () => (await received(target, TOPICS.trackerRaw)).length === 5, 10_000, { message: 'the beacons forwarded' });
    expect(await received(target, TOPICS.visitsRaw)).toEqual([]);
  });
});
